//! MCP over Streamable HTTP at `/mcp`: rmcp's server (sessions with `Mcp-Session-Id`, SSE
//! streams and `DELETE` for 2025-11-25 and older clients; stateless requests for
//! 2026-07-28) on axum, in front of the same [`Handler`] stdio uses.
//!
//! Each session gets its own handler ([`Handler::for_new_session`]): the gateway,
//! catalogue and advertised list are shared, the history and REPL sessions are not. A
//! stateless request is a session of one request, so it keeps no history.
//!
//! In front of rmcp: request bodies read within a size, a time rule and a shared budget,
//! and checked for nesting and size before rmcp parses them (`edge::body`); sessions
//! capped and owned where they are made (`sessions.rs`: beyond the global cap or the
//! principal's a new one is answered 503 with `Retry-After`; a request naming another
//! principal's session is answered 403, an unreadable `Mcp-Session-Id` 400; in a fleet,
//! a session another replica made is restored here from Redis for its owner, one the
//! fleet no longer holds is answered 404, and one whose owner Redis cannot tell 503
//! `SHARED_STATE_UNAVAILABLE`); and at shutdown (SIGTERM/SIGINT) the listener stops accepting, running
//! calls get [`HTTP_SHUTDOWN_GRACE`] to answer, then every session is ended (its calls
//! cancelled). Host and Origin are checked by rmcp against [`HttpSettings`]' allowlists
//! (loopback names by default, per the spec's DNS-rebinding rule); request bodies are
//! capped; SSE streams carry keep-alives.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;

use super::relay::Relay;
use super::sessions::{self, Admission, Owner, Refusal, Sessions};
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

use crate::access::Principal;
use crate::access::{self, Access, Face};
use crate::edge::body::{self, Bodies};
use crate::edge::{self, Connections, observe, probes};
use crate::limits::{HTTP_BODY_BYTES, HTTP_SESSION_RETRY_AFTER, HTTP_SHUTDOWN_GRACE, HTTP_SSE_KEEP_ALIVE};
use crate::mcp::Handler;
use crate::shared::events::Events;
use crate::shared::sessions::{AskedLevel, Ledger, Seen};

/// Hosts every gateway accepts: the loopback names, with or without a port.
const LOOPBACK_HOSTS: &[&str] = &["localhost", "127.0.0.1", "::1", "[::1]"];

/// Browser origins every gateway accepts: pages served from a loopback name.
const LOOPBACK_ORIGINS: &[&str] = &["http://localhost:*", "http://127.0.0.1:*", "http://[::1]:*"];

/// How the HTTP transport is set up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpSettings {
    /// The address to listen on (`127.0.0.1:8765`; port 0 picks a free port).
    pub listen: String,
    /// `Host` values accepted besides the loopback names (a public name, `name:port`).
    pub allowed_hosts: Vec<String>,
    /// `Origin` values accepted besides loopback pages (`https://app.example.com:443`).
    pub allowed_origins: Vec<String>,
    /// How long a session may sit unused before it ends and its state is freed.
    pub session_idle: Duration,
    /// Sessions alive at once; a new one beyond this is answered 503.
    pub max_sessions: usize,
    /// Sessions one principal may hold at once; a new one beyond this is answered 503.
    pub max_sessions_per_principal: usize,
    /// How long a request's SSE stream stays open while its call runs before the server
    /// closes it for the client to resume (SEP-1699 polling); `None`: until the answer.
    pub sse_poll: Option<Duration>,
}

/// Accepted range of `TOOLGATE_HTTP_SESSION_IDLE_MS`: a second to a day.
const SESSION_IDLE_MS_RANGE: std::ops::RangeInclusive<u64> = 1_000..=86_400_000;

/// Accepted range of `TOOLGATE_HTTP_SSE_POLL_MS`: a tenth of a second to an hour.
const SSE_POLL_MS_RANGE: std::ops::RangeInclusive<u64> = 100..=3_600_000;

/// Accepted range of `TOOLGATE_HTTP_MAX_SESSIONS`.
const MAX_SESSIONS_RANGE: std::ops::RangeInclusive<u64> = 1..=100_000;

