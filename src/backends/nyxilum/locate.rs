//! Finding NyxilumNode: `NX_NODE_PATH` when set (a `.dll` runs through `dotnet`), else the
//! build output folders of the NyxilumLang checkout at `NX_ECOSYSTEM_ROOT`, newest build
//! first (a Debug build made after a Release one is the one matching the source). Not
//! found is `RUNTIME_UNAVAILABLE` listing every path tried. Looked up on every call, so a
//! build made while the server runs is picked up without a restart.

use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};
use std::time::SystemTime;

use crate::error::Error;

/// The runtime's name in errors and manifests.
pub const RUNTIME: &str = "nyxilum";

/// File names NyxilumNode is built under, in order: the `Nx` binary, the project-named
/// one of older builds, and their framework-dependent `.dll`s.
const NAMES: &[&str] = &["Nx", "NyxilumLang", "Nx.dll", "NyxilumLang.dll"];

/// Build configurations searched under `src/NyxilumLang/bin/`.
const CONFIGURATIONS: &[&str] = &["Release", "Debug"];

/// The target framework searched: .NET 10, without the Windows-only `net10.0-windows`
/// (its GUI natives open real windows, which arbitrary code must never do).
const FRAMEWORK: &str = "net10.0";

/// Where NyxilumNode may be, as configured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Locator {
    /// `NX_NODE_PATH`: the binary or `.dll` itself.
    pub node_path: Option<PathBuf>,
    /// `NX_ECOSYSTEM_ROOT`: the NyxilumLang checkout.
    pub ecosystem_root: PathBuf,
}

/// How to start the NyxilumNode that was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invocation {
    /// The program to execute: the binary, or `dotnet` for a `.dll`.
    pub program: PathBuf,
    /// Arguments before the command's own (the `.dll` path for `dotnet`).
    pub pre_args: Vec<OsString>,
    /// The NyxilumNode file found.
    pub path: PathBuf,
    /// Folders the sandboxed child must be able to read for the runtime to start.
    pub read_paths: Vec<PathBuf>,
}

impl Locator {
    /// Finds NyxilumNode, or says everywhere it looked.
    pub fn locate(&self) -> Result<Invocation, Error> {
        if let Some(path) = &self.node_path {
            if path.is_file() {
                return Ok(invocation(path));
            }
            return Err(unavailable(vec![format!(
                "{} (NX_NODE_PATH: no such file)",
                path.display()
            )]));
        }
        let candidates = self.candidates();
        let newest = candidates
            .iter()
            .filter(|p| p.is_file())
            .filter_map(|p| Some((p, p.metadata().ok()?.modified().unwrap_or(SystemTime::UNIX_EPOCH))))
            .max_by_key(|(_, modified)| *modified);
        match newest {
            Some((path, _)) => Ok(invocation(path)),
            None => Err(unavailable(
                candidates.iter().map(|p| p.display().to_string()).collect(),
            )),
        }
    }

    /// The checkout searched, as an absolute folder: a relative `ecosystem_root` (the
    /// default `../NyxilumLang` is one) is taken from this process's working directory —
    /// the MCP host's, not this binary's — and `.`/`..` are folded away (by the file
    /// system when the folder exists, else lexically), so messages say where it looked.
    pub fn root(&self) -> PathBuf {
        let joined = if self.ecosystem_root.is_relative() {
            std::env::current_dir()
                .map(|cwd| cwd.join(&self.ecosystem_root))
                .unwrap_or_else(|_| self.ecosystem_root.clone())
        } else {
            self.ecosystem_root.clone()
        };
        joined.canonicalize().unwrap_or_else(|_| fold_dots(&joined))
    }

    /// Every file NyxilumNode may be, in search order, under the absolute [`Self::root`].
    pub fn candidates(&self) -> Vec<PathBuf> {
        let root = self.root();
        let mut out = Vec::new();
        for configuration in CONFIGURATIONS {
            let folder = root.join("src/NyxilumLang/bin").join(configuration).join(FRAMEWORK);
            out.extend(NAMES.iter().map(|name| folder.join(name)));
        }
        out
    }
}

/// `path` with `.` dropped and each `..` taking away the folder before it, without
/// touching the file system (`..` at the root stays at the root).
fn fold_dots(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => match out.components().next_back() {
                Some(Component::Normal(_)) => {
                    out.pop();
                }
                Some(Component::RootDir | Component::Prefix(_)) => {}
                Some(Component::CurDir | Component::ParentDir) | None => out.push(component),
            },
            other => out.push(other),
        }
    }
    out
}

