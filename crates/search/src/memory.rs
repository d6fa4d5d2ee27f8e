//! The process's own memory: how much is resident, and handing freed memory back after a
//! large job. Used by the embedding job here and by the catalogue's snapshot builds
//! (which reach it through this crate: it is the lowest crate that needs it).

/// Hands the allocator's free memory back to the system. After a large job (a snapshot
/// build, a catalogue's embedding) the freed scratch stays resident in glibc's per-thread
/// arenas otherwise: measured at 10,000 tools, 46 MB → 51 MB without it after a build.
pub fn give_back_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim takes no pointers and only releases free memory.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// The process's resident memory in MB (`VmRSS`), 0 where `/proc` cannot tell.
pub fn resident_mb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .map_or(0, |kb| kb / 1024)
}
