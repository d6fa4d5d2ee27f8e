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

/// What to run in the fresh context.
#[derive(Debug, Clone)]
enum Program {
    /// A catalogue tool: a script defining `run(params)`, named `filename` in traces.
    Tool { filename: String, params: String },
    /// A snippet, already wrapped as an async function expression (so top-level `await`
    /// and `return` work), named `filename` in traces.
    Snippet { filename: &'static str },
}

/// What a snippet produced: its outcome and, whatever the outcome, its output.
#[derive(Debug)]
pub struct SnippetOutput {
    /// Its return value (`None` for undefined) — JSON when it serialises, else the text
    /// `console.log` would print — or the error that ended it.
    pub outcome: Result<Option<serde_json::Value>, Error>,
    /// Captured console output, kept on every path.
    pub captured: Captured,
}

/// Runs a tool script: evaluates `code` (named `filename` in stack traces), then awaits
/// `run(params)`.
pub async fn run_tool(
    code: Arc<str>,
    filename: String,
    params: serde_json::Value,
    limits: JsLimits,
) -> Result<JsOutput, Error> {
    let program = Program::Tool {
        filename,
        params: params.to_string(),
    };
    let (outcome, captured) = on_js_thread(code, program, limits).await;
    Ok(JsOutput {
        result: outcome?.unwrap_or(serde_json::Value::Null),
        captured,
    })
}

/// Runs a snippet as the body of an async function: the JS-VM seed's `run_javascript`,
/// or with `typescript` its `run_typescript` (types erased first, lines kept).
pub async fn run_snippet(code: Arc<str>, typescript: bool, limits: JsLimits) -> SnippetOutput {
    let failed = |e| SnippetOutput {
        outcome: Err(e),
        captured: Captured::default(),
    };
    if let Some(line) = module_syntax_line(&code) {
        let message = format!(
            "import/export module syntax is not supported (line {line}): the snippet runs as the body of an async function, so use top-level await and return instead"
        );
        return failed(Error::Execution { message });
    }
    // The wrapper shares the snippet's first line, so every line number is the caller's.
    let wrapped = format!("(async function () {{{code}\n}})");
    let (wrapped, filename) = if typescript {
        match super::typescript::strip(&wrapped, "snippet.ts") {
            Ok(js) => (js, "snippet.ts"),
            Err(e) => return failed(e),
        }
    } else {
        (wrapped, "snippet.js")
    };
    let (outcome, captured) = on_js_thread(Arc::from(wrapped), Program::Snippet { filename }, limits).await;
    SnippetOutput { outcome, captured }
}

/// Runs a TypeScript tool script: types erased (lines kept), then as [`run_tool`].
pub async fn run_typescript_tool(
    code: &str,
    filename: String,
    params: serde_json::Value,
    limits: JsLimits,
) -> Result<JsOutput, Error> {
    let js = super::typescript::strip(code, &filename)?;
    run_tool(Arc::from(js), filename, params, limits).await
}

/// The 1-based line of the first `import`/`export` statement, if any.
fn module_syntax_line(code: &str) -> Option<usize> {
    code.lines()
        .position(|l| {
            let t = l.trim_start();
            (t.starts_with("import ")
                || t.starts_with("import{")
                || t.starts_with("export ")
                || t.starts_with("export{"))
                && !t.starts_with("import(")
        })
        .map(|i| i + 1)
}

/// Runs `program` on its own blocking thread, so a CPU-bound script never stalls the
/// async server, driving a current-thread runtime for its promises.
async fn on_js_thread(
    code: Arc<str>,
    program: Program,
    limits: JsLimits,
) -> (Result<Option<serde_json::Value>, Error>, Captured) {
    let task =
        tokio::task::spawn_blocking(
            move || match tokio::runtime::Builder::new_current_thread().enable_all().build() {
                Ok(runtime) => runtime.block_on(run_isolated(code, program, limits)),
                Err(e) => (
                    Err(Error::Internal(format!("cannot start a JS thread runtime: {e}"))),
                    Captured::default(),
                ),
            },
        );
    task.await.unwrap_or_else(|e| {
        (
            Err(Error::Internal(format!("the JS thread failed: {e}"))),
            Captured::default(),
        )
    })
}

/// Builds the isolated runtime, runs the program, and turns every way it can end into a
/// value or one typed error, with the captured output in every case.
async fn run_isolated(
    code: Arc<str>,
    program: Program,
    limits: JsLimits,
) -> (Result<Option<serde_json::Value>, Error>, Captured) {
    let captured = Arc::new(Mutex::new(Captured::default()));
    let outcome = isolated(code, program, limits, captured.clone()).await;
    let captured = std::mem::take(&mut *captured.lock().unwrap_or_else(std::sync::PoisonError::into_inner));
    (outcome, captured)
}

async fn isolated(
    code: Arc<str>,
    program: Program,
    limits: JsLimits,
    sink: Arc<Mutex<Captured>>,
) -> Result<Option<serde_json::Value>, Error> {
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
    let cap = limits.output_chars;
    let evaluated = ctx.async_with(async |ctx| evaluate(&ctx, &code, &program, sink, cap).await);
    let outcome = tokio::time::timeout(limits.wall_clock + OUTER_GRACE, evaluated).await;
    // Limits first: a script may have caught the error the limit raised and returned.
    if heap_hit.load(Ordering::Relaxed) {
        return Err(heap_error(limits.heap_bytes));
    }
    match outcome {
        Ok(_) | Err(_) if interrupted.load(Ordering::Relaxed) => Err(timeout(limits)),
        Err(_) => Err(timeout(limits)),
        Ok(result) => result,
    }
}

fn timeout(limits: JsLimits) -> Error {
    Error::Timeout {
        what: "The JavaScript".to_owned(),
        after: limits.wall_clock,
    }
}

fn heap_error(limit: usize) -> Error {
    Error::ResourceLimit {
        what: "The tool's JavaScript heap".to_owned(),
        limit: format!("{} MiB", limit / (1024 * 1024)),
    }
}

/// Inside the context: console, then the program; the awaited value as JSON (`None` for
/// undefined).
async fn evaluate<'js>(
    ctx: &Ctx<'js>,
    code: &str,
    program: &Program,
    sink: Arc<Mutex<Captured>>,
    cap: usize,
) -> Result<Option<serde_json::Value>, Error> {
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
    let inspect: Function = installer
        .call((write,))
        .catch(ctx)
        .map_err(|e| internal("console prelude", e))?;

    let mut options = EvalOptions::default();
    options.global = true;
    options.strict = false;
    options.backtrace_barrier = true;
    let (returned, during) = match program {
        Program::Tool { filename, params } => {
            options.filename = Some(filename.clone());
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
            let params = ctx
                .json_parse(params.as_str())
                .catch(ctx)
                .map_err(|e| internal("params", e))?;
            (
                run.call::<_, Value>((params,))
                    .catch(ctx)
                    .map_err(|e| thrown(e, "run"))?,
                "run",
            )
        }
        Program::Snippet { filename } => {
            options.filename = Some((*filename).to_owned());
            let body: Function = ctx
                .eval_with_options(code, options)
                .catch(ctx)
                .map_err(|e| thrown(e, "compiling the snippet"))?;
            (
                body.call::<_, Value>(())
                    .catch(ctx)
                    .map_err(|e| thrown(e, "running the snippet"))?,
                "running the snippet",
            )
        }
    };
    let settled: Value = match returned.as_promise() {
        Some(promise) => promise
            .clone()
            .into_future::<Value>()
            .await
            .catch(ctx)
            .map_err(|e| thrown(e, during))?,
        None => returned,
    };
    if settled.is_undefined() {
        return Ok(None);
    }
    let json = match ctx.json_stringify(settled.clone()).catch(ctx) {
        Ok(Some(s)) => s.to_string().ok(),
        _ => None,
    };
    match (json, program) {
        (Some(text), _) => serde_json::from_str(&text)
            .map(Some)
            .map_err(|e| Error::Internal(format!("the result is not JSON: {e}"))),
        (None, Program::Snippet { .. }) => {
            let text: String = inspect
                .call((settled,))
                .catch(ctx)
                .map_err(|e| internal("formatting the result", e))?;
            Ok(Some(serde_json::Value::String(text)))
        }
        (None, Program::Tool { .. }) => {
            ctx.json_stringify(settled)
                .catch(ctx)
                .map_err(|e| thrown(e, "serialising run's result"))?;
            Ok(Some(serde_json::Value::Null))
        }
    }
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
