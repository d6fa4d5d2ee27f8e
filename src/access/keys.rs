//! The keys file: per API key an id, the SHA-256 of the key (never the key), its scopes
//! and its rate limit; reading it, finding a presented key in constant time, and
//! appending a new key (`toolgate keys new`).
//!
//! The file is JSON, `{"keys": [{"id", "sha256", "scopes", "per_minute", "tools"}]}`,
//! so an operator can read and edit it; a bad entry is refused with its position rather
//! than skipped, since a skipped entry would silently lock its holder out. `tools`, when
//! present, is the key's tool policy (`["github__*", "!github__delete_*"]`): the only
//! tools its holder sees and runs.

use std::path::Path;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::limits::{KEY_BYTES, KEY_PER_MINUTE};
use crate::patterns::ToolPatterns;

/// What a principal may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    /// List, read schemas, search.
    Search,
    /// Run catalogue tools.
    Run,
    /// Run code: `run_javascript`, `run_typescript`, NyxilumNode tools.
    Runtimes,
    /// Metrics and catalogue reload.
    Admin,
}

impl Scope {
    /// Every scope, in the order they are documented.
    pub const ALL: [Scope; 4] = [Scope::Search, Scope::Run, Scope::Runtimes, Scope::Admin];

    /// The scope's name as written in the keys file and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Scope::Search => "search",
            Scope::Run => "run",
            Scope::Runtimes => "runtimes",
            Scope::Admin => "admin",
        }
    }

    /// Reads a comma-separated list of scope names (`run,search`); an unknown name is an
    /// error naming it and the known ones.
    pub fn parse_list(text: &str) -> Result<Vec<Scope>, String> {
        let mut scopes = Vec::new();
        for name in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let scope = Scope::ALL
                .into_iter()
                .find(|s| s.name() == name)
                .ok_or_else(|| format!("unknown scope \"{name}\"; scopes are search, run, runtimes, admin"))?;
            if !scopes.contains(&scope) {
                scopes.push(scope);
            }
        }
        if scopes.is_empty() {
            return Err("name at least one scope: search, run, runtimes, admin".to_owned());
        }
        Ok(scopes)
    }
}

/// One entry of the keys file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Key {
    /// The principal's id: in logs, history and metrics in place of the key.
    pub id: String,
    /// The SHA-256 of the key, lowercase hex.
    pub sha256: String,
    /// What the key may do.
    pub scopes: Vec<Scope>,
    /// Calls a minute this key may make. By default, [`KEY_PER_MINUTE`].
    #[serde(default = "default_per_minute")]
    pub per_minute: u32,
    /// The tools its holder may see and run, as globs (`!` before one that excludes).
    /// By default, every tool its scopes allow.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<String>>,
    /// `tools` read, once the file is checked ([`Keys::parse`]).
    #[serde(skip)]
    pub patterns: Option<Arc<ToolPatterns>>,
}

fn default_per_minute() -> u32 {
    KEY_PER_MINUTE
}

/// The keys file's document.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Keys {
    /// The entries, in file order.
    pub keys: Vec<Key>,
}

/// Why `id` cannot name a key, if it is reserved: `anonymous` (and `anonymous@…`) names
/// callers without a key, whose history and limits a key must never share, and
/// `oauth:…` names OAuth principals. Compared without case.
pub fn reserved(id: &str) -> Option<&'static str> {
    let id = id.trim().to_ascii_lowercase();
    if id == "anonymous" || id.starts_with("anonymous@") {
        Some("the id \"anonymous\" names callers without a key; choose another")
    } else if id.starts_with(super::oauth::PRINCIPAL_PREFIX) {
        Some("ids beginning with \"oauth:\" name OAuth principals")
    } else {
        None
    }
}

/// The lowercase hex SHA-256 of `key`.
pub fn digest(key: &str) -> String {
    let sum = Sha256::digest(key.as_bytes());
    sum.iter().map(|b| format!("{b:02x}")).collect()
}

/// Why the keys file cannot be used (the server keeps the keys read before, or does not
/// start).
#[derive(Debug, thiserror::Error)]
pub enum KeysError {
    /// It cannot be read.
    #[error("cannot read the keys file {}: {reason}", path.display())]
    Read {
        /// The file.
        path: std::path::PathBuf,
        /// What the system said.
        reason: String,
    },
    /// It was read but is not a valid keys document.
    #[error("the keys file {}: {problem}", path.display())]
    Invalid {
        /// The file.
        path: std::path::PathBuf,
        /// What is wrong with it.
        problem: BadKeys,
    },
}

