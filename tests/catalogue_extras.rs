//! A catalogue's own resources, resource templates and prompts through the real server:
//! read (text, blob, a template filled, a value that could break out refused), got
//! (arguments filled, missing and unknown ones refused), completed; bad and clashing
//! entries refused alone on stderr; and subscriptions told of changes from a refreshed
//! API catalogue until unsubscribed.

// resources/subscribe is legacy in rmcp (2026-07-28 has subscriptions/listen), and what
// every client of earlier protocols uses.
#![allow(deprecated)]

use std::time::Duration;

use rmcp::model::{
    GetPromptRequestParams, ReadResourceRequestParams, ResourceContents, SubscribeRequestParams,
    UnsubscribeRequestParams,
};
use serde_json::{Value, json};

use crate::util::{Gate, ScriptedApi, expect_ok, manifest};

/// A 1x1 PNG, base64.
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC";

fn resources() -> Value {
    json!([
        {"uri": "test://text", "name": "text", "description": "Some text.", "mimeType": "text/plain", "text": "plain words"},
        {"uri": "test://png", "name": "png", "mimeType": "image/png", "blob": PNG},
        {"uriTemplate": "test://item/{id}/data", "name": "item", "mimeType": "application/json", "text": "{\"id\":\"{id}\"}"},
        {"uri": "test://broken", "name": "broken", "blob": "not base64!"},
        {"uri": "tg://guide", "name": "stolen guide", "text": "mine"},
        {"uri": "test://text", "name": "twin", "text": "second"}
    ])
}

fn prompts() -> Value {
    json!([
        {"name": "greet", "description": "Greets someone.",
         "arguments": [{"name": "who", "required": true}, {"name": "mood"}],
         "messages": [
            {"role": "user", "content": {"type": "text", "text": "Hello {who}, you seem {mood}."}},
            {"role": "assistant", "content": {"type": "resource", "resource": {"uri": "test://people/{who}", "text": "About {who}"}}},
            {"role": "user", "content": {"type": "image", "data": PNG, "mimeType": "image/png"}}
         ],
         "completions": {"who": ["Ada", "Alan", "Grace"]}},
        {"name": "find-tool", "description": "Steals a built-in name.",
         "messages": [{"role": "user", "content": {"type": "text", "text": "x"}}]}
    ])
}

/// A server over a catalogue file holding one tool and the entries above, with the
/// resource scheme `tg`.
async fn gate() -> (Gate, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("catalogue.json");
    let tool = json!({"slug": "echo", "runtime": "javascript", "source": "function run(p) { return p; }"});
    let doc = json!({"tools": [tool], "resources": resources(), "prompts": prompts()});
    std::fs::write(&path, doc.to_string()).unwrap();
    let gate = Gate::start(&[("TOOLGATE_NAME", "tg"), ("TOOLGATE_CATALOGUE", path.to_str().unwrap())]).await;
    (gate, dir)
}

async fn read(gate: &Gate, uri: &str) -> Result<ResourceContents, (i32, String)> {
    match gate.client.read_resource(ReadResourceRequestParams::new(uri)).await {
        Ok(r) => {
            assert_eq!(r.contents.len(), 1, "{r:?}");
            Ok(r.contents.into_iter().next().unwrap())
        }
        Err(rmcp::ServiceError::McpError(e)) => Err((e.code.0, e.message.to_string())),
        Err(other) => panic!("{other:?}"),
    }
}

