//! The landlock ruleset of one child, built in the parent: read and execute beneath the
//! system folders and the runtime's own paths, everything beneath the child's folder
//! (when it has one), and writing to `/dev/null`. Anything else — `/tmp`, home folders, the server's own
//! files — the child can neither write nor read. Where the kernel's landlock is new
//! enough it also forbids every TCP bind and connect (a second wall behind the network
//! namespace) and scopes signals and abstract unix sockets to the child's own domain, so
//! it cannot signal the server. Older kernels get what they support (best effort).

use std::os::fd::OwnedFd;
use std::path::Path;

use landlock::{
    ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset, RulesetAttr,
    RulesetCreated, RulesetCreatedAttr, Scope,
};

use super::child::Landlock;
use super::{Policy, SYSTEM_READ_PATHS};

/// The newest landlock ABI this code knows; older kernels get what they support.
const ABI_USED: ABI = ABI::V6;

/// Builds the ruleset for `policy`, with the access masks the child uses for the rules it
/// adds after its own mounts.
pub(super) fn landlock(policy: &Policy) -> Result<Landlock, String> {
    let ruleset = ruleset(policy)?;
    // What the ruleset handles: this code's ABI, cut to the kernel's (best effort).
    // SAFETY: LANDLOCK_CREATE_RULESET_VERSION with a null attribute only queries the ABI.
    let kernel = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            1u32, // LANDLOCK_CREATE_RULESET_VERSION
        )
    };
    let abi = ABI::from(i32::try_from(kernel).unwrap_or(0)).min(ABI_USED);
    Ok(Landlock {
        ruleset,
        read: AccessFs::from_read(abi).bits(),
        all: AccessFs::from_all(abi).bits(),
    })
}

/// A ruleset handling every file and network access and signal scope this kernel's
/// landlock knows, allowing none yet: the start of every domain toolgate makes (a child's,
/// with rules added for what it may reach; a worker's, with none).
pub(super) fn deny_all() -> Result<RulesetCreated, String> {
    Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(AccessFs::from_all(ABI_USED))
        .map_err(|e| e.to_string())?
        .handle_access(AccessNet::from_all(ABI_USED))
        .map_err(|e| e.to_string())?
        .scope(Scope::from_all(ABI_USED))
        .map_err(|e| e.to_string())?
        .create()
        .map_err(|e| e.to_string())
}

/// Builds the ruleset for `policy` and returns its file descriptor.
fn ruleset(policy: &Policy) -> Result<OwnedFd, String> {
    let read = AccessFs::from_read(ABI_USED);
    let mut ruleset = deny_all()?;
    let system = SYSTEM_READ_PATHS.iter().map(Path::new);
    for path in system.chain(policy.read_paths.iter().map(|p| p.as_path())) {
        // A missing path (no /lib32 here, a runtime folder gone) is simply not granted.
        if let Ok(fd) = PathFd::new(path) {
            let access = if path.is_dir() {
                read
            } else {
                read & AccessFs::from_file(ABI_USED)
            };
            ruleset = ruleset
                .add_rule(PathBeneath::new(fd, access))
                .map_err(|e| format!("{}: {e}", path.display()))?;
        }
    }
    if let Some(dir) = &policy.write_dir {
        let fd = PathFd::new(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        ruleset = ruleset
            .add_rule(PathBeneath::new(fd, AccessFs::from_all(ABI_USED)))
            .map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    if let Ok(fd) = PathFd::new("/dev/null") {
        ruleset = ruleset
            .add_rule(PathBeneath::new(fd, AccessFs::from_file(ABI_USED)))
            .map_err(|e| format!("/dev/null: {e}"))?;
    }
    let fd: Option<OwnedFd> = ruleset.into();
    fd.ok_or_else(|| "this kernel has no landlock".to_owned())
}