impl HttpSettings {
    /// Checks the raw settings: `listen` must be `host:port` (`[v6]:port`), each allowed
    /// origin must name its scheme (`https://app.example.com:443`, or `null`), and the
    /// numbers must lie in their ranges. An error names the setting and what it accepts.
    pub fn parse(
        listen: &str,
        hosts: &str,
        origins: &str,
        idle_ms: u64,
        max_sessions: u64,
        per_principal: Option<u64>,
    ) -> Result<HttpSettings, String> {
        let per_principal = per_principal.unwrap_or((max_sessions / 8).max(1));
        let listen = listen.trim();
        let port = listen.rsplit_once(':').map(|(_, p)| p.parse::<u16>());
        if !matches!(port, Some(Ok(_))) {
            return Err(format!(
                "TOOLGATE_HTTP \"{listen}\" must be host:port (127.0.0.1:8765, [::1]:8765; port 0 picks a free one)"
            ));
        }
        let list = |text: &str| -> Vec<String> {
            text.split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .collect()
        };
        let allowed_origins = list(origins);
        if let Some(bad) = allowed_origins
            .iter()
            .find(|o| *o != "null" && !o.starts_with("http://") && !o.starts_with("https://"))
        {
            return Err(format!(
                "TOOLGATE_HTTP_ALLOWED_ORIGINS: \"{bad}\" must name its scheme, as a browser sends it (https://app.example.com:443, http://host:*), or be null"
            ));
        }
        for (name, value, range) in [
            ("TOOLGATE_HTTP_SESSION_IDLE_MS", idle_ms, SESSION_IDLE_MS_RANGE),
            ("TOOLGATE_HTTP_MAX_SESSIONS", max_sessions, MAX_SESSIONS_RANGE),
            (
                "TOOLGATE_HTTP_MAX_SESSIONS_PER_PRINCIPAL",
                per_principal,
                MAX_SESSIONS_RANGE,
            ),
        ] {
            if !range.contains(&value) {
                return Err(format!("{name}={value} is outside {}..={}", range.start(), range.end()));
            }
        }
        Ok(HttpSettings {
            listen: listen.to_owned(),
            allowed_hosts: list(hosts),
            allowed_origins,
            session_idle: Duration::from_millis(idle_ms),
            max_sessions: usize::try_from(max_sessions).unwrap_or(usize::MAX),
            max_sessions_per_principal: usize::try_from(per_principal).unwrap_or(usize::MAX),
            sse_poll: None,
        })
    }

    /// These settings closing a request's stream after `poll_ms` while its call runs
    /// (`TOOLGATE_HTTP_SSE_POLL_MS`; `None` leaves streams open until their answer). An
    /// error names the setting and its range.
    pub fn with_sse_poll(self, poll_ms: Option<u64>) -> Result<HttpSettings, String> {
        let Some(ms) = poll_ms else { return Ok(self) };
        if !SSE_POLL_MS_RANGE.contains(&ms) {
            return Err(format!(
                "TOOLGATE_HTTP_SSE_POLL_MS={ms} is outside {}..={}",
                SSE_POLL_MS_RANGE.start(),
                SSE_POLL_MS_RANGE.end()
            ));
        }
        Ok(HttpSettings {
            sse_poll: Some(Duration::from_millis(ms)),
            ..self
        })
    }
}

/// Why the HTTP server could not start serving.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unbound {
    /// The address cannot be listened on (taken, not this machine's, no permission).
    #[error("cannot listen on {listen}: {reason}")]
    Listen {
        /// The address asked for.
        listen: String,
        /// What the system said.
        reason: String,
    },
    /// The bound address cannot be read back.
    #[error("cannot read the bound address: {0}")]
    Address(String),
}

