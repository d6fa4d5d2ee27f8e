//! MCP prompts and completions through the real server: each prompt filled from the live
//! catalogue, every call it carries validating, exact slugs for use-tool.

use rmcp::model::GetPromptRequestParams;
use serde_json::{Value, json};

use crate::util::{Gate, expect_ok};

async fn prompt(gate: &Gate, name: &str, args: Value) -> Result<String, String> {
    let Value::Object(args) = args else { unreachable!() };
    match gate
        .client
        .get_prompt(GetPromptRequestParams::new(name).with_arguments(args))
        .await
    {
        Ok(r) => Ok(r.messages[0].content.as_text().expect("text content").text.clone()),
        Err(rmcp::ServiceError::McpError(e)) => Err(e.message.to_string()),
        Err(other) => panic!("{other:?}"),
    }
}

/// The first JSON object in `text` that has a "name" and "arguments": a call to send.
fn call_in(text: &str) -> Value {
    let start = text.find("{\n  \"name\"").expect("a call in the prompt");
    let mut de = serde_json::Deserializer::from_str(&text[start..]).into_iter::<Value>();
    de.next().unwrap().unwrap()
}

#[tokio::test]
async fn prompts_are_listed_and_filled_from_the_live_catalogue() {
    let gate = Gate::start(&[]).await;
    let names: Vec<String> = gate
        .client
        .list_all_prompts()
        .await
        .unwrap()
        .into_iter()
        .map(|p| p.name)
        .collect();
    assert_eq!(names, vec!["find-tool", "use-tool", "plan-batch", "recover"]);

    let find = prompt(&gate, "find-tool", json!({"goal": "validate env file"}))
        .await
        .unwrap();
    let first = find.lines().find(|l| l.starts_with("- ")).unwrap();
    assert!(
        first.starts_with("- env-validator") && first.contains("toolgate://tools/env-validator"),
        "{first}"
    );
    assert!(first.contains("1 required of"), "{first}");

    let use_tool = prompt(&gate, "use-tool", json!({"slug": "data-generator"}))
        .await
        .unwrap();
    assert!(use_tool.contains("\"maximum\": 1000"), "the exact parameters");
    let call = call_in(&use_tool);
    expect_ok(
        &gate
            .call(call["name"].as_str().unwrap(), call["arguments"].clone())
            .await,
    );
    let err = prompt(&gate, "use-tool", json!({"slug": "data-gen"}))
        .await
        .unwrap_err();
    assert!(
        err.contains("data-generator") && err.contains("exact"),
        "no prefix for use-tool: {err}"
    );

    let plan = prompt(&gate, "plan-batch", json!({"task": "decode a jwt and a base64 string"}))
        .await
        .unwrap();
    assert!(plan.contains("At most 10 runs"));
    let batch = call_in(&plan);
    let r = gate.call("toolgate", batch["arguments"].clone()).await;
    assert_eq!(r.is_error, Some(false), "the planned batch validates: {r:?}");

    let recover = prompt(
        &gate,
        "recover",
        json!({"error": "INVALID_PARAMS: /count ...", "slug": "data-generator"}),
    )
    .await
    .unwrap();
    assert!(recover.contains("This is INVALID_PARAMS (retryable: no)"));
    assert!(recover.contains("TIMEOUT (retryable: yes)") && recover.contains("RATE_LIMITED (retryable: yes)"));
    let call = call_in(&recover);
    expect_ok(
        &gate
            .call(call["name"].as_str().unwrap(), call["arguments"].clone())
            .await,
    );
    gate.stop().await;
}

#[tokio::test]
async fn completions_offer_slugs_for_slug_arguments_only() {
    let gate = Gate::start(&[]).await;
    let values = gate
        .client
        .complete_prompt_simple("use-tool", "slug", "js")
        .await
        .unwrap();
    assert_eq!(values, vec!["json-formatter", "jsonpath-query"]);
    let values = gate
        .client
        .complete_resource_simple("toolgate://tools/{slug}", "slug", "ENV")
        .await
        .unwrap();
    assert_eq!(values, vec!["env-validator"]);
    assert!(
        gate.client
            .complete_prompt_simple("find-tool", "goal", "va")
            .await
            .unwrap()
            .is_empty()
    );
    gate.stop().await;
}
