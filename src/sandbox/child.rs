//! The part of the sandbox that runs in the child between `fork` and `exec`.
//!
//! [`Prepared`] is built in the parent: limits clamped to what the parent may grant, the
//! user-namespace maps formatted, paths turned into C strings, the landlock ruleset opened,
//! the run's cgroup opened. [`Prepared::apply`] then only makes system calls — no
//! allocation, no locks — which is what a child of a multi-threaded process may safely do
//! before `exec`. With the PID namespace on, it forks once more (`pidns.rs`): the process
//! the server spawned stays outside as a supervisor that forwards the exit status, and
//! the program becomes process 1 of the new namespace.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};

use rlimit::Resource;

use super::{Applied, Rlimits, pidns};

/// Everything the child applies to itself, prepared before the fork.
#[derive(Debug)]
pub(super) struct Prepared {
    /// The run's cgroup's `cgroup.procs`, opened for writing, when cgroups are on.
    pub(super) cgroup: Option<OwnedFd>,
    /// The unprivileged `(uid, gid)` to become first, when the server runs as root: a
    /// root child would be root on the host's files (a user namespace's map could only
    /// name root), and the kernel does not apply `RLIMIT_NPROC` to root.
    pub(super) drop_to: Option<(libc::uid_t, libc::gid_t)>,
    /// The user and network namespace's maps, when on.
    pub(super) ids: Option<Ids>,
    /// The PID and mount namespace (fresh `/proc`, the folder's tmpfs), when on. Needs
    /// `ids`: an unprivileged process may only make them inside its own user namespace.
    pub(super) pid: Option<pidns::Mounts>,
    /// `(resource, soft, hard)`, already clamped to the parent's hard limits.
    pub(super) limits: Vec<(Resource, u64, u64)>,
    /// The landlock ruleset to enforce, when landlock is on.
    pub(super) landlock: Option<Landlock>,
}

/// The child's id maps inside its user namespace: its own ids mapped to themselves.
#[derive(Debug)]
pub(super) struct Ids {
    /// `/proc/self/uid_map`'s contents.
    uid_map: Vec<u8>,
    /// `/proc/self/gid_map`'s contents.
    gid_map: Vec<u8>,
}

impl Ids {
    /// Maps for a child that runs as `drop_to`, or keeps this process's ids.
    pub(super) fn new(drop_to: Option<(libc::uid_t, libc::gid_t)>) -> Ids {
        // SAFETY: getuid/getgid cannot fail.
        let (uid, gid) = drop_to.unwrap_or_else(|| unsafe { (libc::getuid(), libc::getgid()) });
        Ids {
            uid_map: format!("{uid} {uid} 1\n").into_bytes(),
            gid_map: format!("{gid} {gid} 1\n").into_bytes(),
        }
    }
}

/// The unprivileged `(uid, gid)` a child of this process drops to: `id` when this
/// process runs as root, none otherwise.
pub(super) fn unprivileged(id: u32) -> Option<(libc::uid_t, libc::gid_t)> {
    // SAFETY: geteuid cannot fail.
    (unsafe { libc::geteuid() } == 0).then_some((id, id))
}

/// The landlock ruleset, and the access masks rules added in the child use (the paths
/// the child mounts itself — a fresh `/proc`, its folder's tmpfs — do not exist in the
/// parent, so their rules are added after the mounts).
#[derive(Debug)]
pub(super) struct Landlock {
    /// The ruleset's file descriptor.
    pub(super) ruleset: OwnedFd,
    /// Read access beneath a folder, as the ruleset handles it.
    pub(super) read: u64,
    /// Every access the ruleset handles.
    pub(super) all: u64,
}

impl Prepared {
    /// Which layers [`Prepared::apply`] applies.
    pub(super) fn applied(&self) -> Applied {
        Applied {
            rlimits: !self.limits.is_empty(),
            unprivileged: self.drop_to.is_some(),
            namespaces: self.ids.is_some(),
            pid: self.pid.is_some(),
            quota: self.pid.as_ref().is_some_and(|p| p.quota.is_some()),
            landlock: self.landlock.is_some(),
            cgroup: self.cgroup.is_some(),
        }
    }

