//! The generic process backend: runs a runtime program (NyxilumNode, python3, ...) on
//! code written to a fresh folder, with the sandbox, a SIGKILL deadline and capped output.
//!
//! The rules every child gets (`docs/reference/limits.md`): its files are written to its own temp folder,
//! whose path reaches it only as an argument (never through a shell); it works in that
//! folder; its environment is built from an allowlist with credentials removed (`env`);
//! it leads its own process group, and the whole group (and its cgroup, where the
//! sandbox made one) is killed at the deadline and after the program ends; each output stream is capped (`output`); the folder is removed
//! on every path — success, failure, timeout, spawn failure, cancellation — because it is
//! a [`tempfile::TempDir`] owned by the run. This module knows nothing about NyxilumNode
//! or MCP.

pub mod env;
pub mod output;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use tokio::process::{Child, Command};
use tokio::sync::watch;
use tokio::time::Instant;

use crate::error::Error;
use crate::limits;
use crate::sandbox::{Applied, Confined, Policy, Rlimits, RunCgroup, Sandbox};
pub use env::Env;
pub use output::Captured;

/// One argument of the program.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Arg {
    /// A literal argument.
    Text(OsString),
    /// The absolute path of one of [`Spec::files`] in the run's folder.
    File(String),
}

/// Where the child works.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Workdir {
    /// A fresh temp folder holding [`Spec::files`], removed afterwards. The default.
    Temp,
    /// An existing folder (the unsandboxed dev tools' checkout); no files are written.
    At(PathBuf),
}

/// What to run and under which rules.
#[derive(Debug, Clone)]
pub struct Spec {
    /// The runtime's name, for error messages (`nyxilum`, `python3`).
    pub runtime: String,
    /// The program to execute (a path, or a name looked up on `PATH`).
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<Arg>,
    /// Files written into the temp folder before the start: `(name, contents)`.
    pub files: Vec<(String, Vec<u8>)>,
    /// Where it works.
    pub workdir: Workdir,
    /// How its environment is made.
    pub env: Env,
    /// The server environment the child's is built from; `None` reads this process's.
    pub parent_env: Option<Vec<(OsString, OsString)>>,
    /// Wall-clock deadline; the process group is killed with SIGKILL when it passes.
    pub timeout: Duration,
    /// Bytes kept per output stream.
    pub output_bytes: usize,
    /// The sandbox limits and extra readable paths; `None` runs it unconfined (the dev
    /// tools only).
    pub sandbox: Option<Confinement>,
    /// Where temp folders are made; `None` uses the system temp folder (`TMPDIR`).
    pub temp_root: Option<PathBuf>,
}

/// The sandbox settings of a [`Spec`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Confinement {
    /// Resource limits.
    pub rlimits: Rlimits,
    /// Paths the child may read besides the system folders and its own folder.
    pub read_paths: Vec<PathBuf>,
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finished {
    /// The exit code, when the program exited (not when a signal ended it).
    pub exit_code: Option<i32>,
    /// The signal that ended it, when one did (SIGKILL at the deadline).
    pub signal: Option<i32>,
    /// True if and only if the deadline passed and the group was killed.
    pub timed_out: bool,
    /// What it printed on stdout.
    pub stdout: Captured,
    /// What it printed on stderr.
    pub stderr: Captured,
    /// Wall time from spawn to exit.
    pub duration: Duration,
    /// The sandbox layers it ran under.
    pub applied: Applied,
}

impl Finished {
    /// Returns true if and only if either stream was cut at its cap.
    pub fn is_truncated(&self) -> bool {
        self.stdout.truncated || self.stderr.truncated
    }
}

/// A started child, its folder and its process group. Dropping it kills the group and
/// removes the folder.
#[derive(Debug)]
pub struct Launched {
    /// The child (stdout and stderr piped; stdin piped when asked for).
    pub child: Child,
    /// Its process group id (= its pid).
    pub group: i32,
    /// Its temp folder, removed when this is dropped.
    pub folder: Option<tempfile::TempDir>,
    /// The sandbox layers applied.
    pub applied: Applied,
    /// Its cgroup, when the sandbox made one: killed and removed when this is dropped.
    pub cgroup: Option<RunCgroup>,
}

