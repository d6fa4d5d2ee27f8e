//! Running one job in a fresh engine on the calling thread: what a worker process does
//! with each job the server gives it (`worker.rs`). Building an engine is most of a run's
//! cost (about 250 µs here against ~20 µs to compile and run a trivial snippet), so it
//! is split off: [`Local::prepare`] builds the next engine while the worker waits for a
//! job, [`Local::run`] only prepares the program (types erased, module syntax refused —
//! inside the worker, so even a pathological source costs the worker's time, not the
//! server's) and runs it.

use crate::backends::js::wire::Ran;
use std::sync::Arc;
use std::time::Instant;

use tokio_util::sync::CancellationToken;

use super::bytecode::Scripts;
use super::engine::Engine;
use super::host::Port;
use super::program::{self, Program};
use super::state::RunState;
use crate::backends::js::wire::Job;
use crate::backends::js::wire::JsLimits;
use crate::error::Error;

/// Runs jobs within `limits`, each in an engine no other job touched.
pub(super) struct Local {
    limits: JsLimits,
    port: Arc<dyn Port>,
    /// Compiled tool scripts, kept across jobs (code, never state: each run still gets a
    /// fresh engine and reads the bytecode into it).
    scripts: Scripts,
}

impl Local {
    /// A runner within `limits` whose engines send their requests to `port`.
    pub(super) fn new(limits: JsLimits, port: Arc<dyn Port>) -> Local {
        Local {
            limits,
            port,
            scripts: Scripts::default(),
        }
    }

    /// The limits every job runs within.
    #[cfg(test)]
    fn limits(&self) -> JsLimits {
        self.limits
    }

    /// A fresh engine for the next job.
    pub(super) async fn prepare(&self) -> Result<Engine, Error> {
        Engine::new(self.limits, self.port.clone(), Arc::new(RunState::new())).await
    }

    /// Runs `job` in `engine` (which must be fresh) until it ends, `until` passes or
    /// `halt` is cancelled. The engine's state has the run's deadline from here on.
    pub(super) async fn run(&self, engine: &Engine, job: &Job, until: Instant, halt: &CancellationToken) -> Ran {
        let state = engine.state();
        state.arm(until);
        let outcome = match self.program(job) {
            Ok((code, program)) => engine.run(&code, &program, &self.scripts, until, halt).await,
            Err(e) => Err(e),
        };
        (outcome, state.take_captured())
    }

