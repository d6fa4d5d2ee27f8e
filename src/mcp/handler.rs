//! The MCP server handler: tools and resources, implemented by hand because the
//! tools are only known at run time. Each method makes one core call and converts.

use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CompleteRequestParams, CompleteResult, CompletionInfo,
    GetPromptRequestParams, GetPromptResponse, Implementation, ListPromptsResult, ListResourceTemplatesResult,
    ListResourcesResult, ListToolsResult, PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse,
    ReadResourceResult, ServerCapabilities, ServerConfig,
};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use serde_json::Value;

use super::batch::Progress;
use super::convert::{failure, run_result, unknown_tool};
use super::watch::Watch;
use super::{meta, nyxilum, nyxilum_tools, prompts, resources, runtimes, tools};
use crate::config::{Advertise, Runtimes};
use crate::gateway::Gateway;

/// toolgate's MCP server.
#[derive(Debug, Clone)]
pub struct Handler {
    gateway: Arc<Gateway>,
    name: String,
    advertise: Advertise,
    runtimes: Runtimes,
    watch: Arc<Watch>,
    listing: Arc<tools::Listing>,
}

impl Handler {
    /// A handler over `gateway`, with the meta-tool named `name` and the runtime tools
    /// `runtimes` asks for.
    pub fn new(gateway: Arc<Gateway>, name: String, advertise: Advertise, runtimes: Runtimes) -> Handler {
        Handler {
            gateway,
            name,
            advertise,
            runtimes,
            watch: Arc::default(),
            listing: Arc::default(),
        }
    }

    /// The gateway it serves.
    pub fn gateway(&self) -> Arc<Gateway> {
        self.gateway.clone()
    }
}

impl ServerHandler for Handler {
    fn get_info(&self) -> ServerConfig {
        let instructions = format!(
            "toolgate is a gateway to a catalogue of tools. Call a listed tool directly by its slug, or use the '{0}' meta-tool: {{\"command\":\"list\"}} to see every tool, {{\"command\":\"schema\",\"slug\":...}} for exact parameters and a ready-to-send call, {{\"command\":\"run\",\"slug\":...,\"params\":{{...}}}} to run one. Failures carry a stable code and a retryable flag; never retry a non-retryable one unchanged.",
            self.name
        );
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_resources()
                .enable_prompts()
                .enable_completions()
                .build(),
        )
        .with_server_info(Implementation::new("toolgate", env!("CARGO_PKG_VERSION")))
        .with_instructions(instructions)
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        self.watch
            .clone()
            .spawn_poll(self.gateway.clone(), self.name.clone(), self.advertise, context.peer);
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        // An unreachable catalogue still lists the meta-tool, which explains the outage.
        let snapshot = match self.gateway.snapshot().await {
            Ok(s) => {
                self.watch.observe(&s, &self.name, self.advertise, &context.peer).await;
                Some(s)
            }
            Err(e) => {
                tracing::warn!("tools/list without a catalogue: {e}");
                None
            }
        };
        let mut list = self.listing.advertised(snapshot.as_ref(), &self.name, self.advertise);
        // Runtime tools follow the meta-tool, before the catalogue's tools.
        let at = 1.min(list.len());
        let mut extra = runtimes::tools(self.runtimes);
        if self.runtimes.nyxilum {
            extra.extend(nyxilum_tools::tools());
        }
        list.splice(at..at, extra);
        Ok(ListToolsResult::with_all_items(list))
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        Ok(ListResourcesResult::with_all_items(resources::list(&self.name)))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        Ok(ListResourceTemplatesResult::with_all_items(resources::templates(
            &self.name,
        )))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        Ok(ReadResourceResult::new(vec![resources::read(&self.gateway, &self.name, &request.uri).await?]).into())
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, McpError> {
        Ok(ListPromptsResult::with_all_items(prompts::list()))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, McpError> {
        let args = request.arguments.unwrap_or_default();
        Ok(prompts::get(&self.gateway, &self.name, &request.name, &args)
            .await?
            .into())
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, McpError> {
        let values = prompts::complete(
            &self.gateway,
            &request.r#ref,
            &request.argument.name,
            &request.argument.value,
        )
        .await;
        let info = CompletionInfo::new(values).map_err(|e| McpError::internal_error(e, None))?;
        Ok(CompleteResult::new(info))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let token = context
            .meta
            .get_progress_token()
            .or_else(|| request.meta.as_ref().and_then(|m| m.get_progress_token()));
        let args = request.arguments.unwrap_or_default();
        if request.name == self.name {
            let progress = token.map(|token| Progress {
                peer: context.peer.clone(),
                token,
            });
            return Ok(meta::call(&self.gateway, &self.name, &args, progress).await.into());
        }
        if let Some(answer) = runtimes::call(&self.gateway, self.runtimes, &request.name, &args).await {
            return Ok(answer.into());
        }
        if self.runtimes.nyxilum
            && let Some(answer) = nyxilum::call(&self.gateway, &request.name, &args).await
        {
            return Ok(answer.into());
        }
        let snapshot = match self.gateway.snapshot().await {
            Ok(s) => s,
            Err(e) => return Ok(failure(&e).into()),
        };
        self.watch
            .observe(&snapshot, &self.name, self.advertise, &context.peer)
            .await;
        let tool = snapshot
            .resolve_advertisable(&request.name)
            .map_err(|e| unknown_tool(&e))?
            .clone();
        let result = match self.gateway.run_tool(&snapshot, &tool, Value::Object(args)).await {
            Ok(run) => run_result(&run),
            Err(e) => failure(&e),
        };
        Ok(result.into())
    }
}
