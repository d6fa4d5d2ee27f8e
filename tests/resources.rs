//! MCP resources through the real server: the guide, the catalogue overview, a tool's
//! manifest by exact slug or abbreviation, the history, and unknown URIs.

use rmcp::model::{ReadResourceRequestParams, ResourceContents};
use serde_json::{Value, json};

use crate::util::{Gate, expect_ok, fixtures, structured};

pub async fn read(gate: &Gate, uri: &str) -> Result<String, String> {
    match gate.client.read_resource(ReadResourceRequestParams::new(uri)).await {
        Ok(r) => match r.contents.into_iter().next() {
            Some(ResourceContents::TextResourceContents { text, .. }) => Ok(text),
            other => panic!("expected text contents, got {other:?}"),
        },
        Err(rmcp::ServiceError::McpError(e)) => Err(e.message.to_string()),
        Err(other) => panic!("{other:?}"),
    }
}

pub async fn read_json(gate: &Gate, uri: &str) -> Value {
    serde_json::from_str(&read(gate, uri).await.unwrap()).unwrap()
}

#[tokio::test]
async fn every_resource_is_listed_and_readable() {
    let gate = Gate::start(&[("TOOLGATE_NAME", "tg")]).await;
    let uris: Vec<String> = gate
        .client
        .list_all_resources()
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.uri)
        .collect();
    assert_eq!(
        uris,
        vec!["tg://guide", "tg://catalogue", "tg://types/tools.d.ts", "tg://history"]
    );
    let templates = gate.client.list_all_resource_templates().await.unwrap();
    assert_eq!(templates[0].uri_template, "tg://tools/{slug}");

    let guide = read(&gate, "tg://guide").await.unwrap();
    assert!(
        guide.contains("INVALID_PARAMS") && guide.contains("tg://catalogue"),
        "the guide names this server's scheme"
    );

    let catalogue = read_json(&gate, "tg://catalogue").await;
    let env = catalogue["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["slug"] == "env-validator")
        .unwrap()
        .clone();
    assert_eq!(env["manifest"], "tg://tools/env-validator");
    assert!(env["parameters"].as_u64().unwrap() >= 1 && env["required_parameters"] == 1);
    assert_eq!(env["has_schema"], true);
    assert!(env.get("input_schema").is_none(), "no full schemas in the overview");

    let manifest = read_json(&gate, "tg://tools/env-validator").await;
    assert_eq!(manifest["input_schema"]["required"], json!(["env_content"]));
    let call = &manifest["example"];
    assert_eq!(call["name"], "env-validator");
    expect_ok(&gate.call("env-validator", call["arguments"].clone()).await);
    let abbreviated = read_json(&gate, "tg://tools/env-v").await;
    assert_eq!(abbreviated["slug"], "env-validator");

    expect_ok(&gate.call("slugify", json!({"text": "a b"})).await);
    let history = read_json(&gate, "tg://history").await;
    assert_eq!(history["runs"][0]["slug"], "slugify");
    assert!(history["scope"].as_str().unwrap().contains("this MCP session"));
    gate.stop().await;
}

#[tokio::test]
async fn unknown_uris_are_protocol_errors_naming_close_matches() {
    let gate = Gate::start(&[]).await;
    let err = read(&gate, "toolgate://tools/env-validatr").await.unwrap_err();
    assert!(err.contains("env-validator"), "{err}");
    let err = read(&gate, "toolgate://tools/j").await.unwrap_err();
    assert!(err.contains("ambiguous"), "{err}");
    let err = read(&gate, "other://guide").await.unwrap_err();
    assert!(err.contains("toolgate://guide"), "{err}");
    gate.stop().await;
}

#[tokio::test]
async fn a_withheld_tool_is_reachable_as_a_resource() {
    let dir = fixtures().display().to_string();
    let gate = Gate::start(&[("TOOLGATE_CATALOGUE", dir.as_str())]).await;
    let catalogue = read_json(&gate, "toolgate://catalogue").await;
    let bad = catalogue["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["slug"] == "bad slug/with space")
        .unwrap()
        .clone();
    assert_eq!(bad["advertised"], false);
    let manifest = read_json(&gate, bad["manifest"].as_str().unwrap()).await;
    assert_eq!(
        manifest["example"]["name"], "toolgate",
        "its call goes through the meta-tool"
    );
    gate.stop().await;
}

#[tokio::test]
async fn a_ready_call_is_direct_only_for_a_tool_tools_list_lists() {
    // Only the meta-tool is listed: a host that calls listed tools only could not send a
    // direct call, so every ready call, everywhere it is offered, goes through `run`.
    let gate = Gate::start(&[("TOOLGATE_ADVERTISE", "meta")]).await;
    assert!(!gate.names().await.contains(&"env-validator".to_owned()));
    let schema = gate.meta(json!({"command": "schema", "slug": "env-validator"})).await;
    let call = structured(&schema)["example"].clone();
    assert_eq!(call["name"], "toolgate", "{call}");
    assert_eq!(call["arguments"]["command"], "run", "{call}");
    expect_ok(&gate.call("toolgate", call["arguments"].clone()).await);
    let manifest = read_json(&gate, "toolgate://tools/env-validator").await;
    assert_eq!(manifest["example"], call, "the resource offers the same call");
    let catalogue = read_json(&gate, "toolgate://catalogue").await;
    let row = catalogue["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["slug"] == "env-validator")
        .unwrap()
        .clone();
    assert_eq!(row["advertised"], false, "{row}");
    gate.stop().await;

    // Listed, it is called directly.
    let gate = Gate::start(&[("TOOLGATE_ADVERTISE", "all")]).await;
    let schema = gate.meta(json!({"command": "schema", "slug": "env-validator"})).await;
    assert_eq!(structured(&schema)["example"]["name"], "env-validator");
    let manifest = read_json(&gate, "toolgate://tools/env-validator").await;
    assert_eq!(manifest["example"]["name"], "env-validator");
    gate.stop().await;
}
