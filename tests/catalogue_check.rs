//! `toolgate catalogue check`: every tool walked through a real server; failures named
//! with their step; tools whose runtime is missing skipped, not passed.

use crate::util::{command, fixtures};

async fn check(source: &str, env: &[(&str, &str)]) -> (bool, String, String) {
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = command(dir.path(), env);
    cmd.args(["catalogue", "check", source]);
    let out = cmd.output().await.unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[tokio::test]
async fn the_embedded_catalogue_passes_every_step() {
    let (ok, stdout, stderr) = check("embedded", &[]).await;
    assert!(ok, "{stdout}\n{stderr}");
    assert!(
        stdout.lines().any(|l| l.starts_with("ok      env-validator (")),
        "{stdout}"
    );
    assert!(
        stdout.trim_end().ends_with("31 passed, 0 failed, 3 skipped"),
        "{stdout}"
    );
    assert!(
        stdout.contains(
            "skipped nyxilum-caesar: its runtime is not available here (The nyxilum runtime is not available. Tried: "
        ),
        "skipped for that reason, not passed: {stdout}"
    );
}

#[tokio::test]
async fn with_nyxilum_node_the_nyxilum_tools_pass_too() {
    let nx = crate::nyxilum::standin().display().to_string();
    let (ok, stdout, stderr) = check("embedded", &[("NX_NODE_PATH", &nx)]).await;
    assert!(ok, "{stdout}\n{stderr}");
    assert!(stdout.contains("ok      nyxilum-word-stats ("), "{stdout}");
    assert!(
        stdout.trim_end().ends_with("34 passed, 0 failed, 0 skipped"),
        "{stdout}"
    );
}

#[tokio::test]
async fn settings_given_as_flags_reach_the_server_the_check_starts() {
    let nx = crate::nyxilum::standin().display().to_string();
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = command(dir.path(), &[]);
    cmd.args(["catalogue", "check", "embedded", "--nx-node-path", &nx]);
    let out = cmd.output().await.unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(
        stdout.trim_end().ends_with("34 passed, 0 failed, 0 skipped"),
        "the child ran the NyxilumNode tools with the flag's runtime: {stdout}"
    );
}

#[tokio::test]
async fn failing_tools_fail_the_check_and_name_their_step() {
    let dir = fixtures().display().to_string();
    let (ok, stdout, _) = check(
        &dir,
        &[("TOOLGATE_JS_TIMEOUT_MS", "1000"), ("TOOLGATE_JS_HEAP_MB", "16")],
    )
    .await;
    assert!(!ok, "{stdout}");
    assert!(stdout.contains("FAILED  throws: run: EXECUTION_ERROR"), "{stdout}");
    assert!(stdout.contains("FAILED  spin: run: TIMEOUT"), "{stdout}");
    assert!(stdout.contains("ok      echo ("), "{stdout}");
    assert!(
        stdout.contains("ok      bad slug/with space ("),
        "a withheld tool is checked through the meta-tool: {stdout}"
    );
}

#[tokio::test]
async fn a_tool_whose_runtime_is_missing_is_skipped_not_passed() {
    let dir = tempfile::tempdir().unwrap();
    for (slug, runtime) in [("plain", "javascript"), ("typed", "nyxilum")] {
        let folder = dir.path().join(slug);
        std::fs::create_dir(&folder).unwrap();
        let manifest = format!(
            r#"{{"slug": "{slug}", "name": "{slug}", "description": "A fixture.", "runtime": "{runtime}", "source": "index.js"}}"#
        );
        std::fs::write(folder.join("tool.json"), manifest).unwrap();
        std::fs::write(folder.join("index.js"), "function run() { return { ok: true }; }").unwrap();
    }
    let (ok, stdout, _) = check(&dir.path().display().to_string(), &[]).await;
    assert!(ok, "a skip is not a failure: {stdout}");
    assert!(
        stdout.contains("skipped typed: its runtime is not available here"),
        "{stdout}"
    );
    assert!(stdout.trim_end().ends_with("1 passed, 0 failed, 1 skipped"), "{stdout}");
}

#[tokio::test]
async fn a_tool_set_aside_or_shadowed_by_a_duplicate_slug_fails_the_check_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let tool = |folder: &str, slug: &str, schema: &str| {
        let path = dir.path().join(folder);
        std::fs::create_dir(&path).unwrap();
        let manifest = format!(
            r#"{{"slug": "{slug}", "name": "{slug}", "description": "A fixture.", "input_schema": {schema}, "runtime": "javascript", "source": "index.js"}}"#
        );
        std::fs::write(path.join("tool.json"), manifest).unwrap();
        std::fs::write(path.join("index.js"), "function run() { return { ok: true }; }").unwrap();
    };
    tool("good", "good", r#"{"type": "object"}"#);
    tool(
        "broken",
        "broken",
        r#"{"type": "object", "properties": {"n": {"type": 5}}}"#,
    );
    tool("twin-a", "twin", r#"{"type": "object"}"#);
    tool("twin-b", "twin", r#"{"type": "object"}"#);
    let (ok, stdout, stderr) = check(&dir.path().display().to_string(), &[]).await;
    assert!(!ok, "a tool the server does not serve is a failure: {stdout}\n{stderr}");
    assert!(
        stdout.contains("FAILED  broken: not served: its input schema does not compile"),
        "{stdout}"
    );
    assert!(
        stdout.contains("FAILED  twin: not served: another tool has this slug"),
        "{stdout}"
    );
    assert!(stdout.contains("ok      good ("), "{stdout}");
    assert!(stdout.trim_end().ends_with("2 passed, 2 failed, 0 skipped"), "{stdout}");
}

#[tokio::test]
async fn runtime_tools_in_the_environment_do_not_enter_the_check() {
    let (ok, stdout, stderr) = check("embedded", &[("TOOLGATE_RUNTIMES", "js,nyxilum")]).await;
    assert!(ok, "{stdout}\n{stderr}");
    assert!(!stdout.contains("run_javascript"), "{stdout}");
    assert!(
        stdout.trim_end().ends_with("31 passed, 0 failed, 3 skipped"),
        "{stdout}"
    );
}

#[tokio::test]
async fn a_refused_resource_or_prompt_fails_the_check_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("good");
    std::fs::create_dir(&good).unwrap();
    std::fs::write(
        good.join("tool.json"),
        r#"{"slug": "good", "name": "good", "description": "A fixture.", "input_schema": {"type": "object"}, "runtime": "javascript", "source": "index.js"}"#,
    )
    .unwrap();
    std::fs::write(good.join("index.js"), "function run() { return { ok: true }; }").unwrap();
    std::fs::write(
        dir.path().join("resources.json"),
        r#"[{"uri": "test://fine", "name": "fine", "text": "t"}, {"uri": "test://bad", "name": "bad", "blob": "@@"}]"#,
    )
    .unwrap();
    std::fs::write(
        dir.path().join("prompts.json"),
        r#"[{"name": "use-tool", "messages": [{"role": "user", "content": {"type": "text", "text": "x"}}]}]"#,
    )
    .unwrap();
    let (ok, stdout, stderr) = check(&dir.path().display().to_string(), &[]).await;
    assert!(
        !ok,
        "an entry the server does not serve is a failure: {stdout}\n{stderr}"
    );
    assert!(
        stdout.contains("FAILED  resource \"test://bad\" is not served: its blob is not base64"),
        "{stdout}"
    );
    assert!(
        stdout.contains("FAILED  prompt \"use-tool\" is not served: toolgate has a prompt of this name"),
        "{stdout}"
    );
    assert!(!stdout.contains("test://fine"), "{stdout}");
    assert!(stdout.contains("ok      good ("), "{stdout}");
}

/// A folder catalogue of `sums`, whose first example breaks its input schema, and
/// `unreadable`, whose manifest is not JSON.
fn examples_catalogue() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let sums = dir.path().join("sums");
    std::fs::create_dir(&sums).unwrap();
    let manifest = serde_json::json!({
        "slug": "sums", "name": "Sums", "description": "Adds two numbers.",
        "input_schema": {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
                         "required": ["a", "b"], "additionalProperties": false},
        "examples": [{"name": "strings", "params": {"a": "1", "b": 2}}, {"params": {"a": 1, "b": 2}}],
        "runtime": "javascript", "source": "index.js"
    });
    std::fs::write(sums.join("tool.json"), manifest.to_string()).unwrap();
    std::fs::write(sums.join("index.js"), "function run(p) { return { sum: p.a + p.b }; }").unwrap();
    let unreadable = dir.path().join("unreadable");
    std::fs::create_dir(&unreadable).unwrap();
    std::fs::write(unreadable.join("tool.json"), "{\"slug\": ").unwrap();
    dir
}

#[tokio::test]
async fn an_example_that_breaks_its_tools_input_schema_fails_the_check_naming_it() {
    let dir = examples_catalogue();
    let (ok, stdout, stderr) = check(&dir.path().display().to_string(), &[]).await;
    assert!(!ok, "{stdout}\n{stderr}");
    assert!(
        stdout.contains("FAILED  sums: example: examples[0] breaks the input schema: /a:"),
        "{stdout}"
    );
    assert!(stdout.trim_end().ends_with("0 passed, 2 failed, 0 skipped"), "{stdout}");
}

#[tokio::test]
async fn each_failure_is_printed_once() {
    let dir = examples_catalogue();
    let (ok, stdout, stderr) = check(&dir.path().display().to_string(), &[]).await;
    assert!(!ok);
    let both = format!("{stdout}{stderr}");
    assert_eq!(
        both.matches("unreadable/tool.json: not a valid manifest").count(),
        1,
        "once, in the report, not again from the server the check starts: {both}"
    );
    assert_eq!(both.matches("examples[0]").count(), 1, "{both}");
}

#[tokio::test]
async fn the_server_serves_a_tool_without_its_example_that_breaks_the_schema() {
    let dir = examples_catalogue();
    let catalogue = dir.path().display().to_string();
    let gate = crate::util::Gate::start(&[("TOOLGATE_CATALOGUE", catalogue.as_str())]).await;
    let read = gate
        .client
        .read_resource(rmcp::model::ReadResourceRequestParams::new("toolgate://tools/sums"))
        .await
        .unwrap();
    let Some(rmcp::model::ResourceContents::TextResourceContents { text, .. }) = read.contents.into_iter().next()
    else {
        panic!("a text resource")
    };
    let manifest: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        manifest["examples"],
        serde_json::json!([{"params": {"a": 1, "b": 2}}]),
        "{manifest}"
    );
    assert_eq!(manifest["example"]["arguments"], serde_json::json!({"a": 1, "b": 2}));
    let stderr = gate.stop().await;
    assert!(
        stderr.contains("tool \"sums\" is served without examples[0], which breaks its input schema: /a:"),
        "{stderr}"
    );
}
