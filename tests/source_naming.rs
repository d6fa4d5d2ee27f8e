//! One way to name a catalogue for every command: a positional SOURCE, else
//! `--catalogue`/`TOOLGATE_CATALOGUE`/`TOOLGATE_API_URL`, else the embedded catalogue.
//! `catalogue serve` once ignored all but its own `--dir` and served the embedded one.

use std::ffi::OsStr;

use serde_json::Value;

use crate::util::{CatalogueServer, command, fixtures};

/// The slugs a running catalogue server lists.
async fn served_slugs(server: &CatalogueServer) -> Vec<String> {
    let list: Value = reqwest::get(format!("{}/api/tools", server.host))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    list["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["slug"].as_str().unwrap().to_owned())
        .collect()
}

/// Asserts the server serves the fixture catalogue, not the embedded one.
async fn serves_the_fixtures(server: &CatalogueServer, how: &str) {
    let slugs = served_slugs(server).await;
    assert!(slugs.iter().any(|s| s == "echo"), "{how}: {slugs:?}");
    assert!(!slugs.iter().any(|s| s == "env-validator"), "{how}: {slugs:?}");
}

#[tokio::test]
async fn catalogue_serve_honours_the_catalogue_flag() {
    let fixtures = fixtures();
    let server = CatalogueServer::launch(&[OsStr::new("--catalogue"), fixtures.as_os_str()], &[]).await;
    serves_the_fixtures(&server, "--catalogue").await;
}

#[tokio::test]
async fn catalogue_serve_honours_toolgate_catalogue() {
    let fixtures = fixtures().display().to_string();
    let server = CatalogueServer::launch(&[], &[("TOOLGATE_CATALOGUE", &fixtures)]).await;
    serves_the_fixtures(&server, "TOOLGATE_CATALOGUE").await;
}

#[tokio::test]
async fn catalogue_serve_takes_a_positional_source_over_the_settings_and_keeps_dir() {
    let fixtures = fixtures();
    let server = CatalogueServer::launch(&[fixtures.as_os_str()], &[("TOOLGATE_CATALOGUE", "embedded")]).await;
    serves_the_fixtures(&server, "positional SOURCE").await;
    let server = CatalogueServer::launch(&[OsStr::new("--dir"), fixtures.as_os_str()], &[]).await;
    serves_the_fixtures(&server, "--dir").await;
    let embedded = CatalogueServer::launch(&[], &[]).await;
    let slugs = served_slugs(&embedded).await;
    assert!(
        slugs.iter().any(|s| s == "env-validator"),
        "nothing named: embedded: {slugs:?}"
    );
}

#[tokio::test]
async fn catalogue_serve_serves_a_catalogue_named_by_toolgate_api_url() {
    let upstream = CatalogueServer::start(&fixtures()).await;
    let server = CatalogueServer::launch(&[], &[("TOOLGATE_API_URL", &upstream.host)]).await;
    serves_the_fixtures(&server, "TOOLGATE_API_URL").await;
}

#[tokio::test]
async fn check_and_eval_take_the_source_from_toolgate_catalogue() {
    let tools = tempfile::tempdir().unwrap();
    let folder = tools.path().join("only-one");
    std::fs::create_dir(&folder).unwrap();
    std::fs::write(
        folder.join("tool.json"),
        r#"{"slug": "only-one", "name": "Only one", "description": "Returns a constant.", "runtime": "javascript", "source": "index.js"}"#,
    )
    .unwrap();
    std::fs::write(folder.join("index.js"), "function run() { return { one: 1 }; }").unwrap();
    let source = tools.path().display().to_string();
    let cwd = tempfile::tempdir().unwrap();

    let out = command(cwd.path(), &[("TOOLGATE_CATALOGUE", &source)])
        .args(["catalogue", "check"])
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(stdout.trim_end().ends_with("1 passed, 0 failed, 0 skipped"), "{stdout}");

    let queries = cwd.path().join("q.jsonl");
    std::fs::write(&queries, "{\"query\": \"a constant\", \"relevant\": [\"only-one\"]}\n").unwrap();
    let out = command(cwd.path(), &[("TOOLGATE_CATALOGUE", &source)])
        .args(["catalogue", "eval", "--queries"])
        .arg(&queries)
        .output()
        .await
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(!stderr.contains("not in the catalogue"), "{stderr}");
}
