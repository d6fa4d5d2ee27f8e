//! Rate limits exact across a fleet (`TOOLGATE_REDIS`): three `catalogue serve`
//! replicas sharing the machine's Redis admit a principal's request and run rates between
//! them, not three times them, with the refusals one process gives (429, `Retry-After`,
//! `RATE_LIMITED`); a principal's runs at once are places any replica's run holds; and
//! while Redis is down a request is refused as retryable, never admitted on one replica's
//! say. Real binaries, real Redis.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::redis_server::{MACHINE, RedisServer, eventually, prefix};
use crate::util::{CatalogueServer, fixtures};

/// `n` `catalogue serve` replicas of the fixture catalogue sharing `redis` under `prefix`.
pub async fn replicas(n: usize, redis: &str, prefix: &str, env: &[(&str, &str)]) -> Vec<CatalogueServer> {
    let mut all = Vec::new();
    for _ in 0..n {
        let mut env = env.to_vec();
        env.extend([("TOOLGATE_REDIS", redis), ("TOOLGATE_REDIS_PREFIX", prefix)]);
        all.push(CatalogueServer::launch(&[fixtures().as_os_str()], &env).await);
    }
    all
}

/// Runs `echo` on `server`: its status and body.
async fn echo(http: &reqwest::Client, server: &CatalogueServer) -> (u16, Value, Option<String>) {
    let answer = http
        .post(format!("{}/api/tools/echo/run", server.host))
        .json(&json!({"params": {"message": "m"}}))
        .send()
        .await
        .unwrap();
    let status = answer.status().as_u16();
    let retry = answer
        .headers()
        .get("retry-after")
        .map(|v| v.to_str().unwrap().to_owned());
    (status, answer.json().await.unwrap_or(Value::Null), retry)
}

#[tokio::test]
async fn three_replicas_admit_a_principals_rates_between_them_not_three_times_them() {
    let prefix = prefix("rates");
    let fleet = replicas(
        3,
        MACHINE,
        &prefix,
        &[
            ("TOOLGATE_ANONYMOUS_PER_MINUTE", "3"),
            ("TOOLGATE_REQUESTS_PER_MINUTE", "6"),
        ],
    )
    .await;
    let http = reqwest::Client::new();
    // Five runs, one replica after another: three pass, whichever replica answers.
    let mut statuses = Vec::new();
    for i in 0..5 {
        let (status, body, retry) = echo(&http, &fleet[i % 3]).await;
        if status == 429 {
            assert_eq!(body["code"], "RATE_LIMITED", "{body}");
            assert_eq!(body["retryable"], true, "{body}");
            let wait: u64 = retry.expect("Retry-After").parse().unwrap();
            assert!((1..=20).contains(&wait), "a run every 20 s: {wait}");
        } else {
            assert_eq!(status, 200, "{body}");
        }
        statuses.push(status);
    }
    assert_eq!(statuses, [200, 200, 200, 429, 429]);
    // Each run was a request too: the sixth request passes, the seventh is refused.
    let list = |i: usize| http.get(format!("{}/api/tools", fleet[i].host)).send();
    assert_eq!(list(2).await.unwrap().status(), 200);
    let refused = list(0).await.unwrap();
    assert_eq!(refused.status(), 429);
    assert!(refused.headers().get("retry-after").is_some());
    let body: Value = refused.json().await.unwrap();
    assert_eq!(body["code"], "RATE_LIMITED", "{body}");
    assert!(
        body["error"].as_str().unwrap().contains("6 requests a minute"),
        "{body}"
    );
    // The probes are not counted, on any replica.
    for server in &fleet {
        let ready = http.get(format!("{}/readyz", server.host)).send().await.unwrap();
        assert_eq!(ready.status(), 200);
    }
}

