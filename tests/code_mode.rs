//! Code mode: a snippet's `tools` global calls tools through the gateway's one path, as
//! the snippet's caller — validation, scopes, rate limits, history with each inner call
//! naming its parent run — within the limits of code mode, and its deadline ends them
//! (an upstream is told). The official SDKs drive it in `interop.rs`.

use std::path::Path;

use rmcp::model::{ReadResourceRequestParams, ResourceContents};
use serde_json::{Value, json};

use crate::access::new_key;
use crate::http::{HttpGate, Session};
use crate::interop::{assert_all_checks_passed, node_modules, run, scrubbed};
use crate::upstream::{Federated, py_server, python, servers_file};
use crate::util::{Gate, fixtures, structured, text, without_run_id};

/// Runs `code` with `run_javascript` and returns its structured answer, asserting it
/// succeeded.
async fn snippet(gate: &Gate, code: &str) -> Value {
    let r = gate.call("run_javascript", json!({ "code": code })).await;
    assert_ne!(r.is_error, Some(true), "{}", text(&r));
    structured(&r).clone()
}

/// The runs of the session's history, newest first.
async fn runs(gate: &Gate) -> Vec<Value> {
    let r = gate.meta(json!({"command": "history"})).await;
    structured(&r)["runs"].as_array().unwrap().clone()
}

/// `value` without the fields that differ between two runs of the same call.
fn timeless(value: &Value) -> Value {
    let mut v = without_run_id(value);
    if let Some(o) = v.as_object_mut() {
        o.remove("duration_ms");
    }
    v
}

#[tokio::test]
async fn code_calls_tools_by_function_and_slug_searches_and_each_call_is_a_run_of_its_own() {
    let gate = Gate::start(&[("TOOLGATE_RUNTIMES", "js")]).await;
    let direct = gate
        .call("base64-codec", json!({"input": "hi", "mode": "encode"}))
        .await;
    let code = r#"
        const found = await tools.search("encode text as base64", {limit: 3});
        const byFunction = await tools.base64_codec({input: "hi", mode: "encode"});
        const bySlug = await tools.call("base64-codec", {input: "aGk=", mode: "decode"});
        const failure = await tools.base64_codec({nope: 1}).then(() => null, (e) => ({
            name: e.name, code: e.code, retryable: e.retryable, message: e.message, isError: e instanceof Error,
        }));
        const recursive = await tools.run_javascript({code: "return 1"}).then(() => null, (e) => e.code);
        const unknown = await tools.no_such_tool_anywhere({}).then(() => null, (e) => e.code);
        const notObject = await tools.call("base64-codec", "hi").then(() => null, (e) => e.name);
        return {
            found, byFunction, bySlug, failure, recursive, unknown, notObject,
            shape: {type: typeof tools, keys: Object.keys(tools), json: JSON.stringify(tools), awaited: (await tools) === tools},
        };
    "#;
    let s = snippet(&gate, code).await;
    let r = &s["result"];
    let found = r["found"].as_array().unwrap();
    assert_eq!(found[0]["slug"], "base64-codec", "{found:?}");
    for key in ["slug", "name", "description", "score"] {
        assert!(found[0].get(key).is_some(), "a search result carries {key}: {found:?}");
    }
    // The value code receives is the body a direct call carries in structuredContent.
    assert_eq!(timeless(&r["byFunction"]), timeless(structured(&direct)), "{r}");
    assert_eq!(r["bySlug"]["result"]["output"], "hi", "{r}");
    let failure = &r["failure"];
    assert_eq!(
        (
            &failure["name"],
            &failure["code"],
            &failure["retryable"],
            &failure["isError"]
        ),
        (
            &json!("ToolError"),
            &json!("INVALID_PARAMS"),
            &json!(false),
            &json!(true)
        ),
        "{failure}"
    );
    assert!(failure["message"].as_str().unwrap().contains("nope"), "{failure}");
    assert_eq!(r["recursive"], "BAD_REQUEST", "no recursion: {r}");
    assert_eq!(r["unknown"], "TOOL_NOT_FOUND", "{r}");
    assert_eq!(r["notObject"], "TypeError", "{r}");
    assert_eq!(
        r["shape"],
        json!({"type": "object", "keys": ["call", "search"], "json": "{}", "awaited": true}),
        "printing, serialising or awaiting `tools` calls nothing"
    );

    // Each call is a run of its own in the session's history, naming the snippet's run.
    let runs = runs(&gate).await;
    let parent = s["run_id"].as_str().unwrap();
    let children: Vec<&Value> = runs.iter().filter(|r| r["parent_run_id"] == parent).collect();
    let statuses: Vec<(&str, &str)> = children
        .iter()
        .rev()
        .map(|r| (r["slug"].as_str().unwrap(), r["status"].as_str().unwrap()))
        .collect();
    assert_eq!(
        statuses,
        [
            ("base64-codec", "ok"),
            ("base64-codec", "ok"),
            ("base64-codec", "INVALID_PARAMS")
        ],
        "{runs:?}"
    );
    let own = runs.iter().find(|r| r["id"] == parent).unwrap();
    assert!(own.get("parent_run_id").is_none(), "{own}");
    let listed = gate.meta(json!({"command": "history"})).await;
    assert!(
        text(&listed).contains(&format!("(called by {parent}'s code)")),
        "{}",
        text(&listed)
    );
    gate.stop().await;
}

