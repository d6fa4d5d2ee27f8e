//! The upstream family as the gateway sees it: a call of an upstream tool made on its
//! server, whose answer is kept whole for a direct call (and, as a run's result, its
//! `structuredContent`, else `{content}`).

use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::{Value, json};

use super::Upstreams;
use crate::backends::seam::{Answer, Backend, Call, Form, Output, Target};
use crate::error::Error;

/// The tools of the user's MCP servers.
#[derive(Debug, Clone)]
pub struct Family {
    upstreams: Arc<Upstreams>,
}

impl Family {
    /// The family calling the servers of `upstreams`.
    pub fn new(upstreams: Arc<Upstreams>) -> Family {
        Family { upstreams }
    }
}

impl Backend for Family {
    fn family(&self) -> &'static str {
        "upstream"
    }

    fn call<'a>(&'a self, call: Call<'a>) -> BoxFuture<'a, Answer> {
        Box::pin(async move {
            let federated = match call.target {
                Target::Tool { tool, .. } => tool.federated.as_ref(),
                Target::Builtin(_) => None,
            };
            let Some(tool) = federated else {
                return Answer::refused(Error::Internal("an upstream call of a tool no server offers".into()));
            };
            let raw = match self.upstreams.call(tool, call.params).await {
                Ok(raw) => raw,
                Err(e) => return Answer::refused(e),
            };
            let result = raw
                .get("structuredContent")
                .cloned()
                .unwrap_or_else(|| json!({"content": raw.get("content").cloned().unwrap_or_else(|| json!([]))}));
            let ended = if raw.get("isError").and_then(Value::as_bool) == Some(true) {
                Err(Error::Execution {
                    message: text_of(&raw).unwrap_or_else(|| format!("{} answered with isError", tool.server)),
                })
            } else {
                Ok(result)
            };
            Answer::reached(ended, Output::default()).with_form(Form::Passthrough(raw))
        })
    }
}

/// The text blocks of an answer's content, joined.
fn text_of(raw: &Value) -> Option<String> {
    let texts: Vec<&str> = raw
        .get("content")?
        .as_array()?
        .iter()
        .filter_map(|c| c.get("text").and_then(Value::as_str))
        .collect();
    (!texts.is_empty()).then(|| texts.join("\n"))
}
