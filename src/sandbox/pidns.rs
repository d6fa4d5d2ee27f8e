//! The PID and mount namespace of one child, applied between `fork` and `exec` with
//! system calls only (see `child.rs`).
//!
//! `unshare(CLONE_NEWPID)` moves only the caller's future children into the new
//! namespace, so [`split`] forks once more. The process the server spawned stays outside
//! as a supervisor: it closes every descriptor it holds (so the spawn sees the program's
//! `exec`, and the output pipes end with the program's side), waits for its child and
//! exits with the same status, re-raising a fatal signal. The child becomes process 1 of
//! the namespace and goes on to `exec` the program. When process 1 ends the kernel kills
//! everything else in the namespace — a `setsid` grandchild included — and only then
//! reports it ended, so the supervisor's exit means the whole run is dead.
//!
//! The program itself is process 1, not a reaper forked from the server: such a reaper
//! would be a copy of the server's memory (its `--api-key` in its command line) visible
//! inside the namespace. The price: the program reaps the orphans of its namespace, and
//! a signal it sends itself without a handler is ignored, as for any init (the
//! `bwrap --as-pid-1` and `docker run` without `--init` trade-off). The supervisor is
//! such a copy too, but it lives outside the namespace, where the program cannot name
//! it, and is not dumpable. It costs little: it shares the server's pages until the
//! server writes them; measured beside five REPL sessions and 300 JavaScript runs, each
//! supervisor held about 2 MB (PSS), and a run's latency grew by 1–3 ms with the PID
//! namespace and the tmpfs (debug build, 2 cores).
//!
//! [`mount`] then makes the mounts private, mounts a fresh `/proc` (only the namespace's
//! processes are in it) and, when asked, a size- and inode-limited tmpfs over the run
//! folder, into which it copies the files the parent wrote there.

use std::ffi::{CStr, CString};
use std::io;

use super::child::Landlock;

/// The mounts one child makes in its mount namespace.
#[derive(Debug)]
pub(super) struct Mounts {
    /// The run folder's tmpfs, when the disk quota is on.
    pub(super) quota: Option<Quota>,
}

/// A tmpfs over the run folder.
#[derive(Debug)]
pub(super) struct Quota {
    /// The run folder's path.
    pub(super) folder: CString,
    /// The tmpfs options: `size=...,nr_inodes=...,mode=0700`.
    pub(super) options: CString,
}

impl Quota {
    /// A tmpfs of `bytes` and `entries` over `folder`.
    pub(super) fn new(folder: CString, bytes: u64, entries: u64) -> Quota {
        let options = format!("size={bytes},nr_inodes={entries},mode=0700");
        Quota {
            folder,
            // The text above holds no NUL byte.
            options: CString::new(options).unwrap_or_default(),
        }
    }
}

/// Forks: the caller supervises and never returns; the child (process 1 of the new PID
/// namespace) returns and goes on towards `exec`.
pub(super) fn split() -> io::Result<()> {
    // A raw clone, not libc's fork: fork runs the atfork handlers, which take malloc's
    // locks — held, perhaps, by a thread of the server that does not exist here.
    // SAFETY: clone with only SIGCHLD and no stack behaves as fork; the child continues
    // on a copy of this stack.
    let pid = unsafe {
        libc::syscall(
            libc::SYS_clone,
            libc::SIGCHLD as libc::c_ulong,
            0usize,
            0usize,
            0usize,
            0usize,
        )
    };
    if pid < 0 {
        return Err(io::Error::last_os_error());
    }
    if pid == 0 {
        // Die with the supervisor, whoever kills it.
        // SAFETY: a plain system call.
        if unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) } != 0 {
            return Err(io::Error::last_os_error());
        }
        return Ok(());
    }
    supervise(pid as libc::pid_t)
}

