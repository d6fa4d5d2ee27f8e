//! The routes of the catalogue API and their answers.

use std::future::Future;
use std::sync::Arc;

use axum::Extension;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::json;

use crate::access::{self, Access, Face, Principal};
use crate::api::{ErrorBody, Health, RunAnswer, RunRequest, SourceAnswer};
use crate::catalogue::Snapshot;
use crate::edge::body::{self, Bodies};
use crate::edge::observe::{self, RequestId};
use crate::edge::{self, Connections, probes};
use crate::error::Error;
use crate::gateway::{Caller, Gateway};
use crate::limits::RUN_BODY_BYTES;
use crate::operator::listing::Listings;
use tokio_util::sync::CancellationToken;

/// What every route reads: the gateway and the list answer kept for its snapshot.
#[derive(Debug, Clone)]
struct Api {
    gateway: Arc<Gateway>,
    listings: Arc<Listings>,
}

/// The API's routes over `gateway`.
pub fn router(gateway: Arc<Gateway>) -> Router {
    let api = Api {
        gateway,
        listings: Arc::new(Listings::default()),
    };
    Router::new()
        .route("/api/health", get(health))
        .route("/api/tools", get(list))
        .route("/api/tools/{slug}", get(manifest))
        .route("/api/tools/{slug}/source", get(source))
        .route("/api/tools/{slug}/run", post(run))
        .layer(DefaultBodyLimit::max(RUN_BODY_BYTES))
        .with_state(api)
}

/// Binds `listen`, announces the bound address on stderr (tests and scripts read it from
/// there when they asked for port 0), and serves under `connections` until `shutdown`
/// resolves; connections then finish the answer in flight and close.
pub async fn serve(
    gateway: Arc<Gateway>,
    listen: &str,
    connections: Connections,
    access: Access,
    shutdown: impl Future<Output = &'static str> + Send + 'static,
) -> Result<(), String> {
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .map_err(|e| format!("cannot listen on {listen}: {e}"))?;
    let addr = listener
        .local_addr()
        .map_err(|e| format!("cannot read the bound address: {e}"))?;
    let tools = gateway.snapshot().await.map(|s| s.tools().len()).unwrap_or(0);
    let bodies = Bodies::new(RUN_BODY_BYTES, false).with_grace(connections.body_timeout);
    let app = router(gateway.clone())
        .layer(axum::middleware::from_fn_with_state(bodies, body::limit))
        .merge(probes::router(gateway, access.shared().cloned()))
        .merge(observe::router())
        .layer(axum::middleware::from_fn_with_state(
            (access, Face::Catalogue),
            access::enforce,
        ))
        .layer(axum::middleware::from_fn(observe::observe));
    eprintln!(
        "toolgate catalogue API serving {} at http://{addr}/api",
        crate::plural::count(tools, "tool", "tools")
    );
    let stopping = CancellationToken::new();
    let stop = stopping.clone();
    tokio::spawn(async move {
        let signal = shutdown.await;
        tracing::debug!("{signal}: no new connections");
        stop.cancel();
    });
    edge::serve(listener, app, connections.within_file_limit(), stopping).await;
    Ok(())
}

type Gw = State<Api>;

async fn health(State(Api { gateway: gw, .. }): Gw) -> Response {
    match gw.snapshot().await {
        Ok(s) => Json(Health {
            ok: true,
            tools: s.tools().len(),
        })
        .into_response(),
        Err(e) => error(&e),
    }
}

/// The caller an API request acts as: its principal (whose tool policy, if any, limits
/// what it sees), or nobody in particular.
fn caller_of(principal: Option<Extension<Principal>>) -> Caller {
    match principal {
        Some(Extension(p)) => Caller::for_principal(p),
        None => Caller::new(),
    }
}

/// The list, its ETag and compressed copies made once per snapshot ([`Listings`]); a
/// principal with a tool policy gets the list of its view.
async fn list(State(api): Gw, principal: Option<Extension<Principal>>, headers: HeaderMap) -> Response {
    let snapshot = match api.gateway.snapshot_for(&caller_of(principal)).await {
        Ok(s) => s,
        Err(e) => return error(&e),
    };
    match api.listings.of(&snapshot).await {
        Ok(listing) => listing.answer(&headers),
        Err(e) => error(&e),
    }
}

async fn manifest(
    State(Api { gateway: gw, .. }): Gw,
    Path(slug): Path<String>,
    principal: Option<Extension<Principal>>,
) -> Response {
    match exact(&gw, &caller_of(principal), &slug).await {
        Ok((snapshot, i)) => Json(&snapshot.tools()[i].manifest).into_response(),
        Err(e) => error(&e),
    }
}

