//! The official MCP conformance suite (`@modelcontextprotocol/conformance` 0.1.13, pinned in
//! `tests/interop/package.json`, installed by `scripts/test`) against `toolgate --http` on
//! 127.0.0.1, offline. Scenarios toolgate does not pass yet are listed, each with its
//! reason, in `tests/conformance/expected-failures.yaml`; the suite fails on any other
//! failure and on a listed scenario that starts passing.

use crate::http::HttpGate;
use crate::interop::{node_modules, run, scrubbed};

#[tokio::test]
async fn the_official_conformance_suite_passes_all_but_the_listed_scenarios() {
    let suite = node_modules().join("@modelcontextprotocol/conformance/dist/index.js");
    let expected = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/conformance/expected-failures.yaml");
    let catalogue = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/conformance");
    let gate = HttpGate::start(&[("TOOLGATE_RUNTIMES", "js"), ("TOOLGATE_CATALOGUE", catalogue)]).await;
    // The suite writes its results under the folder it runs in.
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = scrubbed("node", dir.path());
    cmd.arg(&suite)
        .args(["server", "--url", &gate.url, "--expected-failures", expected]);
    let (status, stdout, stderr) = run(cmd, "the MCP conformance suite").await;
    let summary: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with('✓') || l.starts_with('✗') || l.starts_with("Total"))
        .collect();
    assert!(
        status.success(),
        "the conformance suite failed ({status}): an unexpected failure, or a listed one that now passes\n{}\nstdout:\n{stdout}\nstderr:\n{stderr}",
        summary.join("\n")
    );
    assert!(summary.iter().any(|l| l.starts_with("Total")), "{stdout}");
}
