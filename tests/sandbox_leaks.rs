//! The process sandbox's known leaks, each tried as an attacker would, through the
//! real server: `NX_NODE_PATH` points at `pynx`, a "runtime" that runs `main.nx` as Python,
//! so `nyxilum_run` runs arbitrary Python under exactly the sandbox NyxilumNode gets. Each
//! test first asks the probe: a layer this kernel refuses is a skip (a failure with
//! `TOOLGATE_REQUIRE_SANDBOX=1`), never a silent pass.

use std::path::Path;
use std::time::Duration;

use futures::StreamExt;
use serde_json::{Value, json};
use toolgate::backends::process;
use toolgate::sandbox::Sandbox;

use crate::sandbox::{active, active_optional, processes_holding, python_spec, searchable_tempdir};
use crate::util::{Gate, structured};

/// A server whose NyxilumNode runs `main.nx` as Python, making run folders in `tmp`.
struct PyGate {
    gate: Gate,
    _runtime: tempfile::TempDir,
}

impl PyGate {
    async fn start(tmp: &Path, args: &[&str]) -> PyGate {
        use std::os::unix::fs::PermissionsExt;
        let runtime = searchable_tempdir();
        let nx = runtime.path().join("pynx");
        std::fs::write(
            &nx,
            "#!/usr/bin/python3 -IS\nimport sys\npath = sys.argv[-1]\nsys.argv = [path]\nexec(compile(open(path).read(), path, 'exec'), {'__name__': '__main__'})\n",
        )
        .unwrap();
        std::fs::set_permissions(&nx, std::fs::Permissions::from_mode(0o755)).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let env = [
            ("TOOLGATE_RUNTIMES", "nyxilum"),
            ("NX_NODE_PATH", nx.to_str().unwrap()),
            ("TMPDIR", tmp.to_str().unwrap()),
        ];
        let mut cmd = crate::util::command(dir.path(), &env);
        cmd.args(args);
        PyGate {
            gate: Gate::spawn(cmd, dir).await,
            _runtime: runtime,
        }
    }

    /// Runs `code` (Python) within `timeout_ms`; the run's structured answer.
    async fn run(&self, code: &str, timeout_ms: u64) -> Value {
        let r = self
            .gate
            .call("nyxilum_run", json!({"code": code, "timeout_ms": timeout_ms}))
            .await;
        structured(&r).clone()
    }
}

/// A program that starts a grandchild in its own session (`setsid`, so the process
/// group kill misses it) which carries `marker` in its command line and fills the run
/// folder with files; it returns once the grandchild is up.
fn escaping(marker: &str, then: &str) -> String {
    format!(
        r#"import subprocess, sys
loop = "import itertools\nfor i in itertools.count():\n    try:\n        open('f%d' % i, 'w').write('x' * 4096)\n    except OSError:\n        pass\n"
child = subprocess.Popen([sys.executable, '-c', "print('up', flush=True)\n" + loop, '{marker}'], start_new_session=True, stdout=subprocess.PIPE)
print(child.stdout.readline().decode().strip(), 'escaped', flush=True)
{then}
"#
    )
}

#[tokio::test]
async fn setsid_grandchildren_die_with_their_runs_and_200_mixed_runs_leave_no_folder() {
    let layers = Sandbox::get().layers();
    if !active(&layers.pid) {
        return;
    }
    let tmp = searchable_tempdir();
    let py = PyGate::start(tmp.path(), &[]).await;
    let marker = format!("toolgate-escapee-{}", std::process::id());
    let escape_and_exit = escaping(&marker, "");
    let escape_and_spin = escaping(&marker, "while True:\n    pass");
    let runs = (0..200).map(|i| {
        let (code, timeout_ms, expect) = match i % 10 {
            0 => ("while True:\n    pass\n", 200, "timeout"),
            1 | 4 | 7 => (escape_and_exit.as_str(), 10_000, "escaped"),
            5 => (escape_and_spin.as_str(), 300, "timeout"),
            8 => (
                "import sys\nprint('bad', file=sys.stderr)\nsys.exit(3)\n",
                10_000,
                "exit 3",
            ),
            _ => ("print('hi')\n", 10_000, "hi"),
        };
        let py = &py;
        async move {
            let s = py.run(code, timeout_ms).await;
            match expect {
                "timeout" => assert_eq!(s["timedOut"], true, "run {i}: {s}"),
                "exit 3" => assert_eq!(s["exitCode"], 3, "run {i}: {s}"),
                "escaped" => assert_eq!(s["stdout"], "up escaped\n", "run {i}: {s}"),
                _ => assert_eq!(s["stdout"], "hi\n", "run {i}: {s}"),
            }
        }
    });
    futures::stream::iter(runs)
        .buffer_unordered(4)
        .collect::<Vec<()>>()
        .await;
    // A run answers once its supervisor has seen process 1 of its namespace end, and the
    // kernel reports that only after every other process in it is gone: nothing to wait for.
    assert_eq!(
        processes_holding(&marker),
        Vec::<String>::new(),
        "escaped grandchildren"
    );
    let left: Vec<_> = std::fs::read_dir(tmp.path())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    assert!(left.is_empty(), "folders left behind: {left:?}");
    py.gate.stop().await;
}