#[tokio::test]
async fn code_mode_bounds_the_calls_of_a_run_and_their_params() {
    let gate = Gate::start(&[("TOOLGATE_RUNTIMES", "js"), ("TOOLGATE_CODE_CALLS", "3")]).await;
    let sequential = r#"
        const codes = [];
        for (let i = 0; i < 4; i++) {
            codes.push(await tools.base64_codec({input: "x" + i}).then(() => "ok", (e) => e.code + " " + e.message));
        }
        return codes;
    "#;
    let s = snippet(&gate, sequential).await;
    let codes = s["result"].as_array().unwrap();
    assert_eq!(&codes[..3], &[json!("ok"), json!("ok"), json!("ok")], "{codes:?}");
    let fourth = codes[3].as_str().unwrap();
    assert!(
        fourth.starts_with("RESOURCE_LIMIT") && fourth.contains("TOOLGATE_CODE_CALLS"),
        "{fourth}"
    );
    // Params past what a direct call may send are refused in the worker, unsent.
    let deep = r#"
        let p = {input: "x"};
        for (let i = 0; i < 100; i++) p = {input: "x", more: p};
        const big = {input: "x".repeat(9 * 1024 * 1024)};
        const codes = [];
        for (const params of [p, big]) codes.push(await tools.call("base64-codec", params).then(() => "ran", (e) => e.code + " " + e.message));
        return codes;
    "#;
    let s = snippet(&gate, deep).await;
    let codes = s["result"].as_array().unwrap();
    assert!(
        codes[0].as_str().unwrap().contains("RESOURCE_LIMIT") && codes[0].as_str().unwrap().contains("64 levels"),
        "{codes:?}"
    );
    assert!(
        codes[1].as_str().unwrap().contains("RESOURCE_LIMIT") && codes[1].as_str().unwrap().contains("8388608 bytes"),
        "{codes:?}"
    );
    gate.stop().await;
}

/// A catalogue folder holding `probe` (answers what `tools` is in a catalogue tool's
/// script) and `spin` (never returns).
fn catalogue(dir: &Path) {
    let tool = |slug: &str, code: &str| {
        let folder = dir.join(slug);
        std::fs::create_dir_all(&folder).unwrap();
        let manifest = json!({"slug": slug, "name": slug, "description": format!("{slug} for tests"), "input_schema": {"type": "object"}, "runtime": "javascript", "source": "index.js"});
        std::fs::write(folder.join("tool.json"), manifest.to_string()).unwrap();
        std::fs::write(folder.join("index.js"), code).unwrap();
    };
    tool("probe", "function run(params) { return {tools: typeof tools}; }\n");
    tool("spin", "function run(params) { for (;;) {} }\n");
}

