//! The upstream tokens file (`TOOLGATE_UPSTREAM_TOKENS`): per upstream, the OAuth client
//! toolgate is known by there, the authorization server's metadata, the tokens and the
//! scopes the server asked for — outside the `mcpServers` file, readable by its owner only.
//!
//! The file is JSON, `{"upstreams": {NAME: Entry}}`. An entry holds for the URL it was made
//! for only: an upstream whose URL changed starts over, so a token never goes to a server
//! it was not issued for. Every change is a read-modify-write under an exclusive lock
//! (`FILE.lock`) and lands by rename of a file created 0600, so `toolgate upstream login`
//! and a running toolgate refreshing a token do not lose each other's writes; a refresh
//! holds `FILE.refresh` from its load to its save, so two processes never both spend
//! one rotating refresh token. A file that
//! others may read is refused, not used. Nothing here logs a token.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use rmcp::transport::auth::{
    AuthError, AuthorizationMetadata, CredentialRefreshGuard, CredentialStore, StoredCredentials,
};
use serde::{Deserialize, Serialize};

use crate::limits::UPSTREAM_TOKENS_BYTES;

/// The tokens file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tokens {
    path: PathBuf,
}

/// What the file holds.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Document {
    #[serde(default)]
    upstreams: BTreeMap<String, Entry>,
}

/// What toolgate keeps for one upstream.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Entry {
    /// The upstream URL this entry was made for.
    pub url: String,
    /// The secret of a client registered dynamically (a pre-registered client's stays in
    /// the `oauth` entry).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<String>,
    /// The redirect URI the client was registered and authorized with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redirect_uri: Option<String>,
    /// The authorization server's metadata as discovered at login.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<AuthorizationMetadata>,
    /// The client ID, tokens, granted scopes and when they were received.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credentials: Option<StoredCredentials>,
    /// Scopes the server asked for (`insufficient_scope`) that the token lacks: the next
    /// login or client-credentials token asks for them too.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub wanted_scopes: Vec<String>,
}

impl Tokens {
    /// The tokens file at `path` (it need not exist yet).
    pub fn new(path: PathBuf) -> Tokens {
        Tokens { path }
    }

    /// Where the file is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// `server`'s entry, when there is one made for `url`. The error is a sentence naming
    /// the file.
    pub fn entry(&self, server: &str, url: &str) -> Result<Option<Entry>, String> {
        Ok(self.read()?.upstreams.remove(server).filter(|e| e.url == url))
    }

    /// Changes `server`'s entry for `url` by `change` (a fresh entry when there is none,
    /// or one for another URL), under the file's lock.
    pub fn update(&self, server: &str, url: &str, change: impl FnOnce(&mut Entry)) -> Result<(), String> {
        let _lock = self.lock()?;
        let mut doc = self.read()?;
        let entry = doc.upstreams.entry(server.to_owned()).or_default();
        if entry.url != url {
            *entry = Entry {
                url: url.to_owned(),
                ..Entry::default()
            };
        }
        change(entry);
        self.write(&doc)
    }

    fn fail(&self, why: impl std::fmt::Display) -> String {
        format!("TOOLGATE_UPSTREAM_TOKENS {}: {why}", self.path.display())
    }

