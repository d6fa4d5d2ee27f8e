//! A replica of a fleet (`TOOLGATE_REDIS`): readiness follows its Redis, which it loses
//! and finds again by itself; a Redis URL it cannot use stops it at start, naming the
//! setting. Real `redis-server` children, real binary.

use std::time::Duration;

use crate::http::HttpGate;
use crate::redis_server::{RedisServer, eventually, prefix};
use crate::util::command;

/// `/readyz` and `/metrics` of the gateway at `mcp_url` (`http://…/mcp`).
async fn probe(http: &reqwest::Client, mcp_url: &str, path: &str) -> (u16, String) {
    let url = mcp_url.replace("/mcp", path);
    match http.get(url).send().await {
        Ok(answer) => (answer.status().as_u16(), answer.text().await.unwrap_or_default()),
        Err(e) => (0, e.to_string()),
    }
}

#[tokio::test]
async fn a_replica_is_not_ready_while_its_redis_is_down_and_recovers_by_itself() {
    let mut redis = RedisServer::start().await;
    let url = redis.url();
    let prefix = prefix("ready");
    let gate = HttpGate::start(&[("TOOLGATE_REDIS", &url), ("TOOLGATE_REDIS_PREFIX", &prefix)]).await;
    let http = reqwest::Client::new();
    let within = Duration::from_secs(15);
    assert!(
        eventually(within, || async { probe(&http, &gate.url, "/readyz").await.0 == 200 }).await,
        "ready once Redis answers: {:?}",
        probe(&http, &gate.url, "/readyz").await
    );
    let (_, metrics) = probe(&http, &gate.url, "/metrics").await;
    assert!(metrics.contains("toolgate_redis_up 1"), "{metrics}");

    redis.stop().await;
    assert!(
        eventually(within, || async { probe(&http, &gate.url, "/readyz").await.0 == 503 }).await,
        "not ready without Redis"
    );
    let (_, why) = probe(&http, &gate.url, "/readyz").await;
    assert!(
        why.contains(&format!("Redis at {url}")) && why.contains("unreachable"),
        "{why}"
    );
    let (_, metrics) = probe(&http, &gate.url, "/metrics").await;
    assert!(metrics.contains("toolgate_redis_up 0"), "{metrics}");
    let errors = metrics
        .lines()
        .find_map(|l| l.strip_prefix("toolgate_redis_errors_total "))
        .and_then(|n| n.trim().parse::<u64>().ok());
    assert!(errors.is_some_and(|n| n > 0), "{metrics}");
    assert_eq!(probe(&http, &gate.url, "/healthz").await.0, 200, "alive all the same");

    redis.restart().await;
    assert!(
        eventually(within, || async { probe(&http, &gate.url, "/readyz").await.0 == 200 }).await,
        "ready again once Redis is back, with no restart"
    );
    let (_, metrics) = probe(&http, &gate.url, "/metrics").await;
    assert!(metrics.contains("toolgate_redis_up 1"), "{metrics}");
}

#[tokio::test]
async fn a_redis_url_it_cannot_use_stops_the_server_naming_the_setting_and_no_password() {
    let dir = tempfile::tempdir().unwrap();
    for (url, prefix) in [
        ("http://app:hunter2@127.0.0.1:6379", ""),
        ("redis://127.0.0.1:6379/0", "has space"),
    ] {
        let out = command(
            dir.path(),
            &[("TOOLGATE_REDIS", url), ("TOOLGATE_REDIS_PREFIX", prefix)],
        )
        .args(["--http", "127.0.0.1:0"])
        .output()
        .await
        .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{url}: {stderr}");
        assert!(stderr.contains("TOOLGATE_REDIS"), "{url}: {stderr}");
        assert!(!stderr.contains("hunter2"), "{stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
}
