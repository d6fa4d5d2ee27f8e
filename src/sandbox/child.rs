//! The part of the sandbox that runs in the child between `fork` and `exec`.
//!
//! [`Prepared`] is built in the parent: limits clamped to what the parent may grant, the
//! user-namespace maps formatted, the landlock ruleset opened. [`Prepared::apply`] then
//! only makes system calls — no allocation, no locks — which is what a child of a
//! multi-threaded process may safely do before `exec`.

use std::ffi::CStr;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};

use rlimit::Resource;

use super::{Applied, Rlimits};

/// Everything the child applies to itself, prepared before the fork.
#[derive(Debug)]
pub(super) struct Prepared {
    /// `(resource, soft, hard)`, already clamped to the parent's hard limits.
    limits: Vec<(Resource, u64, u64)>,
    /// The uid and gid maps to write after `unshare`, when namespaces are on.
    maps: Option<Maps>,
    /// The landlock ruleset to enforce, when landlock is on.
    landlock: Option<OwnedFd>,
}

#[derive(Debug)]
struct Maps {
    uid: Vec<u8>,
    gid: Vec<u8>,
}

impl Prepared {
    /// Prepares the layers: `rlimits` when limits are on, `namespaces` when a new user and
    /// network namespace is, `landlock` with its ruleset when landlock is.
    pub(super) fn new(rlimits: Option<&Rlimits>, namespaces: bool, landlock: Option<OwnedFd>) -> Prepared {
        let limits = rlimits.map(clamped).unwrap_or_default();
        let maps = namespaces.then(|| {
            // Identity maps of our own ids: the child keeps its uid, so files it creates
            // belong to us, and it gains no power outside its namespace.
            // SAFETY: getuid/getgid cannot fail.
            let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
            Maps {
                uid: format!("{uid} {uid} 1\n").into_bytes(),
                gid: format!("{gid} {gid} 1\n").into_bytes(),
            }
        });
        Prepared { limits, maps, landlock }
    }

    /// Which layers [`Prepared::apply`] applies.
    pub(super) fn applied(&self) -> Applied {
        Applied {
            rlimits: !self.limits.is_empty(),
            namespaces: self.maps.is_some(),
            landlock: self.landlock.is_some(),
        }
    }

    /// Applies every prepared layer to the calling process. Runs in the child after
    /// `fork`: system calls only. Order matters: the namespaces first (their maps are
    /// written through `/proc`, which landlock would forbid, and `RLIMIT_NPROC` set after
    /// `unshare` counts only the child's own tasks, not every task of its user), then the
    /// limits, landlock last.
    pub(super) fn apply(&self) -> io::Result<()> {
        if let Some(maps) = &self.maps {
            // SAFETY: plain system calls on valid constants and buffers.
            if unsafe { libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNET) } != 0 {
                return Err(io::Error::last_os_error());
            }
            write_all(c"/proc/self/setgroups", b"deny")?;
            write_all(c"/proc/self/uid_map", &maps.uid)?;
            write_all(c"/proc/self/gid_map", &maps.gid)?;
        }
        for &(resource, soft, hard) in &self.limits {
            rlimit::setrlimit(resource, soft, hard)?;
        }
        if let Some(fd) = &self.landlock {
            // SAFETY: plain system calls; the fd is a landlock ruleset we own.
            unsafe {
                if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
                    return Err(io::Error::last_os_error());
                }
                if libc::syscall(libc::SYS_landlock_restrict_self, fd.as_raw_fd(), 0) != 0 {
                    return Err(io::Error::last_os_error());
                }
            }
        }
        Ok(())
    }
}

/// The limits to set, each clamped to the parent's hard limit (an unprivileged process
/// cannot raise it, and asking would fail the spawn).
fn clamped(r: &Rlimits) -> Vec<(Resource, u64, u64)> {
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

/// Writes `bytes` to the file at `path` with raw system calls (no allocation).
fn write_all(path: &CStr, bytes: &[u8]) -> io::Result<()> {
    // SAFETY: `path` is NUL-terminated, `bytes` is a valid buffer, the fd is closed once.
    unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        let written = libc::write(fd, bytes.as_ptr().cast(), bytes.len());
        let result = if written == bytes.len() as isize {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        };
        libc::close(fd);
        result
    }
}
