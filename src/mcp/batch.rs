//! The meta-tool's `batch`: up to ten runs as one intent. Every slug is resolved and every
//! params object validated first — any failure rejects the whole batch and runs nothing —
//! then the runs go concurrently, each failing alone. Progress is reported only when the
//! request carried a progress token.

use futures::StreamExt;
use futures::stream::FuturesUnordered;
use rmcp::model::{CallToolResult, JsonObject, ProgressNotificationParam, ProgressToken};
use rmcp::{Peer, RoleServer};
use serde_json::{Value, json};

use super::convert::{answer, run_structured};
use crate::error::{BatchProblem, Error};
use crate::gateway::{Gateway, Run};
use crate::limits::BATCH_MAX;

/// Where progress goes, when the host asked for it.
pub(crate) struct Progress {
    /// The client.
    pub(crate) peer: Peer<RoleServer>,
    /// The token its request carried.
    pub(crate) token: ProgressToken,
}

impl Progress {
    /// Sends one tick; a failed notification never fails the call.
    async fn tick(&self, done: usize, total: usize, message: String) {
        let mut param = ProgressNotificationParam::new(self.token.clone(), done as f64).with_total(total as f64);
        param.message = Some(message);
        if let Err(e) = self.peer.notify_progress(param).await {
            tracing::debug!("progress notification not delivered: {e}");
        }
    }
}

/// Answers `{"command":"batch","runs":[{"slug":...,"params":{...}}, ...]}`.
pub(crate) async fn batch(
    gateway: &Gateway,
    args: &JsonObject,
    progress: Option<Progress>,
) -> Result<CallToolResult, Error> {
    let Some(Value::Array(items)) = args.get("runs") else {
        return Err(Error::BadRequest(
            "batch needs \"runs\": a list of {\"slug\": ..., \"params\": {...}}".into(),
        ));
    };
    if items.is_empty() {
        return Err(Error::BadRequest(
            "\"runs\" is empty: a batch needs at least one run".into(),
        ));
    }
    if items.len() > BATCH_MAX {
        return Err(Error::BatchTooLarge {
            count: items.len(),
            limit: BATCH_MAX,
        });
    }
    let snapshot = gateway.snapshot().await?;
    let mut planned = Vec::with_capacity(items.len());
    let mut problems = Vec::new();
    for (index, item) in items.iter().enumerate() {
        let slug = item.get("slug").and_then(Value::as_str).unwrap_or_default();
        let problem = |code, message: String| BatchProblem {
            index,
            slug: slug.to_owned(),
            code,
            message,
        };
        if slug.is_empty() {
            problems.push(problem("BAD_REQUEST", "each run needs a \"slug\"".into()));
            continue;
        }
        let params = match item.get("params") {
            None | Some(Value::Null) => json!({}),
            Some(p) => p.clone(),
        };
        match snapshot
            .resolve(slug)
            .and_then(|tool| tool.validator.check(tool.slug(), &params).map(|()| tool.clone()))
        {
            Ok(tool) => planned.push((index, tool, params)),
            Err(e) => problems.push(problem(e.code(), e.to_string())),
        }
    }
    if !problems.is_empty() {
        return Err(Error::BatchInvalid { problems });
    }
    let total = planned.len();
    if let Some(p) = &progress {
        p.tick(0, total, format!("starting {total} runs")).await;
    }
    let mut pending: FuturesUnordered<_> = planned
        .into_iter()
        .map(|(index, tool, params)| {
            let snapshot = &snapshot;
            async move {
                (
                    index,
                    tool.slug().to_owned(),
                    gateway.run_tool(snapshot, &tool, params).await,
                )
            }
        })
        .collect();
    let mut finished: Vec<Option<(String, Result<Run, Error>)>> = (0..total).map(|_| None).collect();
    let mut done = 0;
    while let Some((index, slug, outcome)) = pending.next().await {
        done += 1;
        if let Some(p) = &progress {
            let how = if outcome.is_ok() { "ok" } else { "failed" };
            p.tick(done, total, format!("#{index} {slug} {how}")).await;
        }
        finished[index] = Some((slug, outcome));
    }
    Ok(render(finished.into_iter().flatten().collect()))
}

/// The tally first, failures before successes in the text; every payload in input order
/// in `structuredContent`.
fn render(finished: Vec<(String, Result<Run, Error>)>) -> CallToolResult {
    let failed = finished.iter().filter(|(_, r)| r.is_err()).count();
    let succeeded = finished.len() - failed;
    let mut text = format!("Batch of {}: {succeeded} succeeded, {failed} failed.\n", finished.len());
    let mut failures = String::new();
    let mut successes = String::new();
    let results: Vec<Value> = finished
        .iter()
        .enumerate()
        .map(|(index, (slug, outcome))| match outcome {
            Ok(run) => {
                successes.push_str(&format!("#{index} {slug} ({}): {}\n", run.id, run.outcome.result));
                let mut v = run_structured(run);
                v["index"] = json!(index);
                v["slug"] = json!(slug);
                v
            }
            Err(e) => {
                failures.push_str(&format!("#{index} {slug}: {} ({}): {e}\n", e.code(), retry_word(e)));
                json!({"index": index, "slug": slug, "success": false, "error": e.to_string(), "code": e.code(), "retryable": e.retryable()})
            }
        })
        .collect();
    if failed > 0 {
        text.push_str(&format!("Failed:\n{failures}"));
    }
    if succeeded > 0 {
        text.push_str(&format!("Succeeded:\n{successes}"));
    }
    answer(
        text,
        json!({"total": finished.len(), "succeeded": succeeded, "failed": failed, "results": results}),
    )
}

fn retry_word(e: &Error) -> &'static str {
    if e.retryable() { "retryable" } else { "not retryable" }
}
