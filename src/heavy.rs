//! Work one caller's input makes expensive — parsing a body of 100,000 values,
//! validating a deep argument, freeing a million strings — runs on threads the operating
//! system schedules after everyone else's (`SCHED_IDLE`), so it cannot delay another
//! caller's light request by more than a context switch.
//!
//! Why a policy and not only a separate pool: on a 2-core machine, 20 callers sending the
//! worst inputs kept both cores busy whatever pool their work ran on, and another
//! session's `ping` waited for a time slice behind them (p99 8.6–21 ms in `cargo bench
//! --bench hostile`). A `SCHED_IDLE` thread is preempted as soon as a normal thread wakes
//! up, so the server's own request handling always comes first, and the heavy work still
//! uses every core the rest leaves free. An unprivileged process may lower its threads'
//! priority, never raise it again, hence threads of their own rather than the runtime's
//! blocking pool.

use std::future::Future;
use std::sync::OnceLock;

use tokio::runtime::{Handle, Runtime};
use tokio::task::JoinError;

/// The runtime of heavy work: as many workers as cores, every thread (workers and
/// blocking) at `SCHED_IDLE`. Built on first use; `None` when it cannot be built, and
/// heavy work then runs where it was asked for.
fn runtime() -> Option<&'static Runtime> {
    static RUNTIME: OnceLock<Option<Runtime>> = OnceLock::new();
    RUNTIME
        .get_or_init(|| {
            let built = tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .thread_name("toolgate-heavy")
                .on_thread_start(lower_this_thread)
                .build();
            built
                .inspect_err(|e| tracing::warn!("heavy work shares the server's threads: {e}"))
                .ok()
        })
        .as_ref()
}

/// Puts the calling thread in the idle scheduling class (Linux); elsewhere, or when the
/// kernel refuses, at the lowest priority a process may give itself.
fn lower_this_thread() {
    #[cfg(target_os = "linux")]
    {
        let param = libc::sched_param { sched_priority: 0 };
        // SAFETY: sched_setscheduler reads the one struct it is given; pid 0 is the
        // calling thread.
        if unsafe { libc::sched_setscheduler(0, libc::SCHED_IDLE, &param) } == 0 {
            return;
        }
    }
    // SAFETY: setpriority touches no memory; 0 is the calling thread on Linux and the
    // process elsewhere.
    let _ = unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, 19) };
}

/// The handle of the heavy runtime, or of the current one when it could not be built.
fn handle() -> Handle {
    match runtime() {
        Some(runtime) => runtime.handle().clone(),
        None => Handle::current(),
    }
}

/// Runs the blocking `work` on a heavy thread and waits for it.
pub async fn blocking<T, F>(work: F) -> Result<T, JoinError>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    handle().spawn_blocking(work).await
}

/// Frees `value` on a heavy thread, without waiting. Must be called inside a tokio
/// runtime (it does nothing otherwise: the value is freed here).
pub fn free<T: Send + 'static>(value: T) {
    if Handle::try_current().is_ok() {
        drop(handle().spawn_blocking(move || drop(value)));
    }
}

/// Drives the future `work` on the heavy runtime and waits for its output: all the
/// work it does when polled (a request body parsed by the route it runs) happens there.
pub async fn run<F>(work: F) -> Result<F::Output, JoinError>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    handle().spawn(work).await
}

#[cfg(test)]
mod tests {
    #[tokio::test]
    async fn heavy_work_runs_on_its_own_threads_and_answers() {
        let name = super::blocking(|| std::thread::current().name().map(str::to_owned)).await;
        assert_eq!(name.ok().flatten().as_deref(), Some("toolgate-heavy"));
        let value = super::run(async { 6 * 7 }).await;
        assert_eq!(value.ok(), Some(42));
        #[cfg(target_os = "linux")]
        {
            // SAFETY: sched_getscheduler reads nothing but its argument.
            let policy = super::blocking(|| unsafe { libc::sched_getscheduler(0) }).await;
            assert_eq!(
                policy.ok(),
                Some(libc::SCHED_IDLE),
                "heavy threads are in the idle class"
            );
        }
    }
}
