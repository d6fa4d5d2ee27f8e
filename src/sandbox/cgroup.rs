//! A cgroup v2 per run, where the kernel offers a writable one: `memory.max` (the run's
//! resident memory, its tmpfs folder included), `pids.max` and `cpu.max`, and
//! `cgroup.kill` to end every process in it at once.
//!
//! The server uses the cgroup it was started in (`/proc/self/cgroup` under the cgroup2
//! mount) as the parent of its runs' cgroups. Controllers can be handed to children only
//! by a cgroup that holds no process itself, so when the server is the only process in
//! it, it first moves itself into a leaf (`toolgate-server`) — the usual way to use a
//! delegated cgroup (systemd `Delegate=yes`). A cgroup shared with other processes, a
//! read-only tree or one without the memory, pids and cpu controllers (they may be bound
//! to cgroup v1) is reported as unavailable with the reason. Each run's cgroup is made
//! before the spawn; the child joins it first thing after `fork` (`child.rs`), and it is
//! killed and removed when the run's [`RunCgroup`] is dropped.

use std::io;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use super::Rlimits;

/// The controllers a run's cgroup needs.
const WANTED: [&str; 3] = ["memory", "pids", "cpu"];

/// The leaf this server moves itself into, so its own cgroup may hand controllers down.
const SERVER_LEAF: &str = "toolgate-server";

/// The delegated cgroup under which runs get their own.
#[derive(Debug)]
pub(super) struct Tree {
    base: PathBuf,
}

/// Finds this process's cgroup v2 and prepares it to hold runs' cgroups, or says why not.
pub(super) fn probe() -> Result<Tree, String> {
    let mountinfo =
        std::fs::read_to_string("/proc/self/mountinfo").map_err(|e| format!("/proc/self/mountinfo: {e}"))?;
    let mount = cgroup2_mount(&mountinfo).ok_or("no cgroup v2 hierarchy is mounted")?;
    let own = std::fs::read_to_string("/proc/self/cgroup").map_err(|e| format!("/proc/self/cgroup: {e}"))?;
    let path = own_path(&own)
        .ok_or("this process is in no cgroup v2")?
        .trim_start_matches('/');
    let base = if path.is_empty() { mount } else { mount.join(path) };
    Tree::setup(&base, std::process::id())
}

/// The mount point of the cgroup2 filesystem, from `/proc/self/mountinfo`.
fn cgroup2_mount(mountinfo: &str) -> Option<PathBuf> {
    mountinfo.lines().find_map(|line| {
        let (left, right) = line.split_once(" - ")?;
        let point = left.split_whitespace().nth(4)?;
        (right.split_whitespace().next() == Some("cgroup2")).then(|| PathBuf::from(point))
    })
}

/// This process's cgroup v2 path, from `/proc/self/cgroup` (the `0::` line).
fn own_path(cgroup: &str) -> Option<&str> {
    cgroup.lines().find_map(|line| line.strip_prefix("0::"))
}

impl Tree {
    /// Checks `base` offers the wanted controllers and hands them to its children,
    /// moving `pid` (this server) into a leaf first when the kernel requires it.
    fn setup(base: &Path, pid: u32) -> Result<Tree, String> {
        let read = |name: &str| {
            std::fs::read_to_string(base.join(name)).map_err(|e| format!("{}/{name}: {e}", base.display()))
        };
        let offered = read("cgroup.controllers")?;
        let missing: Vec<&str> = WANTED
            .into_iter()
            .filter(|c| !offered.split_whitespace().any(|o| o == *c))
            .collect();
        if !missing.is_empty() {
            return Err(format!(
                "the cgroup v2 tree at {} does not offer {} (it offers: {}; they may be on cgroup v1 here)",
                base.display(),
                missing.join(", "),
                if offered.trim().is_empty() {
                    "nothing"
                } else {
                    offered.trim()
                }
            ));
        }
        let enabled = read("cgroup.subtree_control")?;
        if WANTED.iter().all(|c| enabled.split_whitespace().any(|e| e == *c)) {
            return Ok(Tree { base: base.to_owned() });
        }
        let enable = |base: &Path| std::fs::write(base.join("cgroup.subtree_control"), "+memory +pids +cpu");
        match enable(base) {
            Ok(()) => return Ok(Tree { base: base.to_owned() }),
            // Busy: it holds processes (this one); anything else is final.
            Err(e) if e.raw_os_error() != Some(libc::EBUSY) => {
                return Err(format!("cannot hand controllers down in {}: {e}", base.display()));
            }
            Err(_) => {}
        }
        let procs = read("cgroup.procs")?;
        let others = procs.lines().filter(|p| p.trim() != pid.to_string()).count();
        if others > 0 {
            return Err(format!(
                "the server's cgroup {} holds {others} other processes; give toolgate a cgroup of its own (systemd: Delegate=yes)",
                base.display()
            ));
        }
        let leaf = base.join(SERVER_LEAF);
        match std::fs::create_dir(&leaf) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(format!("{}: {e}", leaf.display())),
        }
        std::fs::write(leaf.join("cgroup.procs"), pid.to_string())
            .map_err(|e| format!("cannot move the server into {}: {e}", leaf.display()))?;
        enable(base).map_err(|e| format!("cannot hand controllers down in {}: {e}", base.display()))?;
        Ok(Tree { base: base.to_owned() })
    }

    /// Where runs' cgroups are made.
    pub(super) fn base(&self) -> &Path {
        &self.base
    }

    /// A fresh cgroup for one run, with `limits`' memory, process and CPU bounds.
    pub(super) fn run(&self, limits: &Rlimits) -> Result<RunCgroup, String> {
        static RUNS: AtomicU64 = AtomicU64::new(0);
        let name = format!(
            "toolgate-run-{}-{}",
            std::process::id(),
            RUNS.fetch_add(1, Ordering::Relaxed)
        );
        let dir = self.base.join(name);
        std::fs::create_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let run = RunCgroup { dir };
        let period = 100_000u64;
        let settings = [
            ("memory.max", limits.memory_bytes.to_string()),
            ("pids.max", limits.processes.to_string()),
            ("cpu.max", format!("{} {period}", limits.cpu_percent * period / 100)),
        ];
        for (file, value) in settings {
            std::fs::write(run.dir.join(file), value).map_err(|e| format!("{}/{file}: {e}", run.dir.display()))?;
        }
        // No swap to spill into past memory.max, where the kernel has swap accounting.
        let _ = std::fs::write(run.dir.join("memory.swap.max"), "0");
        Ok(run)
    }
}

