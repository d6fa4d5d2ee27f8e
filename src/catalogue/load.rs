//! Reading manifests and their code from the three local sources: the catalogue
//! compiled into the binary, a folder, and a `.json` file.
//!
//! One bad tool never costs the others: each problem is returned as a sentence beside the
//! tools that loaded, for the caller to report. This module only reads; it neither
//! validates schemas nor decides what is advertised (that is `snapshot`). Resources and
//! prompts (a file's `resources` and `prompts` arrays, a folder's `resources.json` and
//! `prompts.json`) are read as JSON values here and checked by `extras`.

use std::path::{Component, Path};
use std::sync::Arc;

use include_dir::{Dir, include_dir};
use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

use super::beneath::{self, Folder, Kind};
use super::manifest::Manifest;
use super::parse;

/// The `catalogue/` folder of this repository, compiled in.
static EMBEDDED: Dir<'static> = include_dir!("$CARGO_MANIFEST_DIR/catalogue");

/// A manifest with its code (moved out of `source`).
#[derive(Debug, Clone)]
pub struct Entry {
    /// The manifest, `source` cleared.
    pub manifest: Manifest,
    /// The code, when the tool has any.
    pub code: Option<Arc<str>>,
    /// The file the code was read from, as the source was given (`cat/hash/index.js`;
    /// for the embedded catalogue, relative to it): what stack traces name. `None` for
    /// code given inline.
    pub file: Option<Arc<str>>,
}

/// What a source yielded: the tools that loaded and one sentence per tool that did not,
/// and the resource and prompt entries it carries, unchecked.
#[derive(Debug, Default)]
pub struct Loaded {
    /// Tools that loaded, in source order.
    pub entries: Vec<Entry>,
    /// Problems, each naming the tool or file.
    pub problems: Vec<String>,
    /// Resource and resource-template entries, in source order.
    pub resources: Vec<Value>,
    /// Prompt entries, in source order.
    pub prompts: Vec<Value>,
}

/// A catalogue document: `{"tools": [...], "resources": [...], "prompts": [...]}`, the
/// last two optional.
#[derive(Debug, Default)]
pub struct Document {
    /// The manifests, each read as it was parsed (or why it is not one), so a large
    /// document is never held whole as a `Value` tree beside them.
    pub tools: Vec<Result<Manifest, String>>,
    /// Resource and resource-template entries.
    pub resources: Vec<Value>,
    /// Prompt entries.
    pub prompts: Vec<Value>,
}

/// The document as serde reads it.
#[derive(Deserialize)]
struct Wire {
    tools: Tools,
    #[serde(default)]
    resources: Option<Vec<Value>>,
    #[serde(default)]
    prompts: Option<Vec<Value>>,
}

/// The document with each tool left as its text, for [`parse_list`]'s fast path.
#[derive(Deserialize)]
struct RawWire<'a> {
    #[serde(borrow)]
    tools: Vec<&'a RawValue>,
    #[serde(default)]
    resources: Option<Vec<Value>>,
    #[serde(default)]
    prompts: Option<Vec<Value>>,
}

/// Lists shorter than this are read on one thread: spawning costs more than it saves.
const PARALLEL_MIN_TOOLS: usize = 1024;

/// A `tools` array read one element at a time: each is a manifest or the reason it is
/// not, and only one element is ever held as a `Value`.
struct Tools(Vec<Result<Manifest, String>>);

impl<'de> Deserialize<'de> for Tools {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Tools, D::Error> {
        struct Each;
        impl<'de> serde::de::Visitor<'de> for Each {
            type Value = Tools;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an array of manifests")
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Tools, A::Error> {
                let mut tools = Vec::with_capacity(seq.size_hint().unwrap_or(0));
                while let Some(value) = seq.next_element::<Value>()? {
                    tools.push(serde_json::from_value::<Manifest>(value).map_err(|e| e.to_string()));
                }
                Ok(Tools(tools))
            }
        }
        deserializer.deserialize_seq(Each)
    }
}

