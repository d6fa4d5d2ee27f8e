//! The MCP server handler: tools, resources (and their subscriptions) and prompts,
//! implemented by hand because the tools are only known at run time. Each method makes one
//! core call and converts.

use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CompleteRequestParams, CompleteResult, CompletionInfo,
    GetPromptRequestParams, GetPromptResponse, Implementation, ListPromptsResult, ListResourceTemplatesResult,
    ListResourcesResult, ListToolsResult, PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse,
    ReadResourceResult, Reference, ServerCapabilities, ServerConfig,
};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use serde_json::Value;
use tracing::Instrument;

use super::Advertise;
use super::batch::Progress;
use super::client::Client;
use super::convert::{direct_result, failure, unknown_tool};
use super::spans::{self, About};
use super::watch::Watch;
use super::{extras, meta, page, prompts, resources, tools, upstreams};
use crate::access::Principal;
use crate::error::Error;
use crate::gateway::{Caller, Gateway, Reach};
use crate::history::History;
use crate::history::shelf::Shelf;
use crate::registry::Entry;
use crate::shared::Shared;
use crate::shared::sessions::AskedLevel;

/// toolgate's MCP server, for one session: what it holds is shared by every session of
/// the process (gateway, advertised list) except its [`Caller`] (history, REPL sessions).
#[derive(Debug, Clone)]
pub struct Handler {
    gateway: Arc<Gateway>,
    caller: Caller,
    /// Ends the caller's REPL sessions when the last clone of this session's handler is
    /// dropped (the session ended: stdin closed, an HTTP session deleted or idle).
    _ending: Arc<Ending>,
    name: String,
    watch: Arc<Watch>,
    listing: Arc<tools::Listing>,
    /// The meta-tool's first `list` page of the last snapshot, shared by every session.
    first_page: Arc<meta::FirstPage>,
    /// For a fleet's replica: the Redis its sessions keep their history in, and how long
    /// a session's keys outlive its last run (its idle expiry).
    shelves: Option<(Shared, Duration)>,
}

impl Handler {
    /// A handler over `gateway`, with the meta-tool named `name`, listing tools under
    /// `advertise` within `budget` bytes (for `auto`).
    pub fn new(gateway: Arc<Gateway>, name: String, advertise: Advertise, budget: usize) -> Handler {
        let policy = tools::Policy {
            name: name.clone(),
            advertise,
            budget,
        };
        let caller = Caller::new();
        let listing = Arc::new(tools::Listing::new(policy));
        Handler {
            _ending: Arc::new(Ending::new(&gateway, &caller)),
            gateway,
            watch: Arc::new(Watch::new(listing.clone(), caller.clone())),
            caller,
            name,
            listing,
            first_page: Arc::default(),
            shelves: None,
        }
    }

    /// This handler making sessions that keep their history in the fleet's Redis
    /// (`shared`) too, their keys living `life` past their last run.
    #[must_use]
    pub fn with_shelves(self, shared: Shared, life: Duration) -> Handler {
        Handler {
            shelves: Some((shared, life)),
            ..self
        }
    }

    /// A handler for a new session: the same gateway and listing, a caller of its own
    /// (an empty history, no REPL sessions) and its own record of what the client saw and
    /// subscribed to. Over HTTP the session belongs to `owner`, the principal of its
    /// `initialize`, from the start.
    #[must_use]
    pub fn for_new_session(&self, owner: Option<Principal>) -> Handler {
        let mut caller = match owner {
            Some(principal) => Caller::owned_by(principal),
            None => Caller::new(),
        };
        if let Some((shared, life)) = &self.shelves {
            caller = caller.keeping(History::shelved(Shelf::new(shared.clone(), *life)));
        }
        let mut ending = Ending::new(&self.gateway, &caller);
        ending.counted = true;
        crate::metrics::get().sessions(1);
        Handler {
            _ending: Arc::new(ending),
            watch: Arc::new(Watch::new(self.listing.clone(), caller.clone())),
            caller,
            ..self.clone()
        }
    }

