//! Finding out, once, which isolation layers this kernel allows.
//!
//! The namespace layers are probed in throwaway children (`fork`, then the same
//! `Prepared::apply` a real child runs, then exit), never in the server itself, whose
//! namespaces must not change: the user and network namespace, then with it the PID and
//! mount namespace and a fresh `/proc`, then with those the run folder's tmpfs. Landlock
//! is probed by asking the kernel for its ABI version; resource limits by reading one;
//! cgroups by preparing this process's own cgroup v2 to hold runs (`cgroup.rs`).

use super::cgroup::{self, Tree};
use super::child::{self, Ids, Prepared};
use super::pidns::{Mounts, Quota};
use super::{Layer, Layers};
use crate::limits;

/// Probes every layer; with the cgroup layer, where runs' cgroups go.
pub(super) fn layers() -> (Layers, Option<Tree>) {
    let namespaces = namespaces();
    let pid = if namespaces.is_active() {
        pid()
    } else {
        Layer::Unavailable("needs the user+network namespace".into())
    };
    let quota = if pid.is_active() {
        quota()
    } else {
        Layer::Unavailable("needs the pid+mount namespace".into())
    };
    let (cgroup, tree) = cgroups();
    let layers = Layers {
        rlimits: rlimits(),
        namespaces,
        pid,
        quota,
        landlock: landlock(),
        cgroup,
    };
    tracing::debug!("sandbox layers: {layers}; {}", layers.optional());
    (layers, tree)
}

fn cgroups() -> (Layer, Option<Tree>) {
    match cgroup::probe() {
        Ok(tree) => (
            Layer::Active(format!(
                "{} GiB of memory, {} processes, {}% of a CPU per run, under {}",
                limits::SANDBOX_MEMORY_BYTES / (1024 * 1024 * 1024),
                limits::SANDBOX_PROCESSES,
                limits::SANDBOX_CPU_PERCENT,
                tree.base().display()
            )),
            Some(tree),
        ),
        Err(why) => (Layer::Unavailable(why), None),
    }
}

fn rlimits() -> Layer {
    match rlimit::getrlimit(rlimit::Resource::AS) {
        Ok(_) => Layer::Active("cpu, address space, file size, open files, processes".into()),
        Err(e) => Layer::Unavailable(format!("getrlimit failed: {e}")),
    }
}

fn landlock() -> Layer {
    // SAFETY: LANDLOCK_CREATE_RULESET_VERSION with a null attribute only queries the ABI.
    let abi = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            1u32, // LANDLOCK_CREATE_RULESET_VERSION
        )
    };
    if abi >= 1 {
        Layer::Active(format!("ABI {abi}"))
    } else {
        let e = std::io::Error::last_os_error();
        Layer::Unavailable(format!("the kernel refused landlock: {e}"))
    }
}

/// The namespace part of a child's preparation: the drop to the unprivileged id (as
/// root) and the user+network namespace, and `pid` as given.
fn prepared(pid: Option<Mounts>) -> Prepared {
    let drop_to = child::unprivileged(limits::SANDBOX_UNPRIVILEGED_ID);
    Prepared {
        cgroup: None,
        drop_to,
        ids: Some(Ids::new(drop_to)),
        pid,
        limits: Vec::new(),
        landlock: None,
    }
}

fn namespaces() -> Layer {
    let how = match child::unprivileged(limits::SANDBOX_UNPRIVILEGED_ID) {
        Some((uid, _)) => format!("no network; as root, children run as uid {uid}"),
        None => "no network; identity uid/gid map".into(),
    };
    match trial(&prepared(None)) {
        Ok(()) => Layer::Active(how),
        Err(why) => Layer::Unavailable(format!("the kernel refused unshare(CLONE_NEWUSER|CLONE_NEWNET): {why}")),
    }
}

fn pid() -> Layer {
    match trial(&prepared(Some(Mounts { quota: None }))) {
        Ok(()) => Layer::Active("a run's processes die with it; fresh /proc".into()),
        Err(why) => Layer::Unavailable(format!(
            "the kernel refused a PID and mount namespace with a fresh /proc: {why}"
        )),
    }
}

fn quota() -> Layer {
    // The system temp folder, else /tmp: a root server's TMPDIR may be out of reach of
    // the unprivileged id, which fails its runs with a message of their own.
    let tried = [std::env::temp_dir(), std::path::PathBuf::from("/tmp")];
    let mut why = String::new();
    for root in tried {
        match quota_in(&root) {
            Ok(()) => {
                return Layer::Active(format!(
                    "tmpfs of {} MiB and {} entries",
                    limits::SANDBOX_FOLDER_BYTES / (1024 * 1024),
                    limits::SANDBOX_FOLDER_ENTRIES
                ));
            }
            Err(e) => why = e,
        }
    }
    Layer::Unavailable(format!("the kernel refused a tmpfs over the run folder: {why}"))
}

/// Mounts a small tmpfs over a trial folder made in `root`, in a throwaway child.
fn quota_in(root: &std::path::Path) -> Result<(), String> {
    let dir = tempfile::Builder::new()
        .prefix("toolgate-probe-")
        .tempdir_in(root)
        .map_err(|e| format!("no trial folder in {}: {e}", root.display()))?;
    if let Some((uid, gid)) = child::unprivileged(limits::SANDBOX_UNPRIVILEGED_ID) {
        super::hand_over(dir.path(), uid, gid).map_err(|e| e.to_string())?;
    }
    let path = child::c_path(dir.path()).map_err(|e| e.to_string())?;
    let quota = Quota::new(path, 1024 * 1024, 16);
    trial(&prepared(Some(Mounts { quota: Some(quota) })))
}

/// Applies `prepared` in a throwaway child and says whether it worked.
fn trial(prepared: &Prepared) -> Result<(), String> {
    // SAFETY: the child only calls `Prepared::apply` (system calls on prepared data) and
    // `_exit`; the parent waits for it.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(format!("fork failed: {}", std::io::Error::last_os_error()));
    }
    if pid == 0 {
        // With a PID namespace only the namespace's first process returns here; the
        // child that forked it exits with its status.
        let code = match prepared.apply() {
            Ok(()) => 0,
            Err(e) => e.raw_os_error().unwrap_or(255).clamp(1, 255),
        };
        // SAFETY: leaving the probe child without running destructors or atexit hooks.
        unsafe { libc::_exit(code) };
    }
    let mut status = 0;
    // SAFETY: waiting for the child we just forked.
    let waited = unsafe { libc::waitpid(pid, &mut status, 0) };
    if waited != pid {
        return Err(format!("waitpid failed: {}", std::io::Error::last_os_error()));
    }
    if libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0 {
        Ok(())
    } else if libc::WIFEXITED(status) {
        Err(std::io::Error::from_raw_os_error(libc::WEXITSTATUS(status)).to_string())
    } else {
        Err("the probe died".into())
    }
}
