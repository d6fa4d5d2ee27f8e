//! Every embedded tool, through the real server: its ready-to-send call and every
//! example of its manifest run, and each answer validates against the `outputSchema`
//! the server advertised for it.

use serde_json::{Value, json};

use crate::util::{Gate, expect_error, expect_ok, structured};

#[tokio::test]
async fn every_embedded_tool_runs_its_examples_and_honours_its_output_schema() {
    let gate = Gate::start(&[("TOOLGATE_ADVERTISE", "all")]).await;
    let tools = gate.client.list_all_tools().await.unwrap();
    let catalogue: Vec<Value> = structured(&gate.meta(json!({"command": "list"})).await)["tools"]
        .as_array()
        .unwrap()
        .clone();
    assert!(catalogue.len() >= 34, "{} tools", catalogue.len());
    let mut runs = 0;
    for entry in &catalogue {
        let slug = entry["slug"].as_str().unwrap();
        if runtime_of(slug) == "nyxilum" {
            // No NyxilumNode here: covered by the two tests below.
            continue;
        }
        let tool = tools
            .iter()
            .find(|t| t.name == slug)
            .unwrap_or_else(|| panic!("{slug} is advertised"));
        let output = Value::Object((*tool.output_schema.clone().expect("outputSchema")).clone());
        let validator =
            jsonschema::validator_for(&output).unwrap_or_else(|e| panic!("{slug}: outputSchema compiles: {e}"));
        let schema = structured(&gate.meta(json!({"command": "schema", "slug": slug})).await).clone();
        let mut calls = vec![schema["example"]["arguments"].clone()];
        calls.extend(examples_of(slug));
        for args in calls {
            let r = gate.call(slug, args.clone()).await;
            expect_ok(&r);
            let s = structured(&r);
            let errors: Vec<String> = validator
                .iter_errors(s)
                .map(|e| format!("{} at {}", e, e.instance_path()))
                .collect();
            assert!(
                errors.is_empty(),
                "{slug} {args}: output breaks its schema: {errors:?}\n{s}"
            );
            runs += 1;
        }
    }
    assert!(runs >= 62, "{runs} runs");
    gate.stop().await;
}

/// The embedded tools whose runtime is NyxilumNode.
fn nyxilum_tools() -> Vec<String> {
    let folder = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("catalogue");
    let mut slugs: Vec<String> = std::fs::read_dir(folder)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|slug| runtime_of(slug) == "nyxilum")
        .collect();
    slugs.sort();
    slugs
}

#[tokio::test]
async fn nyxilum_tools_without_nyxilum_node_are_runtime_unavailable() {
    let slugs = nyxilum_tools();
    assert_eq!(slugs, ["nyxilum-caesar", "nyxilum-fizzbuzz", "nyxilum-word-stats"]);
    let gate = Gate::start(&[("NX_ECOSYSTEM_ROOT", "/nonexistent/NyxilumLang")]).await;
    for slug in &slugs {
        let r = gate.call(slug, examples_of(slug)[0].clone()).await;
        let s = expect_error(&r, "RUNTIME_UNAVAILABLE");
        assert!(
            s["error"].as_str().unwrap().contains("/nonexistent/NyxilumLang/src/"),
            "{slug}: {s}"
        );
    }
    gate.stop().await;
}

#[tokio::test]
async fn nyxilum_tools_run_their_examples_through_the_process_backend() {
    let nx = crate::nyxilum::standin().display().to_string();
    let gate = Gate::start(&[("NX_NODE_PATH", &nx)]).await;
    let tools = gate.client.list_all_tools().await.unwrap();
    for slug in nyxilum_tools() {
        let tool = tools.iter().find(|t| t.name == slug.as_str()).unwrap();
        let output = Value::Object((*tool.output_schema.clone().expect("outputSchema")).clone());
        let validator = jsonschema::validator_for(&output).unwrap();
        for args in examples_of(&slug) {
            let r = gate.call(&slug, args.clone()).await;
            expect_ok(&r);
            let s = structured(&r);
            let errors: Vec<String> = validator.iter_errors(s).map(|e| e.to_string()).collect();
            assert!(errors.is_empty(), "{slug} {args}: {errors:?}\n{s}");
        }
    }
    let r = gate.call("nyxilum-fizzbuzz", json!({"n": 15})).await;
    let lines = &expect_ok(&r)["lines"];
    assert_eq!(
        (lines[2].as_str(), lines[14].as_str()),
        (Some("Fizz"), Some("FizzBuzz"))
    );
    let r = gate
        .call(
            "nyxilum-caesar",
            json!({"text": "Uryyb, Jbeyq!", "shift": 13, "mode": "decode"}),
        )
        .await;
    assert_eq!(expect_ok(&r)["output"], "Hello, World!");
    let r = gate.call("nyxilum-word-stats", json!({"text": "a bb\nccc"})).await;
    assert_eq!(
        expect_ok(&r),
        &json!({"characters": 8, "words": 3, "lines": 2, "longest_word": "ccc"})
    );
    gate.stop().await;
}

/// The `runtime` of an embedded tool's manifest.
fn runtime_of(slug: &str) -> String {
    manifest_of(slug)["runtime"].as_str().unwrap_or_default().to_owned()
}

fn manifest_of(slug: &str) -> Value {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("catalogue")
        .join(slug)
        .join("tool.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The examples of an embedded tool, read from its manifest in `catalogue/`.
fn examples_of(slug: &str) -> Vec<Value> {
    let manifest = manifest_of(slug);
    manifest["examples"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["params"].clone())
        .collect()
}
