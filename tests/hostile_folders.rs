//! A catalogue folder is closed: no symbolic link below its root is followed — not a
//! tool's source, not a tool folder, not a folder on a source's path, not `tool.json`,
//! `resources.json` or `prompts.json` — whether it leads outside the root or back inside
//! it. Each is a problem line naming it (and fails `catalogue check`); what lies outside
//! never reaches an MCP client (stdio) or `catalogue serve`'s
//! `/api/tools/{slug}/source`.

use std::os::unix::fs::symlink;
use std::path::Path;

use serde_json::{Value, json};

use crate::util::{CatalogueServer, Gate, command};

/// What lies outside the catalogue; it must never be served.
const SECRET: &str = "SECRET-OUTSIDE-THE-CATALOGUE";

/// A tool folder `folder` in `root` whose tool `slug` has its source at `source`; the
/// source file itself is written only when `code` is given.
fn tool(root: &Path, folder: &str, slug: &str, source: &str, code: Option<&str>) {
    let path = root.join(folder);
    std::fs::create_dir_all(&path).unwrap();
    std::fs::write(path.join("tool.json"), manifest(slug, source).to_string()).unwrap();
    if let Some(code) = code {
        std::fs::write(path.join(source), code).unwrap();
    }
}

fn manifest(slug: &str, source: &str) -> Value {
    json!({
        "slug": slug, "name": slug, "description": "A fixture.",
        "input_schema": {"type": "object"}, "runtime": "javascript", "source": source
    })
}

fn code(word: &str) -> String {
    format!("function run() {{ return {{ said: {word:?} }}; }}")
}

/// A catalogue in `root` beside files in `outside`: one plain tool, and every way a link
/// could lead a read elsewhere.
fn linked_catalogue(root: &Path, outside: &Path) {
    std::fs::write(outside.join("secret.js"), code(SECRET)).unwrap();
    std::fs::create_dir(outside.join("tool")).unwrap();
    std::fs::write(
        outside.join("tool/tool.json"),
        manifest("linked-folder", "index.js").to_string(),
    )
    .unwrap();
    std::fs::write(outside.join("tool/index.js"), code(SECRET)).unwrap();
    std::fs::write(outside.join("index.js"), code(SECRET)).unwrap();
    std::fs::write(
        outside.join("tool.json"),
        manifest("linked-manifest", "index.js").to_string(),
    )
    .unwrap();
    let says = json!([{"role": "user", "content": {"type": "text", "text": SECRET}}]);
    std::fs::write(
        outside.join("resources.json"),
        json!([{"uri": "test://leak", "name": "leak", "text": SECRET}]).to_string(),
    )
    .unwrap();
    std::fs::write(
        outside.join("prompts.json"),
        json!([{"name": "leak", "messages": says}]).to_string(),
    )
    .unwrap();

    tool(root, "plain", "plain", "index.js", Some(&code("plain")));
    // The source file is a link out of the root.
    tool(root, "leak", "leak", "index.js", None);
    symlink(outside.join("secret.js"), root.join("leak/index.js")).unwrap();
    // The tool folder is a link out of the root.
    symlink(outside.join("tool"), root.join("linked-folder")).unwrap();
    // A folder on the source's path is a link out of the root.
    tool(root, "deep", "deep", "lib/index.js", None);
    symlink(outside, root.join("deep/lib")).unwrap();
    // The source is a link to a file inside the root: refused too (no link is followed).
    tool(root, "near", "near", "index.js", None);
    symlink(root.join("plain/index.js"), root.join("near/index.js")).unwrap();
    // The manifest is a link.
    std::fs::create_dir(root.join("linked-manifest")).unwrap();
    symlink(outside.join("tool.json"), root.join("linked-manifest/tool.json")).unwrap();
    symlink(outside.join("index.js"), root.join("linked-manifest/index.js")).unwrap();
    // The extras files are links.
    symlink(outside.join("resources.json"), root.join("resources.json")).unwrap();
    symlink(outside.join("prompts.json"), root.join("prompts.json")).unwrap();
}

