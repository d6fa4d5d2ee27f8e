//! `/healthz` and `/readyz`, the same on both HTTP servers, for an orchestrator's
//! liveness and readiness checks. `/healthz` answers 200 whenever the process serves
//! HTTP; `/readyz` answers 200 once a catalogue snapshot is built (loaded from its
//! source, or fetched from its API) and 503 until then. A snapshot, once built, stays
//! served through failed refreshes, so the catalogue never costs readiness again.
//!
//! A replica of a fleet (`TOOLGATE_REDIS`) is ready only while the fleet's Redis answers
//! too: while it does not, `/readyz` answers 503 naming the Redis and the reason, so a
//! load balancer sends requests to replicas that can serve them, and the replica is
//! ready again by itself once Redis is back.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::get;

use crate::gateway::Gateway;
use crate::limits::READY_WAIT;
use crate::shared::Shared;

/// Readiness, remembered once the catalogue is built.
#[derive(Debug, Clone)]
struct Probe {
    gateway: Arc<Gateway>,
    ready: Arc<AtomicBool>,
    shared: Option<Shared>,
}

/// The probe routes over `gateway` (and the fleet's Redis, `shared`, when this server
/// is a replica), to be merged into a server's router.
pub fn router(gateway: Arc<Gateway>, shared: Option<Shared>) -> Router {
    let probe = Probe {
        gateway,
        ready: Arc::new(AtomicBool::new(false)),
        shared,
    };
    Router::new()
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/readyz", get(ready))
        .with_state(probe)
}

/// 200 once a snapshot has been built (else waits up to [`READY_WAIT`] for one, the
/// first build or a fetch) and, for a replica, while the fleet's Redis answers a ping;
/// else 503 with the reason.
async fn ready(State(probe): State<Probe>) -> (StatusCode, String) {
    if !probe.ready.load(Ordering::Relaxed) {
        match tokio::time::timeout(READY_WAIT, probe.gateway.snapshot()).await {
            Ok(Ok(_)) => probe.ready.store(true, Ordering::Relaxed),
            Ok(Err(_)) | Err(_) => {
                return (
                    StatusCode::SERVICE_UNAVAILABLE,
                    "the catalogue is not loaded yet\n".into(),
                );
            }
        }
    }
    if let Some(shared) = &probe.shared
        && let Err(reason) = shared.ping().await
    {
        let why = format!(
            "the fleet's shared state (Redis at {}) is unreachable: {reason}\n",
            shared.shown()
        );
        return (StatusCode::SERVICE_UNAVAILABLE, why);
    }
    (StatusCode::OK, "ready\n".into())
}