async fn source(
    State(Api { gateway: gw, .. }): Gw,
    Path(slug): Path<String>,
    principal: Option<Extension<Principal>>,
) -> Response {
    let (snapshot, i) = match exact(&gw, &caller_of(principal), &slug).await {
        Ok(found) => found,
        Err(e) => return error(&e),
    };
    let tool = &snapshot.tools()[i];
    match (&tool.code, tool.runtime()) {
        (Some(code), Some(runtime)) => Json(SourceAnswer {
            runtime,
            source: code.to_string(),
        })
        .into_response(),
        _ => error(&Error::NoSource {
            slug,
            remote_possible: false,
        }),
    }
}

async fn run(
    State(Api { gateway: gw, .. }): Gw,
    Path(slug): Path<String>,
    principal: Option<Extension<Principal>>,
    request: Option<Extension<RequestId>>,
    body: Bytes,
) -> Response {
    // A client that disconnects drops this future, and with it the run. Each API call is
    // its own caller, acting as the request's principal (whose limits admit the run):
    // nothing of it is kept for another.
    let caller = caller_of(principal).with_request(request.map(|Extension(id)| id.0));
    let (snapshot, i) = match exact(&gw, &caller, &slug).await {
        Ok(found) => found,
        Err(e) => return error(&e),
    };
    let entry = gw.catalogue_entry(snapshot.tools()[i].clone(), snapshot);
    // The principal's run rate is checked before the body is parsed, so a principal past
    // it costs no parsing, whatever it sends.
    let ticket = match gw.admit(&caller, &entry).await {
        Ok(ticket) => ticket,
        Err(e) => {
            gw.refuse(&caller, &entry, e.clone(), body.len());
            return error(&e);
        }
    };
    let params: RunRequest = if body.iter().all(u8::is_ascii_whitespace) {
        RunRequest { params: json!({}) }
    } else {
        match serde_json::from_slice(&body) {
            Ok(r) => r,
            Err(e) => {
                return error(&Error::BadRequest(format!(
                    "the body must be {{\"params\": {{...}}}}: {e}"
                )));
            }
        }
    };
    let run = gw
        .call_admitted(&caller, &entry, params.params, Ok(ticket), &CancellationToken::new())
        .await;
    let duration_ms = run.duration.as_millis() as u64;
    let output = run.answer.output;
    match run.answer.ended {
        Ok(result) => Json(RunAnswer {
            success: true,
            result,
            duration_ms,
            stdout: output.stdout,
            stderr: output.stderr,
        })
        .into_response(),
        Err(e) => error(&e),
    }
}

/// The API addresses tools by exact slug, among those `caller` may see; a miss names
/// the close matches.
async fn exact(gw: &Gateway, caller: &Caller, slug: &str) -> Result<(Arc<Snapshot>, usize), Error> {
    let snapshot = gw.snapshot_for(caller).await?;
    let index = snapshot.tools().iter().position(|t| t.slug() == slug);
    match index {
        Some(i) => Ok((snapshot, i)),
        None => Err(Error::ToolNotFound {
            slug: slug.to_owned(),
            candidates: snapshot.close_matches(slug),
        }),
    }
}

/// An error as its status and error body of `docs/reference/errors.md`. A missing runtime's search paths go to
/// this server's stderr only; the body names the runtime, not where it was looked for.
fn error(e: &Error) -> Response {
    if let Error::RuntimeUnavailable { .. } = e {
        tracing::warn!("{e}");
    }
    let mut answer = (status(e), Json(ErrorBody::from(e))).into_response();
    if let Some(wait) = e.retry_after() {
        answer
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(access::retry_after_secs(wait)));
    }
    answer
}

