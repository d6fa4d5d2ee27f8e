//! Every embedded tool, through the real server: its ready-to-send call and every
//! example of its manifest run, and each answer validates against the `outputSchema`
//! the server advertised for it.

use serde_json::{Value, json};

use crate::util::{Gate, expect_ok, structured};

#[tokio::test]
async fn every_embedded_tool_runs_its_examples_and_honours_its_output_schema() {
    let gate = Gate::start(&[]).await;
    let tools = gate.client.list_all_tools().await.unwrap();
    let catalogue: Vec<Value> = structured(&gate.meta(json!({"command": "list"})).await)["tools"]
        .as_array()
        .unwrap()
        .clone();
    assert!(catalogue.len() >= 31, "{} tools", catalogue.len());
    let mut runs = 0;
    for entry in &catalogue {
        let slug = entry["slug"].as_str().unwrap();
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

/// The examples of an embedded tool, read from its manifest in `catalogue/`.
fn examples_of(slug: &str) -> Vec<Value> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("catalogue")
        .join(slug)
        .join("tool.json");
    let manifest: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    manifest["examples"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["params"].clone())
        .collect()
}
