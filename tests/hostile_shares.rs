//! The places every caller shares cannot be held by one or two of them: JavaScript
//! places (one principal holds at most half, so two principals trying to hold them all
//! still leave one for a third), REPL sessions (two of the five per principal, counted
//! across its MCP sessions), and the memory a run's `fetch` bodies hold on the server
//! (within the run's share of the memory budget, stated lengths and chunked bodies
//! alike). Over HTTP with a keys file, so each key is one principal.

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::access::new_key;
use crate::http::{HttpGate, Session};
use crate::util::{Gate, structured};

/// A keys file at `dir` holding one key per `(id, scopes)`, and the keys in that order.
async fn keys(dir: &Path, wanted: &[(&str, &str)]) -> (String, Vec<String>) {
    let file = dir.join("keys.json");
    let mut made = Vec::new();
    for (id, scopes) in wanted {
        made.push(new_key(&file, scopes, id).await);
    }
    (file.display().to_string(), made)
}

/// The value of the sample `series` in a `/metrics` text.
fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

#[tokio::test]
async fn a_third_principal_runs_while_two_try_to_hold_every_javascript_place() {
    let dir = tempfile::tempdir().unwrap();
    let (file, made) = keys(
        dir.path(),
        &[
            ("alice", "runtimes"),
            ("bob", "runtimes"),
            ("carol", "runtimes"),
            ("ops", "admin"),
        ],
    )
    .await;
    let gate = HttpGate::start(&[
        ("TOOLGATE_KEYS_FILE", &file),
        ("TOOLGATE_RUNTIMES", "js"),
        ("TOOLGATE_JS_TIMEOUT_MS", "20000"),
    ])
    .await;
    // Alice and Bob each send four runs that hold their place until the deadline.
    let hold = json!({"code": "await new Promise(r => setTimeout(r, 60000)); return 'held';"});
    let mut holders = Vec::new();
    for key in [&made[0], &made[1]] {
        for _ in 0..4 {
            let mut session = Session::open_keyed(&gate.url, key).await;
            let hold = hold.clone();
            holders.push(tokio::spawn(async move { session.call("run_javascript", hold).await }));
        }
    }
    // Every one of their runs holds a place or waits for one.
    let metrics = gate.url.replace("/mcp", "/metrics");
    let http = reqwest::Client::new();
    let settled = async {
        loop {
            let text = http.get(&metrics).bearer_auth(&made[3]).send().await.unwrap();
            let text = text.text().await.unwrap();
            let running = sample(&text, "toolgate_js_running").unwrap_or_default();
            let waiting = sample(&text, "toolgate_js_waiting").unwrap_or_default();
            if running + waiting >= 8.0 {
                return (running, waiting);
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    let (running, _) = tokio::time::timeout(Duration::from_secs(30), settled)
        .await
        .expect("the eight runs arrive");
    assert!(running < 4.0, "two principals hold every place: {running}");
    // Carol's run is admitted at once, not after theirs end.
    let mut carol = Session::open_keyed(&gate.url, &made[2]).await;
    let ran = carol
        .call("run_javascript", json!({"code": "return 'admitted';"}))
        .await;
    assert_eq!(ran["result"], "admitted", "{ran}");
    for holder in holders {
        holder.abort();
    }
}

#[tokio::test]
async fn a_principal_holds_two_of_the_five_repl_sessions_across_its_sessions() {
    let dir = tempfile::tempdir().unwrap();
    let (file, made) = keys(
        dir.path(),
        &[("alice", "runtimes"), ("bob", "runtimes"), ("carol", "runtimes")],
    )
    .await;
    let nx = crate::nyxilum::standin().display().to_string();
    let gate = HttpGate::start(&[
        ("TOOLGATE_KEYS_FILE", &file),
        ("TOOLGATE_RUNTIMES", "nyxilum"),
        ("NX_NODE_PATH", &nx),
    ])
    .await;
    let start = async |session: &mut Session| session.call("nyxilum_repl_start", json!({})).await;
    let mut alice_one = Session::open_keyed(&gate.url, &made[0]).await;
    let mut alice_two = Session::open_keyed(&gate.url, &made[0]).await;
    assert_eq!(start(&mut alice_one).await["success"], true);
    assert_eq!(start(&mut alice_two).await["success"], true);
    // A third for Alice, from either of her MCP sessions, is past her share.
    for session in [&mut alice_two, &mut alice_one] {
        let refused = start(session).await;
        assert_eq!(refused["code"], "SESSION_LIMIT", "{refused}");
        let message = refused["error"].as_str().unwrap_or_default();
        assert!(message.contains("at most 2 of the 5"), "{refused}");
    }
    let mut bob = Session::open_keyed(&gate.url, &made[1]).await;
    for _ in 0..2 {
        assert_eq!(start(&mut bob).await["success"], true);
    }
    // Carol still gets the fifth; then the server is full.
    let mut carol = Session::open_keyed(&gate.url, &made[2]).await;
    assert_eq!(start(&mut carol).await["success"], true);
    let full = start(&mut carol).await;
    assert_eq!(full["code"], "SESSION_LIMIT", "{full}");
    assert!(
        full["error"].as_str().unwrap_or_default().contains("At most 5"),
        "{full}"
    );
}

/// Reads one request's head (and no body: these are GETs).
async fn read_head(stream: &mut TcpStream) {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if stream.read(&mut byte).await.unwrap_or(0) == 0 {
            return;
        }
        head.push(byte[0]);
    }
}

/// A site on 127.0.0.1 that takes three requests, then answers each with a body of
/// `size` bytes, so that all three are held at once: with a stated length, the heads
/// first and the bodies only once one of the three has been given up by the client; or
/// chunked, 1 MiB to each in turn, ending none before one has been given up.
async fn site(size: usize, stated: bool) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        let mut streams = Vec::new();
        while streams.len() < 3 {
            let (mut stream, _) = listener.accept().await.unwrap();
            read_head(&mut stream).await;
            streams.push(stream);
        }
        let head = if stated {
            format!("HTTP/1.1 200 OK\r\ncontent-length: {size}\r\nconnection: close\r\n\r\n")
        } else {
            "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n".to_owned()
        };
        let mut writers = Vec::new();
        let (closed_tx, mut closed) = tokio::sync::mpsc::unbounded_channel();
        for (i, stream) in streams.into_iter().enumerate() {
            let (mut read, mut write) = stream.into_split();
            let _ = write.write_all(head.as_bytes()).await;
            let closed_tx = closed_tx.clone();
            tokio::spawn(async move {
                let mut sink = [0u8; 64];
                while read.read(&mut sink).await.unwrap_or(0) > 0 {}
                let _ = closed_tx.send(i);
            });
            writers.push(Some(write));
        }
        if stated {
            if let Some(gone) = closed.recv().await {
                writers[gone] = None;
            }
            let body = vec![b'b'; size];
            for write in writers.iter_mut().flatten() {
                let _ = write.write_all(&body).await;
            }
            return;
        }
        let chunk = vec![b'c'; 1024 * 1024];
        let framed = [format!("{:x}\r\n", chunk.len()).as_bytes(), &chunk, b"\r\n"].concat();
        for _ in 0..size / chunk.len() {
            for slot in writers.iter_mut() {
                if let Some(write) = slot
                    && write.write_all(&framed).await.is_err()
                {
                    *slot = None;
                }
            }
        }
        // No body ends before one of the three has been given up.
        if let Some(gone) = closed.recv().await {
            writers[gone] = None;
        }
        for write in writers.iter_mut().flatten() {
            let _ = write.write_all(b"0\r\n\r\n").await;
        }
    });
    base
}

