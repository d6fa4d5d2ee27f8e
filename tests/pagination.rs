//! Answers that grow with the catalogue come in pages: `tools/list` with MCP's
//! `cursor`/`nextCursor`, the meta-tool's `list` with `cursor` and `limit`, and the
//! `NAME://catalogue` resource with a `next` URI per page. Each walk must cover every tool
//! exactly once, no page may pass 256 KiB, and a cursor the server did not give is
//! refused.

use std::collections::HashSet;

use rmcp::model::{PaginatedRequestParams, ReadResourceRequestParams, ResourceContents};
use rmcp::service::ServiceError;
use serde_json::{Value, json};

use crate::util::{Gate, expect_error, structured};

/// The page budget of `limits.rs`.
const PAGE_BYTES: usize = 256 * 1024;

/// Tools in the test catalogue: with `TOOLGATE_ADVERTISE=all`, far more than one page.
const TOOLS: usize = 700;

/// A catalogue file of `TOOLS` JavaScript tools, each with a described parameter.
fn catalogue(dir: &std::path::Path) -> String {
    let tools: Vec<Value> = (0..TOOLS)
        .map(|i| {
            json!({
                "slug": format!("tool-{i:04}"),
                "name": format!("Tool {i}"),
                "description": format!("Converts record {i} into another format. {}", "Long prose. ".repeat(20)),
                "category": "convert",
                "tags": ["convert", "record"],
                "input_schema": {"type": "object", "properties": {"input": {"type": "string", "description": "The record to convert, as text."}}, "required": ["input"]},
                "runtime": "javascript",
                "source": "function run(params) { return params; }",
            })
        })
        .collect();
    let path = dir.join("catalogue.json");
    std::fs::write(&path, json!({ "tools": tools }).to_string()).unwrap();
    path.display().to_string()
}

fn expected() -> HashSet<String> {
    (0..TOOLS).map(|i| format!("tool-{i:04}")).collect()
}

/// Adds `names` to `seen`, failing on one seen before.
fn add_once(seen: &mut HashSet<String>, names: impl IntoIterator<Item = String>) {
    for name in names {
        assert!(seen.insert(name.clone()), "{name} came twice");
    }
}

#[tokio::test]
async fn tools_list_pages_cover_every_tool_once_and_a_bad_cursor_is_invalid_params() {
    let dir = tempfile::tempdir().unwrap();
    let path = catalogue(dir.path());
    let gate = Gate::start(&[("TOOLGATE_CATALOGUE", &path), ("TOOLGATE_ADVERTISE", "all")]).await;
    let mut seen = HashSet::new();
    let mut cursor = None;
    let mut pages = 0;
    loop {
        let page = gate
            .client
            .list_tools(Some(PaginatedRequestParams::default().with_cursor(cursor.clone())))
            .await
            .unwrap();
        pages += 1;
        let bytes = serde_json::to_vec(&page).unwrap().len();
        assert!(bytes <= PAGE_BYTES, "page {pages} is {bytes} bytes");
        add_once(&mut seen, page.tools.iter().map(|t| t.name.to_string()));
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }
    assert!(pages > 1, "{TOOLS} tools fit one page: the test no longer tests paging");
    assert!(seen.remove("toolgate"), "the meta-tool is listed");
    assert_eq!(seen, expected());

    for bad in ["nonsense", "dDEwLjA"] {
        let err = gate
            .client
            .list_tools(Some(
                PaginatedRequestParams::default().with_cursor(Some(bad.to_owned())),
            ))
            .await
            .unwrap_err();
        let ServiceError::McpError(e) = err else {
            panic!("not a JSON-RPC error: {err}");
        };
        assert_eq!(e.code.0, -32602, "{e:?}");
        assert!(e.message.contains("cursor"), "{e:?}");
    }
}

#[tokio::test]
async fn meta_list_pages_by_limit_cover_every_tool_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = catalogue(dir.path());
    let gate = Gate::start(&[("TOOLGATE_CATALOGUE", &path)]).await;
    let first = gate.meta(json!({"command": "list"})).await;
    let first = structured(&first);
    assert_eq!(first["tools"].as_array().unwrap().len(), 100, "100 a page by default");
    assert_eq!(first["total"], TOOLS);

    let mut seen = HashSet::new();
    let mut args = json!({"command": "list", "limit": 300});
    let mut pages = 0;
    loop {
        let answer = gate.meta(args.clone()).await;
        pages += 1;
        let bytes = serde_json::to_vec(&answer).unwrap().len();
        assert!(bytes <= PAGE_BYTES, "page {pages} is {bytes} bytes");
        let page = structured(&answer);
        let rows = page["tools"].as_array().unwrap();
        assert!(rows.len() <= 300);
        add_once(&mut seen, rows.iter().map(|r| r["slug"].as_str().unwrap().to_owned()));
        match page["next_cursor"].as_str() {
            Some(next) => args["cursor"] = json!(next),
            None => break,
        }
    }
    assert!(pages >= 3, "{pages} pages");
    assert_eq!(seen, expected());

    let bad = gate.meta(json!({"command": "list", "cursor": "nonsense"})).await;
    assert!(
        expect_error(&bad, "BAD_REQUEST")["error"]
            .as_str()
            .unwrap()
            .contains("cursor")
    );
    let bad = gate.meta(json!({"command": "list", "limit": 0})).await;
    expect_error(&bad, "BAD_REQUEST");
}

#[tokio::test]
async fn the_catalogue_resource_pages_cover_every_tool_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = catalogue(dir.path());
    let gate = Gate::start(&[("TOOLGATE_CATALOGUE", &path)]).await;
    let mut seen = HashSet::new();
    let mut uri = "toolgate://catalogue".to_owned();
    let mut pages = 0;
    loop {
        let read = gate
            .client
            .read_resource(ReadResourceRequestParams::new(uri.clone()))
            .await
            .unwrap();
        pages += 1;
        let ResourceContents::TextResourceContents { text, .. } = &read.contents[0] else {
            panic!("not text");
        };
        assert!(text.len() <= PAGE_BYTES, "page {pages} is {} bytes", text.len());
        let page: Value = serde_json::from_str(text).unwrap();
        assert_eq!(page["total"], TOOLS);
        add_once(
            &mut seen,
            page["tools"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| r["slug"].as_str().unwrap().to_owned()),
        );
        match page["next"].as_str() {
            Some(next) => uri = next.to_owned(),
            None => break,
        }
    }
    assert!(pages > 1, "{TOOLS} tools fit one page: the test no longer tests paging");
    assert_eq!(seen, expected());
    let bad = gate
        .client
        .read_resource(ReadResourceRequestParams::new("toolgate://catalogue?cursor=nonsense"))
        .await;
    assert!(
        matches!(&bad, Err(ServiceError::McpError(e)) if e.code.0 == -32602),
        "{bad:?}"
    );
}
