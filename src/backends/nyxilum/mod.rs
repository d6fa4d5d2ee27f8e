//! The NyxilumNode backend: `nx` runs, checks, lints and formats code, answers
//! `--version`, keeps REPL sessions, builds and tests its own checkout, and runs
//! catalogue tools whose runtime is `nyxilum`.
//!
//! Every call on caller code goes through `backends::process` with the sandbox, an
//! allowlisted environment plus `NX_SANDBOX=1` (fixed, never from the caller), the
//! caller's deadline and 32 KiB per output stream. NyxilumNode prints `Runtime Error:` and
//! `Parse Error:` on **stdout** and exits 1; [`verdict`] turns that into a failure that
//! says where the message is. The dev tools are the one exception to the sandbox: they run
//! the operator's toolchain on the operator's checkout with no caller text in the command.

mod answer;
mod docs;
mod family;
pub mod limits;
mod locate;
mod repl;
pub(crate) mod tools;

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Semaphore;

use serde_json::Value;

pub use docs::{Guide, Section};
pub use family::Family;
pub use locate::{Invocation, Locator, RUNTIME};
pub use repl::{Evaluated, Sessions};

use super::process::{self, Arg, Confinement, Env, Finished, Spec, Workdir};
use crate::error::Error;
use crate::sandbox::Rlimits;

/// What `nx` is asked to do with a file of code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command {
    /// `nx FILE`: run it.
    Run,
    /// `nx check FILE`: parse only (`OK` or `Parse Error:`), never run.
    Check,
    /// `nx lint FILE`: a style report; always exit 0.
    Lint,
    /// `nx format FILE`: the formatted code (the original when it does not parse).
    Format,
}

impl Command {
    fn word(self) -> Option<&'static str> {
        match self {
            Command::Run => None,
            Command::Check => Some("check"),
            Command::Lint => Some("lint"),
            Command::Format => Some("format"),
        }
    }
}

/// Which dev tool to run on the checkout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dev {
    /// `dotnet build src/NyxilumLang -c CONFIGURATION`.
    Build,
    /// `bash tests/run_all.sh`.
    Test,
}

/// How a NyxilumNode process ended, read the way its contract says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// True if and only if it exited 0 within its deadline without an error line.
    pub success: bool,
    /// Why it failed, saying where NyxilumNode put the message.
    pub error: Option<String>,
}

/// The lines with which NyxilumNode reports a failure, on stdout.
const ERROR_PREFIXES: &[&str] = &["Runtime Error:", "Parse Error:", "Error: Cannot find file"];

/// Reads a finished process: a deadline, an error line on stdout with exit 1, another
/// exit code or a signal are failures.
pub fn verdict(out: &Finished, timeout: Duration) -> Verdict {
    let error_line = out
        .stdout
        .text
        .lines()
        .find(|l| ERROR_PREFIXES.iter().any(|p| l.starts_with(p)));
    let error = if out.timed_out {
        Some(format!(
            "NyxilumNode did not finish within {} ms; its process group was killed (an infinite loop allocates nothing, so only the deadline stops it).",
            timeout.as_millis()
        ))
    } else if let (Some(line), Some(1)) = (error_line, out.exit_code) {
        Some(format!(
            "{line} (NyxilumNode prints its errors on stdout and exits 1: see stdout)"
        ))
    } else if let Some(code) = out.exit_code.filter(|c| *c != 0) {
        Some(format!("NyxilumNode exited with code {code}; see stdout and stderr."))
    } else {
        out.signal.map(|signal| {
            format!("NyxilumNode was killed by signal {signal} (a sandbox limit: CPU time, memory or file size).")
        })
    };
    Verdict {
        success: error.is_none(),
        error,
    }
}

/// NyxilumNode's settings and live REPL sessions.
#[derive(Debug)]
pub struct Nyxilum {
    locator: Locator,
    sessions: Sessions,
    /// One permit per NyxilumNode run at once (REPL sessions have their own cap).
    places: Arc<Semaphore>,
    concurrent_runs: usize,
}

impl Nyxilum {
    /// A backend finding NyxilumNode with `locator`; temp folders go to the system temp
    /// folder (`TMPDIR`).
    pub fn new(locator: Locator) -> Nyxilum {
        Nyxilum {
            locator,
            sessions: Sessions::default(),
            places: Arc::new(Semaphore::new(limits::NYX_CONCURRENT_RUNS)),
            concurrent_runs: limits::NYX_CONCURRENT_RUNS,
        }
    }

