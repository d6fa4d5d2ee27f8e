//! Process isolation for child runtimes, in layers applied by the kernel.
//!
//! A [`Sandbox`] confines a child process before it executes its program: resource
//! limits (CPU seconds, address space, file size, open files, processes); as root, an
//! unprivileged uid and gid; a new user and network namespace (the child has no network
//! at all, only a loopback that is down); a new PID and mount namespace with a fresh
//! `/proc` (everything the child starts dies with it, and no other process is visible);
//! its folder on a size- and entry-limited tmpfs; and a landlock ruleset (it may write
//! only inside its own folder and read only where its runtime lives). Each layer is
//! applied only when this kernel allows it; which ones do is probed once per process and
//! reported by [`Sandbox::layers`] (in `--version` and the startup debug output), never
//! silently assumed.
//!
//! Everything the child needs is prepared in the parent (`child.rs`): after `fork` the
//! child only makes system calls, so it never allocates or takes a lock. This module
//! knows nothing about what runs inside (NyxilumNode, python3, a future JS worker) or
//! about MCP; `backends::process` uses it.

mod cgroup;
mod child;
mod pidns;
mod probe;
mod rules;
mod worker;

pub use worker::{Refused, restrict_worker, seal_worker};

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::error::Error;
use crate::limits;

/// Whether one isolation layer works on this kernel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Layer {
    /// The layer is applied to every sandboxed child; the text says how (e.g. the ABI).
    Active(String),
    /// The kernel refused it; children run without it. The text says why.
    Unavailable(String),
}

impl Layer {
    /// Returns true if and only if the layer is applied to sandboxed children.
    pub fn is_active(&self) -> bool {
        matches!(self, Layer::Active(_))
    }
}

impl fmt::Display for Layer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Layer::Active(how) => write!(f, "active ({how})"),
            Layer::Unavailable(why) => write!(f, "UNAVAILABLE ({why})"),
        }
    }
}

/// What the probe found for each layer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layers {
    /// `setrlimit` on CPU, address space, file size, open files and processes.
    pub rlimits: Layer,
    /// A new user namespace with a new network namespace inside it.
    pub namespaces: Layer,
    /// A new PID namespace (the run's processes die with it) and mount namespace with a
    /// fresh `/proc` (no other process is visible). Needs `namespaces`.
    pub pid: Layer,
    /// The run folder on a size- and entry-limited tmpfs. Needs `pid`.
    pub quota: Layer,
    /// Landlock filesystem rules.
    pub landlock: Layer,
    /// A cgroup v2 per run (memory, processes, CPU), where the kernel offers a writable
    /// one. Optional: reported apart from the others (see [`Layers::optional`]).
    pub cgroup: Layer,
}

impl Layers {
    /// The layers every supported machine should offer, for a report: `rlimits: ...;
    /// user+network namespace: ...; ...`. This is the `Display` form too.
    pub fn required(&self) -> String {
        format!(
            "rlimits: {}; user+network namespace: {}; pid+mount namespace: {}; folder quota: {}; landlock: {}",
            self.rlimits, self.namespaces, self.pid, self.quota, self.landlock
        )
    }

    /// The layers applied only where the kernel offers them (cgroups need a delegated,
    /// writable cgroup v2 tree, which many machines and containers lack), for a report.
    pub fn optional(&self) -> String {
        format!("cgroup: {}", self.cgroup)
    }
}

impl fmt::Display for Layers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.required())
    }
}

/// Resource limits of one sandboxed child. Zero is never "unlimited": every field is a
/// real bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rlimits {
    /// CPU seconds (`RLIMIT_CPU`); the kernel kills the child past it.
    pub cpu_seconds: u64,
    /// Address space in bytes (`RLIMIT_AS`).
    pub address_space_bytes: u64,
    /// Largest file it may write, in bytes (`RLIMIT_FSIZE`).
    pub file_size_bytes: u64,
    /// Open file descriptors (`RLIMIT_NOFILE`).
    pub open_files: u64,
    /// Processes and threads (`RLIMIT_NPROC`).
    pub processes: u64,
    /// Bytes the run folder may hold (its tmpfs's size), with the folder quota layer.
    pub folder_bytes: u64,
    /// Entries (files, folders, links) the run folder may hold (its tmpfs's inodes),
    /// with the folder quota layer.
    pub folder_entries: u64,
    /// Memory of the whole run in bytes (`memory.max`), with the cgroup layer.
    pub memory_bytes: u64,
    /// Share of one CPU in percent (`cpu.max`), with the cgroup layer. The process
    /// limit above is also its `pids.max`.
    pub cpu_percent: u64,
}

impl Rlimits {
    /// The defaults of `limits.rs` with `cpu_seconds` of CPU.
    pub fn with_cpu_seconds(cpu_seconds: u64) -> Rlimits {
        Rlimits {
            cpu_seconds,
            address_space_bytes: limits::SANDBOX_ADDRESS_SPACE_BYTES,
            file_size_bytes: limits::SANDBOX_FILE_SIZE_BYTES,
            open_files: limits::SANDBOX_OPEN_FILES,
            processes: limits::SANDBOX_PROCESSES,
            folder_bytes: limits::SANDBOX_FOLDER_BYTES,
            folder_entries: limits::SANDBOX_FOLDER_ENTRIES,
            memory_bytes: limits::SANDBOX_MEMORY_BYTES,
            cpu_percent: limits::SANDBOX_CPU_PERCENT,
        }
    }
}

