//! JavaScript in worker processes, through the real server: a script stuck in a native
//! call is stopped at its deadline (its worker killed, its output kept), cancellation
//! does the same, a thousand timed-out runs leave no process behind, nothing carries from
//! one run to the next in a reused worker, and each worker runs in its own namespaces with
//! no way to gain privileges.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use futures::future::join_all;
use rmcp::model::{CallToolRequestParams, ClientRequest};
use rmcp::service::PeerRequestOptions;
use serde_json::{Value, json};
use toolgate::sandbox::{Layer, Sandbox};

use crate::util::{Gate, expect_ok, structured};

/// A native call that QuickJS's interrupt check never sees: the in-process engine ran it
/// 142 s past a 30 s deadline.
const NATIVE: &str = "console.log('before'); return 'a'.repeat(1e7).indexOf('a'.repeat(2e3) + 'b');";

async fn gate(timeout_ms: &str) -> Gate {
    Gate::start(&[("TOOLGATE_RUNTIMES", "js"), ("TOOLGATE_JS_TIMEOUT_MS", timeout_ms)]).await
}

/// Every process below `pid` (children, their children, …).
pub fn descendants(pid: u32) -> BTreeSet<u32> {
    let mut found = BTreeSet::new();
    let mut stack = vec![pid];
    while let Some(p) = stack.pop() {
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{p}/task")) else {
            continue;
        };
        for task in tasks.flatten() {
            let children = std::fs::read_to_string(task.path().join("children")).unwrap_or_default();
            for child in children.split_whitespace().filter_map(|c| c.parse().ok()) {
                if found.insert(child) {
                    stack.push(child);
                }
            }
        }
    }
    found
}

/// A process's state letter and the CPU it has used, if it still exists.
pub fn stat(pid: u32) -> Option<(char, Duration)> {
    stat_of(&format!("/proc/{pid}/stat"))
}

/// The state letter and CPU used in a `stat` file of `/proc`.
fn stat_of(path: &str) -> Option<(char, Duration)> {
    let text = std::fs::read_to_string(path).ok()?;
    // Fields after the command (which may hold spaces) start after the last ')'.
    let rest = text.rsplit_once(')')?.1;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let state = fields.first()?.chars().next()?;
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    // SAFETY: sysconf has no preconditions.
    let hz = u64::try_from(unsafe { libc::sysconf(libc::_SC_CLK_TCK) })
        .unwrap_or(100)
        .max(1);
    Some((state, Duration::from_millis(ticks * 1000 / hz)))
}

/// Asserts that every process below the server that has burnt `cpu` or more is dead or
/// dying: the worker that ran a stopped script must have been killed. A killed process
/// still shows as running while the kernel tears down its memory, so each is watched
/// until it is a zombie or gone — for at most ten seconds, far less than any of these
/// scripts would run on their own.
fn no_busy_worker_alive(server: u32, cpu: Duration) {
    for pid in descendants(server) {
        let watched = Instant::now();
        while let Some((state, used)) = stat(pid) {
            if used < cpu || matches!(state, 'Z' | 'X') {
                break;
            }
            assert!(
                watched.elapsed() < Duration::from_secs(10),
                "process {pid} used {used:?} of CPU and is still alive ({state})"
            );
            std::thread::yield_now();
        }
    }
}

/// Asserts that no thread of the server itself keeps running with `cpu` or more used
/// (where an engine on the server's own thread would still be spinning), watched as in
/// [`no_busy_worker_alive`].
fn no_busy_server_thread(server: u32, cpu: Duration) {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{server}/task")) else {
        return;
    };
    for task in tasks.flatten() {
        let tid = task.file_name().to_string_lossy().into_owned();
        let watched = Instant::now();
        while let Some((state, used)) = stat_of(&format!("/proc/{server}/task/{tid}/stat")) {
            if used < cpu || state != 'R' {
                break;
            }
            assert!(
                watched.elapsed() < Duration::from_secs(10),
                "server thread {tid} used {used:?} of CPU and is still running"
            );
            std::thread::yield_now();
        }
    }
}

#[tokio::test]
async fn a_native_call_past_its_deadline_is_stopped_its_output_kept_and_its_worker_killed() {
    let gate = gate("2000").await;
    let server = gate.pid.unwrap();
    let started = Instant::now();
    let r = gate.call("run_javascript", json!({ "code": NATIVE })).await;
    let waited = started.elapsed();
    let s = structured(&r);
    assert_eq!(r.is_error, Some(true), "{s}");
    assert_eq!(s["timed_out"], true, "{s}");
    assert_eq!(s["stdout"], "before\n", "output before the stuck call is kept: {s}");
    // Not a speed assertion: the engine's own thread would have run for minutes.
    assert!(waited < Duration::from_secs(30), "answered after {waited:?}");
    // Only the stuck script can have used a whole second of CPU: it is nowhere now.
    no_busy_worker_alive(server, Duration::from_secs(1));
    no_busy_server_thread(server, Duration::from_secs(1));
    let next = gate.call("run_javascript", json!({"code": "return 'after'"})).await;
    assert_eq!(expect_ok(&next), "after");
    gate.stop().await;
}

