//! Who may call what, the same in front of both HTTP faces: API keys from a keys file
//! (`keys.rs`), the principal each request acts as, and one axum middleware that
//! refuses a request without the scope its route needs.
//!
//! A request names its key as `Authorization: Bearer KEY`. With no keys file, every
//! caller is anonymous (allowed on loopback, or anywhere with `--allow-anonymous`);
//! with one, a request without a key is anonymous only if `--allow-anonymous` is given,
//! else 401, and an unknown key is 401 either way. Anonymous callers may search and run
//! catalogue tools, and without a keys file run code too. On `catalogue serve` listing
//! and schemas need `search`, a run or a tool's source needs `run`; on `--http` any valid
//! key admits a request to `/mcp`, and each call is then held to its scope by the
//! gateway (`runtimes` for `run_javascript`/`run_typescript`/`nyxilum_*`, `run` for
//! catalogue and upstream tools) and the meta-tool (`search` for search, list,
//! schema). Probes and `/api/health` are open; `/metrics` needs `admin`.
//!
//! Every admitted request then draws from its principal's request bucket (`rate.rs`);
//! past it the answer is 429 with `Retry-After`. A replica of a fleet whose Redis cannot
//! say answers 503 `SHARED_STATE_UNAVAILABLE` with `Retry-After: 1` (`/metrics` is
//! served all the same). Runs draw from their own bucket in the
//! gateway, through the same [`Limiter`].
//!
//! The keys file is read again when it changes (checked every [`KEYS_POLL`]) or on
//! SIGHUP; a file that no longer reads keeps the keys in force, said on stderr. Nothing
//! of a session is tied to a key, so a reload drops none.
//!
//! With OAuth configured (`oauth/`), a bearer value shaped like a JWT is checked as one
//! and acts as `oauth:SUB` with its token's scopes; any other value is looked up as a
//! key. Both may be in force at once. Then 401 and 403 answers carry a
//! `WWW-Authenticate: Bearer` challenge naming the protected-resource metadata, which
//! this layer serves itself, unauthenticated.

pub mod keys;
pub mod oauth;
pub mod rate;

use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::SystemTime;

use axum::extract::{Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use tracing::Instrument;

use crate::api::ErrorBody;
use crate::limits::KEYS_POLL;
use crate::patterns::ToolPatterns;
use crate::shared::Shared;
pub use keys::{Key, Keys, Scope};
use oauth::resource::{self, Challenge};
use oauth::{OAuth, PRINCIPAL_PREFIX, Rejection};
pub use rate::{Limiter, Rates};

/// Which face a request arrived on: each has its own rule for the scope a route needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Face {
    /// `catalogue serve`.
    Catalogue,
    /// `--http` (MCP at `/mcp`).
    Mcp,
}

/// The principal a request acts as, in its extensions once admitted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    /// The key's id, or `anonymous`; never the key.
    pub id: Arc<str>,
    /// What it may do.
    pub scopes: Vec<Scope>,
    /// Runs a minute it may start.
    pub per_minute: u32,
    /// Returns true if and only if no key was presented.
    pub anonymous: bool,
    /// The client's address (anonymous callers are told apart by it).
    pub address: Option<std::net::IpAddr>,
    /// The only tools it may see and run (its key's `tools`, its token's mapped scopes);
    /// `None`: every tool its scopes allow.
    pub tools: Option<Arc<ToolPatterns>>,
}

impl Principal {
    /// Returns true if and only if this principal holds `scope`.
    pub fn may(&self, scope: Scope) -> bool {
        self.scopes.contains(&scope)
    }

    /// Returns true if and only if its tool policy admits the tool named `name`.
    pub fn sees(&self, name: &str) -> bool {
        self.tools.as_ref().is_none_or(|p| p.admits(name))
    }
}

/// The keys in force and the rule for callers without one. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Access {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    file: Option<PathBuf>,
    keys: RwLock<Arc<Keys>>,
    allow_anonymous: bool,
    limiter: Arc<Limiter>,
    oauth: Option<OAuth>,
    shared: Option<Shared>,
}

/// Why a request's credentials were refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Refused {
    /// A value that is no key of the keys file (nor a JWT, with OAuth on).
    UnknownKey,
    /// A JWT that did not pass.
    Token(Rejection),
}

/// Anonymous callers would be served on an address that is not loopback, with no keys,
/// no OAuth and no `--allow-anonymous`: the server refuses to start.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "refusing to serve {listen} without authentication: it is not a loopback address, so anyone who can reach it could run code here. Name a keys file (TOOLGATE_KEYS_FILE; `toolgate keys new` makes one), configure OAuth (TOOLGATE_OAUTH_JWKS) or pass --allow-anonymous to serve anonymous callers on purpose"
)]
pub struct Exposed {
    /// The address it would listen on.
    pub listen: String,
}

