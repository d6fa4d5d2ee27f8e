//! A fleet session's history in Redis (`TOOLGATE_REDIS`): its runs numbered there, its
//! records pushed there redacted and capped before they leave the process (the newest 50
//! kept, the keys living as long as the session may idle), and `history` answering what
//! Redis holds — a run another replica recorded included, numbered in the same sequence.
//! Real binary, the machine's Redis.

use serde_json::{Value, json};

use crate::http::{HttpGate, Session};
use crate::redis_server::{MACHINE, prefix};

/// A replica on the machine's Redis under a prefix of its own (`name`), a session on it
/// idling at most a minute, and a connection to that Redis: the prefix, the replica, the
/// session and the connection.
async fn replica(name: &str) -> (String, HttpGate, Session, redis::aio::MultiplexedConnection) {
    let prefix = prefix(name);
    let gate = HttpGate::start(&[
        ("TOOLGATE_REDIS", MACHINE),
        ("TOOLGATE_REDIS_PREFIX", &prefix),
        ("TOOLGATE_HTTP_SESSION_IDLE_MS", "60000"),
    ])
    .await;
    let session = Session::open(&gate.url).await;
    let redis = redis::Client::open(MACHINE)
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    (prefix, gate, session, redis)
}

#[tokio::test]
async fn a_fleet_sessions_history_is_numbered_kept_and_read_in_redis() {
    let (prefix, _gate, mut session, mut redis) = replica("history").await;
    let base = format!("{prefix}history:{}:", session.id);
    let secret = json!({"mode": "encode", "input": "hi", "api_key": "sk-live-0123456789"});
    for _ in 0..3 {
        session.call("base64-codec", secret.clone()).await;
    }
    let lines: Vec<String> = redis::cmd("LRANGE")
        .arg(format!("{base}runs"))
        .arg(0)
        .arg(-1)
        .query_async(&mut redis)
        .await
        .unwrap();
    let ids: Vec<String> = lines
        .iter()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["id"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(ids, ["r1", "r2", "r3"]);
    assert!(
        lines.iter().all(|l| !l.contains("sk-live-0123456789")),
        "redacted before it left the process: {lines:?}"
    );
    let life: i64 = redis::cmd("PTTL")
        .arg(format!("{base}runs"))
        .query_async(&mut redis)
        .await
        .unwrap();
    assert!(
        (1..=60_000).contains(&life),
        "lives as long as the session may idle: {life}"
    );

    // Another replica's run of this session: numbered in the same sequence, recorded in
    // the same list. This replica's history answers it, and numbers its next run after it.
    let n: u64 = redis::cmd("INCR")
        .arg(format!("{base}next"))
        .query_async(&mut redis)
        .await
        .unwrap();
    assert_eq!(n, 4);
    let elsewhere = json!({"id": "r4", "slug": "text-stats", "status": "ok", "duration_ms": 2,
        "started_at": "2026-01-01T00:00:00.000Z", "input": {}, "result": {}, "truncated": false,
        "principal": "anonymous", "request_id": null, "parent_run_id": null});
    let _: i64 = redis::cmd("RPUSH")
        .arg(format!("{base}runs"))
        .arg(elsewhere.to_string())
        .query_async(&mut redis)
        .await
        .unwrap();
    let index = session.call("toolgate", json!({"command": "history"})).await;
    let listed: Vec<&str> = index["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    assert_eq!(listed, ["r4", "r3", "r2", "r1"], "{index}");
    session.call("base64-codec", secret.clone()).await;
    let index = session.call("toolgate", json!({"command": "history"})).await;
    assert_eq!(index["runs"][0]["id"], "r5", "{index}");
    let shown = session
        .call("toolgate", json!({"command": "history", "show": "r4"}))
        .await;
    assert_eq!(shown["run"]["slug"], "text-stats", "{shown}");

    // The newest 50 are kept.
    for _ in 0..50 {
        session
            .call("base64-codec", json!({"mode": "encode", "input": "x"}))
            .await;
    }
    let kept: u64 = redis::cmd("LLEN")
        .arg(format!("{base}runs"))
        .query_async(&mut redis)
        .await
        .unwrap();
    assert_eq!(kept, 50);
    let index = session.call("toolgate", json!({"command": "history"})).await;
    assert_eq!(index["runs"].as_array().unwrap().len(), 50);
    assert_eq!(index["runs"][0]["id"], "r55", "{index}");
    let _: i64 = redis::cmd("DEL")
        .arg(format!("{base}runs"))
        .arg(format!("{base}next"))
        .arg(format!("{base}began"))
        .query_async(&mut redis)
        .await
        .unwrap();
}

/// The exchanges with Redis the gateway at `mcp_url` has made, from its `/metrics`.
async fn exchanges(http: &reqwest::Client, mcp_url: &str) -> u64 {
    let text = http
        .get(mcp_url.replace("/mcp", "/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix("toolgate_redis_exchanges_total "))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("toolgate_redis_exchanges_total in {text}"))
}

#[tokio::test]
async fn a_tool_call_makes_three_round_trips_and_its_answer_comes_after_its_record_and_place_reached_redis() {
    let (prefix, gate, mut session, mut redis) = replica("trips").await;
    let http = reqwest::Client::new();
    let base = format!("{prefix}history:{}:", session.id);
    let calls = 10u64;
    let began = std::time::Instant::now();
    let before = exchanges(&http, &gate.url).await;
    for n in 1..=calls {
        session
            .call("base64-codec", json!({"mode": "encode", "input": "hi"}))
            .await;
        // The answer went out only once Redis held the run's record and had its place
        // back: they travelled with the answer's SSE event.
        let kept: u64 = redis::cmd("LLEN")
            .arg(format!("{base}runs"))
            .query_async(&mut redis)
            .await
            .unwrap();
        assert_eq!(kept, n, "the record of call {n} is in Redis when its answer arrives");
        let places: Vec<String> = redis::cmd("KEYS")
            .arg(format!("{prefix}places:*"))
            .query_async(&mut redis)
            .await
            .unwrap();
        for key in places {
            let held: u64 = redis::cmd("ZCARD").arg(&key).query_async(&mut redis).await.unwrap();
            assert_eq!(held, 0, "call {n}'s place is given back when its answer arrives");
        }
    }
    let after = exchanges(&http, &gate.url).await;
    // Three a call (the request with its session's renewal; the run's bucket, number and
    // place; the answer's event with the record and the place given back), besides the
    // watcher's ping each second and a few sent on their own when a loaded machine holds
    // the answer back longer than the writes wait (`REDIS_LATER_WAIT`): four a call
    // would be 40.
    let pings = began.elapsed().as_secs() + 2;
    let made = after - before;
    assert!(
        made <= 3 * calls + pings + 3,
        "{made} exchanges with Redis for {calls} calls (pings at most {pings})"
    );
    assert!(made >= 3 * calls, "{made} exchanges for {calls} calls: each is counted");
    let mut keys: Vec<String> = redis::cmd("KEYS")
        .arg(format!("{prefix}*"))
        .query_async(&mut redis)
        .await
        .unwrap();
    keys.push(format!("{prefix}none"));
    let _: i64 = redis::cmd("DEL").arg(&keys).query_async(&mut redis).await.unwrap();
}