#[tokio::test]
async fn a_child_sees_neither_the_server_nor_a_sibling_run() {
    let layers = Sandbox::get().layers();
    if !active(&layers.pid) {
        return;
    }
    let tmp = searchable_tempdir();
    let secret = format!("sk-toolgate-test-{}", std::process::id());
    let py = PyGate::start(tmp.path(), &["--api-key", &secret]).await;
    let server = py.gate.pid.unwrap();
    // A sibling run, alive while the probe runs: it waits on its stdin... which is
    // /dev/null, so it sleeps instead, and is killed at its deadline.
    let sibling = py.run("import time\ntime.sleep(60)\n", 3_000);
    let probe = async {
        // The sibling's supervisor is the server's child; its program, the supervisor's.
        let sibling_pids = wait_for_grandchildren(server).await;
        let code = format!(
            r#"import os
def look(pid):
    try:
        return open('/proc/%d/cmdline' % pid, 'rb').read().decode(errors='replace')
    except OSError as e:
        return type(e).__name__
print(sorted(int(p) for p in os.listdir('/proc') if p.isdigit()))
for pid in {pids:?}:
    print(pid, look(pid))
"#,
            pids = std::iter::once(server)
                .chain(sibling_pids.iter().copied())
                .collect::<Vec<_>>()
        );
        (py.run(&code, 10_000).await, sibling_pids)
    };
    let ((seen, sibling_pids), sibling) = tokio::join!(probe, sibling);
    assert_eq!(sibling["timedOut"], true, "{sibling}");
    let stdout = seen["stdout"].as_str().unwrap_or_default();
    let mut lines = stdout.lines();
    assert_eq!(lines.next(), Some("[1]"), "only itself, as process 1: {seen}");
    for line in lines {
        assert!(line.ends_with(" FileNotFoundError"), "{line}\n{seen}");
    }
    assert!(!stdout.contains(&secret), "{seen}");
    assert_eq!(stdout.lines().count(), 2 + sibling_pids.len(), "{seen}");
    // The server's command line is there to read from outside the sandbox.
    let outside = std::fs::read(format!("/proc/{server}/cmdline")).unwrap();
    assert!(String::from_utf8_lossy(&outside).contains(&secret));
    py.gate.stop().await;
}