impl Launched {
    /// Kills the child's whole process group, and every process of its cgroup, with
    /// SIGKILL (harmless when they are gone).
    pub fn kill_group(&self) {
        kill_group(self.group);
        if let Some(cgroup) = &self.cgroup {
            cgroup.kill();
        }
    }
}

impl Drop for Launched {
    fn drop(&mut self) {
        self.kill_group();
        // A child may have taken away its own permissions on what it made (a folder it
        // can no longer list); give them back, or the folder could not be removed when
        // the server does not run as root.
        if let Some(folder) = &self.folder {
            restore_permissions(folder.path());
        }
    }
}

/// Makes every folder under `root` (and `root`) listable and writable by its owner, this
/// process, walking with an explicit stack so a deep tree cannot exhaust ours.
fn restore_permissions(root: &Path) {
    use std::os::unix::fs::PermissionsExt;
    let mut pending = vec![root.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let _ = std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700));
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            // Symlinks are not followed: file_type() describes the link itself.
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                pending.push(entry.path());
            }
        }
    }
}

/// Sends SIGKILL to every process of group `group` (harmless when it is gone).
pub fn kill_group(group: i32) {
    if group > 0 {
        // SAFETY: kill(2) with a negative pid signals a process group; no memory involved.
        unsafe {
            libc::kill(-group, libc::SIGKILL);
        }
    }
}

