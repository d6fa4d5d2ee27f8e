//! `nyxilum_docs`: the language guide (`GUIDE.md` at the root of the NyxilumLang
//! checkout) whole, or one of its `### ` sections found by a case-insensitive part of its
//! heading. Read from disk on each call; nothing is cached or written.

use std::path::{Path, PathBuf};

use crate::error::Error;

use super::RUNTIME;

/// The guide's file name in the checkout.
const GUIDE: &str = "GUIDE.md";

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
    /// Reads `GUIDE.md` under `root`, or says where it looked.
    pub fn read(root: &Path) -> Result<Guide, Error> {
        let path = root.join(GUIDE);
        std::fs::read_to_string(&path)
            .map(|text| Guide {
                path: path.clone(),
                text,
            })
            .map_err(|e| Error::RuntimeUnavailable {
                runtime: RUNTIME.to_owned(),
                tried: vec![format!("{} ({e})", path.display())],
            })
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
}