/// Serves `handler` over HTTP per `settings` until `shutdown` resolves, then shuts down
/// as the module says. The bound address is printed on stderr.
pub async fn serve(
    handler: Handler,
    settings: &HttpSettings,
    connections: Connections,
    access: Access,
    shutdown: impl Future<Output = &'static str> + Send + 'static,
) -> Result<(), Unbound> {
    let gateway = handler.gateway();
    let probes = probes::router(gateway.clone(), access.shared().cloned());
    tokio::spawn(async move { gateway.prepare().await });
    let listener = tokio::net::TcpListener::bind(&settings.listen)
        .await
        .map_err(|e| Unbound::Listen {
            listen: settings.listen.clone(),
            reason: e.to_string(),
        })?;
    let addr = listener.local_addr().map_err(|e| Unbound::Address(e.to_string()))?;
    // A session idle this long is ended by rmcp; its handler (history, REPL ids) goes
    // with it.
    let mut manager = LocalSessionManager::default();
    manager.session_config.keep_alive = Some(settings.session_idle);
    // A fleet's replica keeps its SSE events in Redis, so a stream resumes anywhere.
    if let Some(shared) = access.shared() {
        manager = manager.with_event_store(Arc::new(Events::new(shared.clone())));
    }
    let sessions =
        Sessions::new(manager, settings.max_sessions, settings.max_sessions_per_principal).polling(settings.sse_poll);
    // A fleet's replica: sessions (owner, `initialize`, count per principal) in Redis,
    // living as long as a session may idle.
    let ledger = access
        .shared()
        .map(|shared| Arc::new(Ledger::new(shared.clone(), settings.session_idle)));
    // ... renewed in the round trip that admits each request naming one.
    if let Some(ledger) = &ledger {
        access.limiter().renewing(ledger.clone());
    }
    // A fleet's replica: each session's notifications reach its standalone stream on
    // whichever replica holds it.
    let sessions = Arc::new(match (&ledger, access.shared()) {
        (Some(ledger), Some(shared)) => sessions.in_fleet(ledger.clone(), Relay::start(shared.clone())),
        _ => sessions,
    });
    let ended = CancellationToken::new();
    let config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(
            LOOPBACK_HOSTS
                .iter()
                .map(|h| (*h).to_owned())
                .chain(settings.allowed_hosts.iter().cloned()),
        )
        .with_allowed_origins(
            LOOPBACK_ORIGINS
                .iter()
                .map(|o| (*o).to_owned())
                .chain(settings.allowed_origins.iter().cloned()),
        )
        .enforce_origin_validation()
        .with_max_request_body_bytes(HTTP_BODY_BYTES)
        .with_sse_keep_alive(Some(HTTP_SSE_KEEP_ALIVE))
        .with_cancellation_token(ended.child_token());
    // A session this replica has not seen is restored from the fleet's record of it.
    let mut config = config;
    if let Some(ledger) = ledger {
        config.session_store = Some(ledger);
    }
    // A fleet's replica: each session keeps its history in Redis too, as long as the
    // session may sit idle.
    let template = match access.shared() {
        Some(shared) => handler.with_shelves(shared.clone(), settings.session_idle),
        None => handler,
    };
    // The factory runs inside the request (for a session's `initialize` or a stateless
    // request), so the handler's caller belongs to the request's principal from the start.
    let service = StreamableHttpService::new(
        move || Ok(template.for_new_session(sessions::principal())),
        sessions.clone(),
        config,
    );
    let bodies = Bodies::new(HTTP_BODY_BYTES, true).with_grace(connections.body_timeout);
    // `/metrics` is held to the Host rule rmcp applies to `/mcp`.
    let hosts: Arc<[String]> = LOOPBACK_HOSTS
        .iter()
        .map(|h| (*h).to_owned())
        .chain(settings.allowed_hosts.iter().cloned())
        .collect();
    let app = Router::new()
        .nest_service("/mcp", service)
        .layer(middleware::from_fn_with_state(sessions, own_sessions))
        .layer(middleware::from_fn_with_state(bodies, body::limit))
        .merge(probes)
        .merge(observe::router().layer(middleware::from_fn_with_state(hosts, check_host)))
        .layer(middleware::from_fn_with_state((access, Face::Mcp), access::enforce))
        .layer(middleware::from_fn(observe::observe));
    eprintln!("toolgate MCP over Streamable HTTP at http://{addr}/mcp");
    let stopping = CancellationToken::new();
    let server = edge::serve(listener, app, connections.within_file_limit(), stopping.clone());
    let mut server = std::pin::pin!(server);
    tokio::select! {
        () = &mut server => return Ok(()),
        signal = shutdown => tracing::debug!("{signal}: no new connections; running calls have {HTTP_SHUTDOWN_GRACE:?}"),
    }
    stopping.cancel();
    if tokio::time::timeout(HTTP_SHUTDOWN_GRACE, &mut server).await.is_err() {
        // Calls still running (and open SSE streams): end every session, which cancels
        // their calls, then give the connections a moment to close.
        ended.cancel();
        let _ = tokio::time::timeout(HTTP_SHUTDOWN_GRACE, &mut server).await;
    }
    Ok(())
}

