//! The operator's face of `toolgate catalogue serve` and `--http`: the list answer made
//! once per snapshot (codings, ETags, 304), connection limits, health and readiness.

use std::io::Read;

use serde_json::{Value, json};

use crate::util::{CatalogueServer, ScriptedApi, fixtures, manifest};

/// `GET /api/tools` with `headers`: status, headers and the raw body.
async fn list(url: &str, headers: &[(&str, &str)]) -> (u16, reqwest::header::HeaderMap, Vec<u8>) {
    let mut request = reqwest::Client::new().get(url);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let answer = request.send().await.unwrap();
    let status = answer.status().as_u16();
    let headers = answer.headers().clone();
    (status, headers, answer.bytes().await.unwrap().to_vec())
}

fn etag(headers: &reqwest::header::HeaderMap) -> String {
    headers["etag"].to_str().unwrap().to_owned()
}

#[tokio::test]
async fn the_list_answers_in_the_coding_asked_for_and_any_held_etag_is_304() {
    let server = CatalogueServer::start(&fixtures()).await;
    let url = format!("{}/api/tools", server.host);
    let (status, plain_headers, plain) = list(&url, &[]).await;
    assert_eq!(status, 200);
    assert!(plain_headers.get("content-encoding").is_none());
    assert_eq!(plain_headers["vary"], "accept-encoding");
    let body: Value = serde_json::from_slice(&plain).unwrap();
    assert!(body["tools"].as_array().unwrap().iter().any(|t| t["slug"] == "echo"));

    let (_, gz_headers, gz) = list(&url, &[("accept-encoding", "gzip")]).await;
    assert_eq!(gz_headers["content-encoding"], "gzip");
    let mut unzipped = Vec::new();
    flate2::read::GzDecoder::new(&gz[..])
        .read_to_end(&mut unzipped)
        .unwrap();
    assert_eq!(unzipped, plain);

    let (_, br_headers, br) = list(&url, &[("accept-encoding", "gzip, deflate, br")]).await;
    assert_eq!(br_headers["content-encoding"], "br");
    let mut unbrotli = Vec::new();
    brotli::Decompressor::new(&br[..], 4096)
        .read_to_end(&mut unbrotli)
        .unwrap();
    assert_eq!(unbrotli, plain);

    let tags = [etag(&plain_headers), etag(&gz_headers), etag(&br_headers)];
    assert!(
        tags[0] != tags[1] && tags[1] != tags[2],
        "one ETag per coding: {tags:?}"
    );
    for held in &tags {
        for coding in ["identity", "gzip", "br"] {
            let (status, headers, body) = list(&url, &[("if-none-match", held), ("accept-encoding", coding)]).await;
            assert_eq!(status, 304, "{held} with {coding}");
            assert!(body.is_empty());
            assert!(headers.contains_key("etag"));
        }
    }
    let (status, _, _) = list(&url, &[("if-none-match", "\"something-else\"")]).await;
    assert_eq!(status, 200);
}

#[tokio::test]
async fn a_new_snapshot_gets_a_new_list_and_etag() {
    let upstream = ScriptedApi::start(vec![manifest("first", false)]).await;
    let server = CatalogueServer::launch(
        &[upstream.host.as_ref()],
        &[("TOOLGATE_CACHE_TTL_MS", "0"), ("TOOLGATE_EXECUTION", "remote")],
    )
    .await;
    let url = format!("{}/api/tools", server.host);
    let (_, headers, body) = list(&url, &[]).await;
    let first = etag(&headers);
    let body: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(body["tools"][0]["slug"], "first");

    upstream.tools.lock().unwrap().push(manifest("second", false));
    let (status, headers, body) = list(&url, &[("if-none-match", &first)]).await;
    assert_eq!(status, 200, "the held ETag names the old snapshot");
    assert_ne!(etag(&headers), first);
    let body: Value = serde_json::from_slice(&body).unwrap();
    let slugs: Vec<&Value> = body["tools"].as_array().unwrap().iter().map(|t| &t["slug"]).collect();
    assert_eq!(slugs, [&json!("first"), &json!("second")]);
}
