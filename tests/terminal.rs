//! Run by hand from a terminal with nothing on stdin, `toolgate` says on stderr what it is
//! and how to use it, then serves as usual; from an MCP client (stdin a pipe) it says
//! nothing. The terminal is a real pseudo-terminal, opened by python3's `pty` module.

use serde_json::{Value, json};

use crate::util::{bin, raw_exchange};

/// Starts the binary with a pseudo-terminal as stdin (stdout and stderr pipes), types an
/// `initialize` request and Ctrl-D, and prints its exit code, then the server's stdout,
/// then its stderr, separated.
const UNDER_A_PTY: &str = r#"
import os, pty, subprocess, sys
master, slave = pty.openpty()
child = subprocess.Popen([sys.argv[1]], stdin=slave, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         env={"PATH": os.environ.get("PATH", ""), "HOME": os.getcwd()})
os.close(slave)
os.write(master, sys.argv[2].encode() + b"\n\x04")
out, err = child.communicate(timeout=60)
os.close(master)
sys.stdout.write("%d\n--stdout--\n%s--stderr--\n%s" % (child.returncode, out.decode(), err.decode()))
"#;

#[tokio::test]
async fn in_a_terminal_it_says_what_it_is_on_stderr_and_still_serves() {
    let dir = tempfile::tempdir().unwrap();
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "pty", "version": "1"}}});
    let out = tokio::process::Command::new("python3")
        .args(["-c", UNDER_A_PTY, bin(), &initialize.to_string()])
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", dir.path())
        .current_dir(dir.path())
        .output()
        .await
        .unwrap();
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{report}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (code, rest) = report.split_once("\n--stdout--\n").unwrap();
    let (stdout, stderr) = rest.split_once("--stderr--\n").unwrap();
    assert_eq!(code, "0", "Ctrl-D ends the session cleanly: {stderr}");
    let answer: Value = serde_json::from_str(stdout.trim()).expect("stdout is only the MCP answer");
    assert_eq!(answer["id"], 1, "it served as usual: {answer}");
    assert!(answer["result"]["serverInfo"].is_object(), "{answer}");
    assert!(
        stderr.contains("an MCP server speaking JSON-RPC on stdin/stdout"),
        "{stderr}"
    );
    assert!(stderr.contains("Point an MCP client"), "{stderr}");
    assert!(stderr.contains("toolgate --help"), "{stderr}");
}

#[tokio::test]
async fn from_a_pipe_it_says_nothing() {
    let (lines, stderr) = raw_exchange(&[], &[]).await;
    assert!(lines[0]["result"]["serverInfo"].is_object(), "{lines:?}");
    assert!(!stderr.contains("MCP server speaking"), "{stderr}");
}
