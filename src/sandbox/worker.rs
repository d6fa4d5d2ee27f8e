//! The restriction a long-lived worker puts on itself once started: a landlock domain
//! that handles every file and network access this kernel's landlock knows and allows
//! none of them, and scopes signals and abstract unix sockets to the worker. The worker
//! already holds the pipes it talks through (landlock does not touch open descriptors),
//! and it needs nothing else: its one outside resource, the network for `fetch`, is
//! reached through the server.

use landlock::{ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, Ruleset, RulesetAttr, RulesetStatus, Scope};

/// The newest landlock ABI this code knows; older kernels get what they support.
const ABI_USED: ABI = ABI::V6;

/// Forbids the calling thread (and every thread it starts afterwards) all file access,
/// TCP and signals outside its domain, as far as this kernel supports. Returns how much
/// was enforced; an error only when the kernel offers landlock but refused the request.
pub fn restrict_worker() -> Result<&'static str, String> {
    let status = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(AccessFs::from_all(ABI_USED))
        .map_err(|e| e.to_string())?
        .handle_access(AccessNet::from_all(ABI_USED))
        .map_err(|e| e.to_string())?
        .scope(Scope::from_all(ABI_USED))
        .map_err(|e| e.to_string())?
        .create()
        .map_err(|e| e.to_string())?
        .restrict_self()
        .map_err(|e| e.to_string())?;
    Ok(match status.ruleset {
        RulesetStatus::FullyEnforced => "fully enforced",
        RulesetStatus::PartiallyEnforced => "partly enforced",
        RulesetStatus::NotEnforced => "not enforced (no landlock)",
    })
}