    fn read(&self) -> Result<Document, String> {
        let file = match std::fs::File::open(&self.path) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Document::default()),
            Err(e) => return Err(self.fail(e)),
        };
        let mode = file.metadata().map_err(|e| self.fail(e))?.permissions().mode();
        if mode & 0o077 != 0 {
            return Err(self.fail(format!(
                "others may read it (mode {:o}); it holds tokens: chmod 600 it",
                mode & 0o777
            )));
        }
        let mut text = String::new();
        file.take(UPSTREAM_TOKENS_BYTES + 1)
            .read_to_string(&mut text)
            .map_err(|e| self.fail(e))?;
        if text.len() as u64 > UPSTREAM_TOKENS_BYTES {
            return Err(self.fail(format!("it is over {UPSTREAM_TOKENS_BYTES} bytes")));
        }
        if text.trim().is_empty() {
            return Ok(Document::default());
        }
        // serde_json's error names a line and column, never the text.
        serde_json::from_str(&text).map_err(|e| self.fail(format!("not a tokens file: {e}")))
    }

    fn write(&self, doc: &Document) -> Result<(), String> {
        let mut text = serde_json::to_string_pretty(doc).map_err(|e| self.fail(e))?;
        text.push('\n');
        let mut partial = self.path.as_os_str().to_owned();
        partial.push(".partial");
        let partial = PathBuf::from(partial);
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&partial)
            .map_err(|e| self.fail(e))?;
        // A partial file left by an older run may have been created with another mode.
        file.set_permissions(std::fs::Permissions::from_mode(0o600))
            .map_err(|e| self.fail(e))?;
        file.write_all(text.as_bytes()).map_err(|e| self.fail(e))?;
        file.sync_all().map_err(|e| self.fail(e))?;
        std::fs::rename(&partial, &self.path).map_err(|e| self.fail(e))
    }

    /// The file's lock, taken for one read-modify-write; its folder is made (0700) first.
    fn lock(&self) -> Result<std::fs::File, String> {
        self.locked(".lock")
    }

    /// The lock of refreshes (`FILE.refresh`), another than the file's own: rmcp holds it
    /// across a refresh's load, token request and save, so two processes never both spend
    /// one rotating refresh token.
    pub(crate) fn refresh_lock(&self) -> Result<std::fs::File, String> {
        self.locked(".refresh")
    }

    /// The lock file `FILE` + `suffix`, locked exclusively (waiting for another holder).
    fn locked(&self, suffix: &str) -> Result<std::fs::File, String> {
        if let Some(dir) = self.path.parent().filter(|d| !d.as_os_str().is_empty())
            && !dir.exists()
        {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)
                .map_err(|e| self.fail(format!("cannot make its folder: {e}")))?;
        }
        let mut name = self.path.as_os_str().to_owned();
        name.push(suffix);
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(PathBuf::from(name))
            .map_err(|e| self.fail(e))?;
        rustix::fs::flock(&file, rustix::fs::FlockOperation::LockExclusive).map_err(|e| self.fail(e))?;
        Ok(file)
    }
}

/// rmcp's credential store over one upstream's entry in the tokens file: what its
/// `AuthorizationManager` loads, refreshes and saves lands there.
#[derive(Debug, Clone)]
pub(crate) struct FileStore {
    /// The tokens file.
    pub(crate) tokens: Tokens,
    /// The upstream's name.
    pub(crate) server: String,
    /// The upstream's URL.
    pub(crate) url: String,
}

impl FileStore {
    fn entry(&self) -> Result<Option<Entry>, AuthError> {
        self.tokens
            .entry(&self.server, &self.url)
            .map_err(AuthError::CredentialStoreError)
    }

    fn update(&self, change: impl FnOnce(&mut Entry)) -> Result<(), AuthError> {
        self.tokens
            .update(&self.server, &self.url, change)
            .map_err(AuthError::CredentialStoreError)
    }
}

#[async_trait::async_trait]
impl CredentialStore for FileStore {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        Ok(self.entry()?.and_then(|e| e.credentials))
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        self.update(|e| {
            // Scopes now granted are no longer wanted.
            e.wanted_scopes.retain(|s| !credentials.granted_scopes.contains(s));
            e.credentials = Some(credentials);
        })
    }

    async fn clear(&self) -> Result<(), AuthError> {
        self.update(|e| e.credentials = None)
    }

    async fn acquire_refresh_guard(&self) -> Result<Option<CredentialRefreshGuard>, AuthError> {
        let tokens = self.tokens.clone();
        // Waiting for another process's refresh blocks: on a thread of its own.
        let lock = tokio::task::spawn_blocking(move || tokens.refresh_lock())
            .await
            .map_err(|e| AuthError::CredentialStoreError(e.to_string()))?
            .map_err(AuthError::CredentialStoreError)?;
        Ok(Some(CredentialRefreshGuard::new(lock)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_are_kept_per_url_in_an_owner_only_file() {
        let dir = tempfile::tempdir().unwrap();
        let tokens = Tokens::new(dir.path().join("state/tokens.json"));
        assert!(tokens.entry("gh", "https://a/mcp").unwrap().is_none());
        tokens
            .update("gh", "https://a/mcp", |e| e.wanted_scopes = vec!["repo".into()])
            .unwrap();
        let mode = std::fs::metadata(tokens.path()).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        assert_eq!(
            tokens.entry("gh", "https://a/mcp").unwrap().unwrap().wanted_scopes,
            ["repo"]
        );
        // Another URL under the same name is another server: nothing of the old entry.
        assert!(tokens.entry("gh", "https://b/mcp").unwrap().is_none());
        tokens.update("gh", "https://b/mcp", |_| {}).unwrap();
        assert!(
            tokens
                .entry("gh", "https://b/mcp")
                .unwrap()
                .unwrap()
                .wanted_scopes
                .is_empty()
        );
    }

    #[test]
    fn a_file_others_may_read_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tokens.json");
        std::fs::write(&path, "{}").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let err = Tokens::new(path).entry("gh", "https://a/mcp").unwrap_err();
        assert!(err.contains("chmod 600"), "{err}");
    }
}