/// The HTTP status of each error: an exhaustive match (no catch-all), so a new variant
/// forces a decision here too. A status is 5xx or 429 if and only if the error is
/// retryable (a fault of this server, 500, is the one non-retryable 5xx), so an HTTP
/// client that retries on 5xx agrees with the body's `retryable`.
fn status(e: &Error) -> StatusCode {
    match e {
        Error::ToolNotFound { .. }
        | Error::AmbiguousSlug { .. }
        | Error::NoSource { .. }
        | Error::RunNotFound { .. }
        | Error::SessionNotFound { .. }
        | Error::SessionElsewhere { .. } => StatusCode::NOT_FOUND,
        Error::InvalidParams { .. }
        | Error::BadRequest(_)
        | Error::UnknownCommand { .. }
        | Error::BatchTooLarge { .. }
        | Error::BatchInvalid { .. } => StatusCode::BAD_REQUEST,
        Error::Execution { .. } | Error::ResourceLimit { .. } => StatusCode::UNPROCESSABLE_ENTITY,
        // The run depends on a runtime this server lacks: the request is fine, and the
        // same request here cannot succeed until the operator installs it.
        Error::RuntimeUnavailable { .. } => StatusCode::FAILED_DEPENDENCY,
        Error::SessionLimit { .. } | Error::SessionShare { .. } => StatusCode::CONFLICT,
        // The tool is held by its pin until an operator approves its new definition.
        Error::DefinitionChanged { .. } => StatusCode::CONFLICT,
        Error::Timeout { .. } => StatusCode::GATEWAY_TIMEOUT,
        Error::Unauthorized { .. } => StatusCode::UNAUTHORIZED,
        Error::Forbidden { .. } => StatusCode::FORBIDDEN,
        Error::RateLimited { .. } => StatusCode::TOO_MANY_REQUESTS,
        Error::ApiUnreachable { .. } => StatusCode::BAD_GATEWAY,
        // A federated MCP server behind this one, or the fleet's Redis, is down:
        // retryable, like a 503.
        Error::UpstreamUnavailable { .. } | Error::SharedUnavailable { .. } => StatusCode::SERVICE_UNAVAILABLE,
        // The catalogue API this server relays failed: retryable as it was.
        Error::Api { status, .. } if *status >= 500 => StatusCode::BAD_GATEWAY,
        Error::Api { .. } => StatusCode::FAILED_DEPENDENCY,
        // The caller went away; nginx's 499 "client closed request" says so, for logs.
        Error::Cancelled => StatusCode::from_u16(499).unwrap_or(StatusCode::BAD_REQUEST),
        Error::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    /// One error of every variant (the list `status` must decide for).
    fn every_error() -> Vec<Error> {
        let s = String::new;
        vec![
            Error::ToolNotFound {
                slug: s(),
                candidates: vec![],
            },
            Error::AmbiguousSlug {
                slug: s(),
                candidates: vec![],
            },
            Error::InvalidParams {
                slug: s(),
                violations: vec![],
            },
            Error::Cancelled,
            Error::UnknownCommand {
                command: s(),
                known: vec![],
            },
            Error::BadRequest(s()),
            Error::BatchTooLarge { count: 11, limit: 10 },
            Error::BatchInvalid { problems: vec![] },
            Error::Timeout {
                what: s(),
                after: Duration::from_secs(1),
            },
            Error::RateLimited {
                what: s(),
                retry_after: None,
            },
            Error::ApiUnreachable { url: s(), reason: s() },
            Error::Api {
                status: 503,
                message: s(),
            },
            Error::Api {
                status: 404,
                message: s(),
            },
            Error::Unauthorized {
                status: 401,
                message: s(),
            },
            Error::Forbidden {
                principal: s(),
                scope: "run",
            },
            Error::Execution { message: s() },
            Error::ResourceLimit { what: s(), limit: s() },
            Error::NoSource {
                slug: s(),
                remote_possible: false,
            },
            Error::RuntimeUnavailable {
                runtime: "nyxilum".into(),
                tried: vec!["/srv/NyxilumLang/Nx".into()],
            },
            Error::RunNotFound { id: s() },
            Error::SessionNotFound { id: s() },
            Error::SessionElsewhere { id: s() },
            Error::SessionLimit { limit: 5 },
            Error::SessionShare { share: 2, limit: 5 },
            Error::UpstreamUnavailable {
                server: s(),
                reason: s(),
            },
            Error::SharedUnavailable {
                redis: s(),
                reason: s(),
            },
            Error::Internal(s()),
        ]
    }

    #[test]
    fn a_status_says_retry_exactly_when_the_error_is_retryable() {
        for e in every_error() {
            let status = status(&e);
            let says_retry = status.is_server_error() || status == StatusCode::TOO_MANY_REQUESTS;
            let internal = matches!(e, Error::Internal(_));
            assert_eq!(says_retry, e.retryable() || internal, "{e:?} -> {status}");
            assert!(
                status.is_client_error() || status.is_server_error(),
                "{e:?} -> {status}"
            );
        }
    }

    #[test]
    fn a_missing_runtime_is_424_and_its_body_names_no_server_path() {
        let e = Error::RuntimeUnavailable {
            runtime: "nyxilum".into(),
            tried: vec!["/srv/NyxilumLang/Nx".into()],
        };
        assert_eq!(status(&e), StatusCode::FAILED_DEPENDENCY);
        let body = serde_json::to_string(&ErrorBody::from(&e)).unwrap();
        assert!(body.contains("\"code\":\"RUNTIME_UNAVAILABLE\""), "{body}");
        assert!(body.contains("\"retryable\":false"), "{body}");
        assert!(!body.contains("/srv/"), "{body}");
    }
}