/// Waits for `child` and exits as it did. Closes every descriptor first: the spawning
/// parent learns of a successful `exec` when every copy of its status pipe is closed,
/// and the output pipes must end with the program.
fn supervise(child: libc::pid_t) -> ! {
    // SAFETY: plain system calls; nothing here allocates or returns.
    unsafe {
        // The server's handlers were inherited; a termination signal must terminate.
        for signal in [libc::SIGHUP, libc::SIGINT, libc::SIGQUIT, libc::SIGTERM] {
            libc::signal(signal, libc::SIG_DFL);
        }
        if libc::syscall(libc::SYS_close_range, 0u32, u32::MAX, 0u32) != 0 {
            for fd in 0..65_536 {
                libc::close(fd);
            }
        }
        let mut status = 0;
        loop {
            let waited = libc::waitpid(child, &mut status, 0);
            if waited == child {
                break;
            }
            if waited < 0 && io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
                libc::_exit(127);
            }
        }
        if libc::WIFEXITED(status) {
            libc::_exit(libc::WEXITSTATUS(status));
        }
        let signal = libc::WTERMSIG(status);
        // Die of the same signal, without a core file (this is a copy of the server).
        let no_core = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        libc::setrlimit(libc::RLIMIT_CORE, &no_core);
        libc::signal(signal, libc::SIG_DFL);
        let mut only = std::mem::zeroed::<libc::sigset_t>();
        libc::sigemptyset(&mut only);
        libc::sigaddset(&mut only, signal);
        libc::sigprocmask(libc::SIG_UNBLOCK, &only, std::ptr::null_mut());
        libc::kill(libc::getpid(), signal);
        libc::_exit(128 + signal)
    }
}

/// Makes this namespace's mounts private, mounts a fresh `/proc` and, with a quota, the
/// run folder's tmpfs (then works in it). With landlock on, grants the ruleset read
/// access to the new `/proc` and every access to the new folder: rules made in the
/// parent name the inodes these mounts cover.
pub(super) fn mount(mounts: &Mounts, landlock: Option<&Landlock>) -> io::Result<()> {
    sys_mount(None, c"/", None, libc::MS_REC | libc::MS_PRIVATE, None)?;
    let hidden = libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC;
    sys_mount(Some(c"proc"), c"/proc", Some(c"proc"), hidden, None)?;
    if let Some(landlock) = landlock {
        grant(landlock, c"/proc", landlock.read)?;
    }
    if let Some(quota) = &mounts.quota {
        let lower = Fd::open(&quota.folder, libc::O_RDONLY | libc::O_DIRECTORY)?;
        sys_mount(
            Some(c"tmpfs"),
            &quota.folder,
            Some(c"tmpfs"),
            libc::MS_NOSUID | libc::MS_NODEV,
            Some(&quota.options),
        )?;
        let upper = Fd::open(&quota.folder, libc::O_RDONLY | libc::O_DIRECTORY)?;
        copy_files(&lower, &upper)?;
        // SAFETY: a plain system call on an open directory.
        if unsafe { libc::fchdir(upper.0) } != 0 {
            return Err(io::Error::last_os_error());
        }
        if let Some(landlock) = landlock {
            grant(landlock, &quota.folder, landlock.all)?;
        }
    }
    Ok(())
}

/// An open file descriptor, closed when dropped (no allocation either way).
struct Fd(libc::c_int);

impl Fd {
    fn open(path: &CStr, flags: libc::c_int) -> io::Result<Fd> {
        // SAFETY: `path` is NUL-terminated.
        let fd = unsafe { libc::open(path.as_ptr(), flags | libc::O_CLOEXEC) };
        if fd < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(Fd(fd))
        }
    }

    fn open_at(dir: &Fd, name: &CStr, flags: libc::c_int, mode: libc::mode_t) -> io::Result<Fd> {
        // SAFETY: `name` is NUL-terminated; `dir` is open.
        let fd = unsafe { libc::openat(dir.0, name.as_ptr(), flags | libc::O_CLOEXEC, mode as libc::c_uint) };
        if fd < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(Fd(fd))
        }
    }
}

impl Drop for Fd {
    fn drop(&mut self) {
        // SAFETY: closing a descriptor this value owns.
        unsafe {
            libc::close(self.0);
        }
    }
}

