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

/// Opens `count` idle connections to `addr` from 127.0.0.1 and returns them, held.
async fn idle_connections(addr: &str, count: usize) -> Vec<tokio::net::TcpStream> {
    let mut held = Vec::with_capacity(count);
    for _ in 0..count {
        held.push(tokio::net::TcpStream::connect(addr).await.unwrap());
    }
    held
}

/// Reads what the server sends on `tcp` until it closes (bounded, so a server that
/// never closes fails the test rather than hanging it).
async fn until_closed(tcp: &mut tokio::net::TcpStream) -> String {
    use tokio::io::AsyncReadExt;
    let mut got = Vec::new();
    let read = tokio::time::timeout(std::time::Duration::from_secs(30), tcp.read_to_end(&mut got)).await;
    assert!(read.is_ok(), "the server did not close the connection");
    String::from_utf8_lossy(&got).into_owned()
}

/// The idle-connection attack against the server at `base`: 1,100 idle
/// connections from 127.0.0.1, past the per-address cap (128 by default), leave the
/// server answering another client (127.0.0.2), while a further connection from the
/// attacking address is answered 503 and closed.
async fn survives_idle_connections(base: &str, health: &str) {
    let addr = base.trim_start_matches("http://");
    let mut held = idle_connections(addr, 1_100).await;
    let refused = until_closed(held.last_mut().unwrap()).await;
    assert!(refused.starts_with("HTTP/1.1 503"), "{refused}");
    assert!(refused.to_ascii_lowercase().contains("retry-after: 1"), "{refused}");
    let other = reqwest::Client::builder()
        .local_address(std::net::IpAddr::from([127, 0, 0, 2]))
        .build()
        .unwrap();
    let answer = other.get(format!("{base}{health}")).send().await.unwrap();
    assert_eq!(answer.status(), 200);
    let mut one_more = tokio::net::TcpStream::connect(addr).await.unwrap();
    assert!(until_closed(&mut one_more).await.starts_with("HTTP/1.1 503"));
    drop(held);
}

#[tokio::test]
async fn idle_connections_from_one_client_leave_catalogue_serve_answering() {
    let server = CatalogueServer::launch(
        &[fixtures().as_os_str()],
        &[("TOOLGATE_HTTP_HEADER_TIMEOUT_MS", "600000")],
    )
    .await;
    survives_idle_connections(&server.host, "/api/health").await;
}

#[tokio::test]
async fn idle_connections_from_one_client_leave_the_mcp_server_answering() {
    let gate = crate::http::HttpGate::start(&[("TOOLGATE_HTTP_HEADER_TIMEOUT_MS", "600000")]).await;
    survives_idle_connections(gate.url.trim_end_matches("/mcp"), "/healthz").await;
}

#[tokio::test]
async fn a_connection_silent_past_the_header_timeout_is_closed_fresh_or_kept_alive() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let server =
        CatalogueServer::launch(&[fixtures().as_os_str()], &[("TOOLGATE_HTTP_HEADER_TIMEOUT_MS", "300")]).await;
    let addr = server.host.trim_start_matches("http://").to_owned();
    let mut silent = tokio::net::TcpStream::connect(&addr).await.unwrap();
    until_closed(&mut silent).await;

    let mut kept = tokio::net::TcpStream::connect(&addr).await.unwrap();
    kept.write_all(b"GET /healthz HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n")
        .await
        .unwrap();
    let mut first = [0u8; 12];
    kept.read_exact(&mut first).await.unwrap();
    assert_eq!(&first, b"HTTP/1.1 200");
    // Kept alive after its answer, then idle: closed too.
    until_closed(&mut kept).await;
}

#[tokio::test]
async fn both_servers_answer_health_and_readiness_probes() {
    let server = CatalogueServer::start(&fixtures()).await;
    let gate = crate::http::HttpGate::start(&[]).await;
    let http = reqwest::Client::new();
    for base in [server.host.clone(), gate.url.trim_end_matches("/mcp").to_owned()] {
        let answer = http.get(format!("{base}/healthz")).send().await.unwrap();
        assert_eq!(answer.status(), 200, "{base}/healthz");
        // Ready once the catalogue is loaded, which on a loaded machine may come after
        // the server listens: asked again until it is (bounded).
        let ready = async {
            loop {
                let answer = http.get(format!("{base}/readyz")).send().await.unwrap();
                if answer.status() == 200 {
                    break;
                }
                assert_eq!(answer.status(), 503, "{base}/readyz: {answer:?}");
                tokio::task::yield_now().await;
            }
        };
        tokio::time::timeout(std::time::Duration::from_secs(60), ready)
            .await
            .unwrap_or_else(|_| panic!("{base}/readyz never answered 200"));
    }
}

#[tokio::test]
async fn readiness_waits_for_the_catalogue_and_health_does_not() {
    // A catalogue API that accepts connections and never answers: no snapshot can be
    // built, so the server is alive but not ready.
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let api = format!("http://{}", silent.local_addr().unwrap());
    let gate = crate::http::HttpGate::start(&[("TOOLGATE_API_URL", &api)]).await;
    let base = gate.url.trim_end_matches("/mcp").to_owned();
    let http = reqwest::Client::new();
    assert_eq!(http.get(format!("{base}/healthz")).send().await.unwrap().status(), 200);
    assert_eq!(http.get(format!("{base}/readyz")).send().await.unwrap().status(), 503);
    drop(silent);
}
