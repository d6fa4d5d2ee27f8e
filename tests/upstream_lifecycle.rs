//! The life of an upstream: a crash answered `UPSTREAM_UNAVAILABLE` while the others keep
//! working, the restart, a bad entry costing only itself, a server that cannot start,
//! children that die with toolgate, their stderr, credentials, and Streamable HTTP
//! upstreams. Real servers throughout; every
//! wait is for an event (a notification, a line, a process exit), bounded.

use std::os::fd::{FromRawFd, OwnedFd};
use std::process::Stdio;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};

use crate::upstream::{Federated, WAIT, everything_js, py_server};
use crate::util::{expect_error, structured, text};

/// Waits until the process `pid` has exited (a pidfd turns readable): an event, not a poll.
async fn exited(pid: i32) {
    // SAFETY: pidfd_open(2) takes a pid and flags and returns a new descriptor or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    if fd < 0 {
        // The process is already gone (ESRCH): exited.
        assert_eq!(
            std::io::Error::last_os_error().raw_os_error(),
            Some(libc::ESRCH),
            "pidfd_open({pid})"
        );
        return;
    }
    // SAFETY: `fd` is a descriptor pidfd_open just returned, owned by nothing else.
    let fd = unsafe { OwnedFd::from_raw_fd(fd as i32) };
    // SAFETY: an OwnedFd's raw descriptor stays open and the same until it is dropped,
    // which only the AsyncFd owning it can do.
    let fd = unsafe { tokio::io::unix::AsyncFd::register(fd) }.unwrap();
    let _ready = tokio::time::timeout(WAIT, fd.readable())
        .await
        .unwrap_or_else(|_| panic!("process {pid} still runs"))
        .unwrap();
}

/// The pid the Python server wrote at its latest start.
fn py_pid(state: &std::path::Path) -> i32 {
    let text = std::fs::read_to_string(state.join("pid")).expect("py_server wrote its pid");
    text.trim().parse().unwrap()
}

#[tokio::test]
async fn a_crashed_upstream_answers_unavailable_while_the_others_work_then_comes_back() {
    let state = tempfile::tempdir().unwrap();
    let servers = json!({
        "py": py_server(state.path()),
        "everything": {"command": "node", "args": [everything_js(), "stdio"], "tools": ["echo"]},
        "broken": {"command": "/nonexistent/server"},
        "bad": {"url": "ftp://nowhere"}
    });
    let mut up = Federated::start(servers, &[]).await;

    // The crash ends the call in flight; the server is then held down by the test.
    let r = up.gate.call("py__crash", json!({"stay_down": true})).await;
    let failed = expect_error(&r, "UPSTREAM_UNAVAILABLE");
    assert_eq!(failed["retryable"], true, "{failed}");
    let r = up.gate.call("py__echo", json!({"text": "hi"})).await;
    let failed = expect_error(&r, "UPSTREAM_UNAVAILABLE");
    let said = failed["error"].as_str().unwrap();
    assert!(said.contains("\"py\"") && said.contains("retry"), "{said}");

    // The others keep working; the down server's tools stay listed, marked.
    let r = up.gate.call("everything__echo", json!({"message": "still here"})).await;
    assert!(text(&r).contains("still here"), "{r:?}");
    let list = up.gate.meta(json!({"command": "list"})).await;
    let rows = structured(&list)["tools"].as_array().unwrap().clone();
    let row = rows.iter().find(|r| r["slug"] == "py__echo").expect("still listed");
    assert_eq!(row["available"], false, "{row}");
    assert_eq!(row["unavailable"]["code"], "UPSTREAM_UNAVAILABLE", "{row}");
    assert!(up.gate.names().await.contains(&"py__echo".to_owned()));
    // A server that cannot start is down from the start, and says why.
    let broken = rows
        .iter()
        .all(|r| !r["slug"].as_str().unwrap().starts_with("broken__"));
    assert!(broken, "a server never reached has no tools to list");

    // Let it start again: its restart adds `came_back`, one list_changed away.
    while up.gate.changes.try_recv().is_ok() {}
    std::fs::remove_file(state.path().join("down")).unwrap();
    tokio::time::timeout(WAIT, up.gate.changes.recv())
        .await
        .expect("tools/list_changed after the restart")
        .unwrap();
    assert!(up.gate.names().await.contains(&"py__came_back".to_owned()));
    let r = up.gate.call("py__echo", json!({"text": "back"})).await;
    assert_eq!(text(&r), "back", "{r:?}");
    let stderr = up.gate.stop().await;
    assert!(stderr.contains("upstream \"bad\" left out"), "{stderr}");
    assert!(stderr.contains("upstream \"broken\""), "{stderr}");
}