    /// The text to evaluate and how to run it.
    fn program(&self, job: &Job) -> Result<(Arc<str>, Program), Error> {
        match job {
            Job::Tool {
                filename,
                code,
                params,
                typescript,
            } => {
                let code: Arc<str> = Arc::from(code.as_str());
                let code = if *typescript {
                    self.scripts.typescript(filename, &code)?
                } else {
                    code
                };
                let program = Program::Tool {
                    filename: filename.clone(),
                    params: params.clone(),
                };
                Ok((code, program))
            }
            Job::Snippet { code, typescript } => {
                program::snippet(code, *typescript).map(|(wrapped, program)| (Arc::from(wrapped), program))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::host::Pending;
    use super::*;
    use crate::backends::js::wire::Answer;
    use crate::backends::js::wire::{Failure, Request};
    use std::time::Duration;
    use tokio::sync::Notify;

    /// No network: these tests do not fetch.
    struct Offline;

    impl Port for Offline {
        fn fetch(&self, _: Request, _: Option<Vec<u8>>, _: u32, _: Arc<Notify>) -> Pending {
            Box::pin(async { Err::<Answer, _>(Failure::type_error("offline".to_owned())) })
        }

        fn body_limit(&self) -> usize {
            0
        }

        fn note(&self, _: crate::backchannel::Note) -> Result<(), Failure> {
            Ok(())
        }

        fn ask(&self, _: crate::backchannel::Ask, _: serde_json::Value) -> super::super::host::Asked {
            Box::pin(async { Err(Failure::type_error("offline".to_owned())) })
        }

        fn tools(&self, _: crate::backends::js::wire::ToolsAsk) -> super::super::host::Called {
            Box::pin(async { Err(Failure::type_error("offline".to_owned())) })
        }
    }

    fn local() -> Local {
        let limits = JsLimits {
            heap_bytes: 64 << 20,
            wall_clock: Duration::from_secs(20),
            output_chars: 1000,
            result_chars: 1000,
            concurrent_runs: 1,
            total_heap_bytes: 64 << 20,
            fetch_timeout: Duration::from_secs(5),
        };
        Local::new(limits, Arc::new(Offline))
    }

    async fn run(local: &Local, job: Job, halt: &CancellationToken) -> Ran {
        let engine = local.prepare().await.unwrap_or_else(|e| panic!("{e}"));
        local
            .run(&engine, &job, Instant::now() + local.limits().wall_clock, halt)
            .await
    }

    fn snippet(code: &str) -> Job {
        Job::Snippet {
            code: code.to_owned(),
            typescript: false,
        }
    }

    fn tool(code: &str, n: i64) -> Job {
        Job::Tool {
            filename: "t.js".to_owned(),
            code: code.to_owned(),
            params: serde_json::json!({"n": n}).to_string(),
            typescript: false,
        }
    }

    #[tokio::test]
    async fn a_stop_and_halt_end_a_run_with_the_limit_recorded() {
        // A 20 s deadline: only the stop can end this run early. The worker's reader
        // thread stops a run this way when the server cancels it.
        let local = local();
        let engine = local.prepare().await.unwrap_or_else(|e| panic!("{e}"));
        let halt = CancellationToken::new();
        engine.state().stop(super::super::state::Limit::Cancelled);
        halt.cancel();
        let job = snippet("await new Promise(() => {})");
        let until = Instant::now() + local.limits().wall_clock;
        let (outcome, _) = local.run(&engine, &job, until, &halt).await;
        assert!(matches!(outcome, Err(Error::Cancelled)), "{outcome:?}");
    }

    #[tokio::test]
    async fn cached_scripts_keep_sloppy_semantics_and_lines_on_every_run() {
        let local = local();
        // Sloppy mode: assigning an undeclared name creates a global (strict would throw).
        let code =
            "function run(p) {\n  total = p.n + 1;\n  if (p.n < 0) throw new Error('negative');\n  return total;\n}";
        let none = CancellationToken::new();
        for n in [1, 2] {
            let (outcome, _) = run(&local, tool(code, n), &none).await;
            assert_eq!(outcome.ok(), Some(Some(serde_json::json!(n + 1))));
        }
        let (outcome, _) = run(&local, tool(code, -1), &none).await;
        let Err(Error::Execution { message }) = outcome else {
            panic!("a throw is an execution error");
        };
        assert!(message.contains("negative") && message.contains("t.js:3"), "{message}");
    }

    #[tokio::test]
    async fn a_script_that_does_not_compile_reports_its_syntax_error() {
        let local = local();
        let (outcome, _) = run(
            &local,
            Job::Tool {
                filename: "bad.js".to_owned(),
                code: "function run(p) {\n  return p +;\n}".to_owned(),
                params: "{}".to_owned(),
                typescript: false,
            },
            &CancellationToken::new(),
        )
        .await;
        let Err(Error::Execution { message }) = outcome else {
            panic!("a syntax error is an execution error");
        };
        assert!(
            message.starts_with("SyntaxError") && message.contains("bad.js:2"),
            "{message}"
        );
    }

    #[tokio::test]
    async fn every_run_gets_a_fresh_engine() {
        let local = local();
        for _ in 0..4 {
            let (outcome, _) = run(
                &local,
                snippet("const seen = globalThis.mark; globalThis.mark = 1; return seen ?? null;"),
                &CancellationToken::new(),
            )
            .await;
            assert_eq!(
                outcome.ok(),
                Some(Some(serde_json::Value::Null)),
                "nothing leaks between runs"
            );
        }
    }

    #[tokio::test]
    async fn the_web_shims_install_on_first_use_and_behave_as_globals() {
        let local = local();
        let code = r#"
            const before = Object.getOwnPropertyDescriptor(globalThis, "fetch");
            const lazy = typeof before.get === "function";
            const kinds = [typeof fetch, typeof Headers, typeof TextEncoder, typeof DOMException].join(",");
            const after = Object.getOwnPropertyDescriptor(globalThis, "fetch");
            const bytes = new TextEncoder().encode("hé").length;
            const hidden = !Object.keys(globalThis).includes("fetch");
            Response = 7;
            return { lazy, kinds, installed: typeof after.value === "function", bytes, hidden, replaced: Response };
        "#;
        let (outcome, _) = run(&local, snippet(code), &CancellationToken::new()).await;
        assert_eq!(
            outcome.ok(),
            Some(Some(serde_json::json!({
                "lazy": true, "kinds": "function,function,function,function", "installed": true,
                "bytes": 3, "hidden": true, "replaced": 7
            })))
        );
        // An assignment before any use installs the shims first, then replaces the one.
        let (outcome, _) = run(
            &local,
            snippet("fetch = 1; return [fetch, typeof Headers];"),
            &CancellationToken::new(),
        )
        .await;
        assert_eq!(outcome.ok(), Some(Some(serde_json::json!([1, "function"]))));
    }
}
