//! The server's half of `fetch`: a worker's engine has no network of its own, so each
//! request it makes crosses the pipe (`host.rs` on the worker's side) and is made here with reqwest,
//! and every limit of `docs/reference/limits.md` holds whatever the script does: http/https only, one
//! deadline per request (a `TimeoutError`), request and response bodies capped in bytes
//! (the response is read in chunks and dropped at the cap, never buffered whole first),
//! no cookie jar, no proxy, and the address policy of `policy.rs` on the first request
//! and on every redirect hop. Redirects are followed here, not by the client, so each
//! hop is checked before it is requested; `redirect: "manual"` answers the 3xx itself
//! and `redirect: "error"` rejects it.
//!
//! The bodies a run's requests hold here at once (its request bodies while they are
//! sent, its response bodies until the worker has them) count against the run's fetch
//! allowance, [`FETCH_RUN_BYTES`], reserved with its place from the memory budget all
//! runs share: a body that would pass it fails its `fetch` with a `TypeError` saying so,
//! before it is read (a stated length) or at the chunk that passes it.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};

use super::policy::{self, FetchAllow, PolicyResolver, Refused};
use crate::backends::js::wire::{Answer, Failure, Head, Request};
use crate::limits::grouped;
use crate::limits::{FETCH_REDIRECTS, FETCH_RUN_BYTES};

/// The HTTP side shared by every engine of a process: one client (built on first use, so
/// a process that never fetches never loads TLS roots) and the limits.
#[derive(Debug)]
pub(crate) struct Fetcher {
    client: OnceLock<Result<reqwest::Client, String>>,
    timeout: Duration,
    body_limit: usize,
    allow: Arc<FetchAllow>,
    /// The hosts a request passes the trace context to.
    trace: Arc<crate::telemetry::FetchTrace>,
}

/// What `fetch` does with a redirect (its `redirect` option).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Redirects {
    /// Follow up to [`FETCH_REDIRECTS`] hops, each checked. The default.
    Follow,
    /// Answer the 3xx response itself.
    Manual,
    /// Reject with a `TypeError`.
    Error,
}

/// One request as it will be sent: re-made for each redirect hop.
struct Hop {
    method: reqwest::Method,
    url: reqwest::Url,
    headers: reqwest::header::HeaderMap,
    body: Option<Vec<u8>>,
}

/// An answer as the server holds it: with the body's bytes held from the run's fetch
/// allowance (given back when dropped, once the worker has the body).
pub(super) type Fetched = (Answer, OwnedSemaphorePermit);

/// The run's places on the network, and its fetch allowance in bytes.
pub(super) type Shares = (Arc<Semaphore>, Arc<Semaphore>);

/// The span of one `fetch` (kind client): its method (`_OTHER` for one outside HTTP's
/// own), and the host and port it asked for, never its path, query or headers, which may
/// hold what the script was given to keep.
pub(super) fn span(request: &Request) -> tracing::Span {
    if !crate::telemetry::on() {
        return tracing::Span::none();
    }
    const METHODS: [&str; 9] = [
        "GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH",
    ];
    let method = request.method.to_ascii_uppercase();
    let method = METHODS.iter().find(|m| **m == method).copied().unwrap_or("_OTHER");
    let url = reqwest::Url::parse(&request.url).ok();
    tracing::info_span!(
        target: "toolgate::fetch",
        "fetch",
        otel.name = %format!("fetch {method}"),
        otel.kind = "client",
        http.request.method = method,
        server.address = url.as_ref().and_then(|u| u.host_str()).map_or("", |h| h.get(..253).unwrap_or(h)),
        server.port = i64::from(url.as_ref().and_then(reqwest::Url::port_or_known_default).unwrap_or(0)),
        http.response.status_code = tracing::field::Empty,
        error.type = tracing::field::Empty,
    )
}

/// Records how a `fetch` ended on its [`span`]: the status, or the error's name.
pub(super) fn ended(span: &tracing::Span, answer: &Result<Fetched, Failure>) {
    match answer {
        Ok(((head, _), _)) => {
            span.record("http.response.status_code", i64::from(head.status));
        }
        Err(failure) => {
            span.record("error.type", failure.name.as_str());
        }
    }
}

