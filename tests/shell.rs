//! `toolgate shell`: the real binary as an MCP client, reading commands from a file or a
//! pipe, against a toolgate child over stdio (this binary, or a command after `--`) and
//! against a running `toolgate --http`. Completion is unit-tested beside the code.

use std::path::Path;
use std::process::Stdio;

use tokio::io::AsyncWriteExt;

use crate::http::HttpGate;
use crate::util::{bin, command, fixtures};

/// What a finished `toolgate ARGS` printed, and whether it exited 0.
struct Ran {
    ok: bool,
    stdout: String,
    stderr: String,
}

/// Runs `toolgate ARGS` in `dir` with `env`, `input` on its stdin.
async fn toolgate(dir: &Path, env: &[(&str, &str)], args: &[&str], input: &str) -> Ran {
    let mut cmd = command(dir, env);
    cmd.args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(input.as_bytes()).await.unwrap();
    drop(stdin);
    let out = tokio::time::timeout(std::time::Duration::from_secs(60), child.wait_with_output())
        .await
        .expect("the shell finishes")
        .unwrap();
    Ran {
        ok: out.status.success(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Runs `toolgate [PREFIX...] shell --file SCRIPT [SUFFIX...]` over the script `lines`.
async fn script(env: &[(&str, &str)], prefix: &[&str], suffix: &[&str], lines: &str) -> Ran {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("script");
    std::fs::write(&path, lines).unwrap();
    let path = path.display().to_string();
    let mut args: Vec<&str> = prefix.to_vec();
    args.extend(["shell", "--file", &path]);
    args.extend(suffix);
    toolgate(dir.path(), env, &args, "").await
}

#[tokio::test]
async fn a_script_over_stdio_runs_every_command_and_fails_at_the_end_for_each_bad_one() {
    let ran = script(
        &[],
        &[],
        &[],
        r#"# explore the embedded catalogue
tools
search base64
schema base64-codec
call base64-codec {"input": "hi"}
call hex-codec {"input": "hi"}
history
diff r1 r2
call base64-codec {not json
call base64-codec {"mode": "encode"}
frobnicate
call base64-codec {"input": "still runs"}
"#,
    )
    .await;
    let (out, err) = (&ran.stdout, &ran.stderr);
    assert!(!ran.ok, "three commands failed: {out}\n{err}");
    // tools: tools/list, the meta-tool first.
    assert!(out.contains("toolgate> tools\n"), "{out}");
    assert!(out.contains(" tools advertised:\n  toolgate — "), "{out}");
    assert!(out.contains("\n  base64-codec — Encodes text to Base64"), "{out}");
    // search and schema through the meta-tool.
    assert!(
        out.contains("for \"base64\", best first (ranked by words and meaning):\nbase64-codec ("),
        "{out}"
    );
    assert!(
        out.contains("Ready-to-send call:\n{\n  \"name\": \"base64-codec\""),
        "{out}"
    );
    // call: directly (advertised) and through the meta-tool's run (not advertised).
    assert!(out.contains("\"output\": \"aGk=\""), "{out}");
    assert!(out.contains("hex-codec finished in"), "{out}");
    assert!(out.contains("\"output\": \"6869\""), "{out}");
    // history and diff of this session.
    assert!(out.contains("2 runs, newest first:\nr2 hex-codec ok"), "{out}");
    assert!(out.contains("\nr1 base64-codec ok"), "{out}");
    assert!(
        out.contains("r1 (base64-codec) vs r2 (hex-codec): different tools"),
        "runs of two tools are not blamed on their input: {out}"
    );
    // Each failure on stderr with its line; later commands still ran.
    let path_line = |n: usize, rest: &str| err.contains(&format!("/script:{n}: error: {rest}"));
    assert!(path_line(9, "call: the arguments are not JSON ("), "{err}");
    assert!(
        path_line(
            10,
            "Error INVALID_PARAMS (not retryable): Invalid params for \"base64-codec\""
        ),
        "{err}"
    );
    assert!(path_line(11, "unknown command \"frobnicate\""), "{err}");
    assert!(
        out.contains("\"output\": \"c3RpbGwgcnVucw==\""),
        "the last command ran: {out}"
    );
    assert!(
        err.trim_end()
            .ends_with("toolgate: 3 of 11 commands failed (see above)"),
        "{err}"
    );
}

#[tokio::test]
async fn settings_given_as_flags_reach_the_child_toolgate() {
    let catalogue = fixtures().display().to_string();
    // --catalogue is a global flag, given here after the subcommand.
    let ran = script(&[], &[], &["--catalogue", &catalogue], "list\nquit\ntools\n").await;
    assert!(ran.ok, "{}\n{}", ran.stdout, ran.stderr);
    assert!(ran.stdout.contains("tools in the catalogue:\n"), "{}", ran.stdout);
    assert!(ran.stdout.contains("\n  echo — "), "{}", ran.stdout);
    assert!(!ran.stdout.contains("base64-codec"), "{}", ran.stdout);
    assert!(
        !ran.stdout.contains("toolgate> tools"),
        "quit ends the script: {}",
        ran.stdout
    );
}

#[tokio::test]
async fn a_command_after_dashes_is_the_server_spoken_to() {
    let catalogue = fixtures().display().to_string();
    let ran = script(
        &[],
        &[],
        &["--", bin(), "--catalogue", &catalogue],
        "call echo {\"message\": \"over dashes\"}\n",
    )
    .await;
    assert!(ran.ok, "{}\n{}", ran.stdout, ran.stderr);
    assert!(ran.stdout.contains("echo finished in"), "{}", ran.stdout);
    assert!(ran.stdout.contains("over dashes"), "{}", ran.stdout);
}

#[tokio::test]
async fn the_shell_speaks_streamable_http_and_reads_a_piped_stdin() {
    let gate = HttpGate::start(&[]).await;
    let dir = tempfile::tempdir().unwrap();
    let ran = toolgate(
        dir.path(),
        &[],
        &["shell", "--url", &gate.url],
        "tools\ncall base64-codec {\"input\": \"hi\"}\nhistory\n",
    )
    .await;
    assert!(ran.ok, "{}\n{}", ran.stdout, ran.stderr);
    assert!(ran.stdout.contains("  base64-codec — "), "{}", ran.stdout);
    assert!(ran.stdout.contains("\"output\": \"aGk=\""), "{}", ran.stdout);
    assert!(
        ran.stdout.contains("1 run, newest first:\nr1 base64-codec ok"),
        "one session over HTTP: {}",
        ran.stdout
    );
}

#[tokio::test]
async fn over_http_the_shell_sends_its_key_and_says_when_one_is_wanted() {
    let keys = tempfile::tempdir().unwrap();
    let file = keys.path().join("keys.json");
    let key = crate::access::new_key(&file, "search,run", "operator").await;
    let gate = HttpGate::start(&[("TOOLGATE_KEYS_FILE", file.to_str().unwrap())]).await;
    let dir = tempfile::tempdir().unwrap();
    let input = "call base64-codec {\"input\": \"hi\"}\nhistory\n";
    let ran = toolgate(
        dir.path(),
        &[("TOOLGATE_SHELL_KEY", &key)],
        &["shell", "--url", &gate.url],
        input,
    )
    .await;
    assert!(ran.ok, "{}\n{}", ran.stdout, ran.stderr);
    assert!(ran.stdout.contains("\"output\": \"aGk=\""), "{}", ran.stdout);
    // The catalogue API's key is not a gateway key, and is never sent to one.
    let ran = toolgate(
        dir.path(),
        &[("TOOLGATE_API_KEY", &key)],
        &["shell", "--url", &gate.url],
        input,
    )
    .await;
    assert!(!ran.ok, "{}", ran.stdout);
    assert_eq!(ran.stdout, "");
    assert_eq!(
        ran.stderr,
        format!(
            "toolgate: {} wants a key (401): pass --key or set TOOLGATE_SHELL_KEY\n",
            gate.url
        )
    );
    // An unknown key is named as such.
    let ran = toolgate(dir.path(), &[], &["shell", "--url", &gate.url, "--key", "nope"], input).await;
    assert!(!ran.ok, "{}", ran.stdout);
    assert_eq!(
        ran.stderr,
        format!(
            "toolgate: {} refused the key (401): it is not in the server's keys file\n",
            gate.url
        )
    );
}
