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
async fn a_password_file_authenticates_and_a_wrong_password_is_not_ready_and_never_shown() {
    let redis = RedisServer::start_with(&["--requirepass", "pa55-word"]).await;
    let url = redis.url();
    let dir = tempfile::tempdir().unwrap();
    let (right, wrong) = (dir.path().join("right"), dir.path().join("wrong"));
    std::fs::write(&right, "pa55-word\n").unwrap();
    std::fs::write(&wrong, "not-the-word\n").unwrap();
    let http = reqwest::Client::new();
    let within = Duration::from_secs(15);
    let prefix = prefix("password");
    let (right, wrong) = (right.display().to_string(), wrong.display().to_string());
    let env = |path: &str| {
        [
            ("TOOLGATE_REDIS", url.clone()),
            ("TOOLGATE_REDIS_PREFIX", prefix.clone()),
            ("TOOLGATE_REDIS_PASSWORD_FILE", path.to_owned()),
        ]
    };
    let right_env = env(&right);
    let gate = HttpGate::start(&right_env.each_ref().map(|(k, v)| (*k, v.as_str()))).await;
    assert!(
        eventually(within, || async { probe(&http, &gate.url, "/readyz").await.0 == 200 }).await,
        "ready with the password from the file: {:?}",
        probe(&http, &gate.url, "/readyz").await
    );
    drop(gate);
    let wrong_env = env(&wrong);
    let gate = HttpGate::start(&wrong_env.each_ref().map(|(k, v)| (*k, v.as_str()))).await;
    let refused = || async {
        let (status, why) = probe(&http, &gate.url, "/readyz").await;
        status == 503 && why.contains("authentication failed")
    };
    assert!(
        eventually(within, refused).await,
        "not ready, saying why: {:?}",
        probe(&http, &gate.url, "/readyz").await
    );
    let (_, why) = probe(&http, &gate.url, "/readyz").await;
    assert!(
        why.contains(&url) && !why.contains("not-the-word") && !why.contains("pa55"),
        "{why}"
    );
}

/// Runs `openssl` with `args` in `dir`, which must succeed.
fn openssl(dir: &std::path::Path, args: &[&str]) {
    let out = std::process::Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("openssl is installed");
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[tokio::test]
async fn rediss_checks_the_servers_certificate_against_the_trusted_roots() {
    // A CA, and a certificate for 127.0.0.1 it signed.
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let subject = |cn: &str| format!("/CN={cn}");
    openssl(
        d,
        &[
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            "ca.key",
            "-out",
            "ca.pem",
            "-days",
            "1",
            "-subj",
            &subject("toolgate test CA"),
        ],
    );
    openssl(
        d,
        &[
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            "server.key",
            "-out",
            "server.csr",
            "-subj",
            &subject("127.0.0.1"),
        ],
    );
    std::fs::write(d.join("san.ext"), "subjectAltName=IP:127.0.0.1\n").unwrap();
    openssl(
        d,
        &[
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            "server.pem",
            "-days",
            "1",
            "-extfile",
            "san.ext",
        ],
    );
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let _redis = tokio::process::Command::new("redis-server")
        .current_dir(d)
        .args(["--bind", "127.0.0.1", "--port", "0", "--tls-port", &port.to_string()])
        .args([
            "--tls-cert-file",
            "server.pem",
            "--tls-key-file",
            "server.key",
            "--tls-ca-cert-file",
            "ca.pem",
        ])
        .args(["--tls-auth-clients", "no", "--save", "", "--appendonly", "no"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("redis-server is installed");
    let url = format!("rediss://127.0.0.1:{port}/0");
    let prefix = prefix("tls");
    let ca = d.join("ca.pem").display().to_string();
    let http = reqwest::Client::new();
    let within = Duration::from_secs(15);
    // Trusting the CA (rustls reads SSL_CERT_FILE for its roots): ready over TLS.
    let trusted = HttpGate::start(&[
        ("TOOLGATE_REDIS", &url),
        ("TOOLGATE_REDIS_PREFIX", &prefix),
        ("SSL_CERT_FILE", &ca),
    ])
    .await;
    assert!(
        eventually(within, || async {
            probe(&http, &trusted.url, "/readyz").await.0 == 200
        })
        .await,
        "ready over TLS with the CA trusted: {:?}",
        probe(&http, &trusted.url, "/readyz").await
    );
    // The system's roots do not know that CA: the certificate is refused, and it says so.
    let untrusted = HttpGate::start(&[("TOOLGATE_REDIS", &url), ("TOOLGATE_REDIS_PREFIX", &prefix)]).await;
    let refused = || async {
        let (status, why) = probe(&http, &untrusted.url, "/readyz").await;
        status == 503 && why.contains("unreachable") && why.to_lowercase().contains("certificate")
    };
    assert!(
        eventually(within, refused).await,
        "not ready with an unknown issuer: {:?}",
        probe(&http, &untrusted.url, "/readyz").await
    );
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