impl Fetcher {
    /// A fetcher with these limits, reaching internal addresses only where `allow` says.
    pub(crate) fn new(timeout: Duration, body_limit: usize, allow: FetchAllow) -> Fetcher {
        Fetcher {
            client: OnceLock::new(),
            timeout,
            body_limit,
            allow: Arc::new(allow),
            trace: Arc::default(),
        }
    }

    /// This fetcher passing the trace context to the hosts `trace` names.
    pub(crate) fn with_trace(&self, trace: crate::telemetry::FetchTrace) -> Fetcher {
        Fetcher {
            client: OnceLock::new(),
            timeout: self.timeout,
            body_limit: self.body_limit,
            allow: self.allow.clone(),
            trace: Arc::new(trace),
        }
    }

    fn client(&self) -> Result<&reqwest::Client, Failure> {
        self.client
            .get_or_init(|| {
                reqwest::Client::builder()
                    .user_agent(concat!("toolgate/", env!("CARGO_PKG_VERSION")))
                    // Redirects are followed by `fetch` itself, each hop checked.
                    .redirect(reqwest::redirect::Policy::none())
                    // A proxy would resolve the target itself, out of the policy's sight.
                    .no_proxy()
                    .dns_resolver(Arc::new(PolicyResolver {
                        allow: self.allow.clone(),
                    }))
                    .build()
                    .map_err(|e| format!("fetch is unavailable: {e}"))
            })
            .as_ref()
            .map_err(|e| Failure::type_error(e.clone()))
    }

    /// One request (and the redirects it is allowed to follow), within the deadline, or
    /// the reason it failed. `cancel` ends it early (the script's `AbortController`);
    /// `shares` holds the run's places on the network and its fetch allowance.
    pub(super) async fn fetch(
        &self,
        request: &Request,
        body: Option<Vec<u8>>,
        cancel: Arc<Notify>,
        (in_flight, buffers): Shares,
    ) -> Result<Fetched, Failure> {
        let (url, method, headers) = (&request.url, &request.method, &request.headers);
        let mode = match request.redirect.as_str() {
            "follow" => Redirects::Follow,
            "manual" => Redirects::Manual,
            "error" => Redirects::Error,
            other => {
                return Err(Failure::type_error(format!(
                    "fetch: redirect must be \"follow\", \"manual\" or \"error\", not \"{other}\""
                )));
            }
        };
        let first = self.request(url, method, headers, body)?;
        // The request body is held here until the exchange ends.
        let _sent = hold(&buffers, first.body.as_ref().map_or(0, Vec::len), "the request body")?;
        let client = self.client()?;
        let exchange = async {
            // Waiting for a slot counts against the deadline, like a slow server would.
            let _slot = in_flight
                .acquire_owned()
                .await
                .map_err(|_| Failure::type_error("fetch: the run is ending".to_owned()))?;
            let mut hop = first;
            let mut hops = 0;
            loop {
                let response = self.send(client, &hop).await?;
                let Some(next) = redirect_target(&response)? else {
                    return self.read(response, hops > 0, &buffers).await;
                };
                match mode {
                    Redirects::Manual => return self.read(response, hops > 0, &buffers).await,
                    Redirects::Error => {
                        return Err(Failure::type_error(format!(
                            "fetch: {} answered {} with a redirect to {next}, and redirect is \"error\"",
                            hop.url,
                            response.status().as_u16()
                        )));
                    }
                    Redirects::Follow if hops == FETCH_REDIRECTS => {
                        return Err(Failure::type_error(format!(
                            "fetch: more than {FETCH_REDIRECTS} redirects, the last to {next}"
                        )));
                    }
                    Redirects::Follow => {
                        hops += 1;
                        hop = follow(hop, response.status(), next)?;
                    }
                }
            }
        };
        tokio::select! {
            answer = tokio::time::timeout(self.timeout, exchange) => answer.unwrap_or_else(|_| Err(Failure::named(
                "TimeoutError",
                format!("fetch: no complete answer from {url} within {} s", self.timeout.as_secs_f64()),
            ))),
            () = cancel.notified() => Err(Failure::named("AbortError", "This operation was aborted".to_owned())),
        }
    }

