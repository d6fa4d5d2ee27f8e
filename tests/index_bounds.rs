//! The search index cannot be blown up: a catalogue of very long words, a very long query
//! (searched by its start) and a huge one-word description from the API (it hung the
//! server for good), each through the real server.

use serde_json::{Value, json};

use crate::util::{Gate, ScriptedApi, expect_error, manifest, result_slugs as slugs, structured};

/// Peak resident memory of a process, in kB (`VmHWM` of `/proc/PID/status`).
fn peak_rss_kb(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).expect("VmHWM");
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// Letters only (no digits, no case change), so the tokenizer keeps it one word.
fn word(len: usize, seed: u8) -> String {
    (0..len)
        .map(|i| (b'a' + ((i * 7 + seed as usize) % 26) as u8) as char)
        .collect()
}

#[tokio::test]
async fn a_catalogue_of_60000_letter_words_is_served_in_under_100_mb() {
    // One description is a 60,000-letter word (it held 3.3 GB); four more carry words of
    // 8,000 letters, under the description cap, which the typo map alone must bound.
    let mut tools = vec![
        json!({"slug": "env-validator", "name": "Env validator", "description": "Validates env files."}),
        json!({"slug": "giant-word", "name": "Giant word", "description": word(60_000, 0)}),
    ];
    for i in 0..4u8 {
        tools.push(json!({
            "slug": format!("long-{i}"),
            "name": format!("Long {i}"),
            "description": format!("Long text {}", word(8_000, i + 1)),
            "tags": [word(50, i)],
            "input_schema": {"type": "object", "properties": {word(5_000, i): {"type": "string", "description": word(9_000, i)}}},
        }));
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("catalogue.json");
    std::fs::write(&path, json!({ "tools": tools }).to_string()).unwrap();
    let gate = Gate::start(&[("TOOLGATE_CATALOGUE", path.to_str().unwrap())]).await;
    let r = gate.meta(json!({"command": "search", "query": "validate env"})).await;
    assert_eq!(slugs(structured(&r))[0], "env-validator");
    let r = gate.meta(json!({"command": "search", "query": "long text"})).await;
    // The four tools with both words first; after them only tools near in meaning alone.
    assert_eq!(slugs(structured(&r))[..4], ["long-0", "long-1", "long-2", "long-3"]);
    for hit in &structured(&r)["results"].as_array().unwrap()[4..] {
        let matched = hit["matched"].as_array().unwrap();
        assert!(
            matched.len() == 1 && matched[0].as_str().unwrap().starts_with("meaning ("),
            "{hit}"
        );
    }
    let kb = peak_rss_kb(gate.pid.unwrap());
    assert!(kb < 100 * 1024, "peak RSS {kb} kB");
    let stderr = gate.stop().await;
    assert!(
        stderr.contains("tool \"giant-word\" is served with its text cut: description cut to 8192 characters"),
        "{stderr}"
    );
    assert!(
        stderr.contains("tool \"long-0\" is served with its text cut"),
        "{stderr}"
    );
}

#[tokio::test]
async fn a_300000_letter_query_is_searched_by_its_start_everywhere() {
    let gate = Gate::start(&[]).await;
    let long = word(300_000, 3);
    let r = gate.meta(json!({"command": "search", "query": long})).await;
    assert_eq!(r.is_error, Some(false), "{r:?}");
    let answer = structured(&r);
    assert_eq!(
        answer["cut"],
        json!({"searched_chars": 1000, "query_chars": 300_000}),
        "{answer}"
    );
    // At the limit, a query is read whole.
    let at_limit = format!("validate env file {}", "x".repeat(1_000 - 18));
    assert_eq!(at_limit.chars().count(), 1_000);
    let r = gate.meta(json!({"command": "search", "query": at_limit})).await;
    assert_eq!(slugs(structured(&r))[0], "env-validator");
    assert_eq!(structured(&r).get("cut"), None);
    // The prompts and close-match advice go through the same index entry.
    let Value::Object(args) = json!({"goal": long}) else {
        unreachable!()
    };
    let found = gate
        .client
        .get_prompt(rmcp::model::GetPromptRequestParams::new("find-tool").with_arguments(args))
        .await
        .unwrap();
    let text = &found.messages[0].content.as_text().unwrap().text;
    assert!(text.contains("no tool matches these words"), "{text}");
    let r = gate.meta(json!({"command": "run", "slug": long, "params": {}})).await;
    let err = expect_error(&r, "TOOL_NOT_FOUND");
    assert!(!err["error"].as_str().unwrap().contains("Closest matches"), "{err}");
    gate.stop().await;
}

#[tokio::test]
async fn a_huge_one_word_description_from_the_api_neither_hangs_nor_sticks() {
    // 50 MB hung the server for good; 10 MB is as far past the typo map's square and keeps
    // the test quick. A generous request timeout: a debug build moves 10 MB slowly.
    let api = ScriptedApi::start(vec![manifest("alpha", false)]).await;
    let gate = Gate::start(&[
        ("TOOLGATE_API_URL", &api.host),
        ("TOOLGATE_CACHE_TTL_MS", "0"),
        ("TOOLGATE_TIMEOUT_MS", "120000"),
    ])
    .await;
    assert!(gate.names().await.contains(&"alpha".to_owned()));
    let mut huge = manifest("huge", false);
    huge["description"] = json!(word(10_000_000, 5));
    *api.tools.lock().unwrap() = vec![manifest("alpha", false), huge];
    let r = gate.meta(json!({"command": "search", "query": "scripted tool"})).await;
    let found = slugs(structured(&r));
    assert!(found.contains(&"alpha".to_owned()), "{found:?}");
    let listed = gate.meta(json!({"command": "list"})).await;
    let huge_listed = structured(&listed)["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["slug"] == "huge")
        .cloned();
    let Some(huge_listed) = huge_listed else {
        let stderr = gate.stop().await;
        panic!("the huge tool is not served: {}", &stderr[..stderr.len().min(3000)]);
    };
    assert!(huge_listed["description"].as_str().unwrap().chars().count() <= 8192);
    // The API goes back to a good list: the server follows it.
    *api.tools.lock().unwrap() = vec![manifest("alpha", false), manifest("beta", false)];
    let names = gate.names().await;
    assert!(
        names.contains(&"beta".to_owned()) && !names.contains(&"huge".to_owned()),
        "{names:?}"
    );
    let stderr = gate.stop().await;
    assert!(stderr.contains("tool \"huge\" is served with its text cut"), "{stderr}");
}
