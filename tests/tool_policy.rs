//! Per-tool policy: a key made with `keys new --tools` (or a token whose scopes
//! `TOOLGATE_OAUTH_TOOL_SCOPES` maps) sees and runs only the tools its patterns admit,
//! on every path — `tools/list`, the meta-tool's `list`, `search`, `schema`, `run` and
//! `batch`, a direct call, code mode, the tool and type resources (read or subscribed
//! to), prompts' completions and the catalogue API — and a hidden tool is `TOOL_NOT_FOUND`, never named in an
//! answer (close matches, candidates, held tools). Catalogue tools and an upstream's
//! alike; a key without `tools` sees everything, which is what makes each check mean
//! something.

use serde_json::{Value, json};

use crate::access::new_key;
use crate::http::{HttpGate, Session};
use crate::upstream::{py_server, servers_file};
use crate::util::{CatalogueServer, command};

/// What the limited key may use: the upstream `py`'s tools but `crash`, the hex codec,
/// `run_javascript`, and a pattern matching nothing (said once on stderr).
const PATTERNS: &str = "py__*,!py__crash,hex-*,run_javascript,nothing_here_*";

/// Hidden from the limited key: a catalogue tool, an upstream tool, a built-in.
const HIDDEN: [&str; 3] = ["base64-codec", "py__crash", "run_typescript"];

