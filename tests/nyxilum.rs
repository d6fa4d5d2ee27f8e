//! The `nyxilum_*` tools through the real server (TOOLGATE_RUNTIMES=nyxilum), with
//! `NX_NODE_PATH` pointing at the stand-in `tests/standin/nx` — the real NyxilumNode (a
//! .NET program) is not installable here; the stand-in honours its CLI contract for the
//! programs below.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::util::{Gate, expect_error, structured, text};

/// The stand-in NyxilumNode.
pub fn standin() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/standin/nx")
}

/// A server with the nyxilum tools over the stand-in, plus `extra` settings.
pub async fn gate(extra: &[(&str, &str)]) -> Gate {
    let nx = standin().display().to_string();
    let mut env = vec![("TOOLGATE_RUNTIMES", "nyxilum"), ("NX_NODE_PATH", nx.as_str())];
    env.extend_from_slice(extra);
    Gate::start(&env).await
}

async fn run(gate: &Gate, args: Value) -> (Value, String, bool) {
    let r = gate.call("nyxilum_run", args).await;
    (structured(&r).clone(), text(&r), r.is_error == Some(true))
}

#[tokio::test]
async fn listed_only_when_asked_for() {
    let plain = Gate::start(&[]).await;
    assert!(!plain.names().await.iter().any(|n| n.starts_with("nyxilum_")));
    plain.stop().await;
    let with = gate(&[]).await;
    let names = with.names().await;
    assert_eq!(
        &names[..12],
        &[
            "toolgate",
            "nyxilum_run",
            "nyxilum_check",
            "nyxilum_lint",
            "nyxilum_format",
            "nyxilum_version",
            "nyxilum_docs",
            "nyxilum_repl_start",
            "nyxilum_repl_eval",
            "nyxilum_repl_stop",
            "nyxilum_dev_build",
            "nyxilum_dev_test"
        ]
    );
    with.stop().await;
}

#[tokio::test]
async fn hello_world_runs_with_the_seeds_answer_shape() {
    let gate = gate(&[]).await;
    let (s, t, failed) = run(&gate, json!({"code": "func main() { var x = 1; print(\"x=${x}\") }"})).await;
    assert!(!failed, "{t}");
    assert_eq!(s["success"], true);
    assert_eq!(s["exitCode"], 0);
    assert_eq!(s["timedOut"], false);
    assert_eq!(s["stdout"], "x=1\n");
    assert_eq!(s["stderr"], "");
    assert_eq!(s["truncated"], false);
    assert!(s["durationMs"].is_u64());
    assert!(
        t.starts_with("nyxilum_run finished in ") && t.contains("stdout:\nx=1"),
        "{t}"
    );
    gate.stop().await;
}

#[tokio::test]
async fn an_uncaught_throw_is_a_failure_that_points_at_stdout() {
    let gate = gate(&[]).await;
    let (s, t, failed) = run(&gate, json!({"code": "throw \"boom\""})).await;
    assert!(failed, "{t}");
    assert_eq!((s["success"].as_bool(), s["exitCode"].as_i64()), (Some(false), Some(1)));
    assert_eq!(s["stdout"], "Runtime Error: boom\n");
    let error = s["error"].as_str().unwrap();
    assert!(
        error.starts_with("Runtime Error: boom") && error.contains("on stdout"),
        "{error}"
    );
    assert_eq!(s["code"], "EXECUTION_ERROR");
    assert!(t.contains("error:\nRuntime Error: boom"), "{t}");
    gate.stop().await;
}

#[tokio::test]
async fn an_infinite_loop_is_killed_at_one_second() {
    let gate = gate(&[]).await;
    let started = Instant::now();
    let (s, _, failed) = run(&gate, json!({"code": "while true { }", "timeout_ms": 1000})).await;
    let took = started.elapsed();
    assert!(failed);
    assert_eq!(s["timedOut"], true, "{s}");
    assert_eq!(s["exitCode"], Value::Null, "killed by a signal, not exited: {s}");
    assert_eq!(s["code"], "TIMEOUT");
    assert!(took < Duration::from_secs(3), "answered after {took:?}");
    assert!(s["durationMs"].as_u64().unwrap() >= 1000, "{s}");
    gate.stop().await;
}

#[tokio::test]
async fn gc_max_objects_caps_allocations() {
    let gate = gate(&[]).await;
    let code = "var a = null\nfor i in 0..1000 { a = [i] }\nprint(\"done\")";
    let (s, _, failed) = run(&gate, json!({"code": code})).await;
    assert!(!failed && s["stdout"] == "done\n", "{s}");
    let (s, _, failed) = run(&gate, json!({"code": code, "gc_max_objects": 100})).await;
    assert!(failed, "{s}");
    assert!(
        s["stdout"]
            .as_str()
            .unwrap()
            .starts_with("Runtime Error: GC object limit exceeded"),
        "{s}"
    );
    gate.stop().await;
}