/// The embedded catalogue.
pub fn embedded() -> Loaded {
    let mut loaded = Loaded::default();
    let mut dirs: Vec<&Dir<'static>> = EMBEDDED.dirs().collect();
    dirs.sort_by_key(|d| d.path());
    for dir in dirs {
        let folder = dir.path().display().to_string();
        let Some(manifest) = dir.get_file(dir.path().join("tool.json")) else {
            loaded.problems.push(format!("embedded {folder}: no tool.json"));
            continue;
        };
        let read = |name: &str| {
            dir.get_file(dir.path().join(name))
                .ok_or_else(|| format!("no file {name}"))
                .and_then(|f| {
                    f.contents_utf8()
                        .map(str::to_owned)
                        .ok_or_else(|| format!("{name} is not UTF-8"))
                })
        };
        push(
            &mut loaded,
            (&format!("embedded {folder}"), &folder),
            manifest.contents(),
            read,
        );
    }
    for (key, into) in [("resources", &mut loaded.resources), ("prompts", &mut loaded.prompts)] {
        if let Some(file) = EMBEDDED.get_file(format!("{key}.json")) {
            match array(file.contents(), key) {
                Ok(values) => *into = values,
                Err(e) => loaded.problems.push(format!("embedded {key}.json: {e}")),
            }
        }
    }
    loaded
}

/// A folder with one sub-folder per tool (`<slug>/tool.json` beside its source). Nothing
/// outside it is read: no symbolic link below the root is followed (`beneath.rs`), and
/// each one met where a tool folder, a manifest, a source or an extras file should be is a
/// problem that names it.
pub fn dir(root: &Path) -> Result<Loaded, LoadError> {
    let cannot = |e: &dyn std::fmt::Display| LoadError::Folder {
        path: root.to_owned(),
        reason: e.to_string(),
    };
    let folder = Folder::root(root).map_err(|e| cannot(&e))?;
    let entries = folder.entries().map_err(|e| cannot(&e))?;
    let mut loaded = Loaded::default();
    for (name, kind) in entries {
        let shown = root.join(&name).display().to_string();
        let tool = match kind {
            Kind::Other => continue,
            Kind::LinkToFolder => Err(beneath::Refused::Other(
                "a symbolic link to a folder; links inside a catalogue folder are not followed".to_owned(),
            )),
            Kind::Folder => folder.folder(&name),
        };
        let where_ = format!("{shown}/tool.json");
        let bytes = match tool.and_then(|tool| Ok((tool.read("tool.json")?, tool))) {
            Ok(read) => read,
            Err(beneath::Refused::Missing) => continue,
            Err(e) => {
                loaded.problems.push(format!("{shown}: {e}"));
                continue;
            }
        };
        let (bytes, tool) = bytes;
        let read = |name: &str| {
            tool.read(name)
                .map_err(|e| format!("{name}: {e}"))
                .and_then(|b| String::from_utf8(b).map_err(|_| format!("{name}: not UTF-8")))
        };
        push(&mut loaded, (&where_, &shown), &bytes, read);
    }
    for (key, into) in [("resources", &mut loaded.resources), ("prompts", &mut loaded.prompts)] {
        let name = format!("{key}.json");
        let shown = root.join(&name).display().to_string();
        match folder.read(&name) {
            Ok(bytes) => match array(&bytes, key) {
                Ok(values) => *into = values,
                Err(e) => loaded.problems.push(format!("{shown}: {e}")),
            },
            Err(beneath::Refused::Missing) => {}
            Err(e) => loaded.problems.push(format!("{shown}: {e}")),
        }
    }
    Ok(loaded)
}

/// A `{"tools": [manifest, ...], "resources": [...], "prompts": [...]}` file, each
/// `source` holding code inline.
pub fn file(path: &Path) -> Result<Loaded, LoadError> {
    let origin = path.display().to_string();
    let bytes = read_opened(&origin, open_file(path)?)?;
    from_file_bytes(&origin, &bytes)
}

/// Opens a catalogue file to read later (the server's build does, off its async workers):
/// a missing or unreadable file, or a folder, is an error now.
pub fn open_file(path: &Path) -> Result<std::fs::File, LoadError> {
    let fail = |e: &dyn std::fmt::Display| LoadError::File {
        origin: path.display().to_string(),
        reason: e.to_string(),
    };
    let file = std::fs::File::open(path).map_err(|e| fail(&e))?;
    match file.metadata() {
        Ok(m) if m.is_dir() => Err(fail(&"it is a folder")),
        Ok(_) => Ok(file),
        Err(e) => Err(fail(&e)),
    }
}