    /// The same backend with at most `runs` NyxilumNode runs at once (at least one).
    pub fn with_concurrent_runs(mut self, runs: usize) -> Nyxilum {
        self.concurrent_runs = runs.max(1);
        self.places = Arc::new(Semaphore::new(self.concurrent_runs));
        self
    }

    /// Runs `spec` once a place among the concurrent runs is free, within its deadline:
    /// the wait is taken from the run's time, and a wait that outlasts it is a `TIMEOUT`
    /// saying so.
    async fn run_placed(&self, mut spec: Spec) -> Result<Finished, Error> {
        let arrived = std::time::Instant::now();
        let place = tokio::time::timeout(spec.timeout, self.places.clone().acquire_owned())
            .await
            .map_err(|_| Error::Timeout {
                what: format!(
                    "The NyxilumNode run (waiting for a place: at most {} at once)",
                    self.concurrent_runs
                ),
                after: spec.timeout,
            })?
            .map_err(|_| Error::Internal("the NyxilumNode run limiter is closed".to_owned()))?;
        spec.timeout = spec.timeout.saturating_sub(arrived.elapsed());
        let finished = process::run(&spec).await;
        drop(place);
        finished
    }

    /// Where NyxilumNode is looked for.
    pub fn locator(&self) -> &Locator {
        &self.locator
    }

    /// The live REPL sessions.
    pub fn sessions(&self) -> &Sessions {
        &self.sessions
    }

    /// Runs `command` on `code` within `timeout`, with `gc_max_objects` as
    /// `NX_GC_MAX_OBJECTS` when given.
    pub async fn code(
        &self,
        command: Command,
        code: &str,
        timeout: Duration,
        gc_max_objects: Option<u64>,
    ) -> Result<Finished, Error> {
        let nx = self.locator.locate()?;
        let mut args: Vec<Arg> = nx.pre_args.iter().cloned().map(Arg::Text).collect();
        args.extend(command.word().map(|w| Arg::Text(w.into())));
        args.push(Arg::File("main.nx".into()));
        let mut spec = self.spec(&nx, args, timeout);
        spec.files.push(("main.nx".into(), code.as_bytes().to_vec()));
        if let Some(n) = gc_max_objects {
            spec.env.set.push(("NX_GC_MAX_OBJECTS".into(), n.to_string()));
        }
        self.run_placed(spec).await
    }

    /// `nx --version`, and the file that answered.
    pub async fn version(&self) -> Result<(Finished, Invocation), Error> {
        let nx = self.locator.locate()?;
        let mut args: Vec<Arg> = nx.pre_args.iter().cloned().map(Arg::Text).collect();
        args.push(Arg::Text("--version".into()));
        let spec = self.spec(&nx, args, limits::NYX_VERSION_TIMEOUT);
        Ok((process::run(&spec).await?, nx))
    }

