//! The catalogue HTTP API of `docs/reference/http-api.md`: its wire types, shared by the client here and the
//! server in `operator`, and the client the gateway uses to list, fetch and run tools.
//!
//! This module sits below the catalogue: it knows no catalogue type (the manifest's
//! [`Runtime`] is defined here because the source answer carries it), so `catalogue`
//! (whose HTTP source uses the client) depends on it and never the reverse.
//!
//! Every network failure becomes a typed [`Error`] with the retry semantics of `docs/reference/errors.md`;
//! nothing here panics on what a server sends. Bodies are read up to
//! [`API_BODY_BYTES`](crate::limits::API_BODY_BYTES), never unbounded.

use std::time::Duration;

use reqwest::header::{AUTHORIZATION, ETAG, IF_NONE_MATCH, RETRY_AFTER};
use reqwest::{StatusCode, Url};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tracing::Instrument;

use crate::error::Error;
use crate::limits::API_BODY_BYTES;

/// The language a tool's source is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Runtime {
    /// A script defining `run(params)`, run in QuickJS.
    Javascript,
    /// The same, type-stripped first.
    Typescript,
    /// A NyxilumNode program reading `params.json`.
    Nyxilum,
}

impl Runtime {
    /// The manifest spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Runtime::Javascript => "javascript",
            Runtime::Typescript => "typescript",
            Runtime::Nyxilum => "nyxilum",
        }
    }
}

/// Body of `POST /api/tools/{slug}/run`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunRequest {
    /// The tool's params object.
    #[serde(default = "empty_object")]
    pub params: Value,
}

fn empty_object() -> Value {
    Value::Object(Default::default())
}

/// A successful run answer.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunAnswer {
    /// Always true here; failures use [`ErrorBody`].
    pub success: bool,
    /// What the tool returned.
    #[serde(default)]
    pub result: Value,
    /// How long the run took on the API's side.
    #[serde(default)]
    pub duration_ms: u64,
    /// What the tool printed on stdout, when it printed.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub stdout: String,
    /// What the tool printed on stderr, when it printed.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub stderr: String,
}

/// The error body every API failure carries (`docs/reference/errors.md` shape).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ErrorBody {
    /// Always false.
    pub success: bool,
    /// What went wrong, for people.
    pub error: String,
    /// The stable code.
    pub code: String,
    /// Whether the same call may succeed later.
    pub retryable: bool,
    /// Close matches, for `TOOL_NOT_FOUND`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub candidates: Vec<String>,
    /// The runtime that is missing, for `RUNTIME_UNAVAILABLE`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime: Option<String>,
}

impl From<&Error> for ErrorBody {
    /// The body a server sends for `e`. A missing runtime is named without the paths
    /// this server searched: they describe its file system, which is not the caller's
    /// business (the server logs them on its own stderr).
    fn from(e: &Error) -> Self {
        let candidates = match e {
            Error::ToolNotFound { candidates, .. } | Error::AmbiguousSlug { candidates, .. } => candidates.clone(),
            _ => Vec::new(),
        };
        let (error, runtime) = match e {
            Error::RuntimeUnavailable { runtime, .. } => (
                format!("The {runtime} runtime is not available on this catalogue server, so it cannot run this tool."),
                Some(runtime.clone()),
            ),
            _ => (e.to_string(), None),
        };
        ErrorBody {
            success: false,
            error,
            code: e.code().to_owned(),
            retryable: e.retryable(),
            candidates,
            runtime,
        }
    }
}

/// Answer of `GET /api/tools/{slug}/source`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SourceAnswer {
    /// The language of `source`.
    pub runtime: Runtime,
    /// The code.
    pub source: String,
}

/// Answer of `GET /api/health`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Health {
    /// True while the server can answer.
    pub ok: bool,
    /// How many tools it serves.
    pub tools: usize,
}

/// Answer of a conditional list request.
#[derive(Debug)]
pub enum ListAnswer {
    /// A new list, with its ETag when the API sent one.
    Fresh {
        /// The whole list answer body.
        body: Vec<u8>,
        /// The ETag to send next time.
        etag: Option<String>,
    },
    /// 304: the list the caller holds is current.
    NotModified,
}

