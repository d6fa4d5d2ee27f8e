//! Finding out, once, which isolation layers this kernel allows.
//!
//! Namespaces are probed in a throwaway child (`fork`, `unshare`, write the maps, exit),
//! never in the server itself, whose namespaces must not change. Landlock is probed by
//! asking the kernel for its ABI version; resource limits by reading one.

use super::{Layer, Layers};

/// Probes every layer.
pub(super) fn layers() -> Layers {
    let layers = Layers {
        rlimits: rlimits(),
        namespaces: namespaces(),
        landlock: landlock(),
    };
    tracing::debug!("sandbox layers: {layers}");
    layers
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

fn namespaces() -> Layer {
    let prepared = super::child::Prepared::new(None, true, None);
    // SAFETY: the child only calls `Prepared::apply` (system calls on prepared data) and
    // `_exit`; the parent waits for it.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Layer::Unavailable(format!("fork failed: {}", std::io::Error::last_os_error()));
    }
    if pid == 0 {
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
        return Layer::Unavailable(format!("waitpid failed: {}", std::io::Error::last_os_error()));
    }
    if libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0 {
        Layer::Active("no network; identity uid/gid map".into())
    } else if libc::WIFEXITED(status) {
        let errno = std::io::Error::from_raw_os_error(libc::WEXITSTATUS(status));
        Layer::Unavailable(format!(
            "the kernel refused unshare(CLONE_NEWUSER|CLONE_NEWNET): {errno}"
        ))
    } else {
        Layer::Unavailable("the namespace probe died".into())
    }
}