#[tokio::test]
async fn a_snippet_deadline_ends_its_inner_calls_in_flight_and_a_catalogue_tool_has_no_tools() {
    let dir = tempfile::tempdir().unwrap();
    catalogue(dir.path());
    let folder = dir.path().display().to_string();
    let gate = Gate::start(&[
        ("TOOLGATE_RUNTIMES", "js"),
        ("TOOLGATE_CATALOGUE", &folder),
        ("TOOLGATE_JS_TIMEOUT_MS", "3000"),
        ("TOOLGATE_CODE_PARALLEL", "1"),
    ])
    .await;
    // With one call in flight at most, a second call made while the first (which never
    // returns) runs is refused; the first is cancelled when the snippet ends.
    let parallel = r#"
        const first = tools.spin({}).catch(() => null);
        return await tools.probe({}).then(() => "ran", (e) => e.code + " " + e.message);
    "#;
    let s = snippet(&gate, parallel).await;
    let second = s["result"].as_str().unwrap();
    assert!(
        second.starts_with("RESOURCE_LIMIT") && second.contains("TOOLGATE_CODE_PARALLEL"),
        "{second}"
    );
    let s = snippet(&gate, "return await tools.probe({});").await;
    assert_eq!(s["result"]["result"], json!({"tools": "undefined"}), "{s}");
    // run_typescript has the same global, its types erased.
    let typed = "interface Probe { tools: string }\nconst r: { result: Probe } = await tools.probe({});\nreturn r.result.tools;";
    let r = gate.call("run_typescript", json!({ "code": typed })).await;
    assert_eq!(structured(&r)["result"], "undefined", "{}", text(&r));

    let r = gate
        .call("run_javascript", json!({"code": "return await tools.spin({});"}))
        .await;
    let s = structured(&r);
    assert_eq!(s["timed_out"], true, "{s}");
    // The snippet's answer comes after its inner call ended: the call is in history,
    // ended by the snippet's deadline, not its own.
    let runs = runs(&gate).await;
    let spin = runs.iter().find(|r| r["slug"] == "spin").expect("the inner run");
    assert_eq!(spin["parent_run_id"], s["run_id"], "{runs:?}");
    // Ended by the snippet's deadline (cancelled) or, started a moment later with the
    // same limit, by its own at the same time; either way over before the answer.
    let status = spin["status"].as_str().unwrap();
    assert!(status == "CANCELLED" || status == "TIMEOUT", "{runs:?}");
    gate.stop().await;
}

#[tokio::test]
async fn an_upstream_call_from_code_is_cancelled_upstream_when_the_snippet_times_out() {
    let state = tempfile::tempdir().unwrap();
    let up = Federated::start(
        json!({"py": py_server(state.path())}),
        &[("TOOLGATE_RUNTIMES", "js"), ("TOOLGATE_JS_TIMEOUT_MS", "8000")],
    )
    .await;
    // First a direct call, which waits for the server to be up; then one from code.
    let direct = up.gate.call("py__shout", json!({"words": "up"})).await;
    assert_eq!(direct.is_error, Some(false), "{direct:?}");
    let shout = snippet(&up.gate, "return await tools.py__shout({words: 'from code'});").await;
    assert_eq!(
        shout["result"],
        json!({"loud": "FROM CODE", "count": 2}),
        "an upstream's structuredContent"
    );
    let r = up
        .gate
        .call(
            "run_javascript",
            json!({"code": "return await tools.py__wait_for_cancel({});"}),
        )
        .await;
    assert_eq!(structured(&r)["timed_out"], true, "{r:?}");
    let r = up.gate.call("py__was_cancelled", json!({})).await;
    assert_eq!(
        structured(&r),
        &json!({"result": true}),
        "notifications/cancelled reached the upstream: {r:?}"
    );
    up.gate.stop().await;
}