#[tokio::test]
async fn an_upstream_that_stops_answering_is_restarted() {
    let state = tempfile::tempdir().unwrap();
    let mut up = Federated::start(
        json!({"py": py_server(state.path())}),
        &[("TOOLGATE_UPSTREAM_PING_MS", "300")],
    )
    .await;
    assert!(up.gate.names().await.contains(&"py__hang".to_owned()));
    let first = py_pid(state.path());
    while up.gate.changes.try_recv().is_ok() {}
    // The hung server misses a ping; toolgate ends the connection, the call in flight
    // answers UPSTREAM_UNAVAILABLE, and the restart brings `came_back`.
    let r = up.gate.call("py__hang", json!({})).await;
    expect_error(&r, "UPSTREAM_UNAVAILABLE");
    exited(first).await;
    tokio::time::timeout(WAIT, up.gate.changes.recv())
        .await
        .expect("tools/list_changed after the restart")
        .unwrap();
    let r = up.gate.call("py__came_back", json!({})).await;
    assert_eq!(structured(&r)["result"], 2, "{r:?}");
    let stderr = up.gate.stop().await;
    assert!(stderr.contains("stopped answering"), "{stderr}");
}

#[tokio::test]
async fn children_die_with_toolgate_when_its_stdin_closes_it_is_terminated_or_killed() {
    for how in ["stdin", "SIGTERM", "SIGKILL"] {
        let state = tempfile::tempdir().unwrap();
        let up = Federated::start(json!({"py": py_server(state.path())}), &[]).await;
        let r = up.gate.call("py__echo", json!({"text": "up"})).await;
        assert_eq!(text(&r), "up");
        let child = py_pid(state.path());
        match how {
            "stdin" => {
                up.gate.stop().await;
            }
            signal => {
                let signal = if signal == "SIGTERM" {
                    libc::SIGTERM
                } else {
                    libc::SIGKILL
                };
                let gate_pid = up.gate.pid.unwrap() as i32;
                // SAFETY: kill(2) with a pid this test started.
                assert_eq!(unsafe { libc::kill(gate_pid, signal) }, 0);
                exited(gate_pid).await;
            }
        }
        exited(child).await;
    }
}

#[tokio::test]
async fn a_child_gets_its_configured_env_but_no_credential_of_toolgate() {
    let state = tempfile::tempdir().unwrap();
    let mut server = py_server(state.path());
    server["env"] = json!({"GREETING": "hello", "UPSTREAM_API_KEY": "configured"});
    let up = Federated::start(
        json!({"py": server}),
        &[("GITHUB_TOKEN", "toolgate-only"), ("LANG", "C.UTF-8")],
    )
    .await;
    let names = ["GREETING", "UPSTREAM_API_KEY", "GITHUB_TOKEN", "LANG", "HOME"];
    let r = up.gate.call("py__env", json!({"names": names})).await;
    let env = structured(&r);
    assert_eq!(env["GREETING"], "hello");
    assert_eq!(env["UPSTREAM_API_KEY"], "configured", "configured on purpose: passed");
    assert_eq!(
        env["GITHUB_TOKEN"],
        Value::Null,
        "toolgate's own credential: never passed"
    );
    assert_eq!(env["LANG"], "C.UTF-8", "allowlisted");
    assert!(env["HOME"].is_string());
    up.gate.stop().await;
}

#[tokio::test]
async fn a_streamable_http_upstream_is_reached_with_its_headers() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let dir = tempfile::tempdir().unwrap();
    let mut server = crate::interop::scrubbed("node", dir.path());
    server
        .arg(everything_js())
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut server = server.spawn().unwrap();
    let mut lines = BufReader::new(server.stderr.take().unwrap()).lines();
    tokio::time::timeout(WAIT, async {
        while let Some(line) = lines.next_line().await.unwrap() {
            if line.contains("listening on port") {
                return;
            }
        }
        panic!("server-everything ended before listening");
    })
    .await
    .expect("server-everything listens");
    let url = format!("http://127.0.0.1:{port}/mcp");
    let servers = json!({"web": {"type": "streamable-http", "url": url, "headers": {"X-Client": "toolgate-test"}}});
    let up = Federated::start(servers, &[]).await;
    let r = up.gate.call("web__get-sum", json!({"a": 20, "b": 22})).await;
    assert!(text(&r).contains("42"), "{r:?}");
    let r = up
        .gate
        .meta(json!({"command": "run", "slug": "web__echo", "params": {"message": "over http"}}))
        .await;
    assert!(text(&r).contains("over http"), "{r:?}");
    up.gate.stop().await;
    server.kill().await.unwrap();
}