#[tokio::test]
async fn a_run_on_one_replica_waits_for_the_place_a_run_on_another_holds() {
    let prefix = prefix("places");
    // The first replica's run holds the place for 3 s; the second waits up to 20 s for
    // a place (runs wait as long as their own deadline).
    let one = [("TOOLGATE_PRINCIPAL_CONCURRENT_RUNS", "1")];
    let mut fleet = replicas(1, MACHINE, &prefix, &[one[0], ("TOOLGATE_JS_TIMEOUT_MS", "3000")]).await;
    fleet.extend(replicas(1, MACHINE, &prefix, &[one[0], ("TOOLGATE_JS_TIMEOUT_MS", "20000")]).await);
    let http = reqwest::Client::new();
    // A run that holds its place until its deadline, on the first replica.
    let holder = {
        let (http, url) = (http.clone(), format!("{}/api/tools/never-settles/run", fleet[0].host));
        tokio::spawn(async move {
            let answer = http.post(url).json(&json!({"params": {}})).send().await.unwrap();
            let body: Value = answer.json().await.unwrap();
            (body, Instant::now())
        })
    };
    // Once its lease is in Redis, a run of the same principal on the other replica waits.
    let places = format!("{prefix}places:anonymous:127.0.0.1");
    let mut redis = redis::Client::open(MACHINE)
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    let held = eventually(Duration::from_secs(10), || {
        let (mut redis, places) = (redis.clone(), places.clone());
        async move {
            redis::cmd("ZCARD")
                .arg(&places)
                .query_async::<u64>(&mut redis)
                .await
                .unwrap_or(0)
                == 1
        }
    })
    .await;
    assert!(held, "the first run holds a place in Redis");
    let (status, body, _) = echo(&http, &fleet[1]).await;
    let waited_until = Instant::now();
    assert_eq!(status, 200, "it ran once the place was free: {body}");
    let (first, first_ended) = holder.await.unwrap();
    assert_eq!(first["code"], "TIMEOUT", "{first}");
    assert!(
        waited_until >= first_ended,
        "the second run ended only after the first gave its place back"
    );
    // Both places are given back.
    let freed = eventually(Duration::from_secs(10), || {
        let (mut redis, places) = (redis.clone(), places.clone());
        async move {
            redis::cmd("ZCARD")
                .arg(&places)
                .query_async::<u64>(&mut redis)
                .await
                .unwrap_or(1)
                == 0
        }
    })
    .await;
    assert!(freed, "no lease is left behind");
    let _: i64 = redis::cmd("DEL").arg(&places).query_async(&mut redis).await.unwrap();
}

#[tokio::test]
async fn while_redis_is_down_a_replica_refuses_as_retryable_and_serves_again_when_it_is_back() {
    let mut redis = RedisServer::start().await;
    let prefix = prefix("down");
    let fleet = replicas(1, &redis.url(), &prefix, &[]).await;
    let server = &fleet[0];
    let http = reqwest::Client::new();
    assert_eq!(echo(&http, server).await.0, 200);
    redis.stop().await;
    let (status, body, retry) = echo(&http, server).await;
    assert_eq!(status, 503, "{body}");
    assert_eq!(body["code"], "SHARED_STATE_UNAVAILABLE", "{body}");
    assert_eq!(body["retryable"], true, "{body}");
    assert_eq!(retry.as_deref(), Some("1"));
    assert!(
        body["error"].as_str().unwrap().contains(&redis.url()),
        "it names the Redis: {body}"
    );
    // An operator still reads the metrics that say so.
    let metrics = http.get(format!("{}/metrics", server.host)).send().await.unwrap();
    assert_eq!(metrics.status(), 200);
    assert!(metrics.text().await.unwrap().contains("toolgate_redis_up 0"));
    redis.restart().await;
    let back = eventually(Duration::from_secs(15), || async { echo(&http, server).await.0 == 200 }).await;
    assert!(back, "served again once Redis is back, with no restart");
}

/// The fleet's buckets in Redis answer as one process's (governor's GCRA) do: the same
/// calls admitted at each rate, and the same wait for the first one refused, within the
/// few milliseconds between the two being asked.
#[tokio::test]
async fn the_redis_buckets_admit_and_refuse_as_one_process_does() {
    use std::sync::Arc;
    use toolgate::access::rate::{Limiter, Rates, Refused};
    use toolgate::access::{Principal, Scope};
    use toolgate::shared::{Settings, Shared};

    let settings = Settings::parse(Some(MACHINE), Some(&prefix("gcra")), None)
        .unwrap()
        .unwrap();
    let shared = Shared::open(&settings).unwrap();
    for per_minute in [1, 2, 3, 7, 30] {
        let rates = Rates {
            requests_per_minute: per_minute,
            ..Rates::default()
        };
        let (alone, fleet) = (Limiter::new(rates), Limiter::shared(rates, shared.clone()));
        let principal = Principal {
            id: Arc::from(format!("gcra-{per_minute}")),
            scopes: vec![Scope::Run],
            per_minute,
            anonymous: false,
            address: None,
            tools: None,
        };
        // A full bucket's worth passes at once; the next call is refused with the wait
        // until the bucket has one again (a call that ran into a refill, at most two
        // seconds apart at these rates, passes in both).
        let mut refused = None;
        for call in 0..per_minute + 3 {
            let (one, many) = (
                alone.request(&principal, None).await,
                fleet.request(&principal, None).await,
            );
            match (one, many) {
                (Ok(None), Ok(None)) => {}
                (Err(Refused::Wait(one)), Err(Refused::Wait(many))) => {
                    let apart = one.abs_diff(many);
                    assert!(
                        apart < Duration::from_millis(50),
                        "{per_minute}/min: {one:?} and {many:?}"
                    );
                    refused = Some(call);
                    break;
                }
                (one, many) => panic!("{per_minute}/min, call {call}: alone {one:?}, fleet {many:?}"),
            }
        }
        assert!(
            refused.is_some_and(|call| call >= per_minute),
            "{per_minute}/min: first refused at {refused:?}"
        );
    }
}
