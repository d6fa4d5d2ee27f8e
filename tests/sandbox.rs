//! The process backend and its sandbox, exercised with a real interpreter (python3)
//! through `toolgate::backends::process` — the same code path NyxilumNode takes. Each layer
//! test first asks the probe: on a kernel that refuses the layer it asserts the refusal is
//! reported (with a reason) instead of passing silently; where the layer is active it
//! proves the child is really confined, beside a control run that shows the same program
//! succeeds without the sandbox.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;
use toolgate::backends::process::{self, Arg, Confinement, Env, Spec, Workdir};
use toolgate::sandbox::{Layer, Rlimits, Sandbox};

/// The system python3 (else the one on PATH): its real executable and the folders it
/// reads its library from. The system one, because as root the sandbox runs children as
/// an unprivileged uid, which cannot enter a python installed under `/root`.
fn python() -> (PathBuf, Vec<PathBuf>) {
    let system = Path::new("/usr/bin/python3");
    let out = std::process::Command::new(if system.exists() { system } else { Path::new("python3") })
        .args([
            "-c",
            "import sys; print(sys.executable); print(sys.prefix); print(sys.base_prefix)",
        ])
        .output()
        .expect("python3 on PATH");
    let text = String::from_utf8(out.stdout).unwrap();
    let mut lines = text.lines().map(PathBuf::from);
    let exe = lines.next().expect("sys.executable");
    (exe, lines.collect())
}

/// A sandboxed python3 run of `code` within `timeout`.
pub fn python_spec(code: &str, timeout: Duration) -> Spec {
    spec(code, timeout)
}

/// A sandboxed python3 run of `code` within `timeout`.
fn spec(code: &str, timeout: Duration) -> Spec {
    let (exe, prefixes) = python();
    Spec {
        runtime: "python3".into(),
        program: exe,
        args: vec![Arg::Text("-I".into()), Arg::File("main.py".into())],
        files: vec![("main.py".into(), code.as_bytes().to_vec())],
        workdir: Workdir::Temp,
        env: Env::default(),
        parent_env: Some(vec![("PATH".into(), "/usr/bin:/bin".into())]),
        timeout,
        output_bytes: 32 * 1024,
        sandbox: Some(Confinement {
            rlimits: Rlimits::with_cpu_seconds(30),
            read_paths: prefixes,
        }),
        temp_root: None,
    }
}

/// Returns the layer's state; when it is unavailable, asserts the report says why — and,
/// with `TOOLGATE_REQUIRE_SANDBOX=1` (set by `.ci/run` on machines that allow every
/// layer), fails instead of skipping, so a layer that stops applying cannot pass unseen.
pub fn active(layer: &Layer) -> bool {
    match layer {
        Layer::Active(_) => true,
        Layer::Unavailable(why) => {
            assert!(!why.is_empty(), "an unavailable layer must say why");
            assert!(
                std::env::var("TOOLGATE_REQUIRE_SANDBOX").as_deref() != Ok("1"),
                "TOOLGATE_REQUIRE_SANDBOX=1 but this layer is unavailable: {why}"
            );
            eprintln!("layer unavailable on this kernel, reported as: {why}");
            false
        }
    }
}

/// Like [`active`] for a layer applied only where the kernel offers it (cgroups), which
/// many machines lack: `.ci/run` sets `TOOLGATE_REQUIRE_CGROUP=1` where `--version`
/// reports it active.
pub fn active_optional(layer: &Layer) -> bool {
    match layer {
        Layer::Active(_) => true,
        Layer::Unavailable(why) => {
            assert!(!why.is_empty(), "an unavailable layer must say why");
            assert!(
                std::env::var("TOOLGATE_REQUIRE_CGROUP").as_deref() != Ok("1"),
                "TOOLGATE_REQUIRE_CGROUP=1 but this layer is unavailable: {why}"
            );
            eprintln!("layer unavailable on this machine, reported as: {why}");
            false
        }
    }
}

