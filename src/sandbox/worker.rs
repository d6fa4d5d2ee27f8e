//! The restrictions a long-lived worker puts on itself once started: a landlock domain
//! that handles every file and network access this kernel's landlock knows and allows
//! none of them, and scopes signals and abstract unix sockets to the worker; then a
//! seccomp filter refusing the system calls it never needs (new processes and programs,
//! sockets, other processes' memory and signals, namespaces, io_uring, ...). The worker
//! already holds the pipes it talks through (landlock does not touch open descriptors),
//! and it needs nothing else: its one outside resource, the network for `fetch`, is
//! reached through the server.

use landlock::RulesetStatus;

/// Why a worker could not restrict itself: the kernel refused a layer it offers.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    /// Landlock refused the ruleset.
    #[error("landlock: {0}")]
    Landlock(String),
    /// The seccomp filter could not be built or installed.
    #[error("seccomp: {0}")]
    Seccomp(String),
}

/// Forbids the calling thread (and every thread it starts afterwards) all file access,
/// TCP and signals outside its domain, as far as this kernel supports. Returns how much
/// was enforced; an error only when the kernel offers landlock but refused the request.
pub fn restrict_worker() -> Result<&'static str, Refused> {
    let status = super::rules::deny_all()
        .map_err(Refused::Landlock)?
        .restrict_self()
        .map_err(|e| Refused::Landlock(e.to_string()))?;
    Ok(match status.ruleset {
        RulesetStatus::FullyEnforced => "fully enforced",
        RulesetStatus::PartiallyEnforced => "partly enforced",
        RulesetStatus::NotEnforced => "not enforced (no landlock)",
    })
}

/// System calls a worker never makes once it is running, refused with `EPERM`: starting
/// programs or processes (it has both its threads by then), sockets, debugging or reading
/// other processes, namespaces and mounts, kernel keyrings, BPF, performance counters,
/// `userfaultfd` and `io_uring` (whose operations seccomp cannot see).
#[rustfmt::skip]
const REFUSED: &[i64] = &[
    libc::SYS_execve, libc::SYS_execveat, libc::SYS_clone, libc::SYS_clone3,
    #[cfg(target_arch = "x86_64")] libc::SYS_fork,
    #[cfg(target_arch = "x86_64")] libc::SYS_vfork,
    libc::SYS_socket, libc::SYS_socketpair, libc::SYS_connect, libc::SYS_bind, libc::SYS_listen,
    libc::SYS_accept, libc::SYS_accept4,
    libc::SYS_ptrace, libc::SYS_process_vm_readv, libc::SYS_process_vm_writev, libc::SYS_kcmp,
    libc::SYS_pidfd_open, libc::SYS_pidfd_getfd, libc::SYS_pidfd_send_signal, libc::SYS_tkill,
    libc::SYS_unshare, libc::SYS_setns, libc::SYS_mount, libc::SYS_umount2, libc::SYS_pivot_root,
    libc::SYS_chroot, libc::SYS_open_tree, libc::SYS_move_mount, libc::SYS_fsopen, libc::SYS_fsmount,
    libc::SYS_keyctl, libc::SYS_add_key, libc::SYS_request_key,
    libc::SYS_bpf, libc::SYS_perf_event_open, libc::SYS_userfaultfd,
    libc::SYS_io_uring_setup, libc::SYS_io_uring_enter, libc::SYS_io_uring_register,
    libc::SYS_name_to_handle_at, libc::SYS_open_by_handle_at,
    libc::SYS_init_module, libc::SYS_finit_module, libc::SYS_delete_module,
    libc::SYS_kexec_load, libc::SYS_reboot, libc::SYS_swapon, libc::SYS_swapoff,
];

/// System calls whose first argument names a process, allowed only when it is this one:
/// a worker may signal itself (`abort` does) but nothing else — not `-1` (every process
/// it may signal), not its group, not the server.
const SELF_ONLY: &[i64] = &[
    libc::SYS_kill,
    libc::SYS_tgkill,
    libc::SYS_rt_sigqueueinfo,
    libc::SYS_rt_tgsigqueueinfo,
];

/// Installs a seccomp filter on every thread of this process refusing [`REFUSED`] and
/// [`SELF_ONLY`] calls aimed elsewhere. Called by a worker once its threads exist.
pub fn seal_worker() -> Result<(), Refused> {
    use std::collections::BTreeMap;

    use seccompiler::{
        BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter, SeccompRule,
    };

    let arch = std::env::consts::ARCH
        .try_into()
        .map_err(|e| Refused::Seccomp(format!("{e:?}")))?;
    let me = u64::from(std::process::id());
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = REFUSED.iter().map(|&call| (call, Vec::new())).collect();
    for &call in SELF_ONLY {
        let elsewhere = SeccompCondition::new(0, SeccompCmpArgLen::Dword, SeccompCmpOp::Ne, me)
            .and_then(|c| SeccompRule::new(vec![c]))
            .map_err(|e| Refused::Seccomp(e.to_string()))?;
        rules.insert(call, vec![elsewhere]);
    }
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )
    .map_err(|e| Refused::Seccomp(e.to_string()))?;
    let program: BpfProgram = filter.try_into().map_err(|e| Refused::Seccomp(format!("{e:?}")))?;
    seccompiler::apply_filter_all_threads(&program).map_err(|e| Refused::Seccomp(e.to_string()))
}