#[tokio::test]
async fn an_upstream_whose_command_does_not_exist_is_unavailable_with_its_cause() {
    let up = Federated::start(json!({"ghost": {"command": "nope-xyz-no-such-command"}}), &[]).await;
    // Directly and through the meta-tool: the server and why it is down, not an
    // unknown tool with unrelated close matches.
    let direct = up.gate.call("ghost__anything", json!({})).await;
    let meta = up.gate.meta(json!({"command": "run", "slug": "ghost__anything"})).await;
    for r in [&direct, &meta] {
        let failed = expect_error(r, "UPSTREAM_UNAVAILABLE");
        let said = failed["error"].as_str().unwrap();
        assert!(
            said.contains("\"ghost\"") && said.contains("command \"nope-xyz-no-such-command\" not found"),
            "{said}"
        );
    }
    // The listing names the server as down, with the same cause.
    let list = up.gate.meta(json!({"command": "list"})).await;
    let down = &structured(&list)["unavailable_servers"];
    assert_eq!(down[0]["server"], "ghost", "{down}");
    assert_eq!(down[0]["code"], "UPSTREAM_UNAVAILABLE", "{down}");
    assert!(down[0]["reason"].as_str().unwrap().contains("not found"), "{down}");
    assert!(
        text(&list).contains("Upstream server \"ghost\" is unavailable: command"),
        "{}",
        text(&list)
    );
    // A name in no server's namespace is still an unknown tool.
    let r = up
        .gate
        .meta(json!({"command": "run", "slug": "nobody__anything"}))
        .await;
    expect_error(&r, "TOOL_NOT_FOUND");
    up.gate.stop().await;
}

#[tokio::test]
async fn an_upstream_childs_stderr_lines_carry_its_name_and_a_long_one_is_cut() {
    let dir = tempfile::tempdir().unwrap();
    // A server that talks on stderr, then waits for its stdin to close.
    let script =
        "echo first words >&2; head -c 20000 /dev/zero | tr '\\0' x >&2; echo >&2; echo last words >&2; cat >/dev/null";
    let file = crate::upstream::servers_file(dir.path(), json!({"talker": {"command": "sh", "args": ["-c", script]}}));
    let mut cmd = crate::util::command(dir.path(), &[("TOOLGATE_UPSTREAMS", &file)]);
    cmd.stdin(Stdio::piped()).stdout(Stdio::null()).stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let seen = tokio::time::timeout(WAIT, async {
        let mut seen = Vec::new();
        while let Some(line) = lines.next_line().await.unwrap() {
            let last = line == "[talker] last words";
            seen.push(line);
            if last {
                return seen;
            }
        }
        panic!("toolgate ended before passing on the last line: {seen:?}");
    })
    .await
    .expect("the upstream's stderr is passed on");
    assert!(seen.contains(&"[talker] first words".to_owned()), "{seen:?}");
    let long = seen
        .iter()
        .find(|l| l.starts_with("[talker] xxx"))
        .expect("the long line");
    assert!(long.ends_with("x …"), "cut, and says so");
    assert!(long.len() < 9 * 1024, "{} bytes", long.len());
    child.kill().await.unwrap();
}

#[tokio::test]
async fn a_tool_filter_pattern_that_matches_no_tool_is_warned_of_once() {
    let state = tempfile::tempdir().unwrap();
    let mut server = py_server(state.path());
    server["tools"] = json!({"allow": ["echo", "shout", "ech0"], "deny": ["shout*", "nothing-*"]});
    let up = Federated::start(json!({"py": server}), &[]).await;
    let names = up.gate.names().await;
    assert!(names.contains(&"py__echo".to_owned()), "{names:?}");
    assert!(!names.contains(&"py__shout".to_owned()), "{names:?}");
    let stderr = up.gate.stop().await;
    for (kind, glob) in [("allow", "ech0"), ("deny", "nothing-*")] {
        let warning = format!("upstream \"py\": its tools {kind} pattern \"{glob}\" matches none of its");
        assert_eq!(stderr.matches(&warning).count(), 1, "{warning}: {stderr}");
    }
    assert!(
        !stderr.contains("pattern \"shout"),
        "patterns that match are not warned of: {stderr}"
    );
}