/// The whole content of a file [`open_file`] opened; `origin` names it in an error.
pub fn read_opened(origin: &str, mut file: std::fs::File) -> Result<Vec<u8>, LoadError> {
    use std::io::Read as _;
    let mut bytes = Vec::with_capacity(file.metadata().map_or(0, |m| usize::try_from(m.len()).unwrap_or(0)));
    file.read_to_end(&mut bytes).map_err(|e| LoadError::File {
        origin: origin.to_owned(),
        reason: e.to_string(),
    })?;
    Ok(bytes)
}

/// Checks that a catalogue folder can be listed, so a wrong path stops the server at start;
/// [`dir`] reads it later.
pub fn check_dir(root: &Path) -> Result<std::path::PathBuf, LoadError> {
    std::fs::read_dir(root).map_err(|e| LoadError::Folder {
        path: root.to_owned(),
        reason: e.to_string(),
    })?;
    Ok(root.to_owned())
}

/// A catalogue file's content, read from `origin`, as [`file`] reads it.
pub fn from_file_bytes(origin: &str, bytes: &[u8]) -> Result<Loaded, LoadError> {
    let doc = parse_list(bytes).map_err(|problem| LoadError::Document {
        origin: origin.to_owned(),
        problem,
    })?;
    Ok(from_document(origin, doc, true))
}

/// Reads a catalogue document (a file, or the API's list answer): its `tools` array, and
/// its `resources` and `prompts` arrays when present.
///
/// The document is first split into its tools' texts, which are read on every core, each
/// by `parse.rs` in one pass; a tool it declines is read as before, as a `Value` then a
/// manifest, so results and messages are the same. Anything unusual (a document that is
/// not one, a tool that is not JSON) is read whole the original way, so a document fails
/// with the same message too. At 100,000 tools (a 65 MB file) this took the read from
/// 1.2–1.3 s to 0.73–0.80 s on the shared 2-core machine the scale bench runs on.
pub fn parse_list(bytes: &[u8]) -> Result<Document, NotACatalogue> {
    match parse_split(bytes) {
        Some(doc) => Ok(doc),
        None => parse_whole(bytes).map_err(NotACatalogue),
    }
}

/// Why a catalogue source could not be read at all. A problem with one tool is no error:
/// it is kept in [`Loaded::problems`] and the other tools load.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The folder cannot be listed or opened.
    #[error("cannot read catalogue folder {}: {reason}", path.display())]
    Folder {
        /// The folder.
        path: std::path::PathBuf,
        /// What the system said.
        reason: String,
    },
    /// The file cannot be opened or read, or is a folder.
    #[error("cannot read catalogue file {origin}: {reason}")]
    File {
        /// The file, as the user named it.
        origin: String,
        /// What the system said.
        reason: String,
    },
    /// The file was read but is not a catalogue document.
    #[error("catalogue file {origin}: {problem}")]
    Document {
        /// The file, as the user named it.
        origin: String,
        /// What is wrong with it.
        problem: NotACatalogue,
    },
}

/// Why a document (a catalogue file, the API's list answer) is not a catalogue: not JSON,
/// or not `{"tools": [...]}`; the text says which and where.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct NotACatalogue(String);

/// The fast path of [`parse_list`]; `None` sends the document to [`parse_whole`].
fn parse_split(bytes: &[u8]) -> Option<Document> {
    let wire: RawWire<'_> = serde_json::from_slice(bytes).ok()?;
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).clamp(1, 8);
    let tools = if threads == 1 || wire.tools.len() < PARALLEL_MIN_TOOLS {
        read_tools(&wire.tools)?
    } else {
        let size = wire.tools.len().div_ceil(threads);
        let parts: Vec<Option<Vec<Result<Manifest, String>>>> = std::thread::scope(|scope| {
            let handles: Vec<_> = wire
                .tools
                .chunks(size)
                .map(|slice| (slice, scope.spawn(move || read_tools(slice))))
                .collect();
            handles
                .into_iter()
                // A part whose thread failed is read again here: same input, same output.
                .map(|(slice, h)| h.join().unwrap_or_else(|_| read_tools(slice)))
                .collect()
        });
        let mut tools = Vec::with_capacity(wire.tools.len());
        for part in parts {
            tools.extend(part?);
        }
        tools
    };
    Some(Document {
        tools,
        resources: wire.resources.unwrap_or_default(),
        prompts: wire.prompts.unwrap_or_default(),
    })
}