#[tokio::test]
async fn inside_code_a_caller_keeps_its_scopes_and_its_rate() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("keys.json");
    let coder = new_key(&file, "runtimes,search", "coder").await;
    let catalogue = fixtures().display().to_string();
    let gate = HttpGate::start(&[
        ("TOOLGATE_CATALOGUE", &catalogue),
        ("TOOLGATE_RUNTIMES", "js"),
        ("TOOLGATE_KEYS_FILE", file.to_str().unwrap()),
    ])
    .await;
    let mut coder = Session::open_keyed(&gate.url, &coder).await;
    let code = r#"
        const refused = await tools.echo({message: "m"}).then(() => "ran", (e) => e.code);
        const found = await tools.search("echo a message");
        return {refused, found: found.map((f) => f.slug)};
    "#;
    let s = coder.call("run_javascript", json!({ "code": code })).await;
    assert_eq!(
        s["result"]["refused"], "FORBIDDEN",
        "no `run` scope outside code, none inside: {s}"
    );
    assert!(
        s["result"]["found"].as_array().unwrap().contains(&json!("echo")),
        "searching needs `search`, which it holds: {s}"
    );

    // Anonymous callers start 3 runs a minute: the snippet is one, its calls the rest.
    let gate = HttpGate::start(&[
        ("TOOLGATE_CATALOGUE", &catalogue),
        ("TOOLGATE_RUNTIMES", "js"),
        ("TOOLGATE_ANONYMOUS_PER_MINUTE", "3"),
    ])
    .await;
    let mut anonymous = Session::open(&gate.url).await;
    let code = r#"
        const codes = [];
        for (let i = 0; i < 3; i++) {
            codes.push(await tools.echo({message: "m"}).then(() => "ok", (e) => e.code + " " + e.retryable));
        }
        return codes;
    "#;
    let s = anonymous.call("run_javascript", json!({ "code": code })).await;
    assert_eq!(s["result"], json!(["ok", "ok", "RATE_LIMITED true"]), "{s}");
}

/// The text of resource `uri`, or the protocol error's message.
async fn read(gate: &Gate, uri: &str) -> Result<String, String> {
    match gate.client.read_resource(ReadResourceRequestParams::new(uri)).await {
        Ok(r) => match r.contents.into_iter().next() {
            Some(ResourceContents::TextResourceContents { text, mime_type, .. }) => {
                assert_eq!(mime_type.as_deref(), Some("application/typescript"), "{uri}");
                Ok(text)
            }
            other => panic!("expected text contents, got {other:?}"),
        },
        Err(rmcp::ServiceError::McpError(e)) => Err(e.message.to_string()),
        Err(other) => panic!("{other:?}"),
    }
}

/// Runs the pinned TypeScript compiler (`tsc --noEmit --strict`) on `files` in `dir`;
/// whether it passed, and what it printed.
async fn tsc(dir: &Path, files: &[&str]) -> (bool, String) {
    let tsc = node_modules().join("typescript/bin/tsc");
    let mut cmd = scrubbed("node", dir);
    cmd.arg(tsc)
        .args(["--noEmit", "--strict", "--target", "es2022", "--lib", "es2022"])
        .args(files);
    let (status, stdout, stderr) = run(cmd, "tsc").await;
    (status.success(), format!("{stdout}{stderr}"))
}