async fn get(gate: &Gate, name: &str, args: Value) -> Result<Value, (i32, String)> {
    let Value::Object(args) = args else { unreachable!() };
    match gate
        .client
        .get_prompt(GetPromptRequestParams::new(name).with_arguments(args))
        .await
    {
        Ok(r) => Ok(serde_json::to_value(r.messages).unwrap()),
        Err(rmcp::ServiceError::McpError(e)) => Err((e.code.0, e.message.to_string())),
        Err(other) => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn catalogue_resources_and_templates_are_listed_and_read_and_a_value_cannot_break_out() {
    let (gate, _dir) = gate().await;
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
        [
            "tg://guide",
            "tg://catalogue",
            "tg://types/tools.d.ts",
            "tg://history",
            "test://text",
            "test://png"
        ]
    );
    let templates: Vec<String> = gate
        .client
        .list_all_resource_templates()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.uri_template)
        .collect();
    assert_eq!(
        templates,
        ["tg://tools/{slug}", "tg://types/{slug}", "test://item/{id}/data"]
    );

    match read(&gate, "test://text").await.unwrap() {
        ResourceContents::TextResourceContents {
            uri, mime_type, text, ..
        } => {
            assert_eq!(
                (uri.as_str(), mime_type.as_deref(), text.as_str()),
                ("test://text", Some("text/plain"), "plain words")
            );
        }
        other => panic!("{other:?}"),
    }
    match read(&gate, "test://png").await.unwrap() {
        ResourceContents::BlobResourceContents { mime_type, blob, .. } => {
            assert_eq!((mime_type.as_deref(), blob.as_str()), (Some("image/png"), PNG));
        }
        other => panic!("{other:?}"),
    }
    match read(&gate, "test://item/a-1.b~c%41/data").await.unwrap() {
        ResourceContents::TextResourceContents {
            uri, mime_type, text, ..
        } => {
            assert_eq!(uri, "test://item/a-1.b~c%41/data");
            assert_eq!(mime_type.as_deref(), Some("application/json"));
            let parsed: Value = serde_json::from_str(&text).unwrap();
            assert_eq!(parsed, json!({"id": "a-1.b~c%41"}));
        }
        other => panic!("{other:?}"),
    }
    // A value that could break out of the JSON, or span segments, matches nothing.
    for bad in [
        "test://item/a\"b/data",
        "test://item/a/b/data",
        "test://item/a}b/data",
        "test://item//data",
        "test://broken",
        "test://nothing",
    ] {
        let (code, message) = read(&gate, bad).await.unwrap_err();
        assert_eq!(code, -32002, "{bad}: {message}");
        assert!(message.contains("No resource"), "{message}");
    }
    // The built-in scheme stays toolgate's, and the first of two URIs is kept.
    assert!(matches!(
        read(&gate, "tg://guide").await.unwrap(),
        ResourceContents::TextResourceContents { text, .. } if text.contains("meta-tool")
    ));
    let stderr = gate.stop().await;
    for line in [
        "resource \"test://broken\" is not served: its blob is not base64",
        "resource \"tg://guide\" is not served: toolgate serves the tg: scheme itself",
        "resource \"test://text\" is not served: another entry has this URI",
        "prompt \"find-tool\" is not served: toolgate has a prompt of this name",
    ] {
        assert_eq!(stderr.matches(line).count(), 1, "{line}\n{stderr}");
    }
}

#[tokio::test]
async fn catalogue_prompts_fill_their_arguments_and_refuse_missing_and_unknown_ones() {
    let (gate, _dir) = gate().await;
    let prompts = gate.client.list_all_prompts().await.unwrap();
    let names: Vec<&str> = prompts.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["find-tool", "use-tool", "plan-batch", "recover", "greet"]);
    let greet = &prompts[4];
    assert_eq!(greet.description.as_deref(), Some("Greets someone."));
    let args = greet.arguments.as_ref().unwrap();
    assert_eq!((args[0].name.as_str(), args[0].required), ("who", Some(true)));
    assert_eq!((args[1].name.as_str(), args[1].required), ("mood", Some(false)));

    let messages = get(&gate, "greet", json!({"who": "Ada", "mood": "{who}"}))
        .await
        .unwrap();
    assert_eq!(
        messages,
        json!([
            {"role": "user", "content": {"type": "text", "text": "Hello Ada, you seem {who}."}},
            {"role": "assistant", "content": {"type": "resource", "resource": {"uri": "test://people/Ada", "mimeType": "text/plain", "text": "About Ada"}}},
            {"role": "user", "content": {"type": "image", "data": PNG, "mimeType": "image/png"}}
        ])
    );
    let messages = get(&gate, "greet", json!({"who": "Alan"})).await.unwrap();
    assert_eq!(messages[0]["content"]["text"], "Hello Alan, you seem .");

    let (code, message) = get(&gate, "greet", json!({"mood": "glad"})).await.unwrap_err();
    assert_eq!(code, -32602, "{message}");
    assert!(message.contains("needs the argument \"who\""), "{message}");
    let (code, message) = get(&gate, "greet", json!({"who": "Ada", "age": "3"}))
        .await
        .unwrap_err();
    assert_eq!(code, -32602, "{message}");
    assert!(message.contains("no argument \"age\""), "{message}");
    // The built-in keeps its name: find-tool is toolgate's, not the catalogue's.
    let (code, message) = get(&gate, "find-tool", json!({})).await.unwrap_err();
    assert_eq!(code, -32602);
    assert!(message.contains("goal"), "{message}");

    let done = gate.client.complete_prompt_simple("greet", "who", "a").await.unwrap();
    assert_eq!(done, ["Ada", "Alan"]);
    let none = gate.client.complete_prompt_simple("greet", "mood", "").await.unwrap();
    assert!(none.is_empty());
    gate.stop().await;
}

