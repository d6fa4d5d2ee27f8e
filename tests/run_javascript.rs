//! The `run_javascript` runtime tool through the real server (TOOLGATE_RUNTIMES=js).

use serde_json::{Value, json};

use crate::util::{Gate, structured, text};

async fn gate(extra: &[(&str, &str)]) -> Gate {
    let mut env = vec![("TOOLGATE_RUNTIMES", "js")];
    env.extend_from_slice(extra);
    Gate::start(&env).await
}

async fn js(gate: &Gate, code: &str) -> (Value, String, bool) {
    let r = gate.call("run_javascript", json!({ "code": code })).await;
    (structured(&r).clone(), text(&r), r.is_error == Some(true))
}

#[tokio::test]
async fn listed_only_when_asked_for() {
    let plain = Gate::start(&[]).await;
    assert!(!plain.names().await.contains(&"run_javascript".to_owned()));
    plain.stop().await;
    let with = gate(&[]).await;
    let names = with.names().await;
    assert_eq!(&names[..2], &["toolgate", "run_javascript"]);
    let tools = with.client.list_all_tools().await.unwrap();
    let ts = tools.iter().find(|t| t.name == "run_typescript").unwrap();
    let code = &ts.input_schema["properties"]["code"]["description"];
    assert!(code.as_str().unwrap().starts_with("TypeScript run as"), "{code}");
    let hints = ts.annotations.as_ref().unwrap();
    assert_eq!(
        (hints.read_only_hint, hints.open_world_hint),
        (Some(false), Some(true)),
        "fetch reaches the network and may send"
    );
    with.stop().await;
}

#[tokio::test]
async fn hello_world_top_level_await_and_return() {
    let gate = gate(&[]).await;
    let (s, t, failed) = js(
        &gate,
        "console.log('hello', {a: 'b'});\nconst x = await Promise.resolve(41);\nreturn x + 1;",
    )
    .await;
    assert!(!failed, "{t}");
    assert!(
        t.lines().next().unwrap().starts_with("Code execution finished in ")
            && t.lines().next().unwrap().ends_with(" seconds.")
    );
    assert_eq!(s["stdout"], "hello { a: 'b' }\n");
    assert_eq!(s["result"], 42);
    assert_eq!(
        (
            s["success"].as_bool(),
            s["timed_out"].as_bool(),
            s["truncated"].as_bool()
        ),
        (Some(true), Some(false), Some(false))
    );
    assert!(
        t.contains("stdout:\nhello { a: 'b' }") && t.contains("result:\n42"),
        "{t}"
    );
    let (s, _, _) = js(&gate, "return 10n").await;
    assert_eq!(
        s["result"], "10n",
        "what does not serialise comes back as console.log would print it"
    );
    gate.stop().await;
}

#[tokio::test]
async fn a_throw_reports_its_line_and_output_so_far() {
    let gate = gate(&[]).await;
    let (s, t, failed) = js(
        &gate,
        "console.log('before');\nconst a = 1;\nthrow new Error('bad thing');",
    )
    .await;
    assert!(failed);
    assert_eq!(s["stdout"], "before\n", "output before the throw is kept");
    let error = s["error"].as_str().unwrap();
    assert!(
        error.contains("bad thing") && error.contains("snippet.js:3:"),
        "{error}"
    );
    assert!(t.contains("error:\n"), "{t}");
    gate.stop().await;
}

