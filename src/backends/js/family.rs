//! The JavaScript family as the gateway sees it: `run_javascript` and `run_typescript`,
//! and the answers of its runs — a snippet's and a catalogue tool's — each built once from
//! what the worker captured.

use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::Value;

use super::output::Captured;
use super::server::pool::{Js, JsOutput, SnippetOutput};
use super::tools::{self, RUN_JAVASCRIPT, RUN_TYPESCRIPT};
use crate::backends::seam::{Answer, Backend, Call, Declared, Output, Target};
use crate::error::Error;
use crate::limits::{Limits, grouped};

/// The runtime tools on one JavaScript backend.
#[derive(Debug, Clone)]
pub struct Family {
    js: Arc<Js>,
}

impl Family {
    /// The family running its snippets on `js`.
    pub fn new(js: Arc<Js>) -> Family {
        Family { js }
    }
}

impl Backend for Family {
    fn family(&self) -> &'static str {
        "javascript"
    }

    fn declare(&self, limits: &Limits) -> Vec<Declared> {
        tools::declare(limits)
    }

    fn call<'a>(&'a self, call: Call<'a>) -> BoxFuture<'a, Answer> {
        Box::pin(async move {
            let typescript = match call.target {
                Target::Builtin(RUN_JAVASCRIPT) => false,
                Target::Builtin(RUN_TYPESCRIPT) => true,
                _ => {
                    return Answer::refused(Error::Internal(
                        "the JavaScript tools were asked for another tool".into(),
                    ));
                }
            };
            let code = call.params.get("code").and_then(Value::as_str).unwrap_or_default();
            let out = self
                .js
                .run_snippet(code, typescript, (call.party, call.cancel), call.tools)
                .await;
            snippet_answer(out, self.js.limits().output_chars, self.js.limits().result_chars)
        })
    }
}

/// A snippet's answer: its value (`null` when it returned nothing) or its error, and its
/// console on every path; a value cut at `result_chars` is said so.
fn snippet_answer(out: SnippetOutput, output_chars: usize, result_chars: usize) -> Answer {
    let result_cut = out.captured.result_truncated.then_some(result_chars);
    let output = Output {
        result_cut,
        ..output_of(out.captured, output_chars)
    };
    Answer::reached(out.outcome.map(|v| v.unwrap_or(Value::Null)), output)
}

/// A catalogue tool's answer: `run`'s value, or why the run failed.
pub(crate) fn tool_answer(ran: Result<JsOutput, Error>) -> Answer {
    match ran {
        Ok(out) => {
            let output = Output {
                cap: "its limit".to_owned(),
                ..output_of(out.captured, 0)
            };
            Answer::reached(Ok(out.result), output)
        }
        Err(e) => Answer::refused(e),
    }
}

/// The console a run captured, as an answer carries it.
fn output_of(captured: Captured, output_chars: usize) -> Output {
    let truncated = captured.stdout.is_truncated() || captured.stderr.is_truncated();
    Output {
        stdout: captured.stdout.into_text(),
        stderr: captured.stderr.into_text(),
        truncated,
        cap: format!("{} characters", grouped(output_chars as u64)),
        result_cut: None,
    }
}
