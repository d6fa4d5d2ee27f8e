//! `nyxilum_docs`: the language guide (`GUIDE.md` at the root of the NyxilumLang
//! checkout, or in a folder above the NyxilumNode binary) whole, or one of its `### `
//! sections found by a case-insensitive part of its heading. Read from disk on each call;
//! nothing is cached or written.

use std::path::{Path, PathBuf};

use crate::error::Error;

use super::RUNTIME;

/// The guide's file name in the checkout.
const GUIDE: &str = "GUIDE.md";

/// Folders above the binary searched for the guide (`src/NyxilumLang/bin/Release/net10.0/Nx` is
/// five levels below the checkout's root; one more for a `publish/` folder).
const GUIDE_DEPTH: usize = 6;

/// The guide as read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Guide {
    /// Where it was read from.
    pub path: PathBuf,
    /// Its text.
    pub text: String,
}

/// One `### ` section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section {
    /// Its heading, without the hashes.
    pub heading: String,
    /// The heading line and everything up to the next `### ` heading.
    pub body: String,
}

impl Guide {
    /// Reads the first `GUIDE.md` found in `folders`, or says everywhere it looked.
    pub fn read(folders: &[PathBuf]) -> Result<Guide, Error> {
        let mut tried = Vec::new();
        for folder in folders {
            let path = folder.join(GUIDE);
            match std::fs::read_to_string(&path) {
                Ok(text) => return Ok(Guide { path, text }),
                Err(e) => tried.push(format!("{} ({e})", path.display())),
            }
        }
        Err(Error::RuntimeUnavailable {
            runtime: RUNTIME.to_owned(),
            tried,
        })
    }

    /// Where the guide may be: the checkout's root, then the folders above `binary` (a
    /// build output lies five levels below the checkout's root).
    pub fn folders(root: &Path, binary: Option<&Path>) -> Vec<PathBuf> {
        let mut folders = vec![root.to_owned()];
        if let Some(binary) = binary {
            folders.extend(binary.ancestors().skip(1).take(GUIDE_DEPTH).map(Path::to_owned));
        }
        folders.dedup();
        folders
    }

    /// Its `### ` sections, in order (topics are level-3 headings in this guide).
    pub fn sections(&self) -> Vec<Section> {
        let mut sections: Vec<Section> = Vec::new();
        for line in self.text.lines() {
            if let Some(heading) = line.strip_prefix("### ") {
                sections.push(Section {
                    heading: heading.trim().to_owned(),
                    body: String::new(),
                });
            }
            if let Some(current) = sections.last_mut() {
                current.body.push_str(line);
                current.body.push('\n');
            }
        }
        sections
    }

    /// The first section whose heading contains `wanted` (ignoring case).
    pub fn section(&self, wanted: &str) -> Option<Section> {
        let wanted = wanted.to_lowercase();
        self.sections()
            .into_iter()
            .find(|s| s.heading.to_lowercase().contains(&wanted))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sections_are_found_by_part_of_their_heading() {
        let guide = Guide {
            path: PathBuf::from("GUIDE.md"),
            text: "# Guide\n## Basics\n### Variables\nvar x = 1\n### Maps/Dictionaries\nnewMap()\n".into(),
        };
        let names: Vec<String> = guide.sections().into_iter().map(|s| s.heading).collect();
        assert_eq!(names, ["Variables", "Maps/Dictionaries"]);
        assert_eq!(guide.section("maps").unwrap().body, "### Maps/Dictionaries\nnewMap()\n");
        assert!(guide.section("structs").is_none());
    }

    #[test]
    fn the_guide_is_looked_for_at_the_root_then_above_the_binary() {
        let folders = Guide::folders(
            Path::new("/r"),
            Some(Path::new("/c/src/NyxilumLang/bin/Release/net10.0/Nx")),
        );
        assert_eq!(folders[0], Path::new("/r"));
        assert!(folders.contains(&PathBuf::from("/c")), "{folders:?}");
        let e = Guide::read(&folders).unwrap_err();
        assert!(
            e.to_string().contains("/r/GUIDE.md") && e.to_string().contains("/c/GUIDE.md"),
            "{e}"
        );
    }
}