#[tokio::test]
async fn subscribing_to_an_unknown_or_upstream_uri_is_refused() {
    let (gate, _dir) = gate().await;
    for uri in ["test://nothing", "test://item/a\"b/data"] {
        match gate.client.subscribe(SubscribeRequestParams::new(uri)).await {
            Err(rmcp::ServiceError::McpError(e)) => assert_eq!(e.code.0, -32002, "{uri}: {e:?}"),
            other => panic!("{uri}: {other:?}"),
        }
    }
    match gate
        .client
        .subscribe(SubscribeRequestParams::new("tg://upstream/srv/x://y"))
        .await
    {
        Err(rmcp::ServiceError::McpError(e)) => assert!(e.message.contains("upstream"), "{e:?}"),
        other => panic!("{other:?}"),
    }
    for uri in ["test://text", "test://item/7/data", "tg://catalogue", "tg://history"] {
        gate.client.subscribe(SubscribeRequestParams::new(uri)).await.unwrap();
    }
    gate.client
        .unsubscribe(UnsubscribeRequestParams::new("test://never-subscribed"))
        .await
        .unwrap();
    gate.stop().await;
}

/// Waits for the next resources/updated notification.
async fn next_update(gate: &mut Gate) -> String {
    tokio::time::timeout(Duration::from_secs(30), gate.updates.recv())
        .await
        .expect("resources/updated arrives")
        .unwrap()
}

#[tokio::test]
async fn a_subscribed_resource_is_announced_when_a_refresh_changes_it_and_not_after_unsubscribe() {
    let api = ScriptedApi::start(vec![manifest("alpha", false)]).await;
    let set = |watched: &str, other: &str| {
        let mut beside = api.beside.lock().unwrap();
        beside.insert(
            "resources".into(),
            json!([
                {"uri": "test://watched", "name": "watched", "text": watched},
                {"uri": "test://other", "name": "other", "text": other},
                {"uri": "test://still", "name": "still", "text": "never changes"}
            ]),
        );
    };
    set("v1", "v1");
    let env = [
        ("TOOLGATE_API_URL", api.host.as_str()),
        ("TOOLGATE_CACHE_TTL_MS", "0"),
        ("TOOLGATE_NAME", "tg"),
    ];
    let mut gate = Gate::start(&env).await;
    for uri in ["test://watched", "test://other", "test://still", "tg://history"] {
        gate.client.subscribe(SubscribeRequestParams::new(uri)).await.unwrap();
    }

    // A run of this session changes its history.
    expect_ok(&gate.call("alpha", json!({"n": 1})).await);
    assert_eq!(next_update(&mut gate).await, "tg://history");

    // A refresh that changes one resource announces that one only.
    set("v2", "v1");
    assert_eq!(next_update(&mut gate).await, "test://watched");
    match read(&gate, "test://watched").await.unwrap() {
        ResourceContents::TextResourceContents { text, .. } => assert_eq!(text, "v2"),
        other => panic!("{other:?}"),
    }

    // Unsubscribed: a change of it is not announced. Two later announcements of another
    // resource prove the refresh that changed both was checked whole.
    gate.client
        .unsubscribe(UnsubscribeRequestParams::new("test://watched"))
        .await
        .unwrap();
    set("v3", "v2");
    assert_eq!(next_update(&mut gate).await, "test://other");
    set("v3", "v3");
    assert_eq!(next_update(&mut gate).await, "test://other");
    assert!(gate.updates.try_recv().is_err(), "nothing else was announced");
    gate.stop().await;
}

#[tokio::test]
async fn catalogue_serve_passes_a_folders_resources_and_prompts_on_to_another_toolgate() {
    let folder = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/conformance");
    let server = crate::util::CatalogueServer::start(&folder).await;
    let list: Value = reqwest::get(format!("{}/api/tools", server.host))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let uris: Vec<&str> = list["resources"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["uri"].as_str().or(r["uriTemplate"].as_str()))
        .collect();
    assert_eq!(
        uris,
        [
            "test://static-text",
            "test://static-binary",
            "test://watched-resource",
            "test://template/{id}/data"
        ]
    );
    assert_eq!(list["prompts"].as_array().unwrap().len(), 4, "{list}");

    let gate = Gate::start(&[("TOOLGATE_API_URL", &server.host)]).await;
    match read(&gate, "test://template/123/data").await.unwrap() {
        ResourceContents::TextResourceContents { text, .. } => {
            assert_eq!(text, r#"{"id":"123","templateTest":true,"data":"Data for ID: 123"}"#);
        }
        other => panic!("{other:?}"),
    }
    let messages = get(&gate, "test_prompt_with_arguments", json!({"arg1": "a", "arg2": "b"}))
        .await
        .unwrap();
    assert_eq!(
        messages[0]["content"]["text"],
        "Prompt with arguments: arg1='a', arg2='b'"
    );
    let stderr = gate.stop().await;
    assert!(!stderr.contains("is not served"), "{stderr}");
}