/// Answers 403 to a request whose `Host` is not one of `hosts` (a name alone allows it on
/// any port; `name:port` on that port): a page elsewhere whose name resolves to this
/// server (DNS rebinding) sends its own name.
async fn check_host(State(hosts): State<Arc<[String]>>, request: Request, next: Next) -> Response {
    let host = request.headers().get(header::HOST).and_then(|h| h.to_str().ok());
    if host.is_some_and(|host| host_allowed(host, &hosts)) {
        return next.run(request).await;
    }
    (
        StatusCode::FORBIDDEN,
        "this Host is not one this server answers to (TOOLGATE_HTTP_ALLOWED_HOSTS)",
    )
        .into_response()
}

/// Returns true if and only if `host` (a `Host` header: `name`, `name:port`,
/// `[v6]:port`) matches an entry of `allowed` by name alone or with its port.
fn host_allowed(host: &str, allowed: &[String]) -> bool {
    let host = host.trim();
    let name = match host.rsplit_once(':') {
        Some((name, port)) if !name.is_empty() && port.bytes().all(|b| b.is_ascii_digit()) && !name.ends_with(':') => {
            name
        }
        _ => host,
    };
    allowed
        .iter()
        .any(|a| a.eq_ignore_ascii_case(host) || a.eq_ignore_ascii_case(name))
}

/// Sessions as `sessions.rs` says: a request naming a session must come from its owner
/// (and name it readably); the request runs as its principal's [`Admission`], so a
/// session it makes is capped and owned; a refusal by cap is answered 503 with
/// `Retry-After`. A session's `DELETE` that rmcp accepted is answered 200.
async fn own_sessions(State(sessions): State<Arc<Sessions>>, mut request: Request, next: Next) -> Response {
    let principal = request.extensions().get::<Principal>().cloned();
    if let Some(value) = request.headers().get("mcp-session-id") {
        let Ok(id) = value.to_str() else {
            return (
                StatusCode::BAD_REQUEST,
                "Mcp-Session-Id must be visible ASCII, as the server gave it",
            )
                .into_response();
        };
        let seen = request.extensions().get::<Seen>();
        match sessions.owner(id, seen).await {
            Ok(Owner::Principal(owner, _)) if principal.as_ref().is_some_and(|p| p.id != owner) => {
                crate::metrics::get().edge_refused("session_owner");
                return (
                    StatusCode::FORBIDDEN,
                    "this MCP session belongs to another principal; start a session of your own",
                )
                    .into_response();
            }
            // The handler honours the log level the session asked for on any replica.
            Ok(Owner::Principal(_, Some(level))) => {
                request.extensions_mut().insert(AskedLevel(level));
            }
            Ok(Owner::Principal(_, None) | Owner::Unrecorded) => {}
            // As rmcp answers a session it does not know: the client starts a new one.
            Ok(Owner::Gone) => return (StatusCode::NOT_FOUND, "Not Found: Session not found").into_response(),
            Err(e) => return shared_unavailable(&e.to_string()),
        }
    }
    let ending = request.method() == Method::DELETE;
    let admission = Admission::new(principal);
    let mut answer = sessions::admit(admission.clone(), next.run(request)).await;
    if let Some(refusal) = admission.refused() {
        let (reason, message) = match refusal {
            Refusal::Global(max) => (
                "sessions_global",
                format!("toolgate serves at most {max} MCP sessions at once; retry when one has ended"),
            ),
            Refusal::Principal(max) => (
                "sessions_principal",
                format!(
                    "toolgate serves at most {max} MCP sessions of one caller at once; end one (DELETE) or retry when one has expired"
                ),
            ),
            Refusal::Shared(reason) => return shared_unavailable(&reason),
        };
        crate::metrics::get().edge_refused(reason);
        let mut answer = (StatusCode::SERVICE_UNAVAILABLE, message).into_response();
        answer.headers_mut().insert(
            header::RETRY_AFTER,
            HeaderValue::from(HTTP_SESSION_RETRY_AFTER.as_secs()),
        );
        return answer;
    }
    // rmcp answers a session's DELETE 202; the Python SDK takes anything but 200 or 204
    // for a failed termination and says so on its log. The session is gone either way.
    if ending && answer.status() == StatusCode::ACCEPTED {
        *answer.status_mut() = StatusCode::OK;
    }
    answer
}