#[tokio::test]
async fn twenty_thousand_lines_are_truncated_at_32_kb() {
    let gate = gate(&[]).await;
    let (s, t, failed) = run(
        &gate,
        json!({"code": "for i in 0..20000 { print(\"line ${i} of a long flood of output\") }"}),
    )
    .await;
    assert!(!failed, "{t}");
    assert_eq!(s["truncated"], true);
    let stdout = s["stdout"].as_str().unwrap();
    assert!(
        stdout.len() <= 32 * 1024 && stdout.len() > 30 * 1024,
        "{}",
        stdout.len()
    );
    assert!(stdout.starts_with("line 0 of a long flood of output\nline 1 "));
    assert!(t.contains("truncated"), "{t}");
    gate.stop().await;
}

#[tokio::test]
async fn shell_metacharacters_are_printed_literally() {
    let gate = gate(&[]).await;
    let line = "$(touch pwned); `rm -rf /` | && || ; > out.txt < in $HOME 'q' \\\"";
    let code = format!("print(\"{}\")", line.replace('\\', "\\\\").replace('"', "\\\""));
    let (s, t, failed) = run(&gate, json!({ "code": code })).await;
    assert!(!failed, "{t}");
    assert_eq!(s["stdout"], format!("{line}\n"));
    gate.stop().await;
}

#[tokio::test]
async fn check_passes_catches_and_never_runs_the_code() {
    let gate = gate(&[]).await;
    let r = gate
        .call("nyxilum_check", json!({"code": "print(\"ran\")\nthrow \"boom\""}))
        .await;
    let s = structured(&r);
    assert_eq!(r.is_error, Some(false), "{s}");
    assert_eq!(s["stdout"], "OK\n", "nothing ran: {s}");
    let r = gate.call("nyxilum_check", json!({"code": "print(\"a\""})).await;
    let s = structured(&r);
    assert_eq!(r.is_error, Some(true));
    assert!(s["stdout"].as_str().unwrap().starts_with("Parse Error:"), "{s}");
    assert!(s["error"].as_str().unwrap().contains("on stdout"), "{s}");
    gate.stop().await;
}

#[tokio::test]
async fn lint_format_and_version() {
    let gate = gate(&[]).await;
    let r = gate.call("nyxilum_lint", json!({"code": "print(\"a\""})).await;
    let s = structured(&r);
    assert_eq!((r.is_error, s["exitCode"].as_i64()), (Some(false), Some(0)), "{s}");
    let r = gate
        .call("nyxilum_format", json!({"code": "func main() {\nprint(1)\n}"}))
        .await;
    assert_eq!(structured(&r)["stdout"], "func main() {\n    print(1)\n}\n");
    let r = gate.call("nyxilum_version", json!({})).await;
    let s = structured(&r);
    assert_eq!(r.is_error, Some(false), "{s}");
    assert_eq!(s["version"], "Nx v1.8.3");
    assert!(s["path"].as_str().unwrap().ends_with("tests/standin/nx"), "{s}");
    gate.stop().await;
}

#[tokio::test]
async fn the_sandbox_flag_is_always_set() {
    let gate = gate(&[]).await;
    let (s, _, failed) = run(&gate, json!({"code": "print(osEnv(\"PATH\"))"})).await;
    assert!(failed, "{s}");
    assert!(
        s["stdout"].as_str().unwrap().contains("sandbox: osEnv is forbidden"),
        "{s}"
    );
    gate.stop().await;
}

#[tokio::test]
async fn bad_input_is_a_clear_invalid_params_error() {
    let gate = gate(&[]).await;
    for (args, field) in [
        (json!({}), "code"),
        (json!({"code": "print(1)", "timeout_ms": 50}), "timeout_ms"),
        (json!({"code": "print(1)", "timeout_ms": 60001}), "timeout_ms"),
        (json!({"code": 5}), "code"),
        (json!({"code": "print(1)", "shell": true}), "shell"),
    ] {
        let r = gate.call("nyxilum_run", args.clone()).await;
        let s = expect_error(&r, "INVALID_PARAMS");
        assert!(s["error"].as_str().unwrap().contains(field), "{args}: {s}");
    }
    let r = gate
        .call("nyxilum_repl_eval", json!({"session_id": "", "code": "1"}))
        .await;
    expect_error(&r, "INVALID_PARAMS");
    gate.stop().await;
}

