//! Reading a catalogue folder without ever leaving it: every file the folder loader reads
//! (each tool's `tool.json` and source, `resources.json`, `prompts.json`) is opened one
//! path component at a time, relative to the folder already opened, with `O_NOFOLLOW`.
//! So a symbolic link anywhere below the catalogue's root — a tool folder, a directory on
//! a source's path, the file itself — is refused where it would be followed, and what is
//! read is exactly the file that was opened: there is no check-then-open window for a
//! link swapped in between.
//!
//! The root itself is opened as given (a path the operator chose may run through links).
//! Below it no link is followed, even one that points inside the root: whether a link
//! stays inside can only be decided safely by the kernel (`openat2` with
//! `RESOLVE_BENEATH`, Linux 5.6 and later, and often blocked by container seccomp
//! profiles), and copying a file is the operator's cheap way round. Only regular files
//! are read, opened without blocking, so a FIFO or a device cannot hold the build.
//!
//! Hard links are not links to follow: a hard link is the file itself, and the kernel's
//! `fs.protected_hardlinks` (on by default) stops a user from making one to a file they
//! could not read and write.

use std::ffi::{OsStr, OsString};
use std::io::Read as _;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;

/// Why a name below the root was not read.
#[derive(Debug)]
pub(super) enum Refused {
    /// Nothing has that name.
    Missing,
    /// Anything else, as a clause naming it.
    Other(String),
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refused::Missing => f.write_str("no such file"),
            Refused::Other(why) => f.write_str(why),
        }
    }
}

/// A folder opened at or below a catalogue's root.
#[derive(Debug)]
pub(super) struct Folder {
    fd: OwnedFd,
}

/// What a name in a folder is, links not followed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    /// A folder.
    Folder,
    /// A symbolic link to a folder (not followed: reported).
    LinkToFolder,
    /// Anything else (a file, a link to a file, a dangling link).
    Other,
}

const DIR_FLAGS: OFlags = OFlags::RDONLY
    .union(OFlags::DIRECTORY)
    .union(OFlags::NOFOLLOW)
    .union(OFlags::CLOEXEC);
const FILE_FLAGS: OFlags = OFlags::RDONLY
    .union(OFlags::NOFOLLOW)
    .union(OFlags::NONBLOCK)
    .union(OFlags::CLOEXEC);

impl Folder {
    /// Opens the catalogue's root, following whatever links its own path holds.
    pub(super) fn root(path: &Path) -> std::io::Result<Folder> {
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
        Ok(Folder {
            fd: rustix::fs::open(path, flags, Mode::empty())?,
        })
    }

    /// Its entries, sorted by name, each with its kind.
    pub(super) fn entries(&self) -> std::io::Result<Vec<(OsString, Kind)>> {
        let mut out = Vec::new();
        for entry in rustix::fs::Dir::read_from(&self.fd)? {
            let name = OsStr::from_bytes(entry?.file_name().to_bytes()).to_owned();
            if name == "." || name == ".." {
                continue;
            }
            let kind = match rustix::fs::statat(&self.fd, &*name, AtFlags::SYMLINK_NOFOLLOW) {
                Ok(st) => match FileType::from_raw_mode(st.st_mode) {
                    FileType::Directory => Kind::Folder,
                    FileType::Symlink => match rustix::fs::statat(&self.fd, &*name, AtFlags::empty()) {
                        Ok(target) if FileType::from_raw_mode(target.st_mode) == FileType::Directory => {
                            Kind::LinkToFolder
                        }
                        _ => Kind::Other,
                    },
                    _ => Kind::Other,
                },
                Err(_) => Kind::Other,
            };
            out.push((name, kind));
        }
        out.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(out)
    }

    /// The folder `name` in this one, never through a link.
    pub(super) fn folder(&self, name: &OsStr) -> Result<Folder, Refused> {
        rustix::fs::openat(&self.fd, name, DIR_FLAGS, Mode::empty())
            .map(|fd| Folder { fd })
            .map_err(|e| self.refusal(name, e, "a folder"))
    }