    /// Applies every prepared layer to the calling process. Runs in the child after
    /// `fork`: system calls only. Order matters: the cgroup first (joining it needs the
    /// server's rights), then the drop to an unprivileged id and the namespaces (their
    /// maps are written through `/proc`, which landlock would forbid, and `RLIMIT_NPROC`
    /// set after `unshare` counts only the child's own tasks), then the PID namespace's
    /// fork and mounts (landlock forbids mounting), then the limits, landlock last.
    ///
    /// With the PID namespace on, only the program's side returns: the calling process
    /// supervises it and exits with its status.
    pub(super) fn apply(&self) -> io::Result<()> {
        if let Some(procs) = &self.cgroup {
            write_fd(procs.as_raw_fd(), b"0")?;
        }
        if let Some((uid, gid)) = self.drop_to {
            drop_privileges(uid, gid)?;
        }
        if let Some(ids) = &self.ids {
            enter_user_namespace(ids, self.pid.is_some())?;
        }
        if let Some(mounts) = &self.pid {
            pidns::split()?;
            pidns::mount(mounts, self.landlock.as_ref())?;
        }
        for &(resource, soft, hard) in &self.limits {
            rlimit::setrlimit(resource, soft, hard)?;
        }
        if let Some(landlock) = &self.landlock {
            // SAFETY: plain system calls; the fd is a landlock ruleset we own.
            unsafe {
                if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
                    return Err(io::Error::last_os_error());
                }
                if libc::syscall(libc::SYS_landlock_restrict_self, landlock.ruleset.as_raw_fd(), 0) != 0 {
                    return Err(io::Error::last_os_error());
                }
            }
        }
        Ok(())
    }
}

/// Becomes `uid`/`gid` with no supplementary groups, for good (real, effective and
/// saved ids), and no capability left.
fn drop_privileges(uid: libc::uid_t, gid: libc::gid_t) -> io::Result<()> {
    // SAFETY: plain system calls on valid constants.
    unsafe {
        if libc::setgroups(0, std::ptr::null()) != 0
            || libc::setresgid(gid, gid, gid) != 0
            || libc::setresuid(uid, uid, uid) != 0
        {
            return Err(io::Error::last_os_error());
        }
        // Changing ids made the process non-dumpable, which gives its /proc files to
        // root: make them its own again so it can write its namespace's maps.
        if libc::prctl(libc::PR_SET_DUMPABLE, 1, 0, 0, 0) != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Makes and enters the new user and network namespace (and, with `pid`, the PID, mount
/// and IPC namespaces the next child will be born in), mapping the child's id to itself.
fn enter_user_namespace(ids: &Ids, pid: bool) -> io::Result<()> {
    // SAFETY: plain system calls on valid constants and buffers.
    unsafe {
        let mut flags = libc::CLONE_NEWUSER | libc::CLONE_NEWNET;
        if pid {
            flags |= libc::CLONE_NEWPID | libc::CLONE_NEWNS | libc::CLONE_NEWIPC;
        }
        if libc::unshare(flags) != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    write_all(c"/proc/self/setgroups", b"deny")?;
    write_all(c"/proc/self/uid_map", &ids.uid_map)?;
    write_all(c"/proc/self/gid_map", &ids.gid_map)?;
    // From here on nothing may read this copy of the server's memory: the supervisor
    // that stays outside the PID namespace keeps it until the run ends. (`exec` makes
    // the program dumpable again.)
    // SAFETY: a plain system call.
    if unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The limits to set, each clamped to the parent's hard limit (an unprivileged process
/// cannot raise it, and asking would fail the spawn).
pub(super) fn clamped(r: &Rlimits) -> Vec<(Resource, u64, u64)> {
    let wanted = [
        (Resource::CPU, r.cpu_seconds, r.cpu_seconds.saturating_add(1)),
        (Resource::AS, r.address_space_bytes, r.address_space_bytes),
        (Resource::FSIZE, r.file_size_bytes, r.file_size_bytes),
        (Resource::NOFILE, r.open_files, r.open_files),
        (Resource::NPROC, r.processes, r.processes),
    ];
    wanted
        .into_iter()
        .map(|(resource, soft, hard)| {
            let ceiling = rlimit::getrlimit(resource).map(|(_, h)| h).unwrap_or(rlimit::INFINITY);
            (resource, soft.min(ceiling), hard.min(ceiling))
        })
        .collect()
}

/// A path as a C string, for the child's system calls.
pub(super) fn c_path(path: &std::path::Path) -> io::Result<CString> {
    use std::os::unix::ffi::OsStrExt;
    CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a path holds a NUL byte"))
}

/// Writes `bytes` to the file at `path` with raw system calls (no allocation).
fn write_all(path: &std::ffi::CStr, bytes: &[u8]) -> io::Result<()> {
    // SAFETY: `path` is NUL-terminated; the fd is closed once.
    unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        let result = write_fd(fd, bytes);
        libc::close(fd);
        result
    }
}

/// Writes `bytes` to `fd` in one `write` (the kernel files written here take a whole
/// value per call).
pub(super) fn write_fd(fd: libc::c_int, bytes: &[u8]) -> io::Result<()> {
    // SAFETY: `bytes` is a valid buffer of its length.
    let written = unsafe { libc::write(fd, bytes.as_ptr().cast(), bytes.len()) };
    if written == bytes.len() as isize {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}