#[tokio::test]
async fn a_missing_binary_lists_every_path_tried_and_the_server_still_serves() {
    let root = tempfile::tempdir().unwrap();
    let root_text = root.path().display().to_string();
    let gate = Gate::start(&[("TOOLGATE_RUNTIMES", "nyxilum"), ("NX_ECOSYSTEM_ROOT", &root_text)]).await;
    assert!(gate.names().await.contains(&"nyxilum_run".to_owned()));
    let r = gate.call("nyxilum_run", json!({"code": "print(1)"})).await;
    let s = expect_error(&r, "RUNTIME_UNAVAILABLE");
    let error = s["error"].as_str().unwrap();
    for path in [
        "src/NyxilumLang/bin/Release/net10.0/Nx",
        "src/NyxilumLang/bin/Debug/net10.0/Nx.dll",
        "src/NyxilumLang/bin/Release/net10.0/NyxilumLang",
    ] {
        assert!(error.contains(&format!("{root_text}/{path}")), "{path} in {error}");
    }
    let r = gate.call("nyxilum_repl_start", json!({})).await;
    expect_error(&r, "RUNTIME_UNAVAILABLE");
    gate.stop().await;
    let gate = Gate::start(&[("TOOLGATE_RUNTIMES", "nyxilum"), ("NX_NODE_PATH", "/nowhere/Nx.dll")]).await;
    let r = gate.call("nyxilum_version", json!({})).await;
    let s = expect_error(&r, "RUNTIME_UNAVAILABLE");
    assert!(s["error"].as_str().unwrap().contains("/nowhere/Nx.dll"), "{s}");
    gate.stop().await;
}

#[tokio::test]
async fn the_default_root_is_resolved_from_the_working_directory_and_shown_absolute() {
    // The server runs in a fresh folder under the temp folder, so the default
    // `../NyxilumLang` is `<temp>/NyxilumLang`.
    let expected = std::env::temp_dir().canonicalize().unwrap().join("NyxilumLang");
    let expected = expected.display().to_string();
    let gate = Gate::start(&[("TOOLGATE_RUNTIMES", "nyxilum"), ("TOOLGATE_DEBUG", "1")]).await;
    let r = gate.call("nyxilum_version", json!({})).await;
    let s = expect_error(&r, "RUNTIME_UNAVAILABLE");
    let error = s["error"].as_str().unwrap();
    assert!(
        error.contains(&format!("Tried: {expected}/src/NyxilumLang/bin/Release/net10.0/Nx,")),
        "{error}"
    );
    assert!(!error.contains("/../"), "{error}");
    let stderr = gate.stop().await;
    assert!(
        stderr.contains(&format!(
            "NX_ECOSYSTEM_ROOT=../NyxilumLang (resolves to {expected}; a relative root is taken from the working directory)"
        )),
        "{stderr}"
    );
}

#[tokio::test]
async fn docs_come_from_the_guide_beside_the_runtime() {
    let root = tempfile::tempdir().unwrap();
    std::fs::write(
        root.path().join("GUIDE.md"),
        "# Guide\n## Basic Syntax\n### Variables\nUse `var`.\n### Maps/Dictionaries\nnewMap()\n",
    )
    .unwrap();
    let root_text = root.path().display().to_string();
    let gate = Gate::start(&[("TOOLGATE_RUNTIMES", "nyxilum"), ("NX_ECOSYSTEM_ROOT", &root_text)]).await;
    let r = gate.call("nyxilum_docs", json!({})).await;
    let s = structured(&r);
    assert_eq!(s["sections"], json!(["Variables", "Maps/Dictionaries"]), "{s}");
    let r = gate.call("nyxilum_docs", json!({"section": "MAPS"})).await;
    assert_eq!(structured(&r)["content"], "### Maps/Dictionaries\nnewMap()\n");
    let r = gate.call("nyxilum_docs", json!({"section": "structs"})).await;
    let s = expect_error(&r, "BAD_REQUEST");
    assert!(
        s["error"].as_str().unwrap().contains("Variables, Maps/Dictionaries"),
        "{s}"
    );
    gate.stop().await;
}

#[tokio::test]
async fn no_run_folder_is_left_behind() {
    let tmp = tempfile::tempdir().unwrap();
    let tmp_text = tmp.path().display().to_string();
    let gate = gate(&[("TMPDIR", &tmp_text)]).await;
    for code in ["print(1)", "throw \"x\"", "print("] {
        run(&gate, json!({ "code": code })).await;
    }
    run(&gate, json!({"code": "while true { }", "timeout_ms": 300})).await;
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 0);
    gate.stop().await;
}