    /// Runs a catalogue tool: `code` as `main.nx` beside `params.json`; the result is its
    /// stdout, as JSON when it parses, else as text.
    pub async fn tool(&self, slug: &str, code: &str, params: &Value) -> Result<(Value, Finished), Error> {
        let nx = self.locator.locate()?;
        let mut args: Vec<Arg> = nx.pre_args.iter().cloned().map(Arg::Text).collect();
        args.push(Arg::File("main.nx".into()));
        let mut spec = self.spec(&nx, args, limits::NYX_TIMEOUT);
        let params = serde_json::to_vec(params).map_err(|e| Error::Internal(format!("params of {slug}: {e}")))?;
        spec.files.push(("main.nx".into(), code.as_bytes().to_vec()));
        spec.files.push(("params.json".into(), params));
        let out = self.run_placed(spec).await?;
        let v = verdict(&out, limits::NYX_TIMEOUT);
        if out.timed_out {
            return Err(Error::Timeout {
                what: format!("The nyxilum tool {slug}"),
                after: limits::NYX_TIMEOUT,
            });
        }
        if let Some(message) = v.error {
            return Err(Error::Execution { message });
        }
        if out.stdout.truncated {
            return Err(Error::ResourceLimit {
                what: format!("The output of {slug}"),
                limit: format!("{} bytes", limits::NYX_OUTPUT_BYTES),
            });
        }
        let text = out.stdout.text.trim();
        let result = serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_owned()));
        Ok((result, out))
    }

    /// The language guide (`GUIDE.md` of the checkout, or above the binary found), for
    /// `nyxilum_docs`.
    pub fn guide(&self) -> Result<Guide, Error> {
        let binary = self.locator.locate().ok().map(|nx| nx.path);
        Guide::read(&Guide::folders(&self.locator.ecosystem_root, binary.as_deref()))
    }

    /// Builds or tests the checkout, unsandboxed (the operator's own toolchain and
    /// code); `configuration` is `Debug` or `Release` for a build.
    pub async fn dev(&self, which: Dev, configuration: &str, timeout: Duration) -> Result<Finished, Error> {
        let root = &self.locator.ecosystem_root;
        if !root.is_dir() {
            return Err(Error::RuntimeUnavailable {
                runtime: RUNTIME.to_owned(),
                tried: vec![format!("{} (NX_ECOSYSTEM_ROOT: no such folder)", root.display())],
            });
        }
        let (program, args): (PathBuf, Vec<&str>) = match which {
            Dev::Build => (
                PathBuf::from("dotnet"),
                vec!["build", "src/NyxilumLang", "-c", configuration],
            ),
            Dev::Test => (PathBuf::from("bash"), vec!["tests/run_all.sh"]),
        };
        let spec = Spec {
            runtime: RUNTIME.to_owned(),
            program,
            args: args.into_iter().map(|a| Arg::Text(OsString::from(a))).collect(),
            files: Vec::new(),
            workdir: Workdir::At(root.clone()),
            env: Env {
                inherit_all: true,
                ..Env::default()
            },
            parent_env: None,
            timeout,
            output_bytes: limits::DEV_OUTPUT_BYTES,
            sandbox: None,
            temp_root: None,
        };
        process::run(&spec).await
    }

    /// The sandboxed spec every call on caller code shares.
    fn spec(&self, nx: &Invocation, args: Vec<Arg>, timeout: Duration) -> Spec {
        Spec {
            runtime: RUNTIME.to_owned(),
            program: nx.program.clone(),
            args,
            files: Vec::new(),
            workdir: Workdir::Temp,
            env: sandboxed_env(),
            parent_env: None,
            timeout,
            output_bytes: limits::NYX_OUTPUT_BYTES,
            sandbox: Some(Confinement {
                rlimits: Rlimits::with_cpu_seconds(timeout.as_secs() + 1 + limits::SANDBOX_CPU_SLACK_SECONDS),
                read_paths: nx.read_paths.clone(),
            }),
            temp_root: None,
        }
    }
}

/// The settings every sandboxed NyxilumNode child gets, whatever the caller sent.
fn sandboxed_env() -> Env {
    Env {
        inherit_all: false,
        pass: Vec::new(),
        set: vec![
            ("NX_SANDBOX".into(), "1".into()),
            ("DOTNET_CLI_TELEMETRY_OPTOUT".into(), "1".into()),
            ("DOTNET_NOLOGO".into(), "1".into()),
            // No diagnostics IPC socket or shared memory: nothing to write outside.
            ("DOTNET_EnableDiagnostics".into(), "0".into()),
            // The GC must fit inside the address-space limit (see limits.rs).
            (
                "DOTNET_GCHeapHardLimit".into(),
                format!("{:#x}", limits::DOTNET_GC_HEAP_HARD_LIMIT_BYTES),
            ),
            (
                "DOTNET_GCRegionRange".into(),
                format!("{:#x}", limits::DOTNET_GC_REGION_RANGE_BYTES),
            ),
        ],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backends::process::Captured;
    use crate::sandbox::Applied;

    fn finished(stdout: &str, exit_code: Option<i32>, timed_out: bool) -> Finished {
        Finished {
            exit_code,
            signal: None,
            timed_out,
            stdout: Captured {
                text: stdout.into(),
                ..Captured::default()
            },
            stderr: Captured::default(),
            duration: Duration::ZERO,
            applied: Applied {
                rlimits: true,
                namespaces: true,
                landlock: true,
                ..Applied::default()
            },
        }
    }

    #[test]
    fn an_error_on_stdout_with_exit_1_is_a_failure_that_says_where() {
        let t = Duration::from_secs(1);
        let v = verdict(&finished("a\nRuntime Error: boom\n", Some(1), false), t);
        assert!(!v.success);
        assert!(
            v.error
                .unwrap()
                .starts_with("Runtime Error: boom (NyxilumNode prints its errors on stdout")
        );
        assert!(verdict(&finished("Runtime Error: printed on purpose\n", Some(0), false), t).success);
        assert!(!verdict(&finished("", Some(3), false), t).success);
        let v = verdict(&finished("", None, true), t);
        assert!(v.error.unwrap().contains("within 1000 ms"));
    }
}