    /// Sends one hop after checking its address, and waits for the response head.
    async fn send(&self, client: &reqwest::Client, hop: &Hop) -> Result<reqwest::Response, Failure> {
        if !matches!(hop.url.scheme(), "http" | "https") {
            return Err(Failure::type_error(format!(
                "fetch: only http: and https: URLs are allowed, not {}:",
                hop.url.scheme()
            )));
        }
        policy::admit_literal(&self.allow, &hop.url).map_err(|r| Failure::type_error(r.to_string()))?;
        let mut headers = hop.headers.clone();
        // Only to the hosts the operator named, checked again on every hop.
        if crate::telemetry::on() && self.trace.allows(&hop.url) {
            crate::telemetry::inject(&mut headers);
        }
        let mut request = client.request(hop.method.clone(), hop.url.clone()).headers(headers);
        if let Some(body) = &hop.body {
            request = request.body(body.clone());
        }
        let port = hop.url.port_or_known_default().unwrap_or(0);
        policy::with_port(port, request.send()).await.map_err(|e| {
            let refused = std::iter::successors(Some(&e as &dyn std::error::Error), |e| e.source())
                .find_map(|e| e.downcast_ref::<Refused>());
            match refused {
                Some(r) => Failure::type_error(r.to_string()),
                None => Failure::type_error(format!("fetch failed: {}", chain(&e))),
            }
        })
    }

    /// Reads a response's body within the cap and the run's fetch allowance.
    async fn read(
        &self,
        mut response: reqwest::Response,
        redirected: bool,
        buffers: &Arc<Semaphore>,
    ) -> Result<Fetched, Failure> {
        if let Some(length) = response.content_length()
            && length > self.body_limit as u64
        {
            return Err(self.too_large(Some(length)));
        }
        // A stated length is held before any of the body is read.
        let stated = response.content_length().map_or(0, |n| n as usize);
        let mut held = hold(buffers, stated, "the response body")?;
        let mut body = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| Failure::type_error(format!("fetch failed reading the body: {}", chain(&e))))?
        {
            if body.len() + chunk.len() > self.body_limit {
                return Err(self.too_large(None));
            }
            let more = (body.len() + chunk.len()).saturating_sub(held.num_permits());
            if more > 0 {
                held.merge(hold(buffers, more, "the response body")?);
            }
            body.extend_from_slice(&chunk);
        }
        let status = response.status();
        let head = Head {
            status: status.as_u16(),
            status_text: status.canonical_reason().unwrap_or("").to_owned(),
            redirected,
            url: response.url().to_string(),
            headers: response
                .headers()
                .iter()
                .map(|(k, v)| {
                    vec![
                        k.as_str().to_owned(),
                        String::from_utf8_lossy(v.as_bytes()).into_owned(),
                    ]
                })
                .collect(),
        };
        Ok(((head, body), held))
    }

    /// The first hop, or why it may not be made.
    fn request(&self, url: &str, method: &str, headers: &str, body: Option<Vec<u8>>) -> Result<Hop, Failure> {
        let parsed =
            reqwest::Url::parse(url).map_err(|e| Failure::type_error(format!("fetch: invalid URL \"{url}\": {e}")))?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(Failure::type_error(format!(
                "fetch: only http: and https: URLs are allowed, not {}:",
                parsed.scheme()
            )));
        }
        let method = reqwest::Method::from_bytes(method.as_bytes())
            .map_err(|_| Failure::type_error(format!("fetch: \"{method}\" is not a valid HTTP method")))?;
        let pairs: Vec<(String, String)> =
            serde_json::from_str(headers).map_err(|e| Failure::type_error(format!("fetch: headers: {e}")))?;
        let mut map = reqwest::header::HeaderMap::new();
        for (name, value) in pairs {
            let name = reqwest::header::HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| Failure::type_error(format!("fetch: invalid header name \"{name}\"")))?;
            let value = reqwest::header::HeaderValue::from_str(&value)
                .map_err(|_| Failure::type_error(format!("fetch: invalid value for header \"{name}\"")))?;
            map.append(name, value);
        }
        if let Some(body) = &body
            && body.len() > self.body_limit
        {
            return Err(Failure::type_error(format!(
                "fetch: the request body is {} bytes, over the limit of {} bytes",
                body.len(),
                self.body_limit
            )));
        }
        Ok(Hop {
            method,
            url: parsed,
            headers: map,
            body,
        })
    }

    fn too_large(&self, length: Option<u64>) -> Failure {
        let size = length.map_or_else(|| " is".to_owned(), |n| format!(" is {n} bytes,"));
        Failure::type_error(format!(
            "fetch: the response body{size} over the limit of {} bytes; none of it was kept",
            self.body_limit
        ))
    }
}