#[tokio::test]
async fn dev_tools_run_fixed_commands_on_the_checkout_unsandboxed() {
    use std::os::unix::fs::PermissionsExt;
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir(root.path().join("tests")).unwrap();
    std::fs::write(
        root.path().join("tests/run_all.sh"),
        "echo \"tests in $(pwd)\"\necho \"home=$HOME\"\nexit 3\n",
    )
    .unwrap();
    // A stand-in dotnet on PATH that prints the arguments it was given.
    let bin = tempfile::tempdir().unwrap();
    let dotnet = bin.path().join("dotnet");
    std::fs::write(&dotnet, "#!/bin/sh\necho \"dotnet $*\"\n").unwrap();
    std::fs::set_permissions(&dotnet, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!("{}:{}", bin.path().display(), std::env::var("PATH").unwrap_or_default());
    let root_text = root.path().display().to_string();
    let gate = Gate::start(&[
        ("TOOLGATE_RUNTIMES", "nyxilum"),
        ("NX_ECOSYSTEM_ROOT", &root_text),
        ("PATH", &path),
    ])
    .await;
    let r = gate
        .call("nyxilum_dev_build", json!({"configuration": "Release"}))
        .await;
    let s = structured(&r);
    assert_eq!(r.is_error, Some(false), "{s}");
    assert_eq!(s["stdout"], "dotnet build src/NyxilumLang -c Release\n");
    let r = gate.call("nyxilum_dev_test", json!({})).await;
    let s = structured(&r);
    assert_eq!(r.is_error, Some(true), "exit 3 is a failed test run: {s}");
    let real_root = root.path().canonicalize().unwrap();
    let stdout = s["stdout"].as_str().unwrap();
    assert!(
        stdout.starts_with(&format!("tests in {}\n", real_root.display())),
        "{s}"
    );
    assert!(!stdout.contains("toolgate-run-"), "not in a sandbox folder: {s}");
    assert!(
        s["error"]
            .as_str()
            .unwrap()
            .contains("tests/run_all.sh exited with code 3"),
        "{s}"
    );
    let r = gate
        .call("nyxilum_dev_build", json!({"configuration": "Release; rm -rf /"}))
        .await;
    expect_error(&r, "INVALID_PARAMS");
    let r = gate.call("nyxilum_dev_test", json!({"args": ["x"]})).await;
    expect_error(&r, "INVALID_PARAMS");
    gate.stop().await;
}

#[tokio::test]
async fn a_client_leaving_mid_run_leaves_no_process_or_folder() {
    let tmp = tempfile::tempdir().unwrap();
    let tmp_text = tmp.path().display().to_string();
    let gate = gate(&[("TMPDIR", &tmp_text)]).await;
    let peer = gate.client.peer().clone();
    let call = tokio::spawn(async move {
        let args = json!({"code": "while true { }", "timeout_ms": 60000});
        let Value::Object(args) = args else { unreachable!() };
        peer.call_tool(rmcp::model::CallToolRequestParams::new("nyxilum_run").with_arguments(args))
            .await
    });
    // Wait (bounded) for the run's folder to appear: the child is running.
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::fs::read_dir(tmp.path()).unwrap().count() == 0 {
        assert!(Instant::now() < deadline, "the run never started");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let started = Instant::now();
    gate.stop().await;
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "exit waited for the 60 s run"
    );
    assert_eq!(
        std::fs::read_dir(tmp.path()).unwrap().count(),
        0,
        "the run's folder outlived the server"
    );
    call.abort();
}

#[tokio::test]
async fn nyxilum_catalogue_tools_from_an_api_follow_the_execution_mode() {
    // The served catalogue has no NyxilumNode, so only a local run can succeed.
    let catalogue = Path::new(env!("CARGO_MANIFEST_DIR")).join("catalogue");
    let api = crate::util::CatalogueServer::start(&catalogue).await;
    let nx = standin().display().to_string();
    let args = json!({"n": 3});
    for (mode, with_nx, expect_local) in [("auto", true, true), ("local", true, true), ("auto", false, false)] {
        let mut env = vec![("TOOLGATE_API_URL", api.host.as_str()), ("TOOLGATE_EXECUTION", mode)];
        if with_nx {
            env.push(("NX_NODE_PATH", nx.as_str()));
        } else {
            env.push(("NX_ECOSYSTEM_ROOT", "/nonexistent"));
        }
        let gate = Gate::start(&env).await;
        let r = gate.call("nyxilum-fizzbuzz", args.clone()).await;
        let s = structured(&r);
        if expect_local {
            assert_eq!(r.is_error, Some(false), "{mode}: {s}");
            assert_eq!(s["result"]["lines"], json!(["1", "2", "Fizz"]), "{mode}: {s}");
        } else {
            assert_eq!(
                r.is_error,
                Some(true),
                "{mode} without NyxilumNode goes to the API: {s}"
            );
            let error = s["error"].as_str().unwrap();
            assert!(error.contains("nyxilum runtime is not available"), "{s}");
            assert!(
                !error.contains("/nonexistent/"),
                "the API's answer, not a local try: {s}"
            );
        }
        gate.stop().await;
    }
    let gate = Gate::start(&[
        ("TOOLGATE_API_URL", api.host.as_str()),
        ("TOOLGATE_EXECUTION", "local"),
        ("NX_ECOSYSTEM_ROOT", "/nonexistent"),
    ])
    .await;
    let r = gate.call("nyxilum-fizzbuzz", args).await;
    let s = expect_error(&r, "RUNTIME_UNAVAILABLE");
    assert!(
        s["error"].as_str().unwrap().contains("/nonexistent/src/"),
        "tried here: {s}"
    );
    gate.stop().await;
}

#[tokio::test]
async fn every_answer_honours_the_advertised_output_schema() {
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("GUIDE.md"), "### Variables\nvar x = 1\n").unwrap();
    let root_text = root.path().display().to_string();
    let gate = gate(&[("NX_ECOSYSTEM_ROOT", &root_text)]).await;
    let tools = gate.client.list_all_tools().await.unwrap();
    let validate = |name: &str, s: &Value| {
        let tool = tools.iter().find(|t| t.name == name).unwrap();
        let schema = Value::Object((*tool.output_schema.clone().expect("outputSchema")).clone());
        let validator = jsonschema::validator_for(&schema).unwrap();
        let errors: Vec<String> = validator.iter_errors(s).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{name}: {errors:?}\n{s}");
    };
    let mut calls = vec![
        ("nyxilum_run", json!({"code": "print(1)"})),
        ("nyxilum_run", json!({"code": "throw \"x\""})),
        ("nyxilum_run", json!({"code": "while true { }", "timeout_ms": 200})),
        ("nyxilum_check", json!({"code": "print("})),
        ("nyxilum_lint", json!({"code": "print(1)"})),
        ("nyxilum_format", json!({"code": "print(1)"})),
        ("nyxilum_version", json!({})),
        ("nyxilum_docs", json!({})),
        ("nyxilum_docs", json!({"section": "var"})),
    ];
    for (name, args) in calls.drain(..) {
        let r = gate.call(name, args).await;
        validate(name, structured(&r));
    }
    let r = gate.call("nyxilum_repl_start", json!({})).await;
    validate("nyxilum_repl_start", structured(&r));
    let id = structured(&r)["sessionId"].as_str().unwrap().to_owned();
    for code in ["print(1)", "while true { }"] {
        let args = json!({"session_id": id, "code": code, "timeout_ms": 300});
        let r = gate.call("nyxilum_repl_eval", args).await;
        validate("nyxilum_repl_eval", structured(&r));
    }
    let r = gate.call("nyxilum_repl_stop", json!({"session_id": id})).await;
    validate("nyxilum_repl_stop", structured(&r));
    gate.stop().await;
}