#[tokio::test]
async fn fetch_bodies_a_run_holds_at_once_stay_within_its_share_of_the_memory_budget() {
    let gate = Gate::start(&[
        ("TOOLGATE_RUNTIMES", "js"),
        ("TOOLGATE_FETCH_ALLOW", "127.0.0.1"),
        ("TOOLGATE_FETCH_TIMEOUT_MS", "10000"),
    ])
    .await;
    // Three bodies each under the 8 MiB cap, together over the run's 16 MiB allowance.
    for (size, stated) in [(7_000_000, true), (6 * 1024 * 1024, false)] {
        let base = site(size, stated).await;
        let code = format!(
            r#"const all = await Promise.allSettled([1, 2, 3].map(i => fetch("{base}/b" + i).then(r => r.arrayBuffer())));
return all.map(r => r.status === "fulfilled" ? r.value.byteLength : r.reason.message);"#
        );
        let r = gate.call("run_javascript", json!({ "code": code })).await;
        let s = structured(&r);
        let outcomes = s["result"].as_array().unwrap_or_else(|| panic!("{s}"));
        let fetched = outcomes.iter().filter(|o| **o == json!(size)).count();
        let refused: Vec<&Value> = outcomes.iter().filter(|o| o.is_string()).collect();
        assert_eq!((fetched, refused.len()), (2, 1), "stated length {stated}: {s}");
        let message = refused[0].as_str().unwrap();
        assert!(message.contains("16,777,216 bytes"), "{message}");
    }
    let r = gate
        .call("run_javascript", json!({"code": "return 'still here';"}))
        .await;
    assert_eq!(structured(&r)["result"], "still here");
    gate.stop().await;
}
