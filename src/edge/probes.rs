//! `/healthz` and `/readyz`, the same on both HTTP servers, for an orchestrator's
//! liveness and readiness checks. `/healthz` answers 200 whenever the process serves
//! HTTP; `/readyz` answers 200 once a catalogue snapshot is built (loaded from its
//! source, or fetched from its API) and 503 until then. A snapshot, once built, stays
//! served through failed refreshes, so readiness is never lost again.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::get;

use crate::gateway::Gateway;
use crate::limits::READY_WAIT;

/// Readiness, remembered once reached.
#[derive(Debug, Clone)]
struct Probe {
    gateway: Arc<Gateway>,
    ready: Arc<AtomicBool>,
}

/// The probe routes over `gateway`, to be merged into a server's router.
pub fn router(gateway: Arc<Gateway>) -> Router {
    let probe = Probe {
        gateway,
        ready: Arc::new(AtomicBool::new(false)),
    };
    Router::new()
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/readyz", get(ready))
        .with_state(probe)
}

/// 200 once a snapshot has been built; else waits up to [`READY_WAIT`] for one (the
/// first build, or a fetch) and answers 503 if it has not come.
async fn ready(State(probe): State<Probe>) -> (StatusCode, &'static str) {
    if probe.ready.load(Ordering::Relaxed) {
        return (StatusCode::OK, "ready\n");
    }
    match tokio::time::timeout(READY_WAIT, probe.gateway.snapshot()).await {
        Ok(Ok(_)) => {
            probe.ready.store(true, Ordering::Relaxed);
            (StatusCode::OK, "ready\n")
        }
        Ok(Err(_)) | Err(_) => (StatusCode::SERVICE_UNAVAILABLE, "the catalogue is not loaded yet\n"),
    }
}