#[tokio::test]
async fn cancelling_a_stuck_native_call_kills_its_worker() {
    let gate = gate("120000").await;
    let server = gate.pid.unwrap();
    let request = ClientRequest::CallToolRequest(rmcp::model::Request::new(
        CallToolRequestParams::new("run_javascript")
            .with_arguments(json!({ "code": NATIVE }).as_object().cloned().unwrap()),
    ));
    let handle = gate
        .client
        .peer()
        .send_cancellable_request(request, PeerRequestOptions::no_options())
        .await
        .unwrap();
    // Cancel once the script is stuck in its worker: when some process below the server
    // has used a whole second of CPU, which only the stuck script does (each look is a
    // read of /proc, not a clock).
    let mut busy = false;
    for _ in 0..10_000_000 {
        busy = descendants(server)
            .into_iter()
            .any(|p| stat(p).is_some_and(|(_, used)| used >= Duration::from_secs(1)));
        if busy {
            break;
        }
        tokio::task::yield_now().await;
    }
    assert!(busy, "the stuck script never showed up in a worker");
    handle.cancel(Some("stop".into())).await.unwrap();
    let mut record = Value::Null;
    for _ in 0..10_000 {
        let r = gate.meta(json!({"command": "history", "show": "r1"})).await;
        if r.is_error != Some(true) {
            record = structured(&r)["run"].clone();
            break;
        }
    }
    assert_eq!(record["status"], "CANCELLED", "{record}");
    no_busy_worker_alive(server, Duration::from_secs(1));
    no_busy_server_thread(server, Duration::from_secs(1));
    gate.stop().await;
}

#[tokio::test]
async fn a_thousand_timed_out_runs_leave_no_process_behind() {
    let gate = gate("10").await;
    let server = gate.pid.unwrap();
    let mut timed_out = 0;
    for _ in 0..125 {
        let calls = (0..8).map(|_| gate.call("run_javascript", json!({"code": "while (true) {}"})));
        for r in join_all(calls).await {
            if structured(&r)["timed_out"] == true {
                timed_out += 1;
            }
        }
    }
    assert_eq!(timed_out, 1000);
    // What is left: the idle workers (at most one per place) and killed ones not reaped
    // yet; none still spinning (one that had survived would have used seconds by now).
    let left = descendants(server);
    assert!(left.len() <= 8 + 2, "{} processes left below the server", left.len());
    no_busy_worker_alive(server, Duration::from_secs(1));
    gate.stop().await;
}

#[tokio::test]
async fn a_reused_worker_gives_each_run_a_fresh_engine() {
    let gate = gate("5000").await;
    for _ in 0..6 {
        let r = gate
            .call(
                "run_javascript",
                json!({"code": "const seen = [globalThis.mark ?? null, ({}).polluted ?? null]; globalThis.mark = 1; Object.prototype.polluted = 1; return seen;"}),
            )
            .await;
        assert_eq!(
            expect_ok(&r),
            &json!([null, null]),
            "nothing carries from one run to the next"
        );
    }
    gate.stop().await;
}

#[tokio::test]
async fn workers_run_in_their_own_namespaces_without_new_privileges_under_seccomp() {
    let layers = Sandbox::get().layers();
    let gate = gate("5000").await;
    let server = gate.pid.unwrap();
    let r = gate.call("run_javascript", json!({"code": "return 1"})).await;
    assert_eq!(expect_ok(&r), 1);
    let workers = descendants(server);
    assert!(!workers.is_empty(), "the run's worker waits for the next run");
    let ns = |pid: u32, kind: &str| std::fs::read_link(format!("/proc/{pid}/ns/{kind}")).ok();
    for pid in workers {
        // A worker still starting (a spare) restricts itself (landlock, which sets
        // NoNewPrivs, then seccomp) once it has read its setup: look until it has, or is
        // gone.
        let mut status = String::new();
        for _ in 0..1_000_000 {
            status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
            if status.is_empty() || status.contains("Seccomp:\t2") {
                break;
            }
            tokio::task::yield_now().await;
        }
        if !status.is_empty() {
            assert!(
                status.contains("Seccomp:\t2"),
                "worker {pid} has no seccomp filter: {status}"
            );
            assert!(status.contains("NoNewPrivs:\t1"), "worker {pid}: {status}");
        }
        match &layers.namespaces {
            Layer::Active(_) => {
                assert_ne!(
                    ns(pid, "net"),
                    ns(server, "net"),
                    "worker {pid} shares the server's network"
                );
                assert_ne!(ns(pid, "user"), ns(server, "user"));
            }
            Layer::Unavailable(why) => assert!(
                std::env::var("TOOLGATE_REQUIRE_SANDBOX").as_deref() != Ok("1"),
                "TOOLGATE_REQUIRE_SANDBOX=1 but namespaces are unavailable: {why}"
            ),
        }
    }
    gate.stop().await;
}