/// The answer to a session request a replica cannot serve while the fleet's Redis cannot
/// say who owns the session or how many a caller has: 503, retryable, naming why.
fn shared_unavailable(reason: &str) -> Response {
    crate::metrics::get().edge_refused("sessions_shared");
    let mut answer = (
        StatusCode::SERVICE_UNAVAILABLE,
        format!("SHARED_STATE_UNAVAILABLE: the fleet's sessions cannot be read now ({reason}); retry"),
    )
        .into_response();
    answer.headers_mut().insert(
        header::RETRY_AFTER,
        HeaderValue::from(HTTP_SESSION_RETRY_AFTER.as_secs()),
    );
    answer
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_host_matches_by_name_or_name_and_port() {
        let allowed: Vec<String> = ["localhost", "127.0.0.1", "[::1]", "gw.example.com:443"]
            .iter()
            .map(|h| (*h).to_owned())
            .collect();
        for ok in [
            "localhost",
            "localhost:8765",
            "127.0.0.1:1",
            "[::1]:80",
            "gw.example.com:443",
        ] {
            assert!(host_allowed(ok, &allowed), "{ok}");
        }
        for refused in [
            "evil.example",
            "gw.example.com",
            "gw.example.com:80",
            "127.0.0.1.evil:80",
            "::1",
        ] {
            assert!(!host_allowed(refused, &allowed), "{refused}");
        }
    }

    #[test]
    fn settings_are_checked_and_say_what_they_accept() {
        let ok = HttpSettings::parse("127.0.0.1:0", "gw.example.com, gw.example.com:443", "", 60_000, 8, None);
        let ok = ok.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(ok.allowed_hosts, ["gw.example.com", "gw.example.com:443"]);
        assert_eq!(ok.max_sessions, 8);
        assert_eq!(ok.max_sessions_per_principal, 1, "an eighth, at least one");
        let no_port = HttpSettings::parse("127.0.0.1", "", "", 60_000, 8, None)
            .err()
            .unwrap_or_default();
        assert!(no_port.contains("host:port"), "{no_port}");
        let bad_origin = HttpSettings::parse("[::1]:8765", "", "app.example.com", 60_000, 8, None)
            .err()
            .unwrap_or_default();
        assert!(bad_origin.contains("scheme"), "{bad_origin}");
        let zero = HttpSettings::parse("127.0.0.1:1", "", "", 60_000, 0, None)
            .err()
            .unwrap_or_default();
        assert!(zero.contains("TOOLGATE_HTTP_MAX_SESSIONS"), "{zero}");
        assert_eq!(ok.sse_poll, None, "streams stay open until their answer by default");
        let polled = ok.clone().with_sse_poll(Some(1_500)).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(polled.sse_poll, Some(Duration::from_millis(1_500)));
        let too_often = ok.with_sse_poll(Some(10)).err().unwrap_or_default();
        assert!(too_often.contains("TOOLGATE_HTTP_SSE_POLL_MS=10"), "{too_often}");
    }
}