/// `bytes` of the run's fetch allowance `buffers`, held until dropped, or a `TypeError`
/// saying that `what` would pass it.
fn hold(buffers: &Arc<Semaphore>, bytes: usize, what: &str) -> Result<OwnedSemaphorePermit, Failure> {
    let refused = || {
        let held = FETCH_RUN_BYTES.saturating_sub(buffers.available_permits());
        Failure::type_error(format!(
            "fetch: {what} would bring the fetch bodies this run holds at once past {} bytes (a run's share of the server's memory budget; {} bytes are held by its other requests now); none of it was kept. Fewer requests at once, or smaller answers, fit",
            grouped(FETCH_RUN_BYTES as u64),
            grouped(held as u64)
        ))
    };
    let bytes = u32::try_from(bytes).map_err(|_| refused())?;
    buffers.clone().try_acquire_many_owned(bytes).map_err(|_| refused())
}

/// An error and its causes on one line ("error sending request: connection refused").
fn chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        let more = cause.to_string();
        if !text.contains(&more) {
            text.push_str(": ");
            text.push_str(&more);
        }
        source = cause.source();
    }
    text
}

/// Where a redirect response points, or `None` when it is not one (a 3xx other than
/// 301, 302, 303, 307 and 308, or one without `Location`, is an ordinary answer).
fn redirect_target(response: &reqwest::Response) -> Result<Option<reqwest::Url>, Failure> {
    use reqwest::StatusCode as S;
    let status = response.status();
    if !matches!(
        status,
        S::MOVED_PERMANENTLY | S::FOUND | S::SEE_OTHER | S::TEMPORARY_REDIRECT | S::PERMANENT_REDIRECT
    ) {
        return Ok(None);
    }
    let Some(location) = response.headers().get(reqwest::header::LOCATION) else {
        return Ok(None);
    };
    let location = location
        .to_str()
        .map_err(|_| Failure::type_error(format!("fetch: {} sent a Location that is not text", response.url())))?;
    response.url().join(location).map(Some).map_err(|e| {
        Failure::type_error(format!(
            "fetch: {} redirected to an invalid URL \"{location}\": {e}",
            response.url()
        ))
    })
}

/// The next hop after a redirect, as the fetch standard rewrites it: 303 (and 301/302 of
/// a POST) become a bodiless GET; credentials are not carried to another origin.
fn follow(mut hop: Hop, status: reqwest::StatusCode, next: reqwest::Url) -> Result<Hop, Failure> {
    use reqwest::header;
    if !matches!(next.scheme(), "http" | "https") {
        return Err(Failure::type_error(format!(
            "fetch: {} redirected to {next}; only http: and https: URLs are allowed",
            hop.url
        )));
    }
    let to_get = (status == reqwest::StatusCode::SEE_OTHER && hop.method != reqwest::Method::HEAD)
        || (matches!(status.as_u16(), 301 | 302) && hop.method == reqwest::Method::POST);
    if to_get {
        hop.method = reqwest::Method::GET;
        hop.body = None;
        for name in [
            header::CONTENT_TYPE,
            header::CONTENT_LENGTH,
            header::CONTENT_ENCODING,
            header::CONTENT_LANGUAGE,
            header::CONTENT_LOCATION,
        ] {
            hop.headers.remove(name);
        }
    }
    if next.origin() != hop.url.origin() {
        for name in [header::AUTHORIZATION, header::COOKIE, header::PROXY_AUTHORIZATION] {
            hop.headers.remove(name);
        }
    }
    hop.url = next;
    Ok(hop)
}