impl Access {
    /// Reads the keys file at `file`, when one is named; `allow_anonymous` admits callers
    /// without a key; bearer JWTs are checked by `oauth` when given; every principal is
    /// held to `rates`, across the fleet when `shared` names its Redis.
    pub fn open(
        file: Option<&Path>,
        allow_anonymous: bool,
        rates: Rates,
        oauth: Option<OAuth>,
        shared: Option<Shared>,
    ) -> Result<Access, String> {
        let keys = match file {
            Some(path) => Keys::read(path).map_err(|e| e.to_string())?,
            None => Keys::default(),
        };
        Ok(Access {
            inner: Arc::new(Inner {
                file: file.map(Path::to_path_buf),
                keys: RwLock::new(Arc::new(keys)),
                allow_anonymous,
                limiter: Arc::new(match &shared {
                    Some(shared) => Limiter::shared(rates, shared.clone()),
                    None => Limiter::new(rates),
                }),
                oauth,
                shared,
            }),
        })
    }

    /// The buckets and run places of this server: the gateway admits runs through it.
    pub fn limiter(&self) -> Arc<Limiter> {
        self.inner.limiter.clone()
    }

    /// The fleet's Redis, when this server is one replica of several (`TOOLGATE_REDIS`).
    pub fn shared(&self) -> Option<&Shared> {
        self.inner.shared.as_ref()
    }

    /// Returns true if and only if callers are authenticated (a keys file or OAuth is in
    /// force).
    pub fn is_configured(&self) -> bool {
        self.inner.file.is_some() || self.inner.oauth.is_some()
    }

    /// Refuses, with the reason, to serve anonymous callers on `listen` when it is not a
    /// loopback address and neither keys nor `--allow-anonymous` were given.
    pub fn check_exposure(&self, listen: &str) -> Result<(), Exposed> {
        if self.is_configured() || self.inner.allow_anonymous || is_loopback(listen) {
            return Ok(());
        }
        Err(Exposed {
            listen: listen.to_owned(),
        })
    }

    /// Re-reads the keys file when it changes or on SIGHUP, and forgets refilled rate
    /// buckets, for as long as the process runs.
    pub fn watch(&self) {
        self.inner.limiter.spawn_pruning();
        let Some(path) = self.inner.file.clone() else { return };
        let access = self.clone();
        tokio::spawn(async move {
            use tokio::signal::unix::{SignalKind, signal};
            let mut hangup = signal(SignalKind::hangup()).ok();
            let mut seen = stamp(&path);
            let mut every = tokio::time::interval(KEYS_POLL);
            loop {
                let hup = async {
                    match hangup.as_mut() {
                        Some(h) => h.recv().await,
                        None => std::future::pending().await,
                    }
                };
                tokio::select! {
                    _ = hup => {}
                    _ = every.tick() => {
                        let now = stamp(&path);
                        if now == seen {
                            continue;
                        }
                        seen = now;
                    }
                }
                access.reload(&path);
            }
        });
    }

    fn reload(&self, path: &Path) {
        match Keys::read(path) {
            Ok(keys) => {
                let read = crate::plural::count(keys.keys.len(), "key", "keys");
                tracing::info!("keys file {} read again: {read}", path.display());
                *self.inner.keys.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(keys);
            }
            Err(e) => tracing::warn!("{e}; the keys read before stay in force"),
        }
    }

    /// Who a request from `address` presenting `bearer` acts as: `Ok(None)` when
    /// anonymous callers are not admitted and it presented nothing, `Err` for a key this
    /// server does not know or a token that does not pass.
    async fn principal(&self, address: Option<IpAddr>, bearer: Option<&str>) -> Result<Option<Principal>, Refused> {
        match bearer {
            Some(presented) if self.is_configured() => {
                if let Some(oauth) = &self.inner.oauth
                    && oauth::token::looks_like_jwt(presented)
                {
                    let verified = oauth.verify(presented).await.map_err(Refused::Token)?;
                    return Ok(Some(Principal {
                        id: Arc::from(format!("{PRINCIPAL_PREFIX}{}", verified.subject)),
                        scopes: verified.scopes,
                        per_minute: oauth.settings().per_minute,
                        anonymous: false,
                        address,
                        tools: verified.tools,
                    }));
                }
                let keys = self.inner.keys.read().unwrap_or_else(|p| p.into_inner()).clone();
                let key = keys.find(presented).ok_or(Refused::UnknownKey)?;
                Ok(Some(Principal {
                    id: Arc::from(key.id.as_str()),
                    scopes: key.scopes.clone(),
                    per_minute: key.per_minute,
                    anonymous: false,
                    address,
                    tools: key.patterns.clone(),
                }))
            }
            _ if self.is_configured() && !self.inner.allow_anonymous => Ok(None),
            // Without keys, anonymous callers are everyone (on loopback, or as the operator
            // allowed): they may also run code where the operator enabled the runtimes.
            // With keys, an anonymous caller never may.
            _ => Ok(Some(Principal {
                id: Arc::from("anonymous"),
                scopes: if self.is_configured() {
                    vec![Scope::Search, Scope::Run]
                } else {
                    vec![Scope::Search, Scope::Run, Scope::Runtimes]
                },
                per_minute: self.inner.limiter.rates().anonymous_per_minute,
                anonymous: true,
                address,
                tools: None,
            })),
        }
    }
}

