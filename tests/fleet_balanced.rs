//! A fleet behind a real load balancer: three `catalogue serve` replicas sharing the
//! machine's Redis, behind nginx in round-robin with no stickiness. Every replica takes
//! a share of the requests, yet the principal's run rate is admitted once across them;
//! one replica killed, nginx passes its requests to the others and nothing fails.

use serde_json::{Value, json};

use crate::fleet_rates::replicas;
use crate::nginx::Nginx;
use crate::redis_server::{MACHINE, prefix};

/// Requests to `route` (`/run`, `/mcp`) the server at `host` answered, from its `/metrics`.
pub async fn answered_on(http: &reqwest::Client, host: &str, route: &str) -> u64 {
    let text = http
        .get(format!("{host}/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let label = format!("{route}\"");
    text.lines()
        .filter(|l| l.starts_with("toolgate_http_requests_total{") && l.contains(&label))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
        .sum()
}

/// Requests to the run route `server` answered, from its `/metrics`.
async fn runs_answered(http: &reqwest::Client, host: &str) -> u64 {
    answered_on(http, host, "/run").await
}

#[tokio::test]
async fn behind_round_robin_nginx_three_replicas_admit_the_rate_once_and_outlive_one_of_them() {
    let prefix = prefix("nginx");
    let mut fleet = replicas(3, MACHINE, &prefix, &[("TOOLGATE_ANONYMOUS_PER_MINUTE", "4")]).await;
    let upstreams: Vec<String> = fleet
        .iter()
        .map(|s| s.host.trim_start_matches("http://").to_owned())
        .collect();
    let nginx = Nginx::start(&upstreams).await;
    let http = reqwest::Client::new();
    let run = || {
        http.post(format!("{}/api/tools/echo/run", nginx.url))
            .json(&json!({"params": {"message": "m"}}))
            .send()
    };
    let mut statuses = Vec::new();
    for _ in 0..9 {
        let answer = run().await.unwrap();
        let status = answer.status().as_u16();
        if status == 429 {
            let body: Value = answer.json().await.unwrap();
            assert_eq!(body["code"], "RATE_LIMITED", "{body}");
        }
        statuses.push(status);
    }
    assert_eq!(
        statuses,
        [200, 200, 200, 200, 429, 429, 429, 429, 429],
        "4 a minute across the three"
    );
    for server in &fleet {
        let answered = runs_answered(&http, &server.host).await;
        assert!(answered >= 1, "round-robin gave {} none of the runs", server.host);
    }
    // One replica dies: the balancer passes its share to the others, and every request
    // is answered.
    fleet[1].kill().await;
    for _ in 0..6 {
        let listed = http.get(format!("{}/api/tools", nginx.url)).send().await.unwrap();
        assert_eq!(listed.status(), 200);
    }
    let refused = run().await.unwrap();
    assert_eq!(
        refused.status(),
        429,
        "the survivors still hold the rate the three used up"
    );
}
