//! OAuth to an HTTP upstream through the real binary, against a real OAuth-protected MCP
//! server and authorization server on 127.0.0.1 (`tests/upstream/oauth_server.py`): before
//! a login, a call answers `UPSTREAM_UNAVAILABLE` telling the operator to run `toolgate
//! upstream login`; the login (discovery from the 401, dynamic registration, PKCE, the
//! browser played by this test) writes the tokens to an owner-only file; then calls go
//! through with the token, refreshed before it expires. No token issued ever shows on
//! the login's output or toolgate's stderr. The conformance suite's `auth/*` client
//! scenarios (`conformance.rs`) cover the rest of the specification.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Stdio;

use serde_json::json;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};

use crate::upstream::{WAIT, python, servers_file};
use crate::util::{Gate, command, expect_error, text};

/// The test's OAuth-protected server, running.
struct Protected {
    _child: tokio::process::Child,
    /// Its MCP endpoint.
    url: String,
}

impl Protected {
    /// Starts the server, which appends every token it issues to `issued`.
    async fn start(issued: &Path) -> Protected {
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/upstream/oauth_server.py");
        let mut child = tokio::process::Command::new(python())
            .arg(script)
            .arg(issued)
            .stdout(Stdio::piped())
            .stdin(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let base = tokio::time::timeout(WAIT, lines.next_line())
            .await
            .expect("the OAuth test server starts")
            .unwrap()
            .expect("it prints its address");
        Protected {
            _child: child,
            url: format!("{base}/mcp"),
        }
    }
}

/// Runs `toolgate upstream login srv` as a person would, the browser played here: opens the
/// printed address, follows the authorization server's redirect to toolgate's loopback
/// listener. Its exit status and everything it printed.
async fn login(dir: &Path, env: &[(&str, &str)]) -> (bool, String) {
    let mut child = command(dir, env)
        .args(["upstream", "login", "srv"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut stderr = child.stderr.take().unwrap();
    let mut printed = String::new();
    let address = loop {
        let mut line = String::new();
        let read = tokio::time::timeout(WAIT, stdout.read_line(&mut line))
            .await
            .unwrap()
            .unwrap();
        printed.push_str(&line);
        if read == 0 {
            break None;
        }
        if let Some(address) = line.trim().strip_prefix("http://") {
            break Some(format!("http://{address}"));
        }
    };
    if let Some(address) = address {
        let browser = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap();
        let answer = browser.get(&address).send().await.unwrap();
        assert_eq!(answer.status(), 302, "{}", answer.text().await.unwrap());
        let back = answer.headers()["location"].to_str().unwrap().to_owned();
        let page = browser.get(&back).send().await.unwrap();
        assert_eq!(page.status(), 200);
    }
    let status = tokio::time::timeout(WAIT, child.wait()).await.unwrap().unwrap();
    let mut rest = String::new();
    stdout.read_to_string(&mut rest).await.unwrap();
    stderr.read_to_string(&mut rest).await.unwrap();
    printed.push_str(&rest);
    (status.success(), printed)
}

/// Every token the server issued.
fn issued(file: &Path) -> Vec<String> {
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

#[tokio::test]
async fn an_oauth_upstream_is_logged_in_to_once_and_then_called_with_refreshed_tokens() {
    let dir = tempfile::tempdir().unwrap();
    let issued_file = dir.path().join("issued");
    let server = Protected::start(&issued_file).await;
    let servers = servers_file(dir.path(), json!({"srv": {"url": server.url, "oauth": {}}}));
    let tokens = dir.path().join("state/upstream-tokens.json");
    let tokens_setting = tokens.display().to_string();
    let env = [
        ("TOOLGATE_UPSTREAMS", servers.as_str()),
        ("TOOLGATE_UPSTREAM_TOKENS", tokens_setting.as_str()),
        ("TOOLGATE_ADVERTISE", "all"),
    ];

    // Before a login: the server's 401 is answered by telling the operator what to do.
    let gate = Gate::start(&env).await;
    let r = gate.call("srv__whoami", json!({})).await;
    let said = expect_error(&r, "UPSTREAM_UNAVAILABLE")["error"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        said.contains("toolgate holds no token for it; run `toolgate upstream login srv`")
            && !said.contains("Transport"),
        "said in words, not the transport's: {said}"
    );
    gate.stop().await;

    let (ok, printed) = login(dir.path(), &env).await;
    assert!(ok, "{printed}");
    assert!(printed.contains("logged in to upstream \"srv\""), "{printed}");
    let mode = std::fs::metadata(&tokens).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "the tokens file is the owner's only");
    let at_login = issued(&issued_file);
    assert_eq!(at_login.len(), 2, "one access and one refresh token: {at_login:?}");
    let kept = std::fs::read_to_string(&tokens).unwrap();
    assert!(
        at_login.iter().all(|t| kept.contains(t.as_str())),
        "the tokens are kept in the file"
    );
    assert!(!std::fs::read_to_string(&servers).unwrap().contains("at-"));

    // The token expires at once: toolgate refreshes it before it sends it.
    let gate = Gate::start(&env).await;
    let r = gate.call("srv__whoami", json!({})).await;
    assert_ne!(r.is_error, Some(true), "{r:?}");
    let refreshes: u32 = text(&r).trim_start_matches("refreshes: ").trim().parse().unwrap();
    assert!(refreshes >= 1, "{}", text(&r));
    let stderr = gate.stop().await;
    let all = issued(&issued_file);
    assert!(all.len() > at_login.len());
    let kept = std::fs::read_to_string(&tokens).unwrap();
    assert!(
        !kept.contains(at_login[1].as_str()),
        "the rotated refresh token is replaced"
    );
    for token in &all {
        assert!(
            !printed.contains(token.as_str()),
            "the login printed a token:\n{printed}"
        );
        assert!(!stderr.contains(token.as_str()), "toolgate logged a token:\n{stderr}");
    }
}

#[tokio::test]
async fn a_tokens_file_others_may_read_is_refused_with_a_reason() {
    let dir = tempfile::tempdir().unwrap();
    let servers = servers_file(
        dir.path(),
        json!({"srv": {"url": "http://127.0.0.1:9/mcp", "oauth": {}}, "plain": {"command": "true"}}),
    );
    let tokens = dir.path().join("tokens.json");
    std::fs::write(&tokens, "{}").unwrap();
    std::fs::set_permissions(&tokens, std::fs::Permissions::from_mode(0o644)).unwrap();
    let tokens_setting = tokens.display().to_string();
    let env = [
        ("TOOLGATE_UPSTREAMS", servers.as_str()),
        ("TOOLGATE_UPSTREAM_TOKENS", tokens_setting.as_str()),
    ];
    let out = command(dir.path(), &env)
        .args(["upstream", "login", "srv"])
        .output()
        .await
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(said.contains("chmod 600") && !said.contains("panicked"), "{said}");
    let out = command(dir.path(), &env)
        .args(["upstream", "login", "plain"])
        .output()
        .await
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && said.contains("no \"oauth\""), "{said}");
}
