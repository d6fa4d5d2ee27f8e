//! A finished run kept: in its caller's history (with its principal, request, parent run
//! and trace) and counted in the metrics by family and outcome.

use std::time::SystemTime;

use serde_json::Value;

use super::{Caller, Run};
use crate::history::{Ended, Finished, Sent};
use crate::registry::Entry;

/// Stores a finished run of `entry` in its caller's history (this process's only: a
/// refusal of the catalogue API, whose caller lives for one request), and counts it in
/// the metrics by family and outcome.
pub(super) fn record(caller: &Caller, entry: &Entry, run: &Run, started: SystemTime, input: Sent<'_>) {
    let recorded = run.recorded();
    caller
        .history()
        .record(finished(caller, run, started, input, &recorded));
    count(entry, run);
}

/// [`record`] for a run of a session, which a fleet's replica keeps in Redis too before
/// the run's answer goes out.
pub(super) async fn keep(caller: &Caller, entry: &Entry, run: &Run, started: SystemTime, input: Sent<'_>) {
    let recorded = run.recorded();
    caller
        .history()
        .keep(finished(caller, run, started, input, &recorded))
        .await;
    count(entry, run);
}

/// `run` as history takes it, with `recorded` its body.
fn finished<'a>(
    caller: &'a Caller,
    run: &'a Run,
    started: SystemTime,
    input: Sent<'a>,
    recorded: &'a Value,
) -> Finished<'a> {
    let ended = match run.error() {
        None => Ended::Ok(recorded),
        Some(e) => Ended::Failed {
            code: e.code(),
            body: recorded,
        },
    };
    Finished {
        id: run.id.clone(),
        slug: &run.name,
        started,
        duration_ms: run.duration.as_millis() as u64,
        input,
        ended,
        principal: caller.principal().map(|p| &*p.id),
        request_id: caller.request(),
        parent_run_id: caller.parent(),
        trace_id: crate::telemetry::trace_id(),
    }
}

/// Counts a finished run of `entry` in the metrics by family and outcome.
fn count(entry: &Entry, run: &Run) {
    let code = run.error().map_or("ok", |e| e.code());
    crate::metrics::get().run(entry.backend().family(), code);
}
