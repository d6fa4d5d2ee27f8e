//! One QuickJS engine, used for exactly one run: a runtime with a capped allocator and a
//! deadline-reading interrupt handler, a context with the console (`prelude.js`) and the
//! web shims (`web.js`) installed. Building it is most of a run's cost, so [`Engine::new`]
//! happens before a call arrives (see `pool.rs`); [`Engine::run`] then only compiles and
//! runs the caller's code. Nothing survives the run: the engine is dropped after it.
//! Its deadline, the limit that ended it and its output live in a [`RunState`] the
//! caller holds too, so the caller can answer without waiting for the engine.

use crate::backends::js::wire::JsLimits;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use rquickjs::context::EvalOptions;
use rquickjs::module::WriteOptions;
use rquickjs::{AsyncContext, AsyncRuntime, CatchResultExt, Ctx, Function, JsLifetime, Module, Value};
use tokio_util::sync::CancellationToken;

use super::alloc::CappedAllocator;
use super::bytecode::{self, Scripts};
use super::host::{self, Port};
use super::program::Program;
use super::state::{Limit, RunState};
use super::thrown::{internal, thrown};
use crate::error::Error;
use crate::limits::JS_STACK_BYTES;

/// The console installer, evaluated before anything else.
const PRELUDE: &str = include_str!("prelude.js");

/// The web shims' installer (fetch, Headers, Response, AbortController, TextEncoder,
/// TextDecoder), evaluated on a run's first use of one of them (`client.js`).
const WEB: &str = include_str!("web.js");

/// The timers' and `mcp`'s installer, evaluated after the console; it also stands in for
/// the web shims until one is used.
const CLIENT: &str = include_str!("client.js");

/// The module holding the console and client installers, named so traces show where a
/// prelude fault is.
const BOOT_NAME: &str = "toolgate:boot";

/// The module holding the web shims' installer.
const WEB_NAME: &str = "toolgate:web";

/// Both installers compiled to QuickJS bytecode once per process: parsing them costs
/// ~1 ms per engine here, reading the bytecode ~0.1 ms.
static BOOT: OnceLock<Result<Vec<u8>, String>> = OnceLock::new();

/// The web shims' installer as bytecode, compiled once per process on first use. Kept
/// out of the boot module because most runs never fetch: reading, running and later
/// freeing the shims was about a sixth of a catalogue tool run's CPU in the worker
/// (`perf` over `cargo bench --bench js`).
static WEB_CODE: OnceLock<Result<Vec<u8>, String>> = OnceLock::new();

/// The console's value formatter, kept where only the host can reach it.
#[derive(JsLifetime)]
struct Inspect<'js>(Function<'js>);

/// A ready engine waiting for its one run.
pub(super) struct Engine {
    // Field order is drop order: the context before its runtime.
    ctx: AsyncContext,
    _rt: AsyncRuntime,
    limits: JsLimits,
    state: Arc<RunState>,
}

impl Engine {
    /// A fresh runtime and context within `limits`, console and web shims installed,
    /// reporting to `state`.
    pub(super) async fn new(limits: JsLimits, port: Arc<dyn Port>, state: Arc<RunState>) -> Result<Engine, Error> {
        let rt = AsyncRuntime::new_with_alloc(CappedAllocator::new(limits.heap_bytes, state.clone()))
            .map_err(|e| Error::Internal(format!("cannot create a QuickJS runtime: {e}")))?;
        rt.set_max_stack_size(JS_STACK_BYTES).await;
        let watched = state.clone();
        rt.set_interrupt_handler(Some(Box::new(move || {
            let late = watched.passed();
            if late {
                watched.interrupt();
            }
            late
        })))
        .await;
        let refused = |what: &str, e: String| {
            state
                .verdict(limits.wall_clock, limits.heap_bytes)
                .unwrap_or_else(|| Error::Internal(format!("{what}: {e}")))
        };
        let ctx = AsyncContext::full(&rt)
            .await
            .map_err(|e| refused("cannot create a QuickJS context", e.to_string()))?;
        let writer = state.clone();
        ctx.with(|ctx| install(&ctx, writer, limits.output_chars, port))
            .await
            .map_err(|e| refused("cannot install the console and web shims", e))?;
        state.mark_ready();
        Ok(Engine {
            ctx,
            _rt: rt,
            limits,
            state,
        })
    }