/// Each tool of `raw`, in order; `None` if one is not JSON (a number out of range, say).
fn read_tools(raw: &[&RawValue]) -> Option<Vec<Result<Manifest, String>>> {
    let mut buf = Vec::new();
    raw.iter()
        .map(|raw| match parse::manifest(raw.get(), &mut buf) {
            Some(m) => Some(Ok(m)),
            None => {
                let value: Value = serde_json::from_str(raw.get()).ok()?;
                Some(serde_json::from_value::<Manifest>(value).map_err(|e| e.to_string()))
            }
        })
        .collect()
}

/// [`parse_list`] the original way: the document read whole, each tool as a `Value` then
/// a manifest.
fn parse_whole(bytes: &[u8]) -> Result<Document, String> {
    let wire: Wire = serde_json::from_slice(bytes).map_err(|e| match e.classify() {
        serde_json::error::Category::Syntax | serde_json::error::Category::Eof => format!("not JSON: {e}"),
        _ => format!(
            "expected an object with a \"tools\" array (and optional \"resources\" and \"prompts\" arrays): {e}"
        ),
    })?;
    Ok(Document {
        tools: wire.tools.0,
        resources: wire.resources.unwrap_or_default(),
        prompts: wire.prompts.unwrap_or_default(),
    })
}

/// A whole document: its manifests as [`from_values`] reads them, its resources and
/// prompts as they are.
pub fn from_document(origin: &str, doc: Document, inline_source: bool) -> Loaded {
    Loaded {
        resources: doc.resources,
        prompts: doc.prompts,
        ..from_manifests(origin, doc.tools, inline_source)
    }
}

/// A `resources.json` or `prompts.json` file: a JSON array.
fn array(bytes: &[u8], key: &str) -> Result<Vec<Value>, String> {
    match serde_json::from_slice(bytes) {
        Ok(Value::Array(values)) => Ok(values),
        Ok(_) => Err(format!("expected a JSON array of {key}")),
        Err(e) => Err(format!("not JSON: {e}")),
    }
}

/// Manifests given as JSON values. With `inline_source`, `source` is code; otherwise any
/// `source` is ignored (the API list never carries code).
pub fn from_values(origin: &str, values: Vec<Value>, inline_source: bool) -> Loaded {
    let manifests = values
        .into_iter()
        .map(|v| serde_json::from_value::<Manifest>(v).map_err(|e| e.to_string()))
        .collect();
    from_manifests(origin, manifests, inline_source)
}

/// Manifests as read, each or why it is not one, as [`from_values`] takes them.
fn from_manifests(origin: &str, manifests: Vec<Result<Manifest, String>>, inline_source: bool) -> Loaded {
    let mut loaded = Loaded::default();
    for (i, manifest) in manifests.into_iter().enumerate() {
        match manifest {
            Ok(mut manifest) => {
                let code = manifest.source.take().filter(|_| inline_source).map(Arc::from);
                loaded.entries.push(Entry {
                    manifest,
                    code,
                    file: None,
                });
            }
            Err(e) => loaded
                .problems
                .push(format!("{origin}: tool #{i} is not a valid manifest: {e}")),
        }
    }
    loaded
}