/// What one child may do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    /// The only folder it may write in (its own temp folder), or none: a process with no
    /// folder (a long-lived worker) may write nowhere but `/dev/null`.
    pub write_dir: Option<PathBuf>,
    /// Folders (or files) it may read and execute, besides the system folders of
    /// [`SYSTEM_READ_PATHS`] and `write_dir`. Missing paths are skipped.
    pub read_paths: Vec<PathBuf>,
    /// Its resource limits.
    pub rlimits: Rlimits,
}

/// System paths every sandboxed child may read: libraries, the dynamic loader's and the
/// TLS certificates' configuration, time zones, `/proc` and devices. Of `/etc` only what a
/// runtime reads is granted — not `/etc/shadow`, `/etc/sudoers` or the host's other
/// secrets, which a child running as root could otherwise read. Home folders, `/tmp` and
/// `/root` are not among them, so a child cannot read another run's folder or the
/// operator's files.
pub const SYSTEM_READ_PATHS: &[&str] = &[
    "/usr",
    "/lib",
    "/lib64",
    "/lib32",
    "/bin",
    "/sbin",
    "/opt",
    "/proc",
    "/sys",
    "/dev",
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/alternatives",
    "/etc/localtime",
    "/etc/timezone",
    "/etc/ssl",
    "/etc/pki",
    "/etc/ca-certificates",
    "/etc/nsswitch.conf",
    "/etc/passwd",
    "/etc/group",
    "/etc/host.conf",
    "/etc/hosts",
    "/etc/gai.conf",
    "/etc/mime.types",
];

pub use cgroup::RunCgroup;

/// The isolation layers this kernel allows, probed once.
#[derive(Debug)]
pub struct Sandbox {
    layers: Layers,
    /// Where runs' cgroups are made, when the cgroup layer is active.
    cgroups: Option<cgroup::Tree>,
}

/// What [`Sandbox::confine`] arranged for one child.
#[derive(Debug)]
pub struct Confined {
    /// The layers it will run under.
    pub applied: Applied,
    /// Its cgroup, when the cgroup layer is active: [`RunCgroup::kill`] ends every
    /// process of the run; dropping it kills them and removes the cgroup. Keep it as
    /// long as the child runs.
    pub cgroup: Option<RunCgroup>,
}

/// What [`Sandbox::confine`] will apply to a child.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Applied {
    /// Resource limits.
    pub rlimits: bool,
    /// It runs as [`limits::SANDBOX_UNPRIVILEGED_ID`], because the server runs as root.
    pub unprivileged: bool,
    /// New user and network namespace.
    pub namespaces: bool,
    /// New PID and mount namespace with a fresh `/proc`.
    pub pid: bool,
    /// Its folder on a limited tmpfs.
    pub quota: bool,
    /// Landlock rules.
    pub landlock: bool,
    /// Its own cgroup.
    pub cgroup: bool,
}

impl Sandbox {
    /// The process-wide sandbox; the kernel is probed on first use.
    pub fn get() -> &'static Sandbox {
        static SANDBOX: OnceLock<Sandbox> = OnceLock::new();
        SANDBOX.get_or_init(|| {
            let (layers, cgroups) = probe::layers();
            Sandbox { layers, cgroups }
        })
    }

    /// What the probe found.
    pub fn layers(&self) -> &Layers {
        &self.layers
    }

    /// Arranges for `cmd`'s child to be confined by `policy` before it executes, with
    /// every layer this kernel allows, and to lead its own process group (so a deadline
    /// can kill everything it started). When this process runs as root, the child runs
    /// as [`limits::SANDBOX_UNPRIVILEGED_ID`] and its folder is given to that id. Fails
    /// when the parent cannot prepare a layer it should be able to (a landlock ruleset
    /// that cannot be built, a cgroup that cannot be made) or, as root, when that id
    /// could not reach the folder.
    pub fn confine(&self, cmd: &mut tokio::process::Command, policy: &Policy) -> Result<Confined, Error> {
        let drop_to = child::unprivileged(limits::SANDBOX_UNPRIVILEGED_ID);
        if let (Some((uid, gid)), Some(dir)) = (drop_to, &policy.write_dir) {
            hand_over(dir, uid, gid)?;
        }
        let landlock = if self.layers.landlock.is_active() {
            Some(
                rules::landlock(policy)
                    .map_err(|e| Error::Internal(format!("cannot prepare the landlock rules: {e}")))?,
            )
        } else {
            None
        };
        let namespaces = self.layers.namespaces.is_active();
        let pid = namespaces && self.layers.pid.is_active();
        let quota = match &policy.write_dir {
            Some(dir) if pid && self.layers.quota.is_active() => Some(pidns::Quota::new(
                child::c_path(dir).map_err(|e| Error::Internal(format!("{}: {e}", dir.display())))?,
                policy.rlimits.folder_bytes,
                policy.rlimits.folder_entries,
            )),
            _ => None,
        };
        let cgroup = match &self.cgroups {
            Some(tree) => Some(
                tree.run(&policy.rlimits)
                    .map_err(|e| Error::Internal(format!("cannot make the run's cgroup: {e}")))?,
            ),
            None => None,
        };
        let procs = match &cgroup {
            Some(run) => Some(
                run.procs()
                    .map_err(|e| Error::Internal(format!("cannot open the run's cgroup: {e}")))?,
            ),
            None => None,
        };
        let prepared = child::Prepared {
            cgroup: procs,
            drop_to,
            ids: namespaces.then(|| child::Ids::new(drop_to)),
            pid: pid.then_some(pidns::Mounts { quota }),
            limits: if self.layers.rlimits.is_active() {
                child::clamped(&policy.rlimits)
            } else {
                Vec::new()
            },
            landlock,
        };
        let applied = prepared.applied();
        cmd.process_group(0);
        // SAFETY: `Prepared::apply` only makes system calls on data prepared before the
        // fork: it does not allocate, lock or touch anything another thread could hold.
        unsafe {
            cmd.pre_exec(move || prepared.apply());
        }
        Ok(Confined { applied, cgroup })
    }
}