/// What is wrong with a keys document.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BadKeys {
    /// It is not JSON of the keys file's shape.
    #[error("{0}")]
    NotAKeysDocument(String),
    /// An entry's id is empty.
    #[error("entry {entry} has an empty id")]
    EmptyId {
        /// Its position, from 1.
        entry: usize,
    },
    /// An entry is refused: a reserved or repeated id, a malformed hash, no scopes.
    #[error("entry {entry} ({id:?}): {why}")]
    Entry {
        /// Its position, from 1.
        entry: usize,
        /// Its id.
        id: String,
        /// Why.
        why: String,
    },
}

impl Keys {
    /// Reads and checks the keys file at `path`.
    pub fn read(path: &Path) -> Result<Keys, KeysError> {
        let text = std::fs::read_to_string(path).map_err(|e| KeysError::Read {
            path: path.to_owned(),
            reason: e.to_string(),
        })?;
        Keys::parse(&text).map_err(|problem| KeysError::Invalid {
            path: path.to_owned(),
            problem,
        })
    }

    /// Parses and checks a keys document: every id non-empty and unique, every hash 64
    /// hex digits, every entry with a scope, every tool policy readable.
    pub fn parse(text: &str) -> Result<Keys, BadKeys> {
        let mut keys: Keys = serde_json::from_str(text).map_err(|e| BadKeys::NotAKeysDocument(e.to_string()))?;
        for (i, key) in keys.keys.iter().enumerate() {
            let entry = i + 1;
            let bad = |why: String| BadKeys::Entry {
                entry,
                id: key.id.clone(),
                why,
            };
            if key.id.trim().is_empty() {
                return Err(BadKeys::EmptyId { entry });
            }
            if let Some(why) = reserved(&key.id) {
                return Err(bad(why.to_owned()));
            }
            if keys.keys[..i].iter().any(|k| k.id == key.id) {
                return Err(bad("the id is used twice".to_owned()));
            }
            if key.sha256.len() != 64 || !key.sha256.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(bad("sha256 must be 64 hex digits".to_owned()));
            }
            if key.scopes.is_empty() {
                return Err(bad("no scopes".to_owned()));
            }
        }
        for (i, key) in keys.keys.iter_mut().enumerate() {
            if let Some(globs) = &key.tools {
                let patterns = ToolPatterns::parse(globs.iter().map(String::as_str)).map_err(|why| BadKeys::Entry {
                    entry: i + 1,
                    id: key.id.clone(),
                    why: format!("tools: {why}"),
                })?;
                key.patterns = Some(Arc::new(patterns));
            }
        }
        Ok(keys)
    }

    /// The entry whose hash is `presented`'s. Every entry is compared, in constant time
    /// over the hashes, so neither the time taken nor an early exit tells which
    /// entries' hashes share a prefix with the presented key's.
    pub fn find(&self, presented: &str) -> Option<&Key> {
        let wanted = digest(presented);
        let mut found = None;
        for key in &self.keys {
            let same: bool = key
                .sha256
                .to_ascii_lowercase()
                .as_bytes()
                .ct_eq(wanted.as_bytes())
                .into();
            if same && found.is_none() {
                found = Some(key);
            }
        }
        found
    }
}

/// A fresh random key: `tg_` and [`KEY_BYTES`] random bytes in hex.
pub fn fresh() -> Result<String, String> {
    let mut bytes = [0u8; KEY_BYTES];
    getrandom::fill(&mut bytes).map_err(|e| format!("no randomness for a key: {e}"))?;
    Ok(format!(
        "tg_{}",
        bytes.iter().map(|b| format!("{b:02x}")).collect::<String>()
    ))
}