    /// This session's caller acting as the request's principal (over HTTP), refused
    /// when the session belongs to another principal.
    fn caller_for(&self, context: &RequestContext<RoleServer>) -> Result<Caller, McpError> {
        match principal(context) {
            Some(p) => self
                .caller
                .acting_as(p)
                .map_err(|e| McpError::invalid_request(e.to_string(), None)),
            None => Ok(self.caller.clone()),
        }
    }

    /// The gateway it serves.
    pub fn gateway(&self) -> Arc<Gateway> {
        self.gateway.clone()
    }

    /// The current snapshot, for the catalogue's own resources and prompts; `None` (and a
    /// warning) when the catalogue cannot be had: the built-ins are still served.
    async fn catalogue(&self, method: &str) -> Option<Arc<crate::catalogue::Snapshot>> {
        match self.gateway.snapshot().await {
            Ok(s) => Some(s),
            Err(e) => {
                tracing::warn!("{method} without the catalogue's own entries: {e}");
                None
            }
        }
    }
}

/// What a session leaves behind when it ends, cleared when dropped.
#[derive(Debug)]
struct Ending {
    gateway: Arc<Gateway>,
    owner: u64,
    /// Counted among the live sessions of the metrics (an HTTP session).
    counted: bool,
}

impl Ending {
    fn new(gateway: &Arc<Gateway>, caller: &Caller) -> Ending {
        Ending {
            gateway: gateway.clone(),
            owner: caller.owner(),
            counted: false,
        }
    }
}

impl Drop for Ending {
    fn drop(&mut self) {
        if self.counted {
            crate::metrics::get().sessions(-1);
        }
        // Without a runtime (the process is ending) every REPL session is closed anyway.
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(self.gateway.end_session(self.owner));
        }
    }
}

impl ServerHandler for Handler {
    // Logging is declared and honoured while clients of every protocol before 2026-07-28
    // use it, though rmcp marks it deprecated (SEP-2577).
    #[allow(deprecated)]
    fn get_info(&self) -> ServerConfig {
        let instructions = format!(
            "toolgate is a gateway to a catalogue of tools. Call a listed tool directly by its slug, or use the '{0}' meta-tool: {{\"command\":\"list\"}} to see every tool, {{\"command\":\"schema\",\"slug\":...}} for exact parameters and a ready-to-send call, {{\"command\":\"run\",\"slug\":...,\"params\":{{...}}}} to run one. Failures carry a stable code and a retryable flag; never retry a non-retryable one unchanged.",
            self.name
        );
        ServerConfig::new(
            // list_changed is declared where it is sent: tools, resources and prompts
            // change with the catalogue. Subscriptions: resources/subscribe (legacy, but
            // what every client before 2026-07-28 uses).
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .enable_resources()
                .enable_resources_list_changed()
                .enable_resources_subscribe()
                .enable_prompts()
                .enable_prompts_list_changed()
                .enable_completions()
                .enable_logging()
                .build(),
        )
        .with_server_info(Implementation::new("toolgate", env!("CARGO_PKG_VERSION")))
        .with_instructions(instructions)
    }

    /// `ping`: answered at once, in its span like every other MCP request.
    async fn ping(&self, context: RequestContext<RoleServer>) -> Result<(), McpError> {
        let span = spans::request("ping", About::Nothing, &context, None);
        spans::traced(span, std::future::ready(Ok(()))).await
    }