/// The client's address and the bearer value `request` presents, if any.
fn credentials(request: &Request) -> (Option<IpAddr>, Option<String>) {
    let address = request
        .extensions()
        .get::<axum::extract::ConnectInfo<SocketAddr>>()
        .map(|c| c.0.ip());
    let bearer = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer ").or_else(|| v.strip_prefix("bearer ")))
        .map(|v| v.trim().to_owned());
    (address, bearer)
}

/// What a route needs on `face`: `None` for routes open to everyone (probes, health).
fn needs(face: Face, method: &Method, path: &str) -> Option<Need> {
    if matches!(path, "/healthz" | "/readyz" | "/api/health") {
        return None;
    }
    if path == "/metrics" {
        return Some(Need::Admin);
    }
    Some(match face {
        Face::Mcp => Need::Anyone,
        Face::Catalogue if *method == Method::POST || path.ends_with("/source") => Need::Scope(Scope::Run),
        Face::Catalogue => Need::Scope(Scope::Search),
    })
}

/// What a route asks of its caller.
#[derive(Debug, Clone, Copy)]
enum Need {
    /// Any admitted principal.
    Anyone,
    /// A principal holding this scope.
    Scope(Scope),
    /// `admin`, or, with no keys file, any caller from a loopback address.
    Admin,
}