#[tokio::test]
async fn every_callable_tool_is_declared_in_typescript_that_the_compiler_checks_calls_against() {
    let gate = Gate::start(&[("TOOLGATE_RUNTIMES", "js"), ("TOOLGATE_ADVERTISE", "all")]).await;
    let schema = gate.meta(json!({"command": "schema", "slug": "base64-codec"})).await;
    let declared = structured(&schema)["typescript"].as_str().unwrap().to_owned();
    assert!(declared.contains("  base64_codec(params: {"), "{declared}");
    assert!(text(&schema).contains("base64_codec(params"), "the text shows it too");
    let snippet_schema = gate.meta(json!({"command": "schema", "slug": "run_javascript"})).await;
    assert_eq!(
        structured(&snippet_schema)["typescript"],
        Value::Null,
        "code cannot call a snippet"
    );
    let one = read(&gate, "toolgate://types/base64-codec").await.unwrap();
    assert!(one.contains(&declared), "{one}");
    assert!(read(&gate, "toolgate://types/run_javascript").await.is_err());

    // The whole set, page by page: every callable tool once.
    let resources = gate.client.list_all_resources().await.unwrap();
    assert!(
        resources.iter().any(|r| r.uri == "toolgate://types/tools.d.ts"),
        "{resources:?}"
    );
    let mut pages = Vec::new();
    let mut uri = "toolgate://types/tools.d.ts".to_owned();
    loop {
        let page = read(&gate, &uri).await.unwrap();
        let next = page
            .lines()
            .find_map(|l| l.strip_prefix("// Continued in "))
            .map(str::to_owned);
        pages.push(page);
        match next {
            Some(n) => uri = n,
            None => break,
        }
        assert!(pages.len() < 100, "the pages end");
    }
    let all = pages.join("\n");
    let listed = gate.meta(json!({"command": "list", "limit": 1000})).await;
    let tools = structured(&listed)["tools"].as_array().unwrap().clone();
    // Those that can run here (a NyxilumLang tool without NyxilumNode cannot) and are
    // not snippets.
    let callable: Vec<&str> = tools
        .iter()
        .filter(|t| t["available"] != false)
        .map(|t| t["slug"].as_str().unwrap())
        .filter(|s| !s.starts_with("run_"))
        .collect();
    assert!(callable.len() > 20, "{callable:?}");
    for slug in &callable {
        let method = format!("\n  {}(params", slug.replace('-', "_"));
        assert_eq!(all.matches(&method).count(), 1, "{slug} declared once");
    }

    // The compiler reads the declarations, accepts a right call and refuses a wrong one.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("tools.d.ts"), &all).unwrap();
    std::fs::write(
        dir.path().join("good.ts"),
        "export async function main(): Promise<string> {\n  const r = await tools.base64_codec({ input: \"hi\", mode: \"encode\" });\n  const hits = await tools.search(\"base64\", { limit: 2 });\n  return r.result.output + hits[0].slug;\n}\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("bad.ts"),
        "export async function main(): Promise<void> {\n  await tools.base64_codec({ nope: 1 });\n}\n",
    )
    .unwrap();
    let (ok, said) = tsc(dir.path(), &["tools.d.ts", "good.ts"]).await;
    assert!(ok, "{said}");
    let (ok, said) = tsc(dir.path(), &["tools.d.ts", "bad.ts"]).await;
    assert!(!ok && said.contains("nope"), "{said}");
    gate.stop().await;
}

/// The gateways the SDK scripts drive: one with the embedded catalogue, run_javascript,
/// the upstream `py` and two keys (every scope; runtimes and search without run), and
/// one admitting 4 anonymous runs a minute. Returns them with the two keys and what
/// must outlive them.
async fn sdk_gates() -> (HttpGate, HttpGate, String, String, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let keys = dir.path().join("keys.json");
    let full = new_key(&keys, "search,run,runtimes", "agent").await;
    let coder = new_key(&keys, "runtimes,search", "coder").await;
    let servers = servers_file(dir.path(), json!({"py": py_server(dir.path())}));
    let gate = HttpGate::start(&[
        ("TOOLGATE_RUNTIMES", "js"),
        ("TOOLGATE_UPSTREAMS", &servers),
        ("TOOLGATE_KEYS_FILE", keys.to_str().unwrap()),
    ])
    .await;
    let limited = HttpGate::start(&[("TOOLGATE_RUNTIMES", "js"), ("TOOLGATE_ANONYMOUS_PER_MINUTE", "4")]).await;
    (gate, limited, full, coder, dir)
}