    /// The state this engine reports to.
    pub(super) fn state(&self) -> &Arc<RunState> {
        &self.state
    }

    /// Runs `program` (`code` is its text) until it ends, its state's deadline (`until`,
    /// armed by the caller) passes, or `halt` is cancelled, turning every way it can end
    /// into a value or one typed error. A tool's script is read from `scripts` as
    /// bytecode when it compiles.
    pub(super) async fn run(
        &self,
        code: &Arc<str>,
        program: &Program,
        scripts: &Scripts,
        until: Instant,
        halt: &CancellationToken,
    ) -> Result<Option<serde_json::Value>, Error> {
        let cut = AtomicBool::new(false);
        let cap = self.limits.result_chars;
        let evaluated = self
            .ctx
            .async_with(async |ctx| evaluate(&ctx, code, program, scripts, cap, &cut).await);
        // The halt is looked at first: once the caller has stopped waiting (at its
        // deadline, on cancellation, or because the server is shutting down) neither the
        // script's own futures (a fetch) nor the timer below are polled again, so
        // nothing on this blocking thread touches the runtime's drivers after shutdown.
        let outcome = tokio::select! {
            biased;
            () = halt.cancelled() => None,
            outcome = evaluated => Some(outcome),
            () = tokio::time::sleep_until(until.into()) => None,
        };
        if outcome.is_none() {
            // A promise that never settles: the script is idle, so the deadline ends it.
            self.state.stop(Limit::Deadline);
        }
        if cut.load(Ordering::Relaxed) {
            self.state.with_captured(|c| c.result_truncated = true);
        }
        // Limits first: a script may have caught the error the limit raised and returned.
        match self.state.verdict(self.limits.wall_clock, self.limits.heap_bytes) {
            Some(e) => Err(e),
            None => outcome.unwrap_or_else(|| Err(Error::Internal("the run stopped with no limit".to_owned()))),
        }
    }
}

/// `source` as module `name`'s bytecode, compiled in `ctx` the first time (any context
/// of this process can read it).
fn compiled(
    ctx: &Ctx<'_>,
    cell: &'static OnceLock<Result<Vec<u8>, String>>,
    name: &str,
    source: impl FnOnce() -> String,
) -> Result<&'static [u8], String> {
    cell.get_or_init(|| {
        Module::declare(ctx.clone(), name, source())
            .catch(ctx)
            .map_err(|e| e.to_string())?
            .write(WriteOptions::default())
            .map_err(|e| e.to_string())
    })
    .as_deref()
    .map_err(|e| format!("cannot compile {name}: {e}"))
}

/// Loads and evaluates module bytecode written by [`compiled`]; its exports.
fn evaluated<'js>(ctx: &Ctx<'js>, bytecode: &[u8]) -> Result<Module<'js, rquickjs::module::Evaluated>, String> {
    // SAFETY: the bytecode was written by this process's QuickJS from our own sources
    // ([`compiled`]), never read from outside, so it is well formed for this engine.
    let module = unsafe { Module::load(ctx.clone(), bytecode) }
        .catch(ctx)
        .map_err(|e| e.to_string())?;
    let (module, done) = module.eval().catch(ctx).map_err(|e| e.to_string())?;
    done.finish::<()>().catch(ctx).map_err(|e| e.to_string())?;
    Ok(module)
}

