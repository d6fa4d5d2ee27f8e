//! Process isolation for child runtimes, in layers applied by the kernel.
//!
//! A [`Sandbox`] confines a child process before it executes its program: resource
//! limits (CPU seconds, address space, file size, open files, processes), a new user and
//! network namespace (the child has no network at all, only a loopback that is down), and
//! a landlock ruleset (it may write only inside its own folder and read only where its
//! runtime lives). Each layer is applied only when this kernel allows it; which ones do is
//! probed once per process and reported by [`Sandbox::layers`] (in `--version` and the
//! startup debug output), never silently assumed.
//!
//! Everything the child needs is prepared in the parent (`child.rs`): after `fork` the
//! child only makes system calls, so it never allocates or takes a lock. This module
//! knows nothing about what runs inside (NyxilumNode, python3, a future JS worker) or
//! about MCP; `exec::process` uses it.

mod child;
mod probe;
mod rules;
mod worker;

pub use worker::{restrict_worker, seal_worker};

use std::fmt;
use std::path::PathBuf;
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
    /// Landlock filesystem rules.
    pub landlock: Layer,
}

impl fmt::Display for Layers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "rlimits: {}; user+network namespace: {}; landlock: {}",
            self.rlimits, self.namespaces, self.landlock
        )
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
        }
    }
}

/// What one child may do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    /// The only folder it may write in (its own temp folder).
    pub write_dir: PathBuf,
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

/// The isolation layers this kernel allows, probed once.
#[derive(Debug)]
pub struct Sandbox {
    layers: Layers,
}

/// What [`Sandbox::confine`] will apply to a child.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Applied {
    /// Resource limits.
    pub rlimits: bool,
    /// New user and network namespace.
    pub namespaces: bool,
    /// Landlock rules.
    pub landlock: bool,
}

impl Sandbox {
    /// The process-wide sandbox; the kernel is probed on first use.
    pub fn get() -> &'static Sandbox {
        static SANDBOX: OnceLock<Sandbox> = OnceLock::new();
        SANDBOX.get_or_init(|| Sandbox {
            layers: probe::layers(),
        })
    }

    /// What the probe found.
    pub fn layers(&self) -> &Layers {
        &self.layers
    }

    /// Arranges for `cmd`'s child to be confined by `policy` before it executes, with
    /// every layer this kernel allows, and to lead its own process group (so a deadline
    /// can kill everything it started). Fails only when the parent cannot prepare a
    /// layer it should be able to (a landlock ruleset that cannot be built).
    pub fn confine(&self, cmd: &mut tokio::process::Command, policy: &Policy) -> Result<Applied, Error> {
        let landlock = if self.layers.landlock.is_active() {
            Some(
                rules::ruleset(policy)
                    .map_err(|e| Error::Internal(format!("cannot prepare the landlock rules: {e}")))?,
            )
        } else {
            None
        };
        let prepared = child::Prepared::new(
            self.layers.rlimits.is_active().then_some(&policy.rlimits),
            self.layers.namespaces.is_active(),
            landlock,
        );
        let applied = prepared.applied();
        cmd.process_group(0);
        // SAFETY: `Prepared::apply` only makes system calls on data prepared before the
        // fork: it does not allocate, lock or touch anything another thread could hold.
        unsafe {
            cmd.pre_exec(move || prepared.apply());
        }
        Ok(applied)
    }
}

impl Sandbox {
    /// Arranges for `cmd`'s child to run with `rlimits` in a new user and network
    /// namespace (each where this kernel allows it), leading its own process group, but
    /// with no landlock rules from the parent: for a program that restricts itself once
    /// it has started ([`restrict_worker`]), so it can load its own binary first.
    pub fn confine_self_restricting(&self, cmd: &mut tokio::process::Command, rlimits: &Rlimits) -> Applied {
        let prepared = child::Prepared::new(
            self.layers.rlimits.is_active().then_some(rlimits),
            self.layers.namespaces.is_active(),
            None,
        );
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
            landlock: Layer::Active("ABI 6".into()),
        };
        let text = layers.to_string();
        assert!(text.contains("rlimits: active (5 limits)"), "{text}");
        assert!(text.contains("user+network namespace: UNAVAILABLE (EPERM)"), "{text}");
        assert!(text.contains("landlock: active (ABI 6)"), "{text}");
    }
}
