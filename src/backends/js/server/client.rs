//! One JavaScript worker process seen from the server: started from this binary in
//! worker mode (`worker.rs`) under the process sandbox, spoken to over its stdin and
//! stdout (`wire.rs`, read without a task of its own), killed — with everything it was
//! doing — when dropped.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::AsyncWriteExt;
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

use crate::backends::js::wire::JsLimits;
use crate::backends::js::wire::Stop;
use crate::backends::js::wire::{self, Frames, FromWorker, ToWorker};
use crate::backends::js::wire::{CONTROL_FD, WORKER_ARG, stop_message};
use crate::error::Error;
use crate::limits::{
    JS_WORKER_OPEN_FILES, JS_WORKER_OVERHEAD_BYTES, JS_WORKER_RUNS, JS_WORKER_STOP_GRACE, SANDBOX_FILE_SIZE_BYTES,
    SANDBOX_PROCESSES, WORKER_BODY_BYTES_PER_SECOND,
};
use crate::sandbox::{Rlimits, Sandbox};

/// A frame from the worker: its header and body.
pub(super) type Incoming = (FromWorker, Vec<u8>);

/// A started worker. Dropping it kills the process (SIGKILL); tokio reaps it.
#[derive(Debug)]
pub(super) struct Worker {
    child: Child,
    stdin: ChildStdin,
    /// The control pipe's writing end: stops go here, read by the worker's watchdog.
    control: std::fs::File,
    frames: Frames<ChildStdout>,
    /// Runs it has served.
    pub(super) runs: u32,
}

impl Worker {
    /// Starts `program` as a worker with `limits`, under every sandbox layer this kernel
    /// allows, and sends it its setup.
    pub(super) async fn spawn(program: &Path, limits: JsLimits, body_limit: usize) -> Result<Worker, Error> {
        let cannot = |e: std::io::Error| {
            Error::Internal(format!("cannot start a JavaScript worker ({}): {e}", program.display()))
        };
        let mut cmd = Command::new(program);
        cmd.arg(WORKER_ARG)
            .env_clear()
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true);
        let runs = u64::from(JS_WORKER_RUNS);
        let rlimits = Rlimits {
            // A worker lives for at most this many runs, each within its deadline.
            cpu_seconds: limits.wall_clock.as_secs().saturating_add(1).saturating_mul(runs),
            address_space_bytes: (limits.heap_bytes as u64).saturating_add(JS_WORKER_OVERHEAD_BYTES),
            file_size_bytes: SANDBOX_FILE_SIZE_BYTES,
            open_files: JS_WORKER_OPEN_FILES,
            processes: SANDBOX_PROCESSES,
            ..Rlimits::with_cpu_seconds(0)
        };
        Sandbox::get().confine_self_restricting(&mut cmd, &rlimits);
        let (control_read, control) = control_pipe().map_err(cannot)?;
        let inherited = control_read.as_raw_fd();
        // SAFETY: dup2 is async-signal-safe and touches only this descriptor number; the
        // copy it makes at CONTROL_FD has no close-on-exec flag, so the worker inherits it.
        unsafe {
            cmd.pre_exec(move || {
                if libc::dup2(inherited, CONTROL_FD) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let mut child = cmd.spawn().map_err(cannot)?;
        crate::metrics::get().worker_started();
        drop(control_read);
        let (Some(mut stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(Error::Internal(
                "a JavaScript worker started without its pipes".to_owned(),
            ));
        };
        let setup = wire::frame(&ToWorker::Setup { limits, body_limit }, &[]).map_err(cannot)?;
        stdin.write_all(&setup).await.map_err(cannot)?;
        Ok(Worker {
            child,
            stdin,
            control,
            frames: Frames::new(stdout, body_limit),
            runs: 0,
        })
    }

    /// Sends one frame. `false` when the worker is gone or does not read it within
    /// [`JS_WORKER_STOP_GRACE`] plus the time its body takes at
    /// [`WORKER_BODY_BYTES_PER_SECOND`] (either way it must be killed: a frame may be half
    /// sent). A `fetch` answer of 7 MB crosses the pipe in 64 KiB steps, and a worker
    /// descheduled on a busy machine once missed the bare grace.
    pub(super) async fn send(&mut self, message: &ToWorker, body: &[u8]) -> bool {
        let Ok(frame) = wire::frame(message, body) else {
            return false;
        };
        let within =
            JS_WORKER_STOP_GRACE + Duration::from_secs_f64(body.len() as f64 / WORKER_BODY_BYTES_PER_SECOND as f64);
        matches!(
            tokio::time::timeout(within, self.stdin.write_all(&frame)).await,
            Ok(Ok(()))
        )
    }

    /// Tells the worker to stop run `run` now and answer with its output so far. `false`
    /// when the worker is gone.
    pub(super) fn stop(&mut self, run: u64, why: Stop) -> bool {
        use std::io::Write;
        // Nine bytes into a pipe the watchdog keeps empty: this never blocks.
        self.control.write_all(&stop_message(run, why)).is_ok()
    }

    /// The next frame, `None` once the worker has ended or sent a bad frame (it must then
    /// be killed). Cancellation-safe.
    pub(super) async fn recv(&mut self) -> Option<Incoming> {
        match self.frames.next().await {
            Ok(frame) => frame,
            Err(e) => {
                tracing::warn!("a JavaScript worker sent a bad frame ({e}); it is replaced");
                None
            }
        }
    }

    /// Why the worker ended, once its output has: its exit status (waited for at most
    /// [`JS_WORKER_STOP_GRACE`]).
    pub(super) async fn ended(&mut self) -> String {
        match tokio::time::timeout(JS_WORKER_STOP_GRACE, self.child.wait()).await {
            Ok(Ok(status)) => status.to_string(),
            Ok(Err(e)) => e.to_string(),
            Err(_) => "it stopped answering".to_owned(),
        }
    }
}

/// A pipe whose both ends close on exec: (reading end, writing end).
fn control_pipe() -> std::io::Result<(OwnedFd, std::fs::File)> {
    let mut fds = [0; 2];
    // SAFETY: pipe2 writes two descriptors into the array it is given.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: both descriptors were just made by pipe2 and are owned by nothing else.
    let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    Ok((read, std::fs::File::from(write)))
}