/// The processes two generations below `pid` (a run's program, below its supervisor),
/// once there is one.
async fn wait_for_grandchildren(pid: u32) -> Vec<u32> {
    let children = |of: u32| -> Vec<u32> {
        std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
            .filter(|p| {
                let stat = std::fs::read_to_string(format!("/proc/{p}/stat")).unwrap_or_default();
                let parent = stat.rsplit(')').next().and_then(|r| r.split_whitespace().nth(1));
                parent == Some(of.to_string().as_str())
            })
            .collect()
    };
    for _ in 0..500 {
        let grandchildren: Vec<u32> = children(pid).into_iter().flat_map(&children).collect();
        if !grandchildren.is_empty() {
            let supervisors = children(pid);
            return supervisors.into_iter().chain(grandchildren).collect();
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("the sibling run never started");
}

#[tokio::test]
async fn as_root_a_child_is_unprivileged_even_where_landlock_would_let_it_read() {
    // SAFETY: geteuid(2) has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } != 0 || !Path::new("/etc/shadow").exists() {
        return;
    }
    let code = "import os\ntry:\n    open('/etc/shadow').read()\n    print(os.getuid(), 'read')\nexcept PermissionError:\n    print(os.getuid(), 'refused')\n";
    // Landlock is told to allow all of /etc, so only the unprivileged uid stands between
    // the child and the host's password hashes.
    let mut s = python_spec(code, Duration::from_secs(10));
    if let Some(c) = s.sandbox.as_mut() {
        c.read_paths.push("/etc".into());
    }
    let out = process::run(&s).await.unwrap();
    assert!(out.applied.unprivileged, "{out:?}");
    assert_eq!(out.stdout.text, "65534 refused\n", "{out:?}");
    let mut control = python_spec(code, Duration::from_secs(10));
    control.sandbox = None;
    let free = process::run(&control).await.unwrap();
    assert_eq!(free.stdout.text, "0 read\n", "control run: {free:?}");
}

#[tokio::test]
async fn seven_hundred_forks_are_refused() {
    if !active(&Sandbox::get().layers().rlimits) {
        return;
    }
    let tmp = searchable_tempdir();
    let py = PyGate::start(tmp.path(), &[]).await;
    let code = r#"import os
r, w = os.pipe()
forked, error = 0, None
while forked < 700:
    try:
        pid = os.fork()
    except OSError as e:
        error = type(e).__name__
        break
    if pid == 0:
        os.close(w)
        os.read(r, 1)
        os._exit(0)
    forked += 1
os.close(w)
print(forked, error)
"#;
    let s = py.run(code, 20_000).await;
    let stdout = s["stdout"].as_str().unwrap_or_default();
    let (forked, error) = stdout.trim().split_once(' ').unwrap_or_else(|| panic!("{s}"));
    let forked: u64 = forked.parse().unwrap_or_else(|_| panic!("{s}"));
    assert!(forked < 512, "{forked} forks succeeded: {s}");
    assert_eq!(error, "BlockingIOError", "{s}");
    py.gate.stop().await;
}

#[tokio::test]
async fn the_folder_quota_stops_a_writer() {
    if !active(&Sandbox::get().layers().quota) {
        return;
    }
    let tmp = searchable_tempdir();
    let py = PyGate::start(tmp.path(), &[]).await;
    // Many files of 16 MiB, under the file size limit each; then many empty files.
    let code = r#"import errno, os, time
started = time.monotonic()
chunk = b'x' * (1024 * 1024)
written, failure = 0, None
try:
    for n in range(90):
        with open('big%d' % n, 'wb') as f:
            for _ in range(16):
                f.write(chunk)
                written += len(chunk)
except OSError as e:
    failure = errno.errorcode[e.errno]
for name in os.listdir('.'):
    if name.startswith('big'):
        os.remove(name)
files, full = 0, None
try:
    while files < 100000:
        open('e%d' % files, 'w').close()
        files += 1
except OSError as e:
    full = errno.errorcode[e.errno]
print(written // (1024 * 1024), failure, files, full, round(time.monotonic() - started, 2))
"#;
    let s = py.run(code, 30_000).await;
    let stdout = s["stdout"].as_str().unwrap_or_default();
    let fields: Vec<&str> = stdout.split_whitespace().collect();
    assert_eq!(fields.len(), 5, "{s}");
    let written: u64 = fields[0].parse().unwrap();
    assert!(written <= 64, "{written} MiB written: {s}");
    assert_eq!(fields[1], "ENOSPC", "{s}");
    let files: u64 = fields[2].parse().unwrap();
    assert!(files < 4096, "{files} files made: {s}");
    assert_eq!(fields[3], "ENOSPC", "{s}");
    eprintln!("quota: {written} MiB then {files} files refused after {} s", fields[4]);
    let left = std::fs::read_dir(tmp.path()).unwrap().count();
    assert_eq!(left, 0, "the run folder is left behind");
    py.gate.stop().await;
}

#[tokio::test]
async fn a_runs_cgroup_bounds_its_memory() {
    if !active_optional(&Sandbox::get().layers().cgroup) {
        return;
    }
    // 256 MiB touched against a 64 MiB cgroup: the kernel's OOM killer ends it, well
    // inside the 8 GiB address-space limit that would let it through.
    let code = "b = bytearray(256 * 1024 * 1024)\nprint('allocated')\n";
    let mut s = python_spec(code, Duration::from_secs(10));
    if let Some(c) = s.sandbox.as_mut() {
        c.rlimits.memory_bytes = 64 * 1024 * 1024;
    }
    let out = process::run(&s).await.unwrap();
    assert!(out.applied.cgroup, "{out:?}");
    assert_eq!(out.signal, Some(libc::SIGKILL), "{out:?}");
    assert!(!out.timed_out, "{out:?}");
    let out = process::run(&python_spec(code, Duration::from_secs(10))).await.unwrap();
    assert_eq!(
        out.stdout.text, "allocated\n",
        "with the default memory it fits: {out:?}"
    );
}