/// Gives `dir` to `uid`/`gid` (the child's unprivileged ids) and checks they can reach
/// it: every folder above it must be searchable by them, as `/tmp` is. A root server's
/// `TMPDIR` inside a private folder would otherwise fail every run obscurely.
fn hand_over(dir: &Path, uid: u32, gid: u32) -> Result<(), Error> {
    use std::os::unix::fs::MetadataExt;
    std::os::unix::fs::chown(dir, Some(uid), Some(gid))
        .map_err(|e| Error::Internal(format!("cannot give {} to uid {uid}: {e}", dir.display())))?;
    for above in dir.ancestors().skip(1) {
        let Ok(meta) = std::fs::metadata(above) else {
            continue;
        };
        let searchable = meta.mode() & 0o001 != 0
            || (meta.uid() == uid && meta.mode() & 0o100 != 0)
            || (meta.gid() == gid && meta.mode() & 0o010 != 0);
        if !searchable {
            return Err(Error::Internal(format!(
                "toolgate runs as root, so sandboxed children run as uid {uid}, which cannot search {}; \
                 make temp folders where every user can reach them (TMPDIR), such as /tmp",
                above.display()
            )));
        }
    }
    Ok(())
}

impl Sandbox {
    /// Arranges for `cmd`'s child to run with `rlimits` in a new user and network
    /// namespace (each where this kernel allows it), leading its own process group, but
    /// with no landlock rules from the parent: for a program that restricts itself once
    /// it has started ([`restrict_worker`], [`seal_worker`]), so it can load its own binary
    /// first. It keeps this process's ids (a JavaScript worker started by a root server
    /// must still execute the server's binary, which may sit in `/root`): what the uid
    /// drop of [`Sandbox::confine`] prevents — reading the host's files, unbounded
    /// processes — the worker's own landlock domain and seccomp filter refuse outright.
    /// No PID namespace either: a worker can start no process.
    pub fn confine_self_restricting(&self, cmd: &mut tokio::process::Command, rlimits: &Rlimits) -> Applied {
        let prepared = child::Prepared {
            cgroup: None,
            drop_to: None,
            ids: self.layers.namespaces.is_active().then(|| child::Ids::new(None)),
            pid: None,
            limits: if self.layers.rlimits.is_active() {
                child::clamped(rlimits)
            } else {
                Vec::new()
            },
            landlock: None,
        };
        let applied = prepared.applied();
        cmd.process_group(0);
        // SAFETY: as in `confine`: system calls only, on data prepared before the fork.
        unsafe {
            cmd.pre_exec(move || prepared.apply());
        }
        applied
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_report_names_every_layer_and_its_state() {
        let layers = Layers {
            rlimits: Layer::Active("5 limits".into()),
            namespaces: Layer::Unavailable("EPERM".into()),
            pid: Layer::Unavailable("needs the user namespace".into()),
            quota: Layer::Unavailable("needs the mount namespace".into()),
            landlock: Layer::Active("ABI 6".into()),
            cgroup: Layer::Unavailable("no cgroup v2".into()),
        };
        let text = layers.to_string();
        assert!(text.contains("pid+mount namespace: UNAVAILABLE (needs"), "{text}");
        assert!(text.contains("folder quota: UNAVAILABLE (needs"), "{text}");
        assert!(!text.contains("cgroup"), "the optional layer is reported apart: {text}");
        assert_eq!(layers.optional(), "cgroup: UNAVAILABLE (no cgroup v2)");
        assert!(text.contains("rlimits: active (5 limits)"), "{text}");
        assert!(text.contains("user+network namespace: UNAVAILABLE (EPERM)"), "{text}");
        assert!(text.contains("landlock: active (ABI 6)"), "{text}");
    }
}