#[tokio::test]
async fn runs_beyond_the_cap_wait_their_turn_within_their_own_deadline() {
    // One place: the first run holds it for its whole 3 s; the second waits, and its own
    // 500 ms pass while it waits. Unlimited, the second would print and succeed.
    let gate = gate(&[("TOOLGATE_NYX_CONCURRENT_RUNS", "1")]).await;
    let batch = gate
        .meta(json!({"command": "batch", "runs": [
            {"slug": "nyxilum_run", "params": {"code": "while true { }", "timeout_ms": 3000}},
            {"slug": "nyxilum_run", "params": {"code": "print(\"second\")", "timeout_ms": 500}}
        ]}))
        .await;
    let b = structured(&batch);
    assert_eq!(b["results"][0]["code"], "TIMEOUT", "{b}");
    assert_eq!(b["results"][0]["timedOut"], true, "the first ran to its deadline: {b}");
    assert_eq!(b["results"][1]["code"], "TIMEOUT", "{b}");
    let waited = b["results"][1]["error"].as_str().unwrap();
    assert!(waited.contains("waiting for a place: at most 1"), "{waited}");
    // With the place free again, a run goes through.
    let (s, _, failed) = run(&gate, json!({"code": "print(\"third\")"})).await;
    assert!(!failed, "{s}");
    assert_eq!(s["stdout"], "third\n");
    gate.stop().await;
}
