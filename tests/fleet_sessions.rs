//! A fleet's MCP sessions (`TOOLGATE_REDIS`): a session made on one replica is served by
//! every other (restored there from Redis, with its history), belongs to its owner on
//! every replica, counts against its principal's cap across the fleet, and a `DELETE` on
//! one replica ends it on all. While Redis is down a request naming a session is refused
//! as retryable. Three real `toolgate --http` replicas, real Redis.

use std::time::Duration;

use serde_json::{Value, json};

use crate::access::new_key;
use crate::http::{HttpGate, Session, post};
use crate::redis_server::{MACHINE, RedisServer, eventually, prefix};

/// `n` `toolgate --http` replicas sharing `redis` under `prefix`, with `env` on top.
pub async fn gates(n: usize, redis: &str, prefix: &str, env: &[(&str, &str)]) -> Vec<HttpGate> {
    let mut all = Vec::new();
    for _ in 0..n {
        let mut env = env.to_vec();
        env.extend([("TOOLGATE_REDIS", redis), ("TOOLGATE_REDIS_PREFIX", prefix)]);
        all.push(HttpGate::start(&env).await);
    }
    all
}

/// A client sending `Authorization: Bearer KEY`.
fn keyed(key: &str) -> reqwest::Client {
    let mut headers = reqwest::header::HeaderMap::new();
    headers.insert("authorization", format!("Bearer {key}").parse().unwrap());
    reqwest::Client::builder().default_headers(headers).build().unwrap()
}

/// The status of a `ping` in session `id` sent by `http` to `url`.
async fn ping_status(http: &reqwest::Client, url: &str, id: &str) -> u16 {
    let ping = json!({"jsonrpc": "2.0", "id": 7, "method": "ping"});
    post(http, url, Some(id), &ping).await.status().as_u16()
}

#[tokio::test]
async fn a_session_is_served_by_every_replica_and_owned_on_each() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("keys.json");
    let alice = new_key(&file, "run,search", "alice").await;
    let bob = new_key(&file, "run,search", "bob").await;
    let prefix = prefix("sessions");
    let fleet = gates(
        3,
        MACHINE,
        &prefix,
        &[
            ("TOOLGATE_KEYS_FILE", file.to_str().unwrap()),
            ("TOOLGATE_HTTP_SESSION_IDLE_MS", "60000"),
            ("TOOLGATE_HTTP_MAX_SESSIONS_PER_PRINCIPAL", "2"),
        ],
    )
    .await;
    let mut hers = Session::open_keyed(&fleet[0].url, &alice).await;
    let bobs = keyed(&bob);

    // Bob names her session on a replica that has never seen it: refused, and it is not
    // restored there on his say.
    assert_eq!(ping_status(&bobs, &fleet[1].url, &hers.id).await, 403);
    // Each replica serves her session, one run on each, one numbering.
    let mut ran = Vec::new();
    for gate in &fleet {
        hers.url = gate.url.clone();
        let run = hers
            .call(
                "toolgate",
                json!({"command": "run", "slug": "base64-codec", "params": {"mode": "encode", "input": "hi"}}),
            )
            .await;
        assert_eq!(run["success"], true, "{}: {run}", gate.url);
        ran.push(run["run_id"].as_str().unwrap_or_default().to_owned());
    }
    assert_eq!(
        ran,
        ["r1", "r2", "r3"],
        "one session, one numbering, whichever replica ran it"
    );
    let history = hers.call("toolgate", json!({"command": "history"})).await;
    let listed: Vec<&str> = history["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    assert_eq!(listed, ["r3", "r2", "r1"], "{history}");
    // Restored on every replica, still hers on every one, Bob refused on each for every
    // method.
    for gate in &fleet {
        assert_eq!(ping_status(&bobs, &gate.url, &hers.id).await, 403, "{}", gate.url);
        let stream = bobs
            .get(&gate.url)
            .header("accept", "text/event-stream")
            .header("mcp-session-id", &hers.id)
            .header("mcp-protocol-version", "2025-11-25")
            .send()
            .await
            .unwrap();
        assert_eq!(stream.status(), 403, "GET on {}", gate.url);
    }

    // Her cap of 2 counts across the fleet: a second session on another replica, and a
    // third refused on the last.
    let _second = Session::open_keyed(&fleet[1].url, &alice).await;
    let third = post(&keyed(&alice), &fleet[2].url, None, &initialize()).await;
    assert_eq!(third.status(), 503, "{third:?}");
    assert!(third.headers().contains_key("retry-after"));
    assert!(third.text().await.unwrap().contains("of one caller"));
    // Bob still gets his own.
    let mut his = Session::open_keyed(&fleet[2].url, &bob).await;
    assert!(his.request("ping", json!({})).await["result"].is_object());

    // The session lives in Redis as long as it may idle.
    let mut redis = redis::Client::open(MACHINE)
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    let life: i64 = redis::cmd("PTTL")
        .arg(format!("{prefix}session:{}", hers.id))
        .query_async(&mut redis)
        .await
        .unwrap();
    assert!((1..=60_000).contains(&life), "{life}");

    // Bob cannot end it; she ends it on one replica and it is gone on all three.
    let delete = |http: &reqwest::Client, url: &str| {
        http.delete(url)
            .header("mcp-session-id", &hers.id)
            .header("mcp-protocol-version", "2025-11-25")
            .send()
    };
    assert_eq!(delete(&bobs, &fleet[0].url).await.unwrap().status(), 403);
    assert_eq!(delete(&hers.http, &fleet[2].url).await.unwrap().status(), 200);
    for gate in &fleet {
        assert_eq!(ping_status(&hers.http, &gate.url, &hers.id).await, 404, "{}", gate.url);
    }
    // Ended, it no longer counts: a new session of hers is admitted.
    let _again = Session::open_keyed(&fleet[0].url, &alice).await;
}