#[tokio::test]
async fn the_python_sdk_drives_code_mode_with_scopes_and_rates_holding_inside_code() {
    let (gate, limited, full, coder, _dir) = sdk_gates().await;
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/interop/python_code_mode.py");
    let work = tempfile::tempdir().unwrap();
    let mut cmd = scrubbed(python(), work.path());
    cmd.arg(script).args([&gate.url, &full, &coder, &limited.url]);
    let (status, stdout, stderr) = run(cmd, "tests/interop/python_code_mode.py").await;
    assert_all_checks_passed("the Python SDK code-mode script", status, &stdout, &stderr);
}

#[tokio::test]
async fn the_typescript_sdk_drives_code_mode_with_scopes_and_rates_holding_inside_code() {
    let (gate, limited, full, coder, _dir) = sdk_gates().await;
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/interop/ts_code_mode.mjs");
    let work = tempfile::tempdir().unwrap();
    let mut cmd = scrubbed("node", work.path());
    cmd.arg(script)
        .arg(node_modules())
        .args([&gate.url, &full, &coder, &limited.url]);
    let (status, stdout, stderr) = run(cmd, "tests/interop/ts_code_mode.mjs").await;
    assert_all_checks_passed("the TypeScript SDK code-mode script", status, &stdout, &stderr);
}

#[tokio::test]
async fn progress_of_a_call_made_from_code_reaches_the_client_of_the_snippet() {
    // An upstream tool called from code reports 20 ticks; the client that ran the
    // snippet with a progress token gets them under its own token, before the answer.
    let state = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = servers_file(dir.path(), json!({"py": py_server(state.path())}));
    let call = json!({"method": "tools/call", "params": {
        "name": "run_javascript",
        "arguments": {"code": "return await tools.py__ticks({count: 20});"},
        "_meta": {"progressToken": "snippet"}
    }});
    let env = [("TOOLGATE_UPSTREAMS", file.as_str()), ("TOOLGATE_RUNTIMES", "js")];
    let (lines, stderr) = crate::util::raw_exchange(&env, &[call]).await;
    let answer = lines
        .iter()
        .position(|l| l["id"] == 1)
        .unwrap_or_else(|| panic!("{lines:?}\n{stderr}"));
    assert_eq!(
        lines[answer]["result"]["structuredContent"]["success"], true,
        "{}",
        lines[answer]
    );
    let ticks: Vec<f64> = lines[..answer]
        .iter()
        .filter(|l| l["method"] == "notifications/progress")
        .map(|l| {
            assert_eq!(l["params"]["progressToken"], "snippet", "{l}");
            l["params"]["progress"].as_f64().unwrap()
        })
        .collect();
    let expected: Vec<f64> = (1..=20).map(f64::from).collect();
    assert_eq!(
        ticks, expected,
        "every tick of the inner call, in order, before the answer"
    );
}

#[tokio::test]
async fn two_snippets_of_one_principal_calling_javascript_tools_both_finish() {
    // One principal holds at most half of the 4 JavaScript places: its two snippets take
    // both, and their calls of a JavaScript tool must still find places of their own.
    let gate = HttpGate::start(&[("TOOLGATE_RUNTIMES", "js"), ("TOOLGATE_JS_TIMEOUT_MS", "20000")]).await;
    let code = r#"
        await new Promise((done) => setTimeout(done, 300));
        const r = await tools.base64_codec({input: "both"});
        return r.result.output;
    "#;
    let mut first = Session::open(&gate.url).await;
    let mut second = Session::open(&gate.url).await;
    let args = json!({ "code": code });
    let (a, b) = tokio::join!(
        first.call("run_javascript", args.clone()),
        second.call("run_javascript", args.clone())
    );
    for s in [&a, &b] {
        assert_eq!(s["result"], "Ym90aA==", "{s}");
    }
}