#[tokio::test]
async fn a_child_cannot_reach_the_network() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let code = format!(
        "import socket\ntry:\n    socket.create_connection(('127.0.0.1', {port}), timeout=2)\n    print('connected')\nexcept OSError as e:\n    print('blocked', e)\n"
    );
    let mut control = spec(&code, Duration::from_secs(10));
    control.sandbox = None;
    let out = process::run(&control).await.unwrap();
    assert_eq!(out.stdout.text.trim(), "connected", "control run: {out:?}");
    let out = process::run(&spec(&code, Duration::from_secs(10))).await.unwrap();
    if !active(&Sandbox::get().layers().namespaces) {
        assert!(!out.applied.namespaces);
        return;
    }
    assert!(out.applied.namespaces);
    assert!(out.stdout.text.starts_with("blocked"), "{out:?}");
}

#[tokio::test]
async fn a_child_can_write_only_inside_its_own_folder() {
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("escaped.txt");
    std::fs::write(outside.path().join("secret.txt"), "s3cret").unwrap();
    let code = format!(
        r#"
import os
def attempt(f):
    try:
        f()
        return 'ok'
    except OSError as e:
        return type(e).__name__
def write_out(): open({target:?}, 'w').write('x')
def read_out(): open({secret:?}).read()
def write_in(): open('inside.txt', 'w').write('x')
print(attempt(write_out), attempt(read_out), attempt(write_in))
"#,
        target = target.display().to_string(),
        secret = outside.path().join("secret.txt").display().to_string(),
    );
    let mut control = spec(&code, Duration::from_secs(10));
    control.sandbox = None;
    let out = process::run(&control).await.unwrap();
    assert_eq!(out.stdout.text.trim(), "ok ok ok", "control run: {out:?}");
    std::fs::remove_file(&target).unwrap();
    let out = process::run(&spec(&code, Duration::from_secs(10))).await.unwrap();
    if !active(&Sandbox::get().layers().landlock) {
        assert!(!out.applied.landlock);
        return;
    }
    assert!(out.applied.landlock);
    assert_eq!(out.stdout.text.trim(), "PermissionError PermissionError ok", "{out:?}");
    assert!(!target.exists());
}

#[tokio::test]
async fn a_child_hits_its_address_space_limit() {
    let code = "try:\n    b = bytearray(1024 * 1024 * 1024)\n    print('allocated', len(b))\nexcept MemoryError:\n    print('MemoryError')\n";
    let mut small = spec(code, Duration::from_secs(10));
    if let Some(c) = small.sandbox.as_mut() {
        c.rlimits.address_space_bytes = 256 * 1024 * 1024;
    }
    let out = process::run(&small).await.unwrap();
    if !active(&Sandbox::get().layers().rlimits) {
        return;
    }
    assert!(out.applied.rlimits);
    assert_eq!(out.stdout.text.trim(), "MemoryError", "{out:?}");
    let out = process::run(&spec(code, Duration::from_secs(10))).await.unwrap();
    assert_eq!(
        out.stdout.text.trim(),
        "allocated 1073741824",
        "with the default 8 GiB the same allocation works: {out:?}"
    );
}