/// A client of one catalogue API.
#[derive(Debug, Clone)]
pub struct ApiClient {
    base: Url,
    key: Option<String>,
    timeout: Duration,
    http: reqwest::Client,
}

/// Why a client for the catalogue API cannot be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClientError {
    /// The API's address is not a URL.
    #[error("API URL \"{url}\" is not a URL: {reason}")]
    NotAUrl {
        /// The address given.
        url: String,
        /// What the URL parser said.
        reason: String,
    },
    /// The address cannot have paths below it (`mailto:...`, `data:...`).
    #[error("API URL \"{url}\" cannot be a base URL")]
    NotABase {
        /// The address given.
        url: String,
    },
    /// The HTTP client itself cannot be built (no TLS roots, ...).
    #[error("cannot build the HTTP client: {0}")]
    Http(String),
}

impl ApiClient {
    /// A client for `base` (already in its `/api` form).
    pub fn new(base: &str, key: Option<String>, timeout: Duration) -> Result<ApiClient, ClientError> {
        let mut url = Url::parse(base).map_err(|e| ClientError::NotAUrl {
            url: base.to_owned(),
            reason: e.to_string(),
        })?;
        if url.cannot_be_a_base() {
            return Err(ClientError::NotABase { url: base.to_owned() });
        }
        url.path_segments_mut()
            .map_err(|()| ClientError::NotABase { url: base.to_owned() })?
            .pop_if_empty();
        let base = url;
        let http = reqwest::Client::builder()
            .timeout(timeout)
            .user_agent(concat!("toolgate/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| ClientError::Http(e.to_string()))?;
        Ok(ApiClient {
            base,
            key,
            timeout,
            http,
        })
    }

    /// The `/api` base, for messages.
    pub fn base(&self) -> &str {
        self.base.as_str()
    }

    /// `GET /api/tools`, conditional on `etag`.
    pub async fn list(&self, etag: Option<&str>) -> Result<ListAnswer, Error> {
        let url = self.url(&["tools"]);
        let mut request = self.http.get(url.clone());
        if let Some(etag) = etag {
            request = request.header(IF_NONE_MATCH, etag);
        }
        let (response, _span) = self.send("GET", "/api/tools", &url, request).await?;
        if response.status() == StatusCode::NOT_MODIFIED {
            return Ok(ListAnswer::NotModified);
        }
        let etag = response
            .headers()
            .get(ETAG)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let body = self.success_body(&url, response).await?;
        Ok(ListAnswer::Fresh { body, etag })
    }

    /// `GET /api/tools/{slug}/source`; `None` when the tool has none (404).
    pub async fn source(&self, slug: &str) -> Result<Option<SourceAnswer>, Error> {
        let url = self.url(&["tools", slug, "source"]);
        let request = self.http.get(url.clone());
        let (response, _span) = self.send("GET", "/api/tools/{slug}/source", &url, request).await?;
        if response.status() == StatusCode::NOT_FOUND {
            return Ok(None);
        }
        let body = self.success_body(&url, response).await?;
        serde_json::from_slice(&body).map(Some).map_err(|e| bad_body(&url, &e))
    }

    /// `POST /api/tools/{slug}/run`.
    pub async fn run(&self, slug: &str, params: &Value) -> Result<RunAnswer, Error> {
        let url = self.url(&["tools", slug, "run"]);
        let body = serde_json::json!({ "params": params });
        let request = self.http.post(url.clone()).json(&body);
        let (response, _span) = self.send("POST", "/api/tools/{slug}/run", &url, request).await?;
        let body = self.success_body(&url, response).await?;
        serde_json::from_slice(&body).map_err(|e| bad_body(&url, &e))
    }

    fn url(&self, segments: &[&str]) -> Url {
        let mut url = self.base.clone();
        if let Ok(mut path) = url.path_segments_mut() {
            path.extend(segments);
        }
        url
    }

    /// Sends `request` (`method` to the route `template`, at `url`) with the key and the
    /// trace context, inside an HTTP client span that the caller holds (and so times)
    /// until it has read the body.
    async fn send(
        &self,
        method: &'static str,
        template: &'static str,
        url: &Url,
        request: reqwest::RequestBuilder,
    ) -> Result<(reqwest::Response, tracing::Span), Error> {
        let span = tracing::info_span!(
            target: "toolgate::api",
            "catalogue API",
            otel.name = %format!("{method} {template}"),
            otel.kind = "client",
            http.request.method = method,
            url.template = template,
            server.address = url.host_str().unwrap_or(""),
            server.port = i64::from(url.port_or_known_default().unwrap_or(0)),
            http.response.status_code = tracing::field::Empty,
            error.type = tracing::field::Empty,
        );
        let mut request = self.authorised(request);
        for (key, value) in crate::telemetry::carrier_of(&span) {
            request = request.header(key, value);
        }
        match request.send().instrument(span.clone()).await {
            Ok(response) => {
                let status = response.status().as_u16();
                span.record("http.response.status_code", i64::from(status));
                if status >= 400 {
                    span.record("error.type", status);
                }
                Ok((response, span))
            }
            Err(e) => {
                let error = self.transport_error(url, &e);
                span.record("error.type", error.code());
                Err(error)
            }
        }
    }

    fn authorised(&self, request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        match &self.key {
            Some(key) => request.header(AUTHORIZATION, format!("Bearer {key}")),
            None => request,
        }
    }

    fn transport_error(&self, url: &Url, e: &reqwest::Error) -> Error {
        if e.is_timeout() {
            Error::Timeout {
                what: format!("The catalogue API request to {url}"),
                after: self.timeout,
            }
        } else {
            Error::ApiUnreachable {
                url: url.to_string(),
                reason: root_cause(e),
            }
        }
    }

    /// The body of a 2xx answer, or the error the status and body describe.
    async fn success_body(&self, url: &Url, mut response: reqwest::Response) -> Result<Vec<u8>, Error> {
        let status = response.status();
        let retry_after = response
            .headers()
            .get(RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map(Duration::from_secs);
        if response.content_length().is_some_and(|n| n > API_BODY_BYTES as u64) {
            return Err(too_large(url));
        }
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(|e| self.transport_error(url, &e))? {
            if body.len() + chunk.len() > API_BODY_BYTES {
                return Err(too_large(url));
            }
            body.extend_from_slice(&chunk);
        }
        if status.is_success() {
            return Ok(body);
        }
        Err(status_error(url, status, retry_after, &body))
    }
}

/// Maps a non-2xx answer to the error of `docs/reference/errors.md`, keeping the API's own code where it
/// names a failure of the call rather than of the API.
fn status_error(url: &Url, status: StatusCode, retry_after: Option<Duration>, body: &[u8]) -> Error {
    let parsed: Option<ErrorBody> = serde_json::from_slice(body).ok();
    let message = parsed
        .as_ref()
        .map(|b| b.error.clone())
        .unwrap_or_else(|| String::from_utf8_lossy(&body[..body.len().min(500)]).trim().to_owned());
    let message = if message.is_empty() {
        status.canonical_reason().unwrap_or("error").to_owned()
    } else {
        message
    };
    match status.as_u16() {
        401 | 403 => {
            return Error::Unauthorized {
                status: status.as_u16(),
                message,
            };
        }
        429 => {
            return Error::RateLimited {
                what: "the catalogue API is limiting this client".to_owned(),
                retry_after,
            };
        }
        _ => {}
    }
    match parsed.as_ref().map(|b| b.code.as_str()) {
        Some("INVALID_PARAMS") => Error::InvalidParams {
            slug: String::new(),
            violations: vec![message],
        },
        Some("EXECUTION_ERROR") => Error::Execution { message },
        // Whatever status carried it, a missing runtime does not come back by retrying.
        Some("RUNTIME_UNAVAILABLE") => Error::RuntimeUnavailable {
            runtime: parsed
                .as_ref()
                .and_then(|b| b.runtime.clone())
                .unwrap_or_else(|| "tool's".to_owned()),
            tried: vec![format!("the catalogue server at {url}")],
        },
        Some(code @ ("TOOL_NOT_FOUND" | "AMBIGUOUS_SLUG")) => {
            let candidates = parsed.as_ref().map(|b| b.candidates.clone()).unwrap_or_default();
            if code == "TOOL_NOT_FOUND" {
                Error::ToolNotFound {
                    slug: String::new(),
                    candidates,
                }
            } else {
                Error::AmbiguousSlug {
                    slug: String::new(),
                    candidates,
                }
            }
        }
        Some(code) => Error::Api {
            status: status.as_u16(),
            message: format!("[{code}] {message}"),
        },
        None => Error::Api {
            status: status.as_u16(),
            message,
        },
    }
}

fn too_large(url: &Url) -> Error {
    Error::Api {
        status: 502,
        message: format!("the answer from {url} is larger than {API_BODY_BYTES} bytes"),
    }
}

fn bad_body(url: &Url, e: &serde_json::Error) -> Error {
    Error::Api {
        status: 502,
        message: format!("the answer from {url} is not what the API contract says: {e}"),
    }
}

/// The innermost cause, which is where reqwest keeps "connection refused".
fn root_cause(e: &(dyn std::error::Error + 'static)) -> String {
    let mut cause = e;
    while let Some(next) = cause.source() {
        cause = next;
    }
    cause.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_map_to_codes() {
        let body = |code: &str| {
            serde_json::to_vec(&serde_json::json!({"success":false,"error":"m","code":code,"retryable":false})).unwrap()
        };
        let url = Url::parse("http://h/api/tools/t/run").unwrap();
        let code = |s: u16, b: &[u8]| status_error(&url, StatusCode::from_u16(s).unwrap(), None, b).code();
        assert_eq!(code(401, b""), "UNAUTHORIZED");
        assert_eq!(code(403, b""), "UNAUTHORIZED");
        assert_eq!(code(429, b""), "RATE_LIMITED");
        assert_eq!(code(500, b"oops"), "API_ERROR");
        assert_eq!(code(400, &body("INVALID_PARAMS")), "INVALID_PARAMS");
        assert_eq!(code(422, &body("EXECUTION_ERROR")), "EXECUTION_ERROR");
        assert_eq!(code(404, &body("TOOL_NOT_FOUND")), "TOOL_NOT_FOUND");
        let e = status_error(&url, StatusCode::SERVICE_UNAVAILABLE, None, b"");
        assert!(e.retryable());
        assert!(!status_error(&url, StatusCode::BAD_REQUEST, None, b"").retryable());
    }

    #[test]
    fn a_missing_runtime_stays_runtime_unavailable_and_not_retryable_whatever_the_status() {
        let url = Url::parse("http://h/api/tools/t/run").unwrap();
        let body = ErrorBody::from(&Error::RuntimeUnavailable {
            runtime: "nyxilum".into(),
            tried: vec!["/srv/secret/Nx".into()],
        });
        let wire = serde_json::to_vec(&body).unwrap();
        assert!(
            !String::from_utf8_lossy(&wire).contains("/srv/secret"),
            "no server path on the wire"
        );
        for status in [424, 501, 503] {
            let e = status_error(&url, StatusCode::from_u16(status).unwrap(), None, &wire);
            assert_eq!(e.code(), "RUNTIME_UNAVAILABLE", "{status}");
            assert!(!e.retryable(), "{status}");
            let text = e.to_string();
            assert!(text.contains("The nyxilum runtime is not available"), "{text}");
            assert!(text.contains("http://h/api/tools/t/run"), "{text}");
        }
    }

    #[test]
    fn rate_limit_keeps_retry_after() {
        let url = Url::parse("http://h/api").unwrap();
        let e = status_error(&url, StatusCode::TOO_MANY_REQUESTS, Some(Duration::from_secs(7)), b"");
        assert_eq!(e.retry_after(), Some(Duration::from_secs(7)));
    }

    #[test]
    fn slugs_are_escaped_in_paths() {
        let c = ApiClient::new("http://h/api", None, Duration::from_secs(1)).unwrap();
        assert_eq!(
            c.url(&["tools", "a b/c", "run"]).as_str(),
            "http://h/api/tools/a%20b%2Fc/run"
        );
    }
}
