//! What an operator sees: `/metrics` in the Prometheus text format counting what the
//! test did (requests by route and status, runs by outcome, rate-limit refusals), read
//! only by `admin` (or loopback callers without keys), and one access log line per
//! request whose request id is the `x-request-id` answered and the run's history entry.

use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};

use crate::access::new_key;
use crate::http::{Session, post};
use crate::util::{CatalogueServer, command, fixtures};

/// The value of the sample `name{labels}` in Prometheus text `text`, after checking that
/// every line is a comment, a sample or the closing `# EOF`.
fn sample(text: &str, series: &str) -> Option<f64> {
    assert!(text.ends_with("# EOF\n"), "{text}");
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let (name, value) = line.rsplit_once(' ').unwrap_or_else(|| panic!("not a sample: {line}"));
        assert!(value.parse::<f64>().is_ok(), "not a number: {line}");
        let bare = name.split('{').next().unwrap_or_default();
        assert!(
            bare.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'),
            "not a metric name: {line}"
        );
    }
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

#[tokio::test]
async fn metrics_count_requests_runs_and_refusals_and_parse_as_prometheus_text() {
    let server = CatalogueServer::launch(&[fixtures().as_os_str()], &[("TOOLGATE_ANONYMOUS_PER_MINUTE", "1")]).await;
    let http = reqwest::Client::new();
    let run = format!("{}/api/tools/echo/run", server.host);
    let body = json!({"params": {"message": "m"}});
    assert_eq!(http.post(&run).json(&body).send().await.unwrap().status(), 200);
    assert_eq!(http.post(&run).json(&body).send().await.unwrap().status(), 429);
    let answer = http.get(format!("{}/metrics", server.host)).send().await.unwrap();
    assert_eq!(answer.status(), 200, "loopback callers read it when there are no keys");
    let kind = answer.headers()["content-type"].to_str().unwrap().to_owned();
    assert!(kind.starts_with("application/openmetrics-text"), "{kind}");
    let text = answer.text().await.unwrap();
    let route = r#"route="/api/tools/{slug}/run",method="POST""#;
    assert_eq!(
        sample(
            &text,
            &format!(r#"toolgate_http_requests_total{{{route},status="200"}}"#)
        ),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        sample(
            &text,
            &format!(r#"toolgate_http_requests_total{{{route},status="429"}}"#)
        ),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        sample(
            &text,
            &format!(r#"toolgate_http_request_duration_seconds_count{{{route},status="200"}}"#)
        ),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        sample(&text, r#"toolgate_runs_total{family="catalogue",code="ok"}"#),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        sample(&text, r#"toolgate_runs_total{family="catalogue",code="RATE_LIMITED"}"#),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        sample(&text, r#"toolgate_rate_limited_total{limit="runs"}"#),
        Some(1.0),
        "{text}"
    );
    // The catalogue was built once, with as many tools as the API lists.
    let listed: Value = http
        .get(format!("{}/api/tools", server.host))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let tools = listed["tools"].as_array().map(Vec::len).unwrap() as f64;
    assert_eq!(
        sample(&text, r#"toolgate_catalogue_refreshes_total{outcome="built"}"#),
        Some(1.0),
        "{text}"
    );
    assert_eq!(sample(&text, "toolgate_catalogue_tools"), Some(tools), "{text}");
    // The worker pool: its places (the runs at once that the memory budget holds, each
    // with its heap and fetch allowance), nothing running or waiting once the run
    // answered, and at least the worker that ran it started.
    use toolgate::limits::{FETCH_RUN_BYTES, JS_CONCURRENT_RUNS, JS_HEAP_BYTES, JS_TOTAL_HEAP_BYTES};
    let places = JS_CONCURRENT_RUNS.min(JS_TOTAL_HEAP_BYTES / (JS_HEAP_BYTES + FETCH_RUN_BYTES)) as f64;
    assert_eq!(sample(&text, "toolgate_js_places"), Some(places), "{text}");
    assert_eq!(sample(&text, "toolgate_js_running"), Some(0.0), "{text}");
    assert_eq!(sample(&text, "toolgate_js_waiting"), Some(0.0), "{text}");
    assert!(
        sample(&text, "toolgate_js_workers_started_total").is_some_and(|n| n >= 1.0),
        "{text}"
    );
    assert!(sample(&text, "toolgate_js_workers_idle").is_some(), "{text}");
}

#[tokio::test]
async fn with_keys_only_admin_reads_the_metrics() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("keys.json");
    let runner = new_key(&file, "run,search", "runner").await;
    let operator = new_key(&file, "admin", "operator").await;
    let server = CatalogueServer::launch(
        &[fixtures().as_os_str()],
        &[("TOOLGATE_KEYS_FILE", file.to_str().unwrap())],
    )
    .await;
    let http = reqwest::Client::new();
    let url = format!("{}/metrics", server.host);
    assert_eq!(http.get(&url).send().await.unwrap().status(), 401);
    assert_eq!(http.get(&url).bearer_auth(&runner).send().await.unwrap().status(), 403);
    let read = http.get(&url).bearer_auth(&operator).send().await.unwrap();
    assert_eq!(read.status(), 200);
    assert!(read.text().await.unwrap().contains("toolgate_http_requests_total"));
}

#[tokio::test]
async fn each_request_has_one_json_access_log_line_whose_id_is_in_the_runs_history() {
    let dir = tempfile::tempdir().unwrap();
    let catalogue = fixtures().display().to_string();
    let mut cmd = command(
        dir.path(),
        &[("TOOLGATE_CATALOGUE", &catalogue), ("TOOLGATE_LOG_FORMAT", "json")],
    );
    cmd.args(["--http", "127.0.0.1:0"])
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .stdin(Stdio::null());
    let mut child = cmd.spawn().unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let url = tokio::time::timeout(Duration::from_secs(30), async {
        while let Some(line) = lines.next_line().await.unwrap() {
            if let Some(rest) = line.split(" at ").nth(1)
                && rest.starts_with("http://")
            {
                return rest.trim().to_owned();
            }
        }
        panic!("toolgate --http exited without announcing its address")
    })
    .await
    .expect("toolgate --http starts");

    let session = Session::open(&url).await;
    let call = json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
        "params": {"name": "echo", "arguments": {"message": "m"}}});
    let answer = post(&session.http, &url, Some(&session.id), &call).await;
    assert_eq!(answer.status(), 200);
    let id = answer.headers()["x-request-id"].to_str().unwrap().to_owned();
    assert_eq!(id.len(), 16, "{id}");
    // The answer's stream ends once the call has answered (and its run is recorded).
    let body = answer.text().await.unwrap();
    assert!(body.contains("\"success\":true"), "{body}");
    let mut session = session;
    let history = session.call("toolgate", json!({"command": "history"})).await;
    assert_eq!(history["runs"][0]["request_id"], id.as_str(), "{history}");

    let logged = tokio::time::timeout(Duration::from_secs(30), async {
        while let Some(line) = lines.next_line().await.unwrap() {
            let Ok(entry) = serde_json::from_str::<Value>(&line) else {
                continue;
            };
            if entry["target"] == "toolgate_access" && entry["fields"]["request_id"] == id.as_str() {
                return entry;
            }
        }
        panic!("no access log line for the request")
    })
    .await
    .expect("the request is logged");
    assert_eq!(logged["fields"]["status"], 200, "{logged}");
    assert_eq!(logged["fields"]["method"], "POST", "{logged}");
    assert_eq!(logged["fields"]["principal"], "anonymous", "{logged}");
    // Milliseconds to the microsecond, not every digit of a float.
    let ms = logged["fields"]["ms"].to_string();
    let decimals = ms.split_once('.').map_or(0, |(_, d)| d.len());
    assert!(logged["fields"]["ms"].is_f64() && decimals <= 3, "{logged}");
    child.kill().await.unwrap();
}
