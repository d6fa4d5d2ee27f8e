//! Running one catalogue tool's `run(params)` in a fresh QuickJS runtime.
//!
//! Each call gets its own blocking thread (so a CPU-bound script never stalls the async
//! server) driving a current-thread tokio runtime for the script's promises. Nothing
//! survives the call: runtime, context and captured output are dropped with it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rquickjs::context::EvalOptions;
use rquickjs::{AsyncContext, AsyncRuntime, CatchResultExt, CaughtError, Ctx, Function, Value};

use super::alloc::CappedAllocator;
use super::output::Captured;
use crate::error::Error;
use crate::limits::JS_STACK_BYTES;

/// The bounds of one JavaScript run.
#[derive(Debug, Clone, Copy)]
pub struct JsLimits {
    /// Heap cap in bytes.
    pub heap_bytes: usize,
    /// Wall-clock deadline.
    pub wall_clock: Duration,
    /// Characters kept per output stream.
    pub output_chars: usize,
}

/// What a successful run produced.
#[derive(Debug)]
pub struct JsOutput {
    /// `run`'s return value as JSON (`null` for undefined).
    pub result: serde_json::Value,
    /// Captured console output.
    pub captured: Captured,
}

/// How long the outer timeout waits past the interrupt deadline before giving up on a
/// run whose promise never settles.
const OUTER_GRACE: Duration = Duration::from_millis(100);

/// The console installer, evaluated before the tool's code.
const PRELUDE: &str = include_str!("prelude.js");

/// Runs a tool script: evaluates `code` (named `filename` in stack traces), then awaits
/// `run(params)`.
pub async fn run_tool(
    code: Arc<str>,
    filename: String,
    params: serde_json::Value,
    limits: JsLimits,
) -> Result<JsOutput, Error> {
    let params = params.to_string();
    let task = tokio::task::spawn_blocking(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| Error::Internal(format!("cannot start a JS thread runtime: {e}")))?;
        runtime.block_on(run_isolated(code, filename, params, limits))
    });
    task.await
        .map_err(|e| Error::Internal(format!("the JS thread failed: {e}")))?
}

/// Builds the isolated runtime, runs the script, and turns every way it can end into a
/// result or one typed error.
async fn run_isolated(code: Arc<str>, filename: String, params: String, limits: JsLimits) -> Result<JsOutput, Error> {
    let heap_hit = Arc::new(AtomicBool::new(false));
    let interrupted = Arc::new(AtomicBool::new(false));
    let rt = AsyncRuntime::new_with_alloc(CappedAllocator::new(limits.heap_bytes, heap_hit.clone()))
        .map_err(|e| Error::Internal(format!("cannot create a QuickJS runtime: {e}")))?;
    rt.set_max_stack_size(JS_STACK_BYTES).await;
    let deadline = Instant::now() + limits.wall_clock;
    let flag = interrupted.clone();
    rt.set_interrupt_handler(Some(Box::new(move || {
        let late = Instant::now() >= deadline;
        if late {
            flag.store(true, Ordering::Relaxed);
        }
        late
    })))
    .await;
    let ctx = AsyncContext::full(&rt).await.map_err(|e| {
        if heap_hit.load(Ordering::Relaxed) {
            heap_error(limits.heap_bytes)
        } else {
            Error::Internal(format!("cannot create a QuickJS context: {e}"))
        }
    })?;
    let captured = Arc::new(Mutex::new(Captured::default()));
    let sink = captured.clone();
    let cap = limits.output_chars;
    let evaluated = ctx.async_with(async |ctx| evaluate(&ctx, &code, &filename, &params, sink, cap).await);
    let outcome = tokio::time::timeout(limits.wall_clock + OUTER_GRACE, evaluated).await;
    // Limits first: a script may have caught the error the limit raised and returned.
    if heap_hit.load(Ordering::Relaxed) {
        return Err(heap_error(limits.heap_bytes));
    }
    if interrupted.load(Ordering::Relaxed) || outcome.is_err() {
        return Err(Error::Timeout {
            what: "The tool's JavaScript".to_owned(),
            after: limits.wall_clock,
        });
    }
    let result = outcome.map_err(|_| Error::Internal("unreachable: timeout handled above".into()))??;
    let captured = std::mem::take(&mut *captured.lock().unwrap_or_else(std::sync::PoisonError::into_inner));
    Ok(JsOutput { result, captured })
}

fn heap_error(limit: usize) -> Error {
    Error::ResourceLimit {
        what: "The tool's JavaScript heap".to_owned(),
        limit: format!("{} MiB", limit / (1024 * 1024)),
    }
}