/// The middleware: admits `request` as its principal (put in its extensions) or answers
/// 401/403 with the error body of `docs/reference/errors.md`, or 429 with `Retry-After` past the principal's
/// request rate. With OAuth on, it also serves the protected-resource metadata, and its
/// 401s and 403s carry a `WWW-Authenticate` challenge naming it.
pub async fn enforce(State((access, face)): State<(Access, Face)>, mut request: Request, next: Next) -> Response {
    let oauth = access.inner.oauth.as_ref();
    let base = oauth.and_then(|o| resource::base(o.settings(), request.headers()));
    if let Some(oauth) = oauth
        && resource::is_metadata_path(face, request.uri().path())
    {
        return metadata(face, oauth, base.as_deref(), request.method());
    }
    let Some(need) = needs(face, request.method(), request.uri().path()) else {
        return next.run(request).await;
    };
    // The challenge of a refusal: with OAuth, one naming the metadata; else the plain
    // Bearer challenge on a 401.
    let metadata_url = base.as_deref().map(|b| resource::metadata_url(face, b));
    let challenge = |c: Challenge| match oauth {
        Some(_) => Some(resource::www_authenticate(c, metadata_url.as_deref())),
        None if c == Challenge::Missing || matches!(c, Challenge::Invalid(_)) => {
            Some(HeaderValue::from_static("Bearer realm=\"toolgate\""))
        }
        None => None,
    };
    let (address, bearer) = credentials(&request);
    let principal = match access.principal(address, bearer.as_deref()).await {
        Ok(Some(p)) => p,
        Ok(None) => {
            let message = match oauth {
                Some(_) => "this server needs an OAuth access token (or an API key): send Authorization: Bearer TOKEN",
                None => "this server needs an API key: send Authorization: Bearer KEY",
            };
            let challenge = challenge(Challenge::Missing);
            return refuse(StatusCode::UNAUTHORIZED, "UNAUTHORIZED", message, challenge);
        }
        Err(Refused::UnknownKey) => {
            let message = "the API key is not known to this server";
            let challenge = challenge(Challenge::Invalid(message));
            return refuse(StatusCode::UNAUTHORIZED, "UNAUTHORIZED", message, challenge);
        }
        Err(Refused::Token(why)) => {
            let challenge = challenge(Challenge::Invalid(why.describe()));
            return refuse(StatusCode::UNAUTHORIZED, "UNAUTHORIZED", why.describe(), challenge);
        }
    };
    // Without keys, a loopback caller may read `/metrics` only under a loopback Host: a
    // page from elsewhere whose name resolves to 127.0.0.1 (DNS rebinding) sends its
    // own name.
    let loopback_alone = !access.is_configured()
        && principal.address.is_some_and(|a| a.is_loopback())
        && loopback_host(request.headers());
    let lacking = match need {
        Need::Scope(scope) if !principal.may(scope) => Some(scope),
        Need::Admin if !principal.may(Scope::Admin) && !loopback_alone => Some(Scope::Admin),
        _ => None,
    };
    if let Some(scope) = lacking {
        let holder = if principal.id.starts_with(PRINCIPAL_PREFIX) {
            "token of"
        } else {
            "key"
        };
        let message = format!(
            "the {holder} \"{}\" lacks the scope \"{}\" this call needs",
            principal.id.strip_prefix(PRINCIPAL_PREFIX).unwrap_or(&principal.id),
            scope.name()
        );
        let challenge = challenge(Challenge::Scope(scope));
        return refuse(StatusCode::FORBIDDEN, "FORBIDDEN", &message, challenge);
    }
    // A replica renews the MCP session a request names in the round trip that admits it.
    let session = match face {
        Face::Mcp => request
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned),
        Face::Catalogue => None,
    };
    let admitted = match access.inner.limiter.request(&principal, session.as_deref()).await {
        Ok(seen) => {
            if let Some(seen) = seen {
                request.extensions_mut().insert(seen);
            }
            Ok(())
        }
        Err(rate::Refused::Wait(wait)) => Err(wait),
        // `/metrics` is read while Redis is down too: it is how an operator sees it is.
        Err(rate::Refused::Unavailable(_)) if matches!(need, Need::Admin) => Ok(()),
        Err(rate::Refused::Unavailable(e)) => {
            let mut answer = refuse(StatusCode::SERVICE_UNAVAILABLE, e.code(), &e.to_string(), None);
            answer.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(1));
            return answer;
        }
    };
    if let Err(wait) = admitted {
        crate::metrics::get().rate_limited("requests");
        let message = format!(
            "\"{}\" may make {} a minute and has used them; retry after {} s",
            principal.id,
            crate::plural::count(
                access.inner.limiter.rates().requests_per_minute as usize,
                "request",
                "requests"
            ),
            retry_after_secs(wait)
        );
        let mut answer = refuse(StatusCode::TOO_MANY_REQUESTS, "RATE_LIMITED", &message, None);
        answer
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(retry_after_secs(wait)));
        return answer;
    }
    // Every line logged while the request is answered names its principal (the key's
    // id, never the key).
    // At warn level, so the default filter (warnings) keeps it on the lines it passes.
    let span = tracing::warn_span!(target: crate::telemetry::exported::LOG_ONLY, "request", principal = %principal.id);
    request.extensions_mut().insert(principal.clone());
    let mut answer = next.run(request).instrument(span).await;
    // For the access log line, written outside this layer.
    answer.extensions_mut().insert(principal);
    answer
}

/// The protected-resource metadata of `face` (RFC 9728), open to everyone and to pages
/// of any origin (it is public, and browser-based MCP clients read it cross-origin).
fn metadata(face: Face, oauth: &OAuth, base: Option<&str>, method: &Method) -> Response {
    let cors = [
        (header::ACCESS_CONTROL_ALLOW_ORIGIN, "*"),
        (header::ACCESS_CONTROL_ALLOW_METHODS, "GET, OPTIONS"),
        (header::ACCESS_CONTROL_ALLOW_HEADERS, "*"),
    ];
    if *method == Method::OPTIONS {
        return (StatusCode::NO_CONTENT, cors).into_response();
    }
    if *method != Method::GET && *method != Method::HEAD {
        return (StatusCode::METHOD_NOT_ALLOWED, [(header::ALLOW, "GET, OPTIONS")]).into_response();
    }
    let Some(base) = base else {
        let message = "cannot tell this server's URL: send a Host header, or set TOOLGATE_PUBLIC_URL";
        return refuse(StatusCode::BAD_REQUEST, "BAD_REQUEST", message, None);
    };
    (cors, axum::Json(resource::document(face, base, oauth.settings()))).into_response()
}

/// A wait as the whole seconds of a `Retry-After` header: rounded up, at least 1 (the
/// rule error messages state the wait by too).
pub use crate::error::retry_after_secs;

