//! Interop with the official Python MCP SDK: its client drives the real binary.
//! `python3` must have `mcp` installed (`pip install -r tests/requirements.txt`; `.ci/run`
//! does this in a virtual environment).

use std::process::Command;

#[test]
fn the_python_sdk_client_lists_calls_and_reads_errors() {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/interop/python_sdk.py");
    let python = std::env::var("TOOLGATE_TEST_PYTHON").unwrap_or_else(|_| "python3".to_owned());
    let out = Command::new(&python)
        .arg(script)
        .arg(crate::util::bin())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {python}: {e}"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "the Python SDK interop script failed (is `mcp` installed? pip install -r tests/requirements.txt)\nstdout:\n{stdout}\nstderr:\n{stderr}"
    );
    assert!(stdout.contains("ok:"), "{stdout}");
}