fn sys_mount(
    source: Option<&CStr>,
    target: &CStr,
    fstype: Option<&CStr>,
    flags: libc::c_ulong,
    data: Option<&CStr>,
) -> io::Result<()> {
    let ptr = |s: Option<&CStr>| s.map_or(std::ptr::null(), CStr::as_ptr);
    // SAFETY: every pointer is null or a NUL-terminated string.
    let done = unsafe { libc::mount(ptr(source), target.as_ptr(), ptr(fstype), flags, ptr(data).cast()) };
    if done == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// The kernel's `struct landlock_path_beneath_attr`.
#[repr(C, packed)]
struct PathBeneath {
    allowed_access: u64,
    parent_fd: i32,
}

/// Adds a rule to the ruleset: `access` beneath `path`.
fn grant(landlock: &Landlock, path: &CStr, access: u64) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    let dir = Fd::open(path, libc::O_PATH)?;
    let rule = PathBeneath {
        allowed_access: access,
        parent_fd: dir.0,
    };
    const LANDLOCK_RULE_PATH_BENEATH: libc::c_int = 1;
    // SAFETY: the attribute is a valid, packed struct the kernel reads; the fds are open.
    let added = unsafe {
        libc::syscall(
            libc::SYS_landlock_add_rule,
            landlock.ruleset.as_raw_fd(),
            LANDLOCK_RULE_PATH_BENEATH,
            &rule as *const PathBeneath,
            0u32,
        )
    };
    if added == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Copies the regular files at the top of `lower` into `upper` (the files the parent
/// wrote, now under the tmpfs), with stack buffers only.
fn copy_files(lower: &Fd, upper: &Fd) -> io::Result<()> {
    #[repr(C, align(8))]
    struct Entries([u8; 4096]);
    let mut entries = Entries([0; 4096]);
    loop {
        // SAFETY: the buffer is valid for its length; getdents64 fills whole records.
        let filled = unsafe { libc::syscall(libc::SYS_getdents64, lower.0, entries.0.as_mut_ptr(), entries.0.len()) };
        if filled < 0 {
            return Err(io::Error::last_os_error());
        }
        if filled == 0 {
            return Ok(());
        }
        let mut records = entries.0.get(..filled as usize).unwrap_or_default();
        // Each record: inode (8), offset (8), length (2), type (1), name (NUL-ended).
        while let Some(length) = records
            .get(16..18)
            .map(|b| usize::from(u16::from_ne_bytes([b[0], b[1]])))
        {
            let (Some(record), Some(rest)) = (records.get(..length), records.get(length..)) else {
                return Err(io::Error::from_raw_os_error(libc::EIO));
            };
            let name = record
                .get(19..)
                .and_then(|n| CStr::from_bytes_until_nul(n).ok())
                .ok_or_else(|| io::Error::from_raw_os_error(libc::EIO))?;
            if name != c"." && name != c".." {
                copy_file(lower, upper, name)?;
            }
            records = rest;
        }
    }
}

/// Copies `name` from `lower` to `upper` when it is a regular file, keeping its mode.
fn copy_file(lower: &Fd, upper: &Fd, name: &CStr) -> io::Result<()> {
    let from = Fd::open_at(lower, name, libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK, 0)?;
    // SAFETY: `stat` is plain data the kernel fills.
    let mut stat = unsafe { std::mem::zeroed::<libc::stat>() };
    // SAFETY: `from` is open and `stat` is valid.
    if unsafe { libc::fstat(from.0, &mut stat) } != 0 {
        return Err(io::Error::last_os_error());
    }
    if stat.st_mode & libc::S_IFMT != libc::S_IFREG {
        return Ok(());
    }
    let to = Fd::open_at(
        upper,
        name,
        libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL,
        stat.st_mode & 0o777,
    )?;
    let mut buffer = [0u8; 8192];
    loop {
        // SAFETY: the buffer is valid for its length.
        let read = unsafe { libc::read(from.0, buffer.as_mut_ptr().cast(), buffer.len()) };
        if read < 0 {
            return Err(io::Error::last_os_error());
        }
        if read == 0 {
            return Ok(());
        }
        let mut chunk = buffer.get(..read as usize).unwrap_or_default();
        while !chunk.is_empty() {
            // SAFETY: the chunk is valid for its length.
            let written = unsafe { libc::write(to.0, chunk.as_ptr().cast(), chunk.len()) };
            if written <= 0 {
                return Err(io::Error::last_os_error());
            }
            chunk = chunk.get(written as usize..).unwrap_or_default();
        }
    }
}