/// Makes the folder, writes the files, and starts the program under the rules of `spec`.
/// `stdin` pipes the child's standard input (for a REPL); otherwise it reads nothing.
pub fn launch(spec: &Spec, stdin: bool) -> Result<Launched, Error> {
    let folder = match &spec.workdir {
        Workdir::Temp => Some(make_folder(spec)?),
        Workdir::At(_) => None,
    };
    let cwd: PathBuf = match (&spec.workdir, &folder) {
        (Workdir::At(path), _) => path.clone(),
        (Workdir::Temp, Some(dir)) => dir.path().to_owned(),
        (Workdir::Temp, None) => return Err(Error::Internal("a temp run without its folder".into())),
    };
    let mut cmd = Command::new(&spec.program);
    for arg in &spec.args {
        match arg {
            Arg::Text(text) => cmd.arg(text),
            Arg::File(name) => cmd.arg(cwd.join(name)),
        };
    }
    let parent = spec.parent_env.clone().unwrap_or_else(|| std::env::vars_os().collect());
    let vars = env::build(parent, &spec.env, folder.as_ref().map(|d| d.path()));
    cmd.env_clear()
        .envs(vars)
        .current_dir(&cwd)
        .stdin(if stdin { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let confined = match (&spec.sandbox, &folder) {
        (Some(confinement), Some(folder)) => Sandbox::get().confine(
            &mut cmd,
            &Policy {
                write_dir: Some(folder.path().to_owned()),
                read_paths: confinement.read_paths.clone(),
                rlimits: confinement.rlimits,
            },
        )?,
        // The folder quota would cover an existing folder with an empty tmpfs.
        (Some(_), None) => {
            return Err(Error::Internal(
                "a sandboxed run works in its own temp folder, not in an existing one".into(),
            ));
        }
        (None, _) => {
            cmd.process_group(0);
            Confined {
                applied: Applied::default(),
                cgroup: None,
            }
        }
    };
    let child = cmd.spawn().map_err(|e| Error::RuntimeUnavailable {
        runtime: spec.runtime.clone(),
        tried: vec![format!("{}: cannot start it: {e}", spec.program.display())],
    })?;
    let group = child.id().and_then(|id| i32::try_from(id).ok()).unwrap_or(0);
    Ok(Launched {
        child,
        group,
        folder,
        applied: confined.applied,
        cgroup: confined.cgroup,
    })
}

/// Runs `spec` to its end or its deadline and returns how it ended. The folder is gone
/// when this returns, whatever happened.
pub async fn run(spec: &Spec) -> Result<Finished, Error> {
    let mut launched = launch(spec, false)?;
    let start = Instant::now();
    let stdout = launched.child.stdout.take();
    let stderr = launched.child.stderr.take();
    let cap = spec.output_bytes;
    // Readers stop at the deadline plus a grace even if an escaped grandchild keeps a
    // pipe open, so a run can never outlive its deadline by more than the grace; once
    // the program has ended, only the grace is left, so a finished run never waits for
    // the deadline on a pipe something it started still holds.
    let (drain, read_until) = watch::channel(start + spec.timeout + limits::PROCESS_DRAIN_GRACE);
    let (out_until, err_until) = (read_until.clone(), read_until);
    let read_out = async move {
        match stdout {
            Some(s) => output::read_capped(s, cap, out_until).await,
            None => Captured::default(),
        }
    };
    let read_err = async move {
        match stderr {
            Some(s) => output::read_capped(s, cap, err_until).await,
            None => Captured::default(),
        }
    };
    let wait = async {
        let waited = tokio::time::timeout(spec.timeout, launched.child.wait()).await;
        // Kill the whole group either way: at the deadline (before reaping the program,
        // so the group id cannot have been reused), and after the program ended so
        // nothing it started in the background outlives the run or holds a pipe.
        let ended = match waited {
            Ok(status) => {
                launched.kill_group();
                (status, false, start.elapsed())
            }
            Err(_) => {
                launched.kill_group();
                (launched.child.wait().await, true, start.elapsed())
            }
        };
        // Reaped: the group id may now be reused, so dropping must not signal it again.
        launched.group = 0;
        drain.send_if_modified(|until| {
            let soon = Instant::now() + limits::PROCESS_DRAIN_GRACE;
            let earlier = soon < *until;
            if earlier {
                *until = soon;
            }
            earlier
        });
        ended
    };
    let ((status, timed_out, duration), stdout, stderr) = tokio::join!(wait, read_out, read_err);
    let status = status.map_err(|e| Error::Internal(format!("waiting for {}: {e}", spec.runtime)))?;
    use std::os::unix::process::ExitStatusExt;
    Ok(Finished {
        exit_code: status.code(),
        signal: status.signal(),
        timed_out,
        stdout,
        stderr,
        duration,
        applied: launched.applied,
    })
}

/// A fresh temp folder with the spec's files in it.
fn make_folder(spec: &Spec) -> Result<tempfile::TempDir, Error> {
    let root = spec.temp_root.clone().unwrap_or_else(std::env::temp_dir);
    let dir = tempfile::Builder::new()
        .prefix("toolgate-run-")
        .tempdir_in(&root)
        .map_err(|e| Error::Internal(format!("cannot make a temp folder in {}: {e}", root.display())))?;
    for (name, contents) in &spec.files {
        let path = checked_child(dir.path(), name)?;
        std::fs::write(&path, contents)
            .map_err(|e| Error::Internal(format!("cannot write {}: {e}", path.display())))?;
    }
    Ok(dir)
}

/// `folder/name`, refusing a name that would leave the folder.
fn checked_child(folder: &Path, name: &str) -> Result<PathBuf, Error> {
    let plain = !name.is_empty() && !name.contains('/') && name != "." && name != "..";
    if plain {
        Ok(folder.join(name))
    } else {
        Err(Error::Internal(format!("file name \"{name}\" is not a plain name")))
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    #[test]
    fn locked_folders_are_opened_again_for_removal() {
        let root = tempfile::tempdir().unwrap();
        let deep = root.path().join("a/b/c");
        std::fs::create_dir_all(&deep).unwrap();
        std::fs::write(deep.join("f"), "x").unwrap();
        for dir in ["a/b/c", "a/b", "a"] {
            std::fs::set_permissions(root.path().join(dir), std::fs::Permissions::from_mode(0o000)).unwrap();
        }
        restore_permissions(root.path());
        for dir in ["", "a", "a/b", "a/b/c"] {
            let mode = std::fs::metadata(root.path().join(dir)).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o700, "{dir}");
        }
    }
}