#[tokio::test]
async fn limits_hold_from_the_host() {
    let gate = gate(&[("TOOLGATE_JS_TIMEOUT_MS", "300"), ("TOOLGATE_JS_HEAP_MB", "32")]).await;
    let (s, _, failed) = js(&gate, "while (true) {}").await;
    assert!(failed);
    assert_eq!(s["timed_out"], true);
    assert_eq!(s["error"], "Script execution timed out after 0.3 seconds.");
    gate.stop().await;

    // The other limits get the default deadline, so a loaded machine cannot turn them
    // into timeouts.
    let gate = self::gate(&[("TOOLGATE_JS_HEAP_MB", "32")]).await;
    let (s, _, failed) = js(
        &gate,
        "const a = []; try { for (;;) a.push(new Array(1e5).fill(1)); } catch (e) {} return 'survived';",
    )
    .await;
    assert!(failed, "a caught out-of-memory is still a failure: {s}");
    assert!(s["error"].as_str().unwrap().contains("heap"));
    let (s, t, failed) = js(
        &gate,
        "for (let i = 0; i < 40000; i++) console.log('line ' + i + ' of a long print loop');",
    )
    .await;
    assert!(!failed, "{s}");
    assert_eq!(s["truncated"], true);
    assert_eq!(s["stdout"].as_str().unwrap().chars().count(), 262_144);
    assert!(t.contains("note:\nOutput was truncated"), "{}", &t[t.len() - 200..]);
    gate.stop().await;
}

#[tokio::test]
async fn no_host_access_and_module_syntax_is_explained() {
    let gate = gate(&[]).await;
    let (s, _, _) = js(
        &gate,
        "return [typeof require, typeof process, typeof setTimeout, typeof fetch, typeof mcp].join(',')",
    )
    .await;
    assert_eq!(s["result"], "undefined,undefined,function,function,object");
    let (s, _, failed) = js(&gate, "import fs from 'fs';\nreturn 1;").await;
    assert!(failed);
    assert!(
        s["error"]
            .as_str()
            .unwrap()
            .contains("import/export module syntax is not supported (line 1)")
    );
    gate.stop().await;
}

#[tokio::test]
async fn typescript_keeps_the_lines_the_author_wrote() {
    let gate = gate(&[]).await;
    let ts = "interface Point {\n  x: number;\n  y: number;\n}\nconst p: Point = { x: 1, y: 2 };\nconsole.log(p.x as number);\nthrow new Error(`bad point ${p.y}`);";
    let r = gate.call("run_typescript", json!({ "code": ts })).await;
    let s = structured(&r);
    assert_eq!(r.is_error, Some(true));
    assert_eq!(s["stdout"], "1\n");
    let error = s["error"].as_str().unwrap();
    assert!(
        error.contains("bad point 2") && error.contains("snippet.ts:7:"),
        "the throw is on line 7: {error}"
    );

    let r = gate
        .call(
            "run_typescript",
            json!({ "code": "enum Color { Red, Green }\nreturn Color.Green;" }),
        )
        .await;
    assert_eq!(structured(&r)["result"], 1, "{r:?}");

    let r = gate
        .call(
            "run_typescript",
            json!({ "code": "const a = 1;\nconst b: = 2;\nreturn a;" }),
        )
        .await;
    let error = structured(&r)["error"].as_str().unwrap().to_owned();
    assert!(error.starts_with("TypeScript:") && error.contains("line 2"), "{error}");
    gate.stop().await;
}

#[tokio::test]
async fn catalogue_tools_may_be_written_in_typescript() {
    let dir = crate::util::fixtures().display().to_string();
    let gate = Gate::start(&[("TOOLGATE_CATALOGUE", dir.as_str())]).await;
    let r = gate.call("typed-sum", json!({"numbers": [1, 2, 3.5]})).await;
    assert_eq!(crate::util::expect_ok(&r)["sum"], 6.5);
    gate.stop().await;
}

#[tokio::test]
async fn runaway_recursion_is_an_error_not_a_crash() {
    // Engines are built on one thread and run on another: the stack check must follow.
    let gate = gate(&[]).await;
    for _ in 0..3 {
        let (s, t, failed) = js(&gate, "function down(n) { return down(n + 1) + 1; }\nreturn down(0);").await;
        assert!(failed, "{t}");
        let error = s["error"].as_str().unwrap();
        assert!(
            error.contains("RangeError: Maximum call stack size exceeded"),
            "{error}"
        );
    }
    let (s, _, failed) = js(&gate, "return 'still serving';").await;
    assert!(!failed);
    assert_eq!(s["result"], "still serving");
    gate.stop().await;
}