/// `keys new --tools` in the keys file `file`; the key.
async fn limited_key(file: &std::path::Path, id: &str, tools: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let out = command(dir.path(), &[])
        .args([
            "keys",
            "new",
            "--scopes",
            "search,run,runtimes",
            "--id",
            id,
            "--tools",
            tools,
            "--file",
        ])
        .arg(file)
        .output()
        .await
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

fn slugs(list: &Value) -> Vec<String> {
    list["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("{list}"))
        .iter()
        .map(|t| t["slug"].as_str().unwrap().to_owned())
        .collect()
}

/// The JSON-RPC error or the tool error of a direct call, as text.
async fn direct(session: &mut Session, name: &str, arguments: Value) -> Value {
    session
        .request("tools/call", json!({"name": name, "arguments": arguments}))
        .await
}

#[tokio::test]
async fn a_key_limited_to_some_tools_sees_and_runs_only_those_on_every_path() {
    let dir = tempfile::tempdir().unwrap();
    let keys = dir.path().join("keys.json");
    let limited = limited_key(&keys, "limited", PATTERNS).await;
    let full = new_key(&keys, "search,run,runtimes", "full").await;
    let servers = servers_file(dir.path(), json!({"py": py_server(dir.path())}));
    let gate = HttpGate::start(&[
        ("TOOLGATE_RUNTIMES", "js"),
        ("TOOLGATE_ADVERTISE", "all"),
        ("TOOLGATE_UPSTREAMS", &servers),
        ("TOOLGATE_KEYS_FILE", keys.to_str().unwrap()),
    ])
    .await;
    let mut all = Session::open_keyed(&gate.url, &full).await;
    let mut some = Session::open_keyed(&gate.url, &limited).await;

    // The meta-tool's list: everything for the full key, the admitted tools only for the
    // limited one (the upstream's tools are listed once it has started).
    let everything = all.call("toolgate", json!({"command": "list", "limit": 100})).await;
    for hidden in HIDDEN {
        assert!(slugs(&everything).iter().any(|s| s == hidden), "{hidden}: {everything}");
    }
    let listed = some.call("toolgate", json!({"command": "list", "limit": 100})).await;
    let seen = slugs(&listed);
    assert!(
        seen.contains(&"hex-codec".to_owned()) && seen.contains(&"py__echo".to_owned()),
        "{listed}"
    );
    assert!(seen.contains(&"run_javascript".to_owned()), "{listed}");
    assert!(
        seen.iter()
            .all(|s| s == "hex-codec" || s == "run_javascript" || (s.starts_with("py__") && s != "py__crash")),
        "{listed}"
    );
    assert_eq!(listed["total"], seen.len(), "{listed}");

    // tools/list: the meta-tool and the admitted tools.
    let list = some.request("tools/list", json!({})).await;
    let names: Vec<&str> = list["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"hex-codec") && names.contains(&"py__echo"), "{names:?}");
    for hidden in HIDDEN {
        assert!(!names.contains(&hidden), "{hidden} listed: {names:?}");
    }

    // Search by the hidden tool's own words finds only what the key may use.
    let found = some
        .call(
            "toolgate",
            json!({"command": "search", "query": "base64 encode decode"}),
        )
        .await;
    assert!(!found.to_string().contains("base64-codec"), "{found}");
    let found = all
        .call(
            "toolgate",
            json!({"command": "search", "query": "base64 encode decode"}),
        )
        .await;
    assert!(found.to_string().contains("base64-codec"), "{found}");

    // schema, run (exact and abbreviated), batch, a direct call: not found, and the
    // answer names no hidden tool.
    for (slug, shown) in [("base64-codec", "base64"), ("base64", "base64"), ("py__crash", "crash")] {
        for args in [
            json!({"command": "schema", "slug": slug}),
            json!({"command": "run", "slug": slug, "params": {}}),
        ] {
            let refused = some.call("toolgate", args.clone()).await;
            assert_eq!(refused["code"], "TOOL_NOT_FOUND", "{args}: {refused}");
            // The name asked for is echoed; no other hidden name is offered.
            let offered = refused["candidates"].to_string();
            assert!(!offered.contains(shown), "{refused}");
            if slug != "base64-codec" {
                assert!(!refused.to_string().contains("base64-codec"), "{refused}");
            }
        }
    }
    let batch = some
        .call(
            "toolgate",
            json!({"command": "batch", "runs": [{"slug": "hex-codec", "params": {"input": "hi", "mode": "encode"}}, {"slug": "base64-codec", "params": {}}]}),
        )
        .await;
    assert_eq!(batch["code"], "BATCH_INVALID", "{batch}");
    assert_eq!(batch["items"][0]["code"], "TOOL_NOT_FOUND", "{batch}");
    assert_eq!(batch["items"][0]["index"], 1, "{batch}");
    for hidden in HIDDEN {
        let answer = direct(&mut some, hidden, json!({})).await;
        assert_eq!(answer["error"]["data"]["code"], "TOOL_NOT_FOUND", "{hidden}: {answer}");
        assert!(
            !answer["error"]["data"]["candidates"].to_string().contains(hidden),
            "{answer}"
        );
    }
    let echoed = direct(&mut some, "py__echo", json!({"text": "allowed"})).await;
    assert!(echoed.to_string().contains("allowed"), "{echoed}");
    let crashed = direct(&mut all, "py__echo", json!({"text": "full"})).await;
    assert!(crashed.to_string().contains("full"), "{crashed}");

    // Code mode: the snippet's calls and searches are the key's.
    let code = r#"
        const found = await tools.search("base64 encode decode", {limit: 20});
        let refused = null;
        try { await tools.base64_codec({text: "x", mode: "encode"}); } catch (e) { refused = e.code; }
        const echoed = await tools.py__echo({text: "from code"});
        return {found: found.map((f) => f.slug), refused, echoed};
    "#;
    let ran = some.call("run_javascript", json!({"code": code})).await;
    let result = &ran["result"];
    assert_eq!(result["refused"], "TOOL_NOT_FOUND", "{ran}");
    assert!(!result["found"].to_string().contains("base64"), "{ran}");
    assert!(result["echoed"].to_string().contains("from code"), "{ran}");

    // Resources: a hidden tool's manifest is not found; the type declarations and the
    // catalogue overview leave it out.
    let manifest = some
        .request("resources/read", json!({"uri": "toolgate://tools/base64-codec"}))
        .await;
    assert!(manifest["error"].is_object(), "{manifest}");
    // Nor can the session subscribe to it (its changes would say it exists).
    let subscribed = some
        .request("resources/subscribe", json!({"uri": "toolgate://tools/base64-codec"}))
        .await;
    assert!(subscribed["error"].is_object(), "{subscribed}");
    let subscribed = all
        .request("resources/subscribe", json!({"uri": "toolgate://tools/base64-codec"}))
        .await;
    assert!(subscribed["result"].is_object(), "{subscribed}");
    let types = some
        .request("resources/read", json!({"uri": "toolgate://types/tools.d.ts"}))
        .await;
    let text = types["result"]["contents"][0]["text"].as_str().unwrap();
    assert!(text.contains("hex_codec") && !text.contains("base64_codec"), "{text}");
    let overview = some
        .request("resources/read", json!({"uri": "toolgate://catalogue"}))
        .await;
    assert!(!overview.to_string().contains("base64-codec"), "{overview}");
    assert!(overview.to_string().contains("hex-codec"), "{overview}");
    let completed = some
        .request(
            "completion/complete",
            json!({"ref": {"type": "ref/prompt", "name": "use-tool"}, "argument": {"name": "slug", "value": "b"}}),
        )
        .await;
    assert_eq!(completed["result"]["completion"]["values"], json!([]), "{completed}");

    // The pattern that matches nothing is said once, with the policy it belongs to.
    let said = gate.stderr();
    assert_eq!(said.matches("\"nothing_here_*\"").count(), 1, "{said}");
}

#[tokio::test]
async fn the_catalogue_api_holds_a_key_to_its_tools_and_bad_patterns_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let keys = dir.path().join("keys.json");
    let limited = limited_key(&keys, "limited", "hex-*,json*,!json-formatter").await;
    // A bad pattern is refused when the key is made, naming the problem.
    let out = command(dir.path(), &[])
        .args(["keys", "new", "--scopes", "run", "--tools", "a,!", "--file"])
        .arg(&keys)
        .output()
        .await
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--tools"), "{out:?}");
    let server = CatalogueServer::launch(&[], &[("TOOLGATE_KEYS_FILE", keys.to_str().unwrap())]).await;
    let http = reqwest::Client::new();
    let get = |path: &str| {
        http.get(format!("{}/api{path}", server.host))
            .bearer_auth(&limited)
            .send()
    };
    let listed: Value = get("/tools").await.unwrap().json().await.unwrap();
    let slugs: Vec<&str> = listed["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("{listed}"))
        .iter()
        .map(|t| t["slug"].as_str().unwrap())
        .collect();
    assert!(
        slugs.contains(&"hex-codec") && slugs.contains(&"jsonpath-query"),
        "{slugs:?}"
    );
    assert!(
        !slugs.contains(&"json-formatter") && !slugs.contains(&"base64-codec"),
        "{slugs:?}"
    );
    for path in ["/tools/base64-codec", "/tools/json-formatter/source"] {
        let answer = get(path).await.unwrap();
        assert_eq!(answer.status(), 404, "{path}");
        let body = answer.text().await.unwrap();
        assert!(
            body.contains("TOOL_NOT_FOUND") && !body.contains("json-formatter\""),
            "{body}"
        );
    }
    let ran = http
        .post(format!("{}/api/tools/base64-codec/run", server.host))
        .bearer_auth(&limited)
        .json(&json!({"params": {"input": "x", "mode": "encode"}}))
        .send()
        .await
        .unwrap();
    assert_eq!(ran.status(), 404);
    let ran = http
        .post(format!("{}/api/tools/hex-codec/run", server.host))
        .bearer_auth(&limited)
        .json(&json!({"params": {"input": "hi", "mode": "encode"}}))
        .send()
        .await
        .unwrap();
    assert_eq!(ran.status(), 200, "{:?}", ran.text().await);
}