    /// rmcp's own `initialize` (the peer's info kept, the version negotiated), in its span.
    async fn initialize(
        &self,
        request: rmcp::model::InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::InitializeResult, McpError> {
        let span = spans::request("initialize", About::Nothing, &context, None);
        spans::traced(span, async move {
            context.peer.set_peer_info(request.clone());
            self.negotiate_initialize(&request)
        })
        .await
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        self.watch
            .clone()
            .spawn_poll(self.gateway.clone(), self.listing.clone(), context.peer);
    }

    /// One page of the advertised list (`cursor` names any page but the first); a cursor
    /// this server did not give for the list as it is now is −32602.
    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let span = spans::request("tools/list", About::Nothing, &context, None);
        spans::traced(span, async move {
            let caller = self.caller_for(&context)?;
            // An unreachable catalogue still lists the meta-tool, which explains the outage.
            let snapshot = match self.gateway.snapshot_for(&caller).await {
                Ok(s) => {
                    self.watch
                        .observe(&self.gateway, &self.listing, &s, &context.peer)
                        .await;
                    Some(s)
                }
                Err(e) => {
                    tracing::warn!("tools/list without a catalogue: {e}");
                    None
                }
            };
            let listed = self.listing.advertised(&self.gateway, snapshot.as_ref());
            let start = match request.and_then(|r| r.cursor) {
                None => 0,
                Some(raw) => page::start(page::List::Tools, &raw, listed.fingerprint, listed.len())
                    .map_err(|e| McpError::invalid_params(e, None))?,
            };
            let (tools, next) = listed.page(start);
            let mut result = ListToolsResult::with_all_items(tools);
            result.next_cursor = next.map(|n| page::cursor(page::List::Tools, n, listed.fingerprint));
            Ok(result)
        })
        .await
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        let span = spans::request("resources/list", About::Nothing, &context, None);
        spans::traced(span, async move {
            let mut all = resources::list(&self.name);
            if let Some(snapshot) = self.catalogue("resources/list").await {
                all.extend(extras::resources(&snapshot));
            }
            all.extend(upstreams::resources(&self.gateway, &self.name).await);
            Ok(ListResourcesResult::with_all_items(all))
        })
        .await
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        let span = spans::request("resources/templates/list", About::Nothing, &context, None);
        spans::traced(span, async move {
            let mut all = resources::templates(&self.name);
            if let Some(snapshot) = self.catalogue("resources/templates/list").await {
                all.extend(extras::templates(&snapshot));
            }
            Ok(ListResourceTemplatesResult::with_all_items(all))
        })
        .await
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        let span = spans::request("resources/read", About::Resource(&request.uri), &context, None);
        spans::traced(span, async move {
            let caller = self.caller_for(&context)?;
            self.bind(&context);
            if request.uri == format!("{}://history", self.name) {
                self.caller.history().refresh().await.map_err(|e| {
                    McpError::internal_error(
                        e.to_string(),
                        Some(serde_json::json!({"code": e.code(), "retryable": e.retryable()})),
                    )
                })?;
            }
            if let Some(read) = upstreams::read(&self.gateway, &self.name, &request.uri).await {
                return Ok(read?.into());
            }
            Ok(ReadResourceResult::new(vec![
                resources::read(&self.gateway, &caller, &self.listing, &request.uri, None).await?,
            ])
            .into())
        })
        .await
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, McpError> {
        let span = spans::request("prompts/list", About::Nothing, &context, None);
        spans::traced(span, async move {
            let mut all = prompts::list();
            if let Some(snapshot) = self.catalogue("prompts/list").await {
                all.extend(extras::prompts(&snapshot));
            }
            all.extend(upstreams::prompts(&self.gateway).await);
            Ok(ListPromptsResult::with_all_items(all))
        })
        .await
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, McpError> {
        let span = spans::request("prompts/get", About::Prompt(&request.name), &context, None);
        spans::traced(span, async move {
            let caller = self.caller_for(&context)?;
            let args = request.arguments.unwrap_or_default();
            if let Some(got) = upstreams::get_prompt(&self.gateway, &request.name, args.clone()).await {
                return Ok(got?.into());
            }
            if !prompts::NAMES.contains(&request.name.as_str())
                && let Some(snapshot) = self.catalogue("prompts/get").await
                && let Some(got) = extras::get(&snapshot, &request.name, &args)
            {
                return Ok(got?.into());
            }
            Ok(
                prompts::get(&self.gateway, &caller, &self.listing, &request.name, &args)
                    .await?
                    .into(),
            )
        })
        .await
    }

    /// `logging/setLevel`: log messages below the level no longer reach this session (the
    /// ones toolgate passes on from upstream servers; toolgate's own diagnostics go to
    /// its stderr, never to a client).
    #[allow(deprecated)] // rmcp marks logging deprecated (SEP-2577); clients still use it.
    async fn set_level(
        &self,
        request: rmcp::model::SetLevelRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let span = spans::request("logging/setLevel", About::Nothing, &context, None);
        spans::traced(span, async move {
            let rank = super::client::rank(request.level);
            self.caller.set_log_level(rank);
            // A fleet's session: recorded for every replica to honour.
            if let (Some((shared, _)), Some(id)) = (&self.shelves, session_id(&context)) {
                crate::shared::sessions::record_level(shared, id, rank)
                    .await
                    .map_err(|e| {
                        McpError::internal_error(
                            e.to_string(),
                            Some(serde_json::json!({"code": e.code(), "retryable": e.retryable()})),
                        )
                    })?;
            }
            Ok(())
        })
        .await
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, McpError> {
        let span = spans::request("completion/complete", About::Nothing, &context, None);
        spans::traced(span, async move {
            let caller = self.caller_for(&context)?;
            let catalogue = match &request.r#ref {
                Reference::Prompt(p) if !prompts::NAMES.contains(&p.name.as_str()) => {
                    self.catalogue("completion/complete").await.and_then(|snapshot| {
                        extras::complete(&snapshot, &p.name, &request.argument.name, &request.argument.value)
                    })
                }
                _ => None,
            };
            let values = match catalogue {
                Some(values) => values.into_iter().take(CompletionInfo::MAX_VALUES).collect(),
                None => {
                    prompts::complete(
                        &self.gateway,
                        &caller,
                        &request.r#ref,
                        &request.argument.name,
                        &request.argument.value,
                    )
                    .await
                }
            };
            let info = CompletionInfo::new(values).map_err(|e| McpError::internal_error(e, None))?;
            Ok(CompleteResult::new(info))
        })
        .await
    }

    /// `resources/subscribe`: any URI this server reads itself; `{}` once subscribed.
    #[allow(deprecated)] // Legacy in rmcp (2026-07-28 has subscriptions/listen); clients use it.
    async fn subscribe(
        &self,
        request: rmcp::model::SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let span = spans::request("resources/subscribe", About::Resource(&request.uri), &context, None);
        spans::traced(span, async move {
            self.caller_for(&context)?;
            self.watch.subscriptions().subscribe(&self.gateway, &request.uri).await
        })
        .await
    }

    /// `resources/unsubscribe`: no more updates for the URI; `{}` whether or not it was
    /// subscribed to.
    #[allow(deprecated)] // As `subscribe`.
    async fn unsubscribe(
        &self,
        request: rmcp::model::UnsubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let span = spans::request("resources/unsubscribe", About::Resource(&request.uri), &context, None);
        spans::traced(span, async move {
            self.watch.subscriptions().unsubscribe(&request.uri);
            Ok(())
        })
        .await
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        // One span a call, whose parent is the client's trace context when it sent one.
        let span = spans::request(
            "tools/call",
            About::Tool(&request.name),
            &context,
            request.meta.as_ref(),
        );
        let answer = self.call_tool_in_span(request, context).instrument(span.clone()).await;
        spans::record_call(&span, &answer);
        answer
    }
}

impl Handler {
    /// [`ServerHandler::call_tool`] inside its span.
    async fn call_tool_in_span(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let token = context
            .meta
            .get_progress_token()
            .or_else(|| request.meta.as_ref().and_then(|m| m.get_progress_token()));
        let args = request.arguments.unwrap_or_default();
        // Over HTTP the call acts as the request's principal (admitted by its limits); a
        // session another principal started is not its to use.
        let caller = match principal(&context).map(|p| self.caller.acting_as(p)) {
            Some(Ok(caller)) => caller,
            Some(Err(e)) => return Ok(failure(&e).into()),
            None => self.caller.clone(),
        }
        .with_request(request_id(&context));
        self.bind(&context);
        if request.name == self.name {
            // A fleet's session reads what every replica recorded.
            let command = args.get("command").and_then(Value::as_str);
            if matches!(command, Some("history" | "diff"))
                && let Err(e) = caller.history().refresh().await
            {
                return Ok(failure(&e).into());
            }
            // A batch reports its own progress (one step per call); a single `run` hands
            // the token to the tool it runs, so `mcp.progress` and upstream progress reach
            // the client as they do on a direct call.
            let single = args.get("command").and_then(Value::as_str) == Some("run");
            let (progress, tool_token) = match token {
                Some(token) if single => (None, Some(token)),
                token => (
                    token.map(|token| Progress {
                        peer: context.peer.clone(),
                        token,
                    }),
                    None,
                ),
            };
            // Everything inside (upstream calls, code) reaches this client through it.
            let client = Client::new(
                context.peer.clone(),
                self.caller.owner(),
                self.caller.log_level(),
                tool_token,
            );
            let answer = client
                .scope(meta::call(
                    &self.gateway,
                    &caller,
                    &self.listing,
                    args,
                    progress,
                    &self.first_page,
                    &context.ct,
                ))
                .await;
            self.watch.subscriptions().ran(&self.gateway, &context.peer).await;
            return Ok(answer.into());
        }
        let entry = match self.gateway.resolve(&caller, &request.name, Reach::Direct).await {
            Ok(entry) => entry,
            Err(e @ (Error::ToolNotFound { .. } | Error::AmbiguousSlug { .. })) => return Err(unknown_tool(&e)),
            // The catalogue itself failed (an API that is down): a result the agent can
            // act on, not a protocol error.
            Err(e) => return Ok(failure(&e).into()),
        };
        if let Entry::Catalogue { snapshot, .. } | Entry::Upstream { snapshot, .. } = &entry {
            self.watch
                .observe(&self.gateway, &self.listing, snapshot, &context.peer)
                .await;
        }
        let client = Client::new(
            context.peer.clone(),
            self.caller.owner(),
            self.caller.log_level(),
            token,
        );
        let run = client
            .scope(self.gateway.call(&caller, &entry, Value::Object(args), &context.ct))
            .await;
        self.watch.subscriptions().ran(&self.gateway, &context.peer).await;
        Ok(direct_result(&run).into())
    }
}

/// The principal the access layer admitted this request as, when it came over HTTP (rmcp
/// hands the HTTP request's parts to the handler in the context's extensions).
fn principal(context: &RequestContext<RoleServer>) -> Option<Principal> {
    context
        .extensions
        .get::<axum::http::request::Parts>()?
        .extensions
        .get::<Principal>()
        .cloned()
}

impl Handler {
    /// Binds a fleet session's history to the session's id, named by the request (every
    /// request after `initialize` names it), and takes up the log level the session asked
    /// for on any replica (the HTTP layer read it from the fleet for this request).
    fn bind(&self, context: &RequestContext<RoleServer>) {
        if self.shelves.is_none() {
            return;
        }
        if let Some(id) = session_id(context) {
            self.caller.history().bind(id);
        }
        let asked = context
            .extensions
            .get::<axum::http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<AskedLevel>());
        if let Some(AskedLevel(rank)) = asked {
            self.caller.set_log_level(*rank);
        }
    }
}

/// The MCP session the request names (`Mcp-Session-Id`), when it came over HTTP.
fn session_id(context: &RequestContext<RoleServer>) -> Option<&str> {
    context
        .extensions
        .get::<axum::http::request::Parts>()?
        .headers
        .get("mcp-session-id")?
        .to_str()
        .ok()
}

/// The id `edge::observe` gave the HTTP request of this call, when it came over HTTP.
fn request_id(context: &RequestContext<RoleServer>) -> Option<Arc<str>> {
    let parts = context.extensions.get::<axum::http::request::Parts>()?;
    Some(parts.extensions.get::<crate::edge::observe::RequestId>()?.0.clone())
}