fn unavailable(tried: Vec<String>) -> Error {
    Error::RuntimeUnavailable {
        runtime: RUNTIME.to_owned(),
        tried,
    }
}

/// How to run `path`: directly, or through `dotnet` when it is a `.dll`.
fn invocation(path: &Path) -> Invocation {
    let real = path.canonicalize().unwrap_or_else(|_| path.to_owned());
    let mut read_paths: Vec<PathBuf> = real.parent().map(Path::to_owned).into_iter().collect();
    if let Some(root) = std::env::var_os("DOTNET_ROOT") {
        read_paths.push(PathBuf::from(root));
    }
    let is_dll = path.extension().is_some_and(|e| e.eq_ignore_ascii_case("dll"));
    if is_dll {
        let dotnet = on_path("dotnet").unwrap_or_else(|| PathBuf::from("dotnet"));
        if let Some(folder) = dotnet.canonicalize().ok().and_then(|p| p.parent().map(Path::to_owned)) {
            read_paths.push(folder);
        }
        Invocation {
            program: dotnet,
            pre_args: vec![real.clone().into_os_string()],
            path: real,
            read_paths,
        }
    } else {
        Invocation {
            program: real.clone(),
            pre_args: Vec::new(),
            path: real,
            read_paths,
        }
    }
}

/// The first `name` on this process's `PATH`.
pub(super) fn on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn not_found_lists_every_path_tried() {
        let locator = Locator {
            node_path: None,
            ecosystem_root: PathBuf::from("/nowhere/NyxilumLang"),
        };
        let e = locator.locate().unwrap_err();
        assert_eq!(e.code(), "RUNTIME_UNAVAILABLE");
        let text = e.to_string();
        assert!(
            text.contains("/nowhere/NyxilumLang/src/NyxilumLang/bin/Release/net10.0/Nx,"),
            "{text}"
        );
        assert!(
            text.contains("/nowhere/NyxilumLang/src/NyxilumLang/bin/Debug/net10.0/NyxilumLang.dll"),
            "{text}"
        );
        assert!(text.contains("Set NX_NODE_PATH"), "{text}");
        assert_eq!(locator.candidates().len(), 8);
    }

    #[test]
    fn a_relative_root_is_shown_absolute_from_the_working_directory() {
        let locator = Locator {
            node_path: None,
            ecosystem_root: PathBuf::from("../no-such-NyxilumLang"),
        };
        let cwd = std::env::current_dir().unwrap();
        let expected = cwd.parent().unwrap().join("no-such-NyxilumLang");
        assert_eq!(locator.root(), expected);
        let first = locator.candidates()[0].clone();
        assert!(first.starts_with(&expected), "{first:?}");
        assert!(!first.components().any(|c| c == Component::ParentDir), "{first:?}");
        assert_eq!(fold_dots(Path::new("/a/./b/../c")), PathBuf::from("/a/c"));
        assert_eq!(fold_dots(Path::new("/../x")), PathBuf::from("/x"));
        assert_eq!(fold_dots(Path::new("../x")), PathBuf::from("../x"));
    }

    #[test]
    fn the_newest_build_wins_and_a_dll_runs_through_dotnet() {
        let root = tempfile::tempdir().unwrap();
        let release = root.path().join("src/NyxilumLang/bin/Release/net10.0");
        let debug = root.path().join("src/NyxilumLang/bin/Debug/net10.0");
        std::fs::create_dir_all(&release).unwrap();
        std::fs::create_dir_all(&debug).unwrap();
        std::fs::write(release.join("Nx.dll"), "old").unwrap();
        let old = SystemTime::now() - std::time::Duration::from_secs(3600);
        std::fs::File::options()
            .write(true)
            .open(release.join("Nx.dll"))
            .unwrap()
            .set_modified(old)
            .unwrap();
        std::fs::write(debug.join("Nx"), "new").unwrap();
        let locator = Locator {
            node_path: None,
            ecosystem_root: root.path().to_owned(),
        };
        let found = locator.locate().unwrap();
        assert!(found.path.ends_with("Debug/net10.0/Nx"), "{found:?}");
        assert!(found.pre_args.is_empty());
        let explicit = Locator {
            node_path: Some(release.join("Nx.dll")),
            ..locator
        };
        let found = explicit.locate().unwrap();
        assert!(found.program.ends_with("dotnet"), "{found:?}");
        assert_eq!(found.pre_args.len(), 1);
    }
}
