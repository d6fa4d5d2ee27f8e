//! Interop with the official MCP clients: the Python SDK (`tests/interop/python_sdk.py`,
//! over HTTP `python_http.py`) and the TypeScript SDK (`tests/interop/ts_sdk.mjs`, over
//! HTTP `ts_http.mjs`) drive the real binary; the MCP
//! Inspector CLI is in `inspector.rs`. `scripts/test` installs those clients under
//! `target/interop` and names them in `TOOLGATE_TEST_PYTHON` and
//! `TOOLGATE_TEST_NODE_MODULES`; without them these tests fail and say so.

use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use tokio::process::Command;

/// How long one client run may take before the test gives up on it: a bound against a
/// hang, far above what a run takes, never a speed assertion.
const RUN_BOUND: Duration = Duration::from_secs(300);

/// The path that `var` names, which `scripts/test` sets after installing `what` there.
/// Panics, saying to run `scripts/test`, when it is unset or does not exist.
pub fn installed(var: &str, what: &str) -> PathBuf {
    let Some(value) = std::env::var_os(var) else {
        panic!("{var} is not set: run scripts/test, which installs {what} under target/interop and sets it");
    };
    let path = PathBuf::from(value);
    assert!(
        path.exists(),
        "{var}={} does not exist: run scripts/test, which installs {what} there",
        path.display()
    );
    path
}

/// The `node_modules` folder `scripts/test` installs `tests/interop/package-lock.json` into.
pub fn node_modules() -> PathBuf {
    installed(
        "TOOLGATE_TEST_NODE_MODULES",
        "the MCP TypeScript SDK and MCP Inspector (npm ci of tests/interop/package-lock.json)",
    )
}

/// A command run in `dir` with a scrubbed environment (PATH only, HOME = `dir`).
pub fn scrubbed(program: impl AsRef<std::ffi::OsStr>, dir: &Path) -> Command {
    let mut cmd = Command::new(program);
    cmd.env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", dir)
        .current_dir(dir)
        .stdin(Stdio::null())
        .kill_on_drop(true);
    cmd
}

/// Runs `cmd` to its end (bounded by `RUN_BOUND`) and returns its status, stdout and stderr.
pub async fn run(mut cmd: Command, what: &str) -> (ExitStatus, String, String) {
    let child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {what}: {e}"));
    let out = tokio::time::timeout(RUN_BOUND, child.wait_with_output())
        .await
        .unwrap_or_else(|_| panic!("{what} did not finish within {RUN_BOUND:?}"))
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    (
        out.status,
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Asserts a client script passed every check: exit 0, its closing "all checks passed"
/// line, and not one FAIL line.
pub fn assert_all_checks_passed(what: &str, status: ExitStatus, stdout: &str, stderr: &str) {
    let failed: Vec<&str> = stdout.lines().filter(|l| l.starts_with("FAIL")).collect();
    assert!(
        status.success() && failed.is_empty() && stdout.lines().any(|l| l == "ok: all checks passed"),
        "{what} failed ({status}); failed checks: {failed:#?}\nstdout:\n{stdout}\nstderr:\n{stderr}"
    );
}

#[tokio::test]
async fn the_python_sdk_client_lists_calls_and_reads_errors() {
    let python = installed(
        "TOOLGATE_TEST_PYTHON",
        "a Python virtual environment with tests/requirements.txt",
    );
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/interop/python_sdk.py");
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = scrubbed(&python, dir.path());
    cmd.arg(script).arg(crate::util::bin());
    let (status, stdout, stderr) = run(cmd, "the Python SDK interop script").await;
    assert_all_checks_passed("the Python SDK interop script", status, &stdout, &stderr);
}

#[tokio::test]
async fn the_typescript_sdk_client_accepts_every_answer_of_every_tool_family() {
    let node_modules = node_modules();
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/interop/ts_sdk.mjs");
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = scrubbed("node", dir.path());
    cmd.arg(script)
        .arg(&node_modules)
        .arg(crate::util::bin())
        .arg(crate::nyxilum::standin());
    let (status, stdout, stderr) = run(cmd, "node tests/interop/ts_sdk.mjs").await;
    assert_all_checks_passed("the TypeScript SDK interop script", status, &stdout, &stderr);
}

#[tokio::test]
async fn the_python_sdk_runs_the_agent_path_over_http_in_two_isolated_sessions() {
    let python = installed(
        "TOOLGATE_TEST_PYTHON",
        "a Python virtual environment with tests/requirements.txt",
    );
    let gate = crate::http::HttpGate::start(&[]).await;
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/interop/python_http.py");
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = scrubbed(&python, dir.path());
    cmd.arg(script).arg(&gate.url);
    let (status, stdout, stderr) = run(cmd, "the Python SDK HTTP script").await;
    assert_all_checks_passed("the Python SDK HTTP script", status, &stdout, &stderr);
    assert!(!stderr.contains("termination failed"), "{stderr}");
}

#[tokio::test]
async fn the_python_sdk_as_a_host_serves_catalogue_tools_that_log_report_progress_sample_and_elicit() {
    let python = installed(
        "TOOLGATE_TEST_PYTHON",
        "a Python virtual environment with tests/requirements.txt",
    );
    let catalogue = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/conformance");
    let gate = crate::http::HttpGate::start(&[("TOOLGATE_CATALOGUE", catalogue), ("TOOLGATE_RUNTIMES", "js")]).await;
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/interop/python_tool_client.py");
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = scrubbed(&python, dir.path());
    cmd.arg(script).arg(&gate.url);
    let (status, stdout, stderr) = run(cmd, "the Python SDK tool-client script").await;
    assert_all_checks_passed("the Python SDK tool-client script", status, &stdout, &stderr);
}

#[tokio::test]
async fn the_typescript_sdk_runs_the_agent_path_over_http_in_two_isolated_sessions() {
    let node_modules = node_modules();
    let gate = crate::http::HttpGate::start(&[]).await;
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/interop/ts_http.mjs");
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = scrubbed("node", dir.path());
    cmd.arg(script).arg(&node_modules).arg(&gate.url);
    let (status, stdout, stderr) = run(cmd, "node tests/interop/ts_http.mjs").await;
    assert_all_checks_passed("the TypeScript SDK HTTP script", status, &stdout, &stderr);
}