#[tokio::test]
async fn the_environment_is_an_allowlist_without_credentials() {
    let mut s = spec(
        "import json, os\nprint(json.dumps(dict(os.environ)))",
        Duration::from_secs(10),
    );
    let parent: Vec<(OsString, OsString)> = [
        ("PATH", "/usr/bin:/bin"),
        ("LANG", "C.UTF-8"),
        ("HOME", "/home/operator"),
        ("AWS_SECRET_ACCESS_KEY", "leak"),
        ("GITHUB_TOKEN", "leak"),
        ("UNLISTED", "leak"),
        ("EXTRA_SETTING", "passed"),
        ("EXTRA_API_KEY", "leak"),
    ]
    .into_iter()
    .map(|(k, v)| (k.into(), v.into()))
    .collect();
    s.parent_env = Some(parent);
    s.env = Env {
        inherit_all: false,
        pass: vec!["EXTRA_SETTING".into(), "EXTRA_API_KEY".into()],
        set: vec![("NX_SANDBOX".into(), "1".into()), ("SESSION_ID".into(), "leak".into())],
    };
    let out = process::run(&s).await.unwrap();
    let env: Value = serde_json::from_str(out.stdout.text.trim()).unwrap_or_else(|e| panic!("{e}: {out:?}"));
    let env = env.as_object().unwrap();
    let mut names: Vec<&str> = env.keys().map(String::as_str).filter(|k| *k != "LC_CTYPE").collect();
    names.sort();
    assert_eq!(
        names,
        [
            "EXTRA_SETTING",
            "HOME",
            "LANG",
            "NX_SANDBOX",
            "PATH",
            "TEMP",
            "TMP",
            "TMPDIR"
        ],
        "{env:?}"
    );
    assert!(!out.stdout.text.contains("leak"), "{env:?}");
    let home = env["HOME"].as_str().unwrap();
    assert!(
        home.contains("toolgate-run-"),
        "HOME points into the run's folder: {home}"
    );
    assert_eq!(env["TMPDIR"], env["HOME"]);
}

#[tokio::test]
async fn an_infinite_loop_is_killed_at_its_deadline_with_everything_it_started() {
    // The grandchild is found from outside by a marker in its command line: inside a PID
    // namespace the pid it could print is not the host's.
    let marker = format!("toolgate-sleeper-{}", std::process::id());
    let code = format!(
        "import subprocess, sys\np = subprocess.Popen([sys.executable, '-c', 'print(1, flush=True); import time; time.sleep(300)', '{marker}'], stdout=subprocess.PIPE)\nprint('started', p.stdout.readline().decode().strip(), flush=True)\nwhile True:\n    pass\n"
    );
    let started = std::time::Instant::now();
    let out = process::run(&spec(&code, Duration::from_secs(1))).await.unwrap();
    let took = started.elapsed();
    assert!(out.timed_out, "{out:?}");
    assert_eq!(out.signal, Some(libc::SIGKILL), "{out:?}");
    assert_eq!(out.exit_code, None);
    assert!(took < Duration::from_secs(3), "returned after {took:?}");
    assert_eq!(out.stdout.text, "started 1\n", "{out:?}");
    assert!(
        gone_within(&marker, Duration::from_secs(5)),
        "the grandchild outlived the run"
    );
}

/// Host processes whose command line holds `marker`.
pub fn processes_holding(marker: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        let text = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if text.contains(marker) {
            found.push(format!("{}: {text}", entry.file_name().to_string_lossy()));
        }
    }
    found
}

/// Returns true if and only if no host process holds `marker` in its command line (a
/// zombie's is empty) within `limit`.
fn gone_within(marker: &str, limit: Duration) -> bool {
    let deadline = std::time::Instant::now() + limit;
    loop {
        if processes_holding(marker).is_empty() {
            return true;
        }
        if std::time::Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// A temp folder every user may search (not list), as `/tmp` is: as root, sandboxed
/// children run as an unprivileged uid, which must reach its run folder inside.
pub fn searchable_tempdir() -> tempfile::TempDir {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o711)).unwrap();
    dir
}

#[tokio::test]
async fn no_folder_is_left_after_a_hundred_runs_including_timeouts_and_spawn_failures() {
    let root = searchable_tempdir();
    let entries = |p: &Path| std::fs::read_dir(p).unwrap().count();
    let mut failures = 0;
    for i in 0..100 {
        let (code, timeout) = if i % 10 == 0 {
            ("while True:\n    pass\n", Duration::from_millis(200))
        } else {
            ("print('hi')\n", Duration::from_secs(10))
        };
        let mut s = spec(code, timeout);
        s.temp_root = Some(root.path().to_owned());
        if i % 25 == 1 {
            s.program = PathBuf::from("/nonexistent/interpreter");
        }
        match process::run(&s).await {
            Ok(out) if i % 10 == 0 => assert!(out.timed_out, "{out:?}"),
            Ok(out) => assert_eq!(out.stdout.text, "hi\n", "{out:?}"),
            Err(e) => {
                assert_eq!(e.code(), "RUNTIME_UNAVAILABLE", "{e}");
                failures += 1;
            }
        }
        assert_eq!(entries(root.path()), 0, "run {i} left its folder behind");
    }
    assert_eq!(failures, 4);
}