/// An error answer with the error body of `docs/reference/errors.md`, and `challenge` as its `WWW-Authenticate`.
fn refuse(status: StatusCode, code: &str, message: &str, challenge: Option<HeaderValue>) -> Response {
    let body = ErrorBody {
        success: false,
        error: message.to_owned(),
        code: code.to_owned(),
        retryable: status == StatusCode::TOO_MANY_REQUESTS || status == StatusCode::SERVICE_UNAVAILABLE,
        candidates: Vec::new(),
        runtime: None,
    };
    let mut answer = (status, axum::Json(body)).into_response();
    if let Some(challenge) = challenge {
        answer.headers_mut().insert(header::WWW_AUTHENTICATE, challenge);
    }
    answer
}

/// Returns true if and only if the request's `Host` names a loopback host (with or
/// without a port).
fn loopback_host(headers: &axum::http::HeaderMap) -> bool {
    headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .is_some_and(|host| is_loopback(&format!("{host}:0")) || is_loopback(host))
}

/// Returns true if and only if `listen` (`host:port`) names a loopback host.
fn is_loopback(listen: &str) -> bool {
    let host = listen.rsplit_once(':').map_or(listen, |(h, _)| h);
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost") || host.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// The file's modification time and length, to tell a change.
fn stamp(path: &Path) -> Option<(SystemTime, u64)> {
    let meta = std::fs::metadata(path).ok()?;
    Some((meta.modified().ok()?, meta.len()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_addresses_are_told_from_the_rest() {
        for listen in ["127.0.0.1:0", "localhost:8080", "[::1]:8765", "127.5.6.7:1"] {
            assert!(is_loopback(listen), "{listen}");
        }
        for listen in ["0.0.0.0:8080", "[::]:1", "10.0.0.1:80", "example.com:80"] {
            assert!(!is_loopback(listen), "{listen}");
        }
        let open = Access::open(None, false, Rates::default(), None, None).unwrap();
        assert!(open.check_exposure("127.0.0.1:1").is_ok());
        let refused = open.check_exposure("0.0.0.0:1").unwrap_err().to_string();
        assert!(
            refused.contains("--allow-anonymous") && refused.contains("TOOLGATE_KEYS_FILE"),
            "{refused}"
        );
        assert!(
            Access::open(None, true, Rates::default(), None, None)
                .unwrap()
                .check_exposure("0.0.0.0:1")
                .is_ok()
        );
    }

    #[tokio::test]
    async fn a_reload_admits_a_key_added_since_and_a_broken_file_keeps_the_old_keys() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("keys.json");
        let first = keys::append(&path, vec![Scope::Run], Some("a".into()), None).unwrap();
        let access = Access::open(Some(&path), false, Rates::default(), None, None).unwrap();
        let lookup = async |key: &str| {
            let request = Request::builder()
                .header(header::AUTHORIZATION, format!("Bearer {key}"))
                .body(axum::body::Body::empty())
                .unwrap();
            let (address, bearer) = credentials(&request);
            let found = access.principal(address, bearer.as_deref()).await;
            found.ok().flatten().map(|p| p.id.to_string())
        };
        let second = keys::append(&path, vec![Scope::Search], Some("b".into()), None).unwrap();
        assert_eq!(lookup(&second).await, None, "not read yet");
        access.reload(&path);
        assert_eq!(lookup(&first).await.as_deref(), Some("a"));
        assert_eq!(lookup(&second).await.as_deref(), Some("b"));
        std::fs::write(&path, "not json").unwrap();
        access.reload(&path);
        assert_eq!(lookup(&second).await.as_deref(), Some("b"));
    }

    #[test]
    fn routes_need_the_scope_of_what_they_do() {
        let need = |face, method: Method, path| needs(face, &method, path).map(|n| format!("{n:?}"));
        assert_eq!(need(Face::Catalogue, Method::GET, "/api/health"), None);
        assert_eq!(
            need(Face::Catalogue, Method::GET, "/api/tools").as_deref(),
            Some("Scope(Search)")
        );
        assert_eq!(
            need(Face::Catalogue, Method::GET, "/api/tools/x/source").as_deref(),
            Some("Scope(Run)")
        );
        assert_eq!(
            need(Face::Catalogue, Method::POST, "/api/tools/x/run").as_deref(),
            Some("Scope(Run)")
        );
        assert_eq!(need(Face::Mcp, Method::POST, "/mcp").as_deref(), Some("Anyone"));
        assert_eq!(need(Face::Mcp, Method::GET, "/readyz"), None);
        assert_eq!(need(Face::Mcp, Method::GET, "/metrics").as_deref(), Some("Admin"));
    }
}