/// Appends a new key with `scopes` to the keys file at `path` (created if missing),
/// named `id` or `key-N`, limited to the tools `tools` admits when given (a
/// comma-separated list of globs), and returns the key. The file is replaced whole (a
/// temporary file renamed over it), so a server reading it never sees half a document.
pub fn append(path: &Path, scopes: Vec<Scope>, id: Option<String>, tools: Option<&str>) -> Result<String, String> {
    let tools = match tools {
        Some(text) => {
            let globs: Vec<String> = text
                .split(',')
                .map(str::trim)
                .filter(|g| !g.is_empty())
                .map(str::to_owned)
                .collect();
            ToolPatterns::parse(globs.iter().map(String::as_str)).map_err(|e| format!("--tools: {e}"))?;
            Some(globs)
        }
        None => None,
    };
    let mut keys = match std::fs::read_to_string(path) {
        Ok(text) => Keys::parse(&text).map_err(|e| format!("the keys file {}: {e}", path.display()))?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Keys::default(),
        Err(e) => return Err(format!("cannot read the keys file {}: {e}", path.display())),
    };
    let id = match id {
        Some(id) if id.trim().is_empty() => return Err("--id must not be empty".to_owned()),
        Some(id) if reserved(&id).is_some() => {
            return Err(format!("--id {id:?}: {}", reserved(&id).unwrap_or_default()));
        }
        Some(id) => id,
        None => (1..)
            .map(|n| format!("key-{n}"))
            .find(|c| keys.keys.iter().all(|k| &k.id != c))
            .unwrap_or_default(),
    };
    if keys.keys.iter().any(|k| k.id == id) {
        return Err(format!("the keys file already has a key named \"{id}\""));
    }
    let key = fresh()?;
    keys.keys.push(Key {
        id,
        sha256: digest(&key),
        scopes,
        per_minute: KEY_PER_MINUTE,
        tools,
        patterns: None,
    });
    let text = serde_json::to_string_pretty(&keys).map_err(|e| e.to_string())?;
    let folder = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let mut temporary =
        tempfile::NamedTempFile::new_in(folder).map_err(|e| format!("cannot write in {}: {e}", folder.display()))?;
    std::io::Write::write_all(&mut temporary, format!("{text}\n").as_bytes()).map_err(|e| e.to_string())?;
    set_private(temporary.path());
    temporary
        .persist(path)
        .map_err(|e| format!("cannot write the keys file {}: {e}", path.display()))?;
    Ok(key)
}

/// The keys file holds no secret, but who may call is the operator's business: owner
/// read/write only.
fn set_private(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    if let Err(e) = std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)) {
        tracing::debug!("cannot restrict {}: {e}", path.display());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_is_found_by_its_hash_only_and_bad_files_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("keys.json");
        let first = append(&path, vec![Scope::Run], Some("ci".into()), None).unwrap();
        let second = append(&path, vec![Scope::Search, Scope::Admin], None, None).unwrap();
        assert_ne!(first, second);
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(!text.contains(&first) && !text.contains(&second), "no key in the file");
        let keys = Keys::read(&path).unwrap();
        assert_eq!(keys.find(&first).map(|k| k.id.as_str()), Some("ci"));
        assert_eq!(keys.find(&second).map(|k| k.id.as_str()), Some("key-1"));
        assert!(keys.find("tg_wrong").is_none());
        assert!(append(&path, vec![Scope::Run], Some("ci".into()), None).is_err());
        assert!(append(&path, vec![Scope::Run], Some("oauth:ci".into()), None).is_err());
        let sha = "0".repeat(64);
        let reserved = format!(r#"{{"keys":[{{"id":"oauth:x","sha256":"{sha}","scopes":["run"]}}]}}"#);
        assert!(Keys::parse(&reserved).unwrap_err().to_string().contains("oauth:"));
        for id in ["anonymous", "Anonymous", " anonymous", "anonymous@10.0.0.1", "OAuth:x"] {
            let doc = format!(r#"{{"keys":[{{"id":{id:?},"sha256":"{sha}","scopes":["run"]}}]}}"#);
            assert!(Keys::parse(&doc).is_err(), "{id}");
            assert!(append(&path, vec![Scope::Run], Some(id.into()), None).is_err(), "{id}");
        }
        assert!(Keys::parse(r#"{"keys":[{"id":"a","sha256":"zz","scopes":["run"]}]}"#).is_err());
        assert!(Scope::parse_list("run,bogus").unwrap_err().contains("bogus"));
        assert_eq!(
            Scope::parse_list("run, search,run").unwrap(),
            [Scope::Run, Scope::Search]
        );
    }
}