/// Parses one folder's manifest and reads the source file it names; `where_` names the
/// manifest in problems, `folder` the tool's folder in the source's file name.
fn push(
    loaded: &mut Loaded,
    (where_, folder): (&str, &str),
    bytes: &[u8],
    read: impl Fn(&str) -> Result<String, String>,
) {
    let mut manifest: Manifest = match serde_json::from_slice(bytes) {
        Ok(m) => m,
        Err(e) => {
            loaded.problems.push(format!("{where_}: not a valid manifest: {e}"));
            return;
        }
    };
    let source = manifest.source.take();
    let file = source.as_ref().map(|name| Arc::from(format!("{folder}/{name}")));
    let code = match source {
        None => None,
        Some(name) if !is_plain_relative(&name) => {
            loaded.problems.push(format!(
                "{where_}: source \"{name}\" must be a file inside the tool's folder"
            ));
            return;
        }
        Some(name) => match read(&name) {
            Ok(code) => Some(Arc::from(code)),
            Err(e) => {
                loaded.problems.push(format!("{where_}: {e}"));
                return;
            }
        },
    };
    loaded.entries.push(Entry { manifest, code, file });
}

/// Returns true if and only if `name` is a relative path that stays inside its folder.
fn is_plain_relative(name: &str) -> bool {
    let path = Path::new(name);
    !name.is_empty() && path.components().all(|c| matches!(c, Component::Normal(_)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_catalogue_loads_without_problems() {
        let loaded = embedded();
        assert!(loaded.problems.is_empty(), "{:?}", loaded.problems);
        assert!(loaded.entries.len() >= 6);
        assert!(
            loaded
                .entries
                .iter()
                .all(|e| e.code.is_some() && e.manifest.source.is_none())
        );
    }

    #[test]
    fn source_may_not_leave_its_folder() {
        assert!(is_plain_relative("index.js"));
        assert!(is_plain_relative("src/index.js"));
        assert!(!is_plain_relative("../secret.js"));
        assert!(!is_plain_relative("/etc/passwd"));
        assert!(!is_plain_relative(""));
    }

    #[test]
    fn a_list_document_is_read_tool_by_tool() {
        let doc = parse_list(br#"{"tools": [{"slug": "ok"}, {"name": "no slug"}], "prompts": null, "x": 1}"#).unwrap();
        assert_eq!(doc.tools.len(), 2);
        assert!(doc.tools[0].is_ok() && doc.tools[1].is_err());
        assert!(doc.prompts.is_empty());
        assert!(
            parse_list(b"{\"tools\": 5}")
                .unwrap_err()
                .to_string()
                .contains("\"tools\" array")
        );
        assert!(parse_list(b"{\"resources\": []}").is_err(), "no tools");
        assert!(
            parse_list(b"{\"tools\": [")
                .unwrap_err()
                .to_string()
                .starts_with("not JSON")
        );
    }

    #[test]
    fn the_split_reading_gives_what_the_whole_one_gives() {
        let tools: Vec<String> = (0..PARALLEL_MIN_TOOLS * 2 + 3)
            .map(|i| match i % 5 {
                0 => format!(r#"{{"slug": "t{i}", "input_schema": {{"type": "object", "type": "object"}}}}"#),
                1 => format!(r#"{{"name": "no slug {i}"}}"#),
                _ => format!(r#"{{"slug": "t{i}", "description": "d", "tags": ["a"], "x": {i}}}"#),
            })
            .collect();
        let text = format!(r#"{{"tools": [{}], "resources": [{{"uri": "a"}}]}}"#, tools.join(","));
        let split = parse_split(text.as_bytes()).unwrap();
        let whole = parse_whole(text.as_bytes()).unwrap();
        assert_eq!(split.tools, whole.tools);
        assert_eq!(split.resources, whole.resources);
        let out_of_range = br#"{"tools": [{"slug": "a"}, {"slug": "b", "x": 1e999}]}"#;
        assert!(parse_split(out_of_range).is_none());
        assert_eq!(
            parse_list(out_of_range).err(),
            parse_whole(out_of_range).err().map(NotACatalogue)
        );
    }

    #[test]
    fn one_bad_entry_does_not_cost_the_others() {
        let values = vec![
            serde_json::json!({"slug": "ok", "source": "function run(){}"}),
            serde_json::json!({"name": "no slug"}),
        ];
        let loaded = from_values("test", values, true);
        assert_eq!(loaded.entries.len(), 1);
        assert_eq!(loaded.problems.len(), 1);
        assert!(loaded.entries[0].code.is_some());
    }
}
