//! The tokio runtime benchmarks drive async code on: two workers, like the server on
//! this 2-core machine.

/// A multi-thread runtime with two workers, or `None` (with a note on stderr) when the
/// machine refuses one.
pub fn two_workers() -> Option<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| eprintln!("cannot start a tokio runtime: {e}"))
        .ok()
}