/// What a server must report about [`linked_catalogue`], one line each.
const REPORTED: [&str; 7] = [
    "leak/tool.json: index.js: index.js is a symbolic link",
    "linked-folder: a symbolic link to a folder",
    "deep/tool.json: lib/index.js: lib is a symbolic link",
    "near/tool.json: index.js: index.js is a symbolic link",
    "linked-manifest: tool.json is a symbolic link",
    "resources.json: resources.json is a symbolic link",
    "prompts.json: prompts.json is a symbolic link",
];

fn assert_reported(said: &str) {
    for line in REPORTED {
        assert!(said.contains(line), "no problem line with {line:?}:\n{said}");
    }
}

#[tokio::test]
async fn an_mcp_server_follows_no_link_in_its_catalogue_folder() {
    let (root, outside) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    linked_catalogue(root.path(), outside.path());
    let catalogue = root.path().display().to_string();
    let gate = Gate::start(&[("TOOLGATE_CATALOGUE", &catalogue), ("TOOLGATE_ADVERTISE", "all")]).await;
    let names = gate.names().await;
    assert!(names.contains(&"plain".to_owned()), "{names:?}");
    for slug in ["leak", "linked-folder", "deep", "near", "linked-manifest"] {
        assert!(!names.contains(&slug.to_owned()), "{slug}: {names:?}");
        let r = gate.meta(json!({"command": "run", "slug": slug, "params": {}})).await;
        assert!(!format!("{r:?}").contains(SECRET), "{slug}: {r:?}");
    }
    let resources = gate.client.list_all_resources().await.unwrap();
    let prompts = gate.client.list_all_prompts().await.unwrap();
    assert!(
        !format!("{resources:?}{prompts:?}").contains("leak"),
        "{resources:?} {prompts:?}"
    );
    let read = gate
        .client
        .read_resource(rmcp::model::ReadResourceRequestParams::new("test://leak"))
        .await;
    assert!(!format!("{read:?}").contains(SECRET), "{read:?}");
    assert_reported(&gate.stop().await);
}

#[tokio::test]
async fn catalogue_serve_serves_no_source_through_a_link() {
    let (root, outside) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    linked_catalogue(root.path(), outside.path());
    let served = CatalogueServer::start(root.path()).await;
    let http = reqwest::Client::new();
    let get = |path: String| {
        let http = http.clone();
        async move {
            let response = http.get(path).send().await.unwrap();
            (response.status().as_u16(), response.text().await.unwrap())
        }
    };
    let (status, plain) = get(format!("{}/api/tools/plain/source", served.host)).await;
    assert_eq!(status, 200, "{plain}");
    assert!(plain.contains("plain"), "{plain}");
    for slug in ["leak", "linked-folder", "deep", "near", "linked-manifest"] {
        let (status, body) = get(format!("{}/api/tools/{slug}/source", served.host)).await;
        assert_eq!(status, 404, "{slug}: {body}");
        assert!(!body.contains(SECRET), "{slug}: {body}");
    }
    let (status, list) = get(format!("{}/api/tools", served.host)).await;
    assert_eq!(status, 200, "{list}");
    assert!(!list.contains(SECRET) && !list.contains("test://leak"), "{list}");
}

#[tokio::test]
async fn catalogue_check_fails_on_each_link_in_a_catalogue_folder() {
    let (root, outside) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    linked_catalogue(root.path(), outside.path());
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = command(dir.path(), &[]);
    cmd.args(["catalogue", "check"]).arg(root.path());
    let out = cmd.output().await.unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success(), "{stdout}");
    assert_reported(&stdout);
    assert!(stdout.contains("ok      plain ("), "{stdout}");
    assert!(stdout.trim_end().ends_with("1 passed, 7 failed, 0 skipped"), "{stdout}");
}