    /// The whole content of the regular file at `path` (relative, plain components only),
    /// each folder on the way opened in turn, no link followed.
    pub(super) fn read(&self, path: &str) -> Result<Vec<u8>, Refused> {
        let mut parts = Path::new(path).iter().peekable();
        let mut held: Option<Folder> = None;
        while let Some(part) = parts.next() {
            let at = held.as_ref().unwrap_or(self);
            if parts.peek().is_some() {
                held = Some(at.folder(part)?);
                continue;
            }
            let fd = rustix::fs::openat(&at.fd, part, FILE_FLAGS, Mode::empty())
                .map_err(|e| at.refusal(part, e, "a file"))?;
            let st = rustix::fs::fstat(&fd).map_err(|e| Refused::Other(e.to_string()))?;
            if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile {
                return Err(Refused::Other(format!(
                    "{} is not a regular file",
                    part.to_string_lossy()
                )));
            }
            let mut bytes = Vec::with_capacity(usize::try_from(st.st_size).unwrap_or(0));
            std::fs::File::from(fd)
                .read_to_end(&mut bytes)
                .map_err(|e| Refused::Other(e.to_string()))?;
            return Ok(bytes);
        }
        Err(Refused::Other("an empty path".to_owned()))
    }

    /// Why opening `name` as `what` failed, a link named as such.
    fn refusal(&self, name: &OsStr, e: Errno, what: &str) -> Refused {
        let shown = name.to_string_lossy();
        if e == Errno::NOENT {
            return Refused::Missing;
        }
        let is_link = rustix::fs::statat(&self.fd, name, AtFlags::SYMLINK_NOFOLLOW)
            .is_ok_and(|st| FileType::from_raw_mode(st.st_mode) == FileType::Symlink);
        if is_link {
            return Refused::Other(format!(
                "{shown} is a symbolic link; links inside a catalogue folder are not followed"
            ));
        }
        match e {
            Errno::NOTDIR if what == "a folder" => Refused::Other(format!("{shown} is not a folder")),
            e => Refused::Other(format!("{shown}: {}", std::io::Error::from(e))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn only_what_lies_below_the_root_without_links_is_read() {
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), "outside").unwrap();
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("tool/src")).unwrap();
        std::fs::write(root.join("tool/src/index.js"), "inside").unwrap();
        symlink(outside.path().join("secret"), root.join("tool/leak.js")).unwrap();
        symlink(root.join("tool/src/index.js"), root.join("tool/near.js")).unwrap();
        symlink(outside.path(), root.join("tool/out")).unwrap();
        symlink(outside.path(), root.join("linked")).unwrap();
        let folder = Folder::root(root).unwrap();
        let tool = folder.folder(OsStr::new("tool")).unwrap();
        assert_eq!(tool.read("src/index.js").unwrap(), b"inside");
        for link in ["leak.js", "near.js", "out/secret"] {
            let why = tool.read(link).unwrap_err().to_string();
            assert!(why.contains("symbolic link"), "{link}: {why}");
        }
        let why = folder.folder(OsStr::new("linked")).unwrap_err().to_string();
        assert!(why.contains("symbolic link"), "{why}");
        assert!(matches!(tool.read("absent.js"), Err(Refused::Missing)));
        assert!(tool.read("src").unwrap_err().to_string().contains("not a regular file"));
        let kinds = folder.entries().unwrap();
        assert_eq!(
            kinds,
            [("linked".into(), Kind::LinkToFolder), ("tool".into(), Kind::Folder)]
        );
    }

    #[test]
    fn a_fifo_is_refused_without_waiting_for_a_writer() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("source.js");
        rustix::fs::mknodat(rustix::fs::CWD, &fifo, FileType::Fifo, Mode::RUSR | Mode::WUSR, 0).unwrap();
        let folder = Folder::root(dir.path()).unwrap();
        let why = folder.read("source.js").unwrap_err().to_string();
        assert!(why.contains("not a regular file"), "{why}");
    }
}
