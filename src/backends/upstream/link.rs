//! One upstream server seen from toolgate: an rmcp client over a child's stdio or
//! Streamable HTTP, kept alive by a supervisor task that connects, lists the tools
//! (every page), lists again on `tools/list_changed`, and restarts a failed or ended
//! connection with backoff. Its last tool list outlives a crash, so its tools stay known
//! while it is down; calls then answer `UPSTREAM_UNAVAILABLE` with the last error.

use std::collections::HashMap;
use std::ffi::OsString;
use std::process::Stdio;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, ClientRequest, JsonObject, ListToolsRequest, PaginatedRequestParams,
    ServerResult, Tool as McpTool,
};
use rmcp::service::{PeerRequestOptions, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{Peer, RoleClient, ServiceError, ServiceExt};
use serde_json::Value;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use super::child::{ChildLines, pass_stderr};
use super::ordered::Ordered;
use super::oversize::Oversize;
use super::relay::Relay;
use super::settings::{Server, Transport};
use crate::error::Error;
use crate::limits::{
    UPSTREAM_BACKOFF_MAX, UPSTREAM_BACKOFF_MIN, UPSTREAM_CALL_IDLE, UPSTREAM_CONNECT_TIMEOUT, UPSTREAM_HEALTHY_AFTER,
    UPSTREAM_LIST_PAGES, UPSTREAM_TOOLS,
};

/// Names passed from toolgate's environment to an upstream child besides
/// `backends::process::env::ALLOWLIST`: what a Node or Python server needs to find its
/// caches and certificates. Credential-like names are removed even from these; a
/// server gets a credential only through its own `env`.
pub const ENV_PASS: &[&str] = &[
    "HOME",
    "USER",
    "LOGNAME",
    "TMPDIR",
    "XDG_CONFIG_HOME",
    "XDG_CACHE_HOME",
    "XDG_DATA_HOME",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "NODE_EXTRA_CA_CERTS",
];

/// What is known of an upstream now.
#[derive(Debug, Default)]
struct State {
    /// The live connection, when there is one.
    peer: Option<Peer<RoleClient>>,
    /// The last tool list read (kept while the server is down).
    tools: Arc<Vec<McpTool>>,
    /// Why the last attempt failed or the last connection ended.
    error: Option<String>,
    /// True once the first connection attempt has ended, either way.
    tried: bool,
}

/// One upstream server and its supervisor's findings.
#[derive(Debug)]
pub(super) struct Link {
    /// Its settings.
    pub(super) server: Server,
    state: Mutex<State>,
    relay: Relay,
    /// Woken on every change of tool list and when the first attempt ends.
    changed: Arc<Notify>,
    /// How often the connection is pinged, and how long a ping may take.
    ping: Duration,
    /// What could not be read whole on the connection, for the calls it fails.
    oversize: Arc<Oversize>,
    /// Its OAuth tokens, for an HTTP upstream with `oauth` once the tokens file is known.
    auth: Option<Arc<super::oauth::Auth>>,
}

impl Link {
    /// A link that will report changes through `changed` and ping every `ping`.
    pub(super) fn new(server: Server, changed: Arc<Notify>, ping: Duration) -> Link {
        let relay = Relay {
            server: server.name.clone(),
            in_flight: Arc::default(),
            relist: Arc::new(Notify::new()),
        };
        Link {
            server,
            state: Mutex::default(),
            relay,
            changed,
            ping,
            oversize: Arc::default(),
            auth: None,
        }
    }

    /// Why an OAuth upstream's last request could not be authorized, once: said in place
    /// of the transport's wording of the failure it caused.
    fn refused(&self) -> Option<String> {
        self.auth.as_ref().and_then(|a| a.take_refusal())
    }

    /// Keeps this upstream's OAuth tokens in `tokens`, when its entry has `oauth`.
    pub(super) fn use_tokens(&mut self, tokens: &super::oauth::Tokens) {
        if let Transport::Http {
            url,
            oauth: Some(oauth),
            ..
        } = &self.server.transport
        {
            let auth = super::oauth::Auth::new(&self.server.name, url, oauth.clone(), tokens.clone());
            self.auth = Some(Arc::new(auth));
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The last tool list read.
    pub(super) fn tools(&self) -> Arc<Vec<McpTool>> {
        self.lock().tools.clone()
    }

    /// Returns true if and only if the first connection attempt has ended.
    pub(super) fn is_tried(&self) -> bool {
        self.lock().tried
    }

    /// `Ok` while connected, else `UPSTREAM_UNAVAILABLE` with the last error.
    pub(super) fn status(&self) -> Result<Peer<RoleClient>, Error> {
        let state = self.lock();
        let reason = match (&state.peer, &state.error) {
            (Some(peer), _) if !peer.is_transport_closed() => return Ok(peer.clone()),
            (Some(_), _) => "its connection closed; it is being restarted".to_owned(),
            (None, Some(error)) => error.clone(),
            (None, None) => "it is starting".to_owned(),
        };
        Err(Error::UpstreamUnavailable {
            server: self.server.name.clone(),
            reason,
        })
    }

    /// Calls the upstream's tool `name`. The answer is the upstream's `CallToolResult`
    /// as JSON, `isError` or not; dropped before it ends, the call is cancelled upstream.
    pub(super) async fn call(&self, name: &str, arguments: JsonObject) -> Result<Value, Error> {
        // A client span, whose context the upstream receives in the request's `_meta`
        // (MCP's convention; over HTTP its headers too, `web.rs`).
        let span = tracing::info_span!(
            target: "toolgate::upstream",
            "upstream",
            otel.name = %format!("tools/call {name}"),
            otel.kind = "client",
            mcp.method.name = "tools/call",
            gen_ai.operation.name = "execute_tool",
            gen_ai.tool.name = name,
            toolgate.upstream = %self.server.name,
            error.type = tracing::field::Empty,
        );
        let answer = self.call_in_span(name, arguments, &span).instrument(span.clone()).await;
        if let Err(e) = &answer {
            span.record("error.type", e.code());
        }
        answer
    }

    /// [`Link::call`] inside its `span`.
    async fn call_in_span(&self, name: &str, arguments: JsonObject, span: &tracing::Span) -> Result<Value, Error> {
        let peer = self.status()?;
        let mut params = CallToolRequestParams::new(name.to_owned()).with_arguments(arguments);
        let carrier = crate::telemetry::carrier_of(span);
        if !carrier.is_empty() {
            let mut meta = rmcp::model::RequestMetaObject::new();
            for (key, value) in carrier {
                meta.0.0.insert(key, Value::String(value));
            }
            params.meta = Some(meta);
        }
        let options = PeerRequestOptions::with_timeout(UPSTREAM_CALL_IDLE).reset_timeout_on_progress();
        // Registered before the request leaves, so what the upstream asks of the client
        // while it works finds its caller.
        let routed = crate::backchannel::current().map(|c| self.relay.in_flight.enter(c));
        let handle = peer
            .send_cancellable_request(ClientRequest::CallToolRequest(CallToolRequest::new(params)), options)
            .await
            .map_err(|e| self.lost(e))?;
        let mut abandoned = Abandoned(Some((peer.clone(), handle.id.clone())));
        if let Some(routed) = &routed {
            routed.sent(handle.progress_token.clone());
        }
        let id = handle.id.clone();
        let answer = handle.await_response().await;
        abandoned.0 = None;
        if let Some(routed) = &routed {
            routed.settle().await;
        }
        // An answer over the limit of one message fails its call at once, saying so.
        if answer.is_err()
            && let Some(why) = self.oversize.take_call(&id)
        {
            return Err(Error::Execution {
                message: format!("upstream \"{}\" answered {name}, but {why}", self.server.name),
            });
        }
        match answer {
            Ok(ServerResult::CallToolResult(result)) => {
                serde_json::to_value(result).map_err(|e| Error::Internal(format!("an upstream answer: {e}")))
            }
            Ok(_) => Err(Error::Execution {
                message: format!(
                    "upstream \"{}\" answered tools/call with something other than a tool result",
                    self.server.name
                ),
            }),
            Err(ServiceError::Timeout { timeout }) => Err(Error::Timeout {
                what: format!("The upstream call {}/{name}", self.server.name),
                after: timeout,
            }),
            Err(ServiceError::McpError(e)) => Err(Error::Execution {
                message: format!(
                    "upstream \"{}\" refused the call ({}): {}",
                    self.server.name, e.code.0, e.message
                ),
            }),
            Err(e) => Err(self.lost(e)),
        }
    }

    fn lost(&self, e: ServiceError) -> Error {
        let reason = match (self.refused(), self.oversize.connection()) {
            (Some(why), _) => why,
            (None, Some(why)) => format!("the connection was ended during the call: {why}"),
            (None, None) => format!("the connection failed during the call ({e})"),
        };
        Error::UpstreamUnavailable {
            server: self.server.name.clone(),
            reason,
        }
    }

    /// Keeps the upstream connected until `stop` fires: connect, list, follow changes,
    /// restart with backoff.
    pub(super) async fn supervise(self: Arc<Self>, stop: CancellationToken) {
        let mut backoff = UPSTREAM_BACKOFF_MIN;
        loop {
            let started = Instant::now();
            let ended = tokio::select! {
                ended = self.session(&stop) => ended,
                () = stop.cancelled() => return,
            };
            {
                let mut state = self.lock();
                state.peer = None;
                state.error = Some(ended.clone());
                state.tried = true;
            }
            self.changed.notify_waiters();
            if stop.is_cancelled() {
                return;
            }
            if started.elapsed() >= UPSTREAM_HEALTHY_AFTER {
                backoff = UPSTREAM_BACKOFF_MIN;
            }
            tracing::warn!(
                "upstream \"{}\": {ended}; restarting in {} ms",
                self.server.name,
                backoff.as_millis()
            );
            tokio::select! {
                () = tokio::time::sleep(backoff) => {}
                () = stop.cancelled() => return,
            }
            backoff = (backoff * 2).min(UPSTREAM_BACKOFF_MAX);
        }
    }

    /// One connection, from start to end; returns why it ended.
    async fn session(&self, stop: &CancellationToken) -> String {
        let service = match tokio::time::timeout(UPSTREAM_CONNECT_TIMEOUT, self.connect()).await {
            Ok(Ok(service)) => service,
            Ok(Err(e)) => return e,
            Err(_) => return format!("it did not initialize within {} s", UPSTREAM_CONNECT_TIMEOUT.as_secs()),
        };
        let peer = service.peer().clone();
        let closing = service.cancellation_token();
        let ended = self.serve(service, &peer, stop).await;
        closing.cancel();
        ended
    }

    /// Lists the tools, publishes the connection, then follows list changes until the
    /// connection ends (or `stop`).
    async fn serve(
        &self,
        service: RunningService<RoleClient, Relay>,
        peer: &Peer<RoleClient>,
        stop: &CancellationToken,
    ) -> String {
        match tokio::time::timeout(UPSTREAM_CONNECT_TIMEOUT, list(peer, &self.server.name)).await {
            Ok(Ok(tools)) => self.publish(Some(peer.clone()), tools),
            Ok(Err(e)) => return self.refused().unwrap_or_else(|| format!("tools/list failed: {e}")),
            Err(_) => return format!("tools/list took over {} s", UPSTREAM_CONNECT_TIMEOUT.as_secs()),
        }
        tracing::debug!("upstream \"{}\" connected", self.server.name);
        let waiting = service.waiting();
        tokio::pin!(waiting);
        let mut ping = tokio::time::interval_at(tokio::time::Instant::now() + self.ping, self.ping);
        loop {
            tokio::select! {
                _ = ping.tick() => {
                    let request = ClientRequest::PingRequest(rmcp::model::PingRequest::default());
                    match tokio::time::timeout(self.ping, peer.send_request(request)).await {
                        Ok(Ok(_)) => {}
                        Ok(Err(e)) => return format!("it did not answer a ping ({e})"),
                        Err(_) => return format!("it stopped answering (no ping answer within {} ms)", self.ping.as_millis()),
                    }
                }
                quit = &mut waiting => return match quit {
                    Ok(reason) => format!("the connection ended ({reason:?})"),
                    Err(e) => format!("the connection's task failed: {e}"),
                },
                () = self.relay.relist.notified() => match list(peer, &self.server.name).await {
                    Ok(tools) => self.publish(Some(peer.clone()), tools),
                    Err(e) => tracing::warn!("upstream \"{}\": tools/list after list_changed failed: {e}", self.server.name),
                },
                () = stop.cancelled() => return "toolgate is stopping".to_owned(),
            }
        }
    }

    fn publish(&self, peer: Option<Peer<RoleClient>>, tools: Vec<McpTool>) {
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
        for (kind, glob) in self.server.tools.unmatched(&names) {
            tracing::warn!(
                "upstream \"{}\": its tools {kind} pattern \"{glob}\" matches none of its {}",
                self.server.name,
                crate::plural::count(names.len(), "tool", "tools")
            );
        }
        {
            let mut state = self.lock();
            state.peer = peer;
            state.error = None;
            state.tried = true;
            state.tools = Arc::new(tools);
        }
        self.changed.notify_waiters();
    }

    async fn connect(&self) -> Result<RunningService<RoleClient, Relay>, String> {
        self.oversize.reset();
        match &self.server.transport {
            Transport::Stdio {
                command,
                args,
                env,
                cwd,
            } => {
                let mut cmd = tokio::process::Command::new(command);
                cmd.args(args).env_clear().envs(environment(std::env::vars_os(), env));
                if let Some(cwd) = cwd {
                    cmd.current_dir(cwd);
                }
                cmd.kill_on_drop(true)
                    .stdin(Stdio::piped())
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped());
                die_with_parent(&mut cmd);
                let mut child = cmd.spawn().map_err(|e| match e.kind() {
                    std::io::ErrorKind::NotFound => format!("command \"{command}\" not found"),
                    _ => format!("cannot start \"{command}\": {e}"),
                })?;
                if let Some(stderr) = child.stderr.take() {
                    tokio::spawn(pass_stderr(stderr, self.server.name.clone()));
                }
                let transport = ChildLines::new(child, &self.server.name, self.oversize.clone())
                    .map_err(|e| format!("cannot start \"{command}\": {e}"))?;
                self.relay
                    .clone()
                    .serve(Ordered::new(transport, self.relay.in_flight.clone(), &self.server.name))
                    .await
                    .map_err(|e| format!("initialize failed: {e}"))
            }
            Transport::Http { url, headers, oauth } => {
                let mut config = StreamableHttpClientTransportConfig::with_uri(url.as_str());
                let mut custom = HashMap::new();
                for (name, value) in headers {
                    if name.eq_ignore_ascii_case("authorization")
                        && let Some(token) = value.strip_prefix("Bearer ")
                    {
                        config = config.auth_header(token);
                        continue;
                    }
                    let name = reqwest::header::HeaderName::from_bytes(name.as_bytes())
                        .map_err(|e| format!("header \"{name}\": {e}"))?;
                    let value =
                        reqwest::header::HeaderValue::from_str(value).map_err(|e| format!("header \"{name}\": {e}"))?;
                    custom.insert(name, value);
                }
                let mut config = config.custom_headers(custom);
                super::web::limits(&mut config);
                let client = super::web::Watched::new(self.oversize.clone())?;
                let in_flight = self.relay.in_flight.clone();
                let served = match (oauth, &self.auth) {
                    (None, _) => {
                        let transport = StreamableHttpClientTransport::with_client(client, config);
                        self.relay
                            .clone()
                            .serve(Ordered::new(transport, in_flight, &self.server.name))
                            .await
                    }
                    (Some(_), Some(auth)) => {
                        let client = super::oauth::Authorized::new(client, auth.clone());
                        let transport = StreamableHttpClientTransport::with_client(client, config);
                        self.relay
                            .clone()
                            .serve(Ordered::new(transport, in_flight, &self.server.name))
                            .await
                    }
                    (Some(_), None) => {
                        return Err(
                            "its \"oauth\" needs a tokens file: set TOOLGATE_UPSTREAM_TOKENS (or HOME)".to_owned(),
                        );
                    }
                };
                served.map_err(|e| self.refused().unwrap_or_else(|| format!("initialize failed: {e}")))
            }
        }
    }
}

/// Every page of the upstream's tools (up to the caps), asked directly: rmcp's cached
/// `list_tools` could answer from before a `list_changed`.
async fn list(peer: &Peer<RoleClient>, server: &str) -> Result<Vec<McpTool>, ServiceError> {
    let mut tools = Vec::new();
    let mut cursor = None;
    for _ in 0..UPSTREAM_LIST_PAGES {
        let params = PaginatedRequestParams::default().with_cursor(cursor.take());
        let request = ClientRequest::ListToolsRequest(ListToolsRequest::with_param(params));
        let ServerResult::ListToolsResult(page) = peer.send_request(request).await? else {
            return Err(ServiceError::UnexpectedResponse);
        };
        tools.extend(page.tools);
        match page.next_cursor {
            Some(next) if tools.len() < UPSTREAM_TOOLS => cursor = Some(next),
            _ => break,
        }
    }
    if tools.len() > UPSTREAM_TOOLS {
        tracing::warn!(
            "upstream \"{server}\" lists {} tools; the first {UPSTREAM_TOOLS} are kept",
            tools.len()
        );
        tools.truncate(UPSTREAM_TOOLS);
    }
    Ok(tools)
}

/// A child's environment: the allowlisted base of `backends::process::env` (credentials
/// removed, as for every child), then the server's own `env` as configured.
fn environment(
    parent: impl IntoIterator<Item = (OsString, OsString)>,
    configured: &[(String, String)],
) -> Vec<(OsString, OsString)> {
    let policy = crate::backends::process::Env {
        pass: ENV_PASS.iter().map(|s| (*s).to_owned()).collect(),
        ..Default::default()
    };
    let mut vars = crate::backends::process::env::build(parent, &policy, None);
    for (name, value) in configured {
        vars.retain(|(n, _)| n != name.as_str());
        vars.push((name.into(), value.into()));
    }
    vars
}

/// Asks the kernel to kill the child when toolgate dies, however it dies (a SIGKILL
/// included); `kill_on_drop` and the closed stdin cover the orderly paths.
fn die_with_parent(cmd: &mut tokio::process::Command) {
    // SAFETY: prctl(2) is async-signal-safe, and the closure touches no memory of the
    // parent: it is the kind of work `pre_exec` allows between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// Sends `notifications/cancelled` for a call dropped before its answer (the client
/// cancelled it, or toolgate stopped waiting).
struct Abandoned(Option<(Peer<RoleClient>, rmcp::model::RequestId)>);

impl Drop for Abandoned {
    fn drop(&mut self) {
        if let Some((peer, id)) = self.0.take()
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            let params = rmcp::model::CancelledNotificationParam::new(
                Some(id),
                Some("cancelled by toolgate's client".to_owned()),
            );
            runtime.spawn(async move {
                let _ = peer.notify_cancelled(params).await;
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_child_gets_the_allowlist_and_its_own_env_but_no_inherited_credential() {
        let parent = [
            ("PATH", "/bin"),
            ("HOME", "/home/u"),
            ("GITHUB_TOKEN", "inherited"),
            ("RANDOM_VAR", "x"),
        ]
        .map(|(k, v)| (OsString::from(k), OsString::from(v)));
        let env = environment(parent, &[("API_KEY".into(), "configured".into())]);
        let get = |k: &str| env.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
        assert_eq!(get("PATH"), Some("/bin".into()));
        assert_eq!(get("HOME"), Some("/home/u".into()));
        assert_eq!(get("GITHUB_TOKEN"), None);
        assert_eq!(get("RANDOM_VAR"), None);
        assert_eq!(get("API_KEY"), Some("configured".into()));
    }
}