/// One run's cgroup: killed and removed when dropped.
#[derive(Debug)]
pub struct RunCgroup {
    dir: PathBuf,
}

impl RunCgroup {
    /// Its `cgroup.procs`, opened for writing: the child writes `0` to it to join.
    pub(super) fn procs(&self) -> io::Result<OwnedFd> {
        let file = std::fs::OpenOptions::new()
            .write(true)
            .open(self.dir.join("cgroup.procs"))?;
        Ok(file.into())
    }

    /// Kills every process in it with SIGKILL (`cgroup.kill`, else one by one).
    pub fn kill(&self) {
        if std::fs::write(self.dir.join("cgroup.kill"), "1").is_ok() {
            return;
        }
        let procs = std::fs::read_to_string(self.dir.join("cgroup.procs")).unwrap_or_default();
        for pid in procs.lines().filter_map(|p| p.trim().parse::<i32>().ok()) {
            // SAFETY: kill(2) on a pid the kernel listed; no memory involved.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
            }
        }
    }
}

impl Drop for RunCgroup {
    fn drop(&mut self) {
        self.kill();
        if std::fs::remove_dir(&self.dir).is_ok() {
            return;
        }
        // Killed processes leave a moment later; remove it once they have, off this
        // thread (a run's drop must not block the server).
        let dir = std::mem::take(&mut self.dir);
        let _ = std::thread::Builder::new().name("cgroup-rmdir".into()).spawn(move || {
            for _ in 0..200 {
                std::thread::sleep(std::time::Duration::from_millis(10));
                if std::fs::remove_dir(&dir).is_ok() || !dir.exists() {
                    return;
                }
            }
            tracing::warn!("could not remove the run's cgroup {}", dir.display());
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cgroup2_mount_and_own_path_are_read_from_proc() {
        let mountinfo = "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n\
                         41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";
        assert_eq!(cgroup2_mount(mountinfo), Some(PathBuf::from("/sys/fs/cgroup/unified")));
        assert_eq!(cgroup2_mount("22 27 0:21 / /proc rw - proc proc rw\n"), None);
        assert_eq!(
            own_path("4:memory:/x\n0::/user.slice/a.scope\n"),
            Some("/user.slice/a.scope")
        );
        assert_eq!(own_path("4:memory:/x\n"), None);
    }

    #[test]
    fn a_tree_without_the_controllers_says_which_are_missing() {
        let base = tempfile::tempdir().unwrap();
        std::fs::write(base.path().join("cgroup.controllers"), "hugetlb\n").unwrap();
        let why = Tree::setup(base.path(), 1).unwrap_err();
        assert!(
            why.contains("does not offer memory, pids, cpu (it offers: hugetlb"),
            "{why}"
        );
    }

    #[test]
    fn runs_get_a_cgroup_with_their_bounds() {
        // A plain folder standing in for cgroupfs: writes create the files.
        let base = tempfile::tempdir().unwrap();
        std::fs::write(base.path().join("cgroup.controllers"), "cpu memory pids io\n").unwrap();
        std::fs::write(base.path().join("cgroup.subtree_control"), "").unwrap();
        let tree = Tree::setup(base.path(), 42).unwrap();
        assert_eq!(
            std::fs::read_to_string(base.path().join("cgroup.subtree_control")).unwrap(),
            "+memory +pids +cpu"
        );
        let mut limits = Rlimits::with_cpu_seconds(1);
        limits.memory_bytes = 1 << 30;
        limits.processes = 64;
        limits.cpu_percent = 50;
        let run = tree.run(&limits).unwrap();
        let read = |f: &str| std::fs::read_to_string(run.dir.join(f)).unwrap();
        assert_eq!(read("memory.max"), "1073741824");
        assert_eq!(read("pids.max"), "64");
        assert_eq!(read("cpu.max"), "50000 100000");
        let dir = run.dir.clone();
        assert!(dir.starts_with(tree.base()));
        drop(run);
        // A plain folder with files in it cannot be removed like an empty cgroup; the
        // kill was still written.
        assert_eq!(std::fs::read_to_string(dir.join("cgroup.kill")).unwrap(), "1");
    }
}
