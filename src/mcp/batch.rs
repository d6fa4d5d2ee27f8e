//! The meta-tool's `batch`: up to ten runs as one intent. Every slug is resolved, every
//! run admitted by the caller's scope and run rate, and every admitted params object
//! validated first — any validation failure rejects the whole batch and runs nothing
//! (the runs it took from the caller's bucket stay spent: the checking was work done for
//! it) — then the runs go concurrently, each failing alone (an item refused by the rate
//! fails as `RATE_LIMITED`, unvalidated). Progress is reported only when the request
//! carried a progress token.

use futures::StreamExt;
use futures::stream::FuturesUnordered;
use rmcp::model::{CallToolResult, JsonObject, ProgressNotificationParam, ProgressToken};
use rmcp::{Peer, RoleServer};
use serde_json::{Value, json};

use tokio_util::sync::CancellationToken;

use super::convert::answer;
use crate::error::{BatchProblem, Error};
use crate::gateway::{Caller, Gateway, Reach, Run};
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
    caller: &Caller,
    mut args: JsonObject,
    progress: Option<Progress>,
    cancel: &CancellationToken,
) -> Result<CallToolResult, Error> {
    let Some(Value::Array(items)) = args.remove("runs") else {
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
    let mut snapshot = None;
    let mut planned = Vec::with_capacity(items.len());
    let mut problems = Vec::new();
    for (index, mut item) in items.into_iter().enumerate() {
        let slug = item.get("slug").and_then(Value::as_str).unwrap_or_default().to_owned();
        let problem = |code, message: String| BatchProblem {
            index,
            slug: slug.clone(),
            code,
            message,
        };
        if slug.is_empty() {
            let e = Error::BadRequest("each run needs a \"slug\"".into());
            problems.push(problem(e.code(), e.to_string()));
            continue;
        }
        let params = match item.get_mut("params").map(Value::take) {
            None | Some(Value::Null) => json!({}),
            Some(p) => p,
        };
        let entry = match gateway.resolve_holding(caller, &slug, Reach::Meta, &mut snapshot).await {
            Ok(entry) => entry,
            Err(e) => {
                problems.push(problem(e.code(), e.to_string()));
                continue;
            }
        };
        // The caller's scope and rate before its params are read: an item refused there
        // is not validated, and fails alone when the batch runs.
        let ticket = gateway.admit(caller, &entry).await;
        let params = match &ticket {
            Ok(_) => match crate::gateway::validate(&entry, params).await {
                (Ok(()), params) => params,
                (Err(e), _) => {
                    problems.push(problem(e.code(), e.to_string()));
                    continue;
                }
            },
            Err(_) => params,
        };
        planned.push((index, entry, params, ticket));
    }
    if !problems.is_empty() {
        return Err(Error::BatchInvalid { problems });
    }
    let total = planned.len();
    if let Some(p) = &progress {
        p.tick(
            0,
            total,
            format!("starting {}", crate::plural::count(total, "run", "runs")),
        )
        .await;
    }
    let mut pending: FuturesUnordered<_> = planned
        .into_iter()
        .map(|(index, entry, params, ticket)| async move {
            (
                index,
                gateway.call_admitted(caller, &entry, params, ticket, cancel).await,
            )
        })
        .collect();
    let mut finished: Vec<Option<Run>> = (0..total).map(|_| None).collect();
    let mut done = 0;
    while let Some((index, run)) = pending.next().await {
        done += 1;
        if let Some(p) = &progress {
            let how = if run.is_ok() { "ok" } else { "failed" };
            p.tick(done, total, format!("#{index} {} {how}", run.name)).await;
        }
        finished[index] = Some(run);
    }
    Ok(render(finished.into_iter().flatten().collect()))
}

/// The tally first, failures before successes in the text; every payload in input order
/// in `structuredContent`, each the body its tool answers alone.
fn render(finished: Vec<Run>) -> CallToolResult {
    let failed = finished.iter().filter(|r| !r.is_ok()).count();
    let succeeded = finished.len() - failed;
    let mut text = format!("Batch of {}: {succeeded} succeeded, {failed} failed.\n", finished.len());
    let mut failures = String::new();
    let mut successes = String::new();
    let results: Vec<Value> = finished
        .iter()
        .enumerate()
        .map(|(index, run)| {
            match &run.answer.ended {
                Ok(result) => successes.push_str(&format!("#{index} {} ({}): {result}\n", run.name, run.id)),
                Err(e) => failures.push_str(&format!(
                    "#{index} {} ({}): {} ({}): {e}\n",
                    run.name,
                    run.id,
                    e.code(),
                    if e.retryable() { "retryable" } else { "not retryable" }
                )),
            }
            let mut v = run.body();
            v["index"] = json!(index);
            v["slug"] = json!(run.name);
            v
        })
        .collect();
    if failed > 0 {
        text.push_str(&format!("Failed:\n{failures}"));
    }
    if succeeded > 0 {
        text.push_str(&format!("Succeeded:\n{successes}"));
    }
    answer(
        true,
        text,
        json!({"total": finished.len(), "succeeded": succeeded, "failed": failed, "results": results}),
    )
}