#[tokio::test]
async fn while_redis_is_down_a_session_request_is_refused_as_retryable() {
    let mut redis = RedisServer::start().await;
    let prefix = prefix("sessions-down");
    let fleet = gates(1, &redis.url(), &prefix, &[]).await;
    let mut session = Session::open(&fleet[0].url).await;
    assert!(session.request("ping", json!({})).await["result"].is_object());
    redis.stop().await;
    let http = reqwest::Client::new();
    let ping = json!({"jsonrpc": "2.0", "id": 7, "method": "ping"});
    let answer = post(&http, &fleet[0].url, Some(&session.id), &ping).await;
    assert_eq!(answer.status(), 503);
    assert!(answer.headers().contains_key("retry-after"));
    let text = answer.text().await.unwrap();
    assert!(text.contains("SHARED_STATE_UNAVAILABLE"), "{text}");
    let fresh = post(&http, &fleet[0].url, None, &initialize()).await;
    assert_eq!(fresh.status(), 503, "no session is made on one replica's say");
    assert!(fresh.text().await.unwrap().contains("SHARED_STATE_UNAVAILABLE"));
    // Redis back (empty: it kept nothing), the replica makes sessions again by itself.
    redis.restart().await;
    let url = fleet[0].url.clone();
    assert!(
        eventually(Duration::from_secs(15), || async {
            post(&http, &url, None, &initialize()).await.status() == 200
        })
        .await
    );
}

fn initialize() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "toolgate-tests", "version": "1"}
    }})
}

#[tokio::test]
async fn a_repl_started_on_one_replica_is_named_as_elsewhere_on_another() {
    let standin = crate::nyxilum::standin().display().to_string();
    let prefix = prefix("sessions-repl");
    let fleet = gates(
        2,
        MACHINE,
        &prefix,
        &[("TOOLGATE_RUNTIMES", "nyxilum"), ("NX_NODE_PATH", &standin)],
    )
    .await;
    let mut session = Session::open(&fleet[0].url).await;
    let started = session.call("nyxilum_repl_start", json!({})).await;
    let id = started["sessionId"]
        .as_str()
        .unwrap_or_else(|| panic!("{started}"))
        .to_owned();
    // The same MCP session on the other replica: the REPL process is not there, and the
    // error says why and what an operator does about it.
    session.url = fleet[1].url.clone();
    let there = session
        .call("nyxilum_repl_eval", json!({"session_id": id, "code": "print(1)"}))
        .await;
    assert_eq!(there["code"], "SESSION_NOT_FOUND", "{there}");
    let why = there["error"].as_str().unwrap_or_default();
    assert!(
        why.contains("another toolgate process") && why.contains("affinity on Mcp-Session-Id"),
        "{there}"
    );
    let stop = session.call("nyxilum_repl_stop", json!({"session_id": id})).await;
    assert_eq!(stop["code"], "SESSION_NOT_FOUND", "not 'already gone': {stop}");
    // An id no process made is still just unknown.
    let unknown = session
        .call(
            "nyxilum_repl_eval",
            json!({"session_id": "nx-unknown", "code": "print(1)"}),
        )
        .await;
    assert!(
        !unknown["error"]
            .as_str()
            .unwrap_or_default()
            .contains("another toolgate process"),
        "{unknown}"
    );
    // Back on its own replica, the REPL is there, its state intact.
    session.url = fleet[0].url.clone();
    let own = session
        .call("nyxilum_repl_eval", json!({"session_id": id, "code": "print(1)"}))
        .await;
    assert_eq!(own["output"], "1\n", "{own}");
    session.call("nyxilum_repl_stop", json!({"session_id": id})).await;
}