/// Inside the context: console, the script, `run(params)`, the awaited result as JSON.
async fn evaluate<'js>(
    ctx: &Ctx<'js>,
    code: &str,
    filename: &str,
    params: &str,
    sink: Arc<Mutex<Captured>>,
    cap: usize,
) -> Result<serde_json::Value, Error> {
    let installer: Function = ctx
        .eval(PRELUDE)
        .catch(ctx)
        .map_err(|e| internal("console prelude", e))?;
    let write = Function::new(ctx.clone(), move |stream: i32, text: String| {
        let mut captured = sink.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let target = if stream == 2 {
            &mut captured.stderr
        } else {
            &mut captured.stdout
        };
        target.push_line(&text, cap);
    })
    .map_err(|e| Error::Internal(format!("cannot create console: {e}")))?;
    installer
        .call::<_, ()>((write,))
        .catch(ctx)
        .map_err(|e| internal("console prelude", e))?;

    let mut options = EvalOptions::default();
    options.global = true;
    options.strict = false;
    options.backtrace_barrier = true;
    options.filename = Some(filename.to_owned());
    ctx.eval_with_options::<(), _>(code, options)
        .catch(ctx)
        .map_err(|e| thrown(e, "loading the tool's source"))?;

    let run: Value = ctx
        .globals()
        .get("run")
        .map_err(|e| Error::Internal(format!("cannot read run: {e}")))?;
    let Some(run) = run.into_function() else {
        return Err(Error::Execution {
            message: "The tool's source does not define a function run(params).".to_owned(),
        });
    };
    let params = ctx.json_parse(params).catch(ctx).map_err(|e| internal("params", e))?;
    let returned: Value = run.call((params,)).catch(ctx).map_err(|e| thrown(e, "run"))?;
    let settled: Value = match returned.as_promise() {
        Some(promise) => promise
            .clone()
            .into_future::<Value>()
            .await
            .catch(ctx)
            .map_err(|e| thrown(e, "run"))?,
        None => returned,
    };
    let json = ctx
        .json_stringify(settled)
        .catch(ctx)
        .map_err(|e| thrown(e, "serialising run's result"))?;
    let text = match json {
        Some(s) => s
            .to_string()
            .map_err(|e| Error::Internal(format!("result is not a string: {e}")))?,
        None => "null".to_owned(),
    };
    serde_json::from_str(&text).map_err(|e| Error::Internal(format!("run's result is not JSON: {e}")))
}

fn internal(what: &str, e: CaughtError<'_>) -> Error {
    Error::Internal(format!("{what}: {e}"))
}

/// The error a script threw, as `EXECUTION_ERROR` with its message and where it was
/// thrown (`file:line:column` from QuickJS's stack).
fn thrown(e: CaughtError<'_>, during: &str) -> Error {
    let message = match &e {
        CaughtError::Exception(ex) => {
            let text = ex.message().unwrap_or_default();
            let name: Option<String> = ex.get("name").ok();
            let head = match name {
                Some(n) if !n.is_empty() => format!("{n}: {text}"),
                _ => text,
            };
            match ex.stack().as_deref().and_then(first_frame) {
                Some(at) => format!("{head} (at {at})"),
                None => head,
            }
        }
        CaughtError::Value(v) => format!("Uncaught {}", describe_value(v)),
        CaughtError::Error(err) => format!("{err}"),
    };
    Error::Execution {
        message: format!("{message} [while {during}]"),
    }
}

/// `"index.js:12:11"` from a QuickJS stack line `"    at run (index.js:12:11)"`.
fn first_frame(stack: &str) -> Option<String> {
    stack.lines().find_map(|line| {
        let line = line.trim();
        let inner = line
            .rsplit_once('(')
            .map(|(_, r)| r.trim_end_matches(')'))
            .unwrap_or(line.trim_start_matches("at "));
        (inner.contains(':') && !inner.starts_with("native")).then(|| inner.to_owned())
    })
}

fn describe_value(v: &Value<'_>) -> String {
    if let Some(s) = v.as_string().and_then(|s| s.to_string().ok()) {
        return format!("\"{s}\"");
    }
    v.ctx()
        .json_stringify(v.clone())
        .ok()
        .flatten()
        .and_then(|s| s.to_string().ok())
        .unwrap_or_else(|| format!("{:?}", v.type_of()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_frame_reads_quickjs_stacks() {
        assert_eq!(
            first_frame("    at run (t/index.js:12:11)\n    at <eval>"),
            Some("t/index.js:12:11".into())
        );
        assert_eq!(first_frame("    at t/index.js:3:1\n"), Some("t/index.js:3:1".into()));
        assert_eq!(first_frame("    at <anonymous> (native)\n"), None);
    }
}