/// Loads the console and client installers and hands them the host's functions; the
/// web shims' installer is handed over as `host.loadWeb`, for the first run that needs it.
fn install<'js>(ctx: &Ctx<'js>, state: Arc<RunState>, cap: usize, port: Arc<dyn Port>) -> Result<(), String> {
    let bytecode = compiled(ctx, &BOOT, BOOT_NAME, || {
        format!("export const console = {PRELUDE};\nexport const client = {CLIENT};\n")
    })?;
    let module = evaluated(ctx, bytecode)?;
    let installer: Function = module.get("console").catch(ctx).map_err(|e| e.to_string())?;
    let write = Function::new(ctx.clone(), move |stream: i32, text: String| {
        state.with_captured(|captured| {
            let target = if stream == 2 {
                &mut captured.stderr
            } else {
                &mut captured.stdout
            };
            target.push_line(&text, cap);
        });
    })
    .map_err(|e| e.to_string())?;
    let inspect: Function = installer.call((write,)).catch(ctx).map_err(|e| e.to_string())?;
    ctx.store_userdata(Inspect(inspect))
        .map_err(|e| format!("cannot keep the formatter: {e}"))?;
    let host = host::host(ctx, port).map_err(|e| e.to_string())?;
    let load_web = Function::new(ctx.clone(), |ctx: Ctx<'js>| -> rquickjs::Result<Function<'js>> {
        let web = compiled(&ctx, &WEB_CODE, WEB_NAME, || format!("export const web = {WEB};\n"))
            .and_then(|bytecode| evaluated(&ctx, bytecode))
            .and_then(|module| module.get::<_, Function>("web").map_err(|e| e.to_string()));
        web.map_err(|e| rquickjs::Exception::throw_internal(&ctx, &format!("cannot install the web shims: {e}")))
    })
    .map_err(|e| e.to_string())?;
    host.set("loadWeb", load_web).map_err(|e| e.to_string())?;
    let client: Function = module.get("client").catch(ctx).map_err(|e| e.to_string())?;
    client.call::<_, ()>((host,)).catch(ctx).map_err(|e| e.to_string())?;
    Ok(())
}

/// Inside the context: the program; the awaited value as JSON (`None` for undefined).
async fn evaluate<'js>(
    ctx: &Ctx<'js>,
    code: &Arc<str>,
    program: &Program,
    scripts: &Scripts,
    cap: usize,
    cut: &AtomicBool,
) -> Result<Option<serde_json::Value>, Error> {
    let mut options = EvalOptions::default();
    options.global = true;
    options.strict = false;
    options.backtrace_barrier = true;
    let (returned, during) = match program {
        Program::Tool { filename, params } => {
            // Calling tools from code is the snippets' (`run_javascript`): a catalogue
            // tool's script runs alone.
            ctx.globals()
                .remove("tools")
                .map_err(|e| Error::Internal(format!("cannot remove tools: {e}")))?;
            let loaded = match scripts.get(ctx, filename, code) {
                Some(compiled) => bytecode::run(ctx, &compiled),
                None => {
                    options.filename = Some(filename.clone());
                    ctx.eval_with_options::<(), _>(&**code, options)
                }
            };
            loaded.catch(ctx).map_err(|e| thrown(e, "loading the tool's source"))?;
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
                .eval_with_options(&**code, options)
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
    // The JSON text is read where QuickJS holds it (inside the capped heap), so a huge
    // value is measured before any copy of it is made on the host.
    let json = match ctx.json_stringify(settled.clone()).catch(ctx) {
        Ok(Some(s)) => s.to_cstring().ok(),
        _ => None,
    };
    match (json, program) {
        (Some(text), _) if text.len() > cap && text.as_str().chars().nth(cap).is_some() => match program {
            Program::Tool { .. } => Err(Error::ResourceLimit {
                what: "The tool's returned value".to_owned(),
                limit: format!("{cap} characters of JSON"),
            }),
            Program::Snippet { .. } => {
                cut.store(true, Ordering::Relaxed);
                Ok(Some(serde_json::Value::String(
                    text.as_str().chars().take(cap).collect(),
                )))
            }
        },
        (Some(text), _) => serde_json::from_str(text.as_str())
            .map(Some)
            .map_err(|e| Error::Internal(format!("the result is not JSON: {e}"))),
        (None, Program::Snippet { .. }) => {
            let inspect = ctx
                .userdata::<Inspect>()
                .map(|i| i.0.clone())
                .ok_or_else(|| Error::Internal("the formatter is missing".to_owned()))?;
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