#[tokio::test]
async fn the_version_output_reports_every_sandbox_layer() {
    let out = tokio::process::Command::new(crate::util::bin())
        .arg("--version")
        .output()
        .await
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(text.starts_with("toolgate "), "{text}");
    let layers = Sandbox::get().layers();
    assert!(
        text.contains(&format!("\nsandbox: {}\n", layers.required())),
        "{text}\nexpected {layers}"
    );
    assert!(
        text.contains(&format!(
            "\nsandbox where the kernel offers it: {}\n",
            layers.optional()
        )),
        "{text}"
    );
}

#[tokio::test]
async fn the_startup_debug_output_reports_every_sandbox_layer() {
    let gate = crate::util::Gate::start(&[("TOOLGATE_DEBUG", "1")]).await;
    let stderr = gate.stop().await;
    let layers = Sandbox::get().layers().to_string();
    assert!(stderr.contains(&format!("sandbox: {layers}")), "{stderr}");
}

#[tokio::test]
async fn a_finished_run_does_not_wait_for_a_pipe_an_escaped_child_holds() {
    // The grandchild leaves the process group (setsid), so the group kill misses it, and
    // it keeps stdout open; the run must still end when its program does.
    let code = "import os, sys, time\npid = os.fork()\nif pid == 0:\n    os.setsid()\n    time.sleep(60)\n    os._exit(0)\nprint(pid, flush=True)\n";
    let started = std::time::Instant::now();
    let out = process::run(&spec(code, Duration::from_secs(30))).await.unwrap();
    let took = started.elapsed();
    let escaped: i32 = out.stdout.text.trim().parse().unwrap_or_else(|_| panic!("{out:?}"));
    // SAFETY: kill(2) on the pid the child printed; no memory involved.
    unsafe {
        libc::kill(escaped, libc::SIGKILL);
    }
    assert!(!out.timed_out, "{out:?}");
    assert_eq!(out.exit_code, Some(0), "{out:?}");
    assert!(
        took < Duration::from_secs(10),
        "returned after {took:?}, near the 30 s deadline"
    );
}

#[tokio::test]
async fn a_child_cannot_read_the_hosts_secrets_in_etc() {
    let layers = Sandbox::get().layers();
    if !active(&layers.landlock) {
        return;
    }
    let code = "try:\n    open('/etc/shadow').close()\n    print('read')\nexcept PermissionError:\n    print('refused')\nexcept FileNotFoundError:\n    print('absent')\n";
    let out = process::run(&spec(code, Duration::from_secs(10))).await.unwrap();
    let mut control = spec(code, Duration::from_secs(10));
    control.sandbox = None;
    let free = process::run(&control).await.unwrap();
    if free.stdout.text == "absent\n" {
        return;
    }
    // As root the control reads it; as another user it is refused either way.
    if free.stdout.text == "read\n" {
        assert_eq!(out.stdout.text, "refused\n", "{out:?}");
    }
    // What a runtime needs from /etc is still there.
    let needs = "import ssl, time\nssl.create_default_context()\nprint(time.tzname[0] != '')\n";
    let out = process::run(&spec(needs, Duration::from_secs(10))).await.unwrap();
    assert_eq!(out.stdout.text, "True\n", "{out:?}");
}

#[tokio::test]
async fn running_as_root_is_said_once_when_children_will_run() {
    let gate = crate::util::Gate::start(&[("TOOLGATE_RUNTIMES", "nyxilum")]).await;
    let stderr = gate.stop().await;
    // SAFETY: geteuid(2) has no preconditions and cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    assert_eq!(
        stderr.matches("toolgate runs as root").count(),
        usize::from(root),
        "{stderr}"
    );
}
