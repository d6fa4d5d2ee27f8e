//! `toolgate upstream login NAME`'s flow: a person authorizes toolgate at an upstream's
//! authorization server (OAuth 2.1 authorization code with PKCE, as MCP's authorization
//! specification describes it), and the tokens land in the tokens file.
//!
//! 1. A loopback listener is opened (`http://127.0.0.1:PORT/callback`, the redirect URI).
//! 2. The upstream is probed without a token (`initialize`, and `tools/list` when that
//!    passes) for its 401 challenge, whose `resource_metadata` (RFC 9728) and `scope`
//!    start discovery (rmcp: RFC 9728, then RFC 8414 / OpenID metadata, then the
//!    2025-03-26 default endpoints).
//! 3. The client: the configured one, else a client ID metadata document when the server
//!    takes one, else dynamic registration.
//! 4. The authorization URL (PKCE S256, `resource`, the scopes the challenge or metadata
//!    name, plus those configured and those the server asked for since) is printed for the
//!    person; the browser comes back to the listener with the code, which is exchanged.
//!
//! For `client_credentials` upstreams the same command gets a token at once, which checks
//! the configuration. Tokens are never printed.

use std::time::Duration;

use rmcp::transport::auth::{AuthorizationManager, OAuthClientConfig};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use super::session::Auth;
use super::settings::{Grant, OAuth};
use super::store::{FileStore, Tokens};
use crate::limits::{
    UPSTREAM_LOGIN_PROBE_BYTES, UPSTREAM_LOGIN_PROBE_TIMEOUT, UPSTREAM_LOGIN_REQUEST_BYTES, UPSTREAM_LOGIN_WAIT,
};

/// One upstream to log in to.
#[derive(Debug)]
pub struct Login<'a> {
    /// Its name in the `mcpServers` file.
    pub server: &'a str,
    /// Its URL.
    pub url: &'a str,
    /// Its headers as configured (sent with the probe, but an `Authorization` one).
    pub headers: &'a [(String, String)],
    /// Its `oauth` entry.
    pub oauth: &'a OAuth,
    /// The tokens file.
    pub tokens: &'a Tokens,
}

impl Login<'_> {
    /// Runs the flow, printing what the person must do on stdout; `Ok` says what was
    /// granted. The error is a sentence for stderr.
    pub async fn run(&self) -> Result<String, String> {
        // The tokens file is read first: one that cannot be used stops the login before
        // anyone is sent to a browser.
        let earlier = self.tokens.entry(self.server, self.url)?;
        if self.oauth.grant == Grant::ClientCredentials {
            self.tokens.update(self.server, self.url, |e| e.credentials = None)?;
            let auth = Auth::new(self.server, self.url, self.oauth.clone(), self.tokens.clone());
            auth.token().await.map_err(|e| format!("client credentials: {e}"))?;
            return Ok(format!(
                "got a client-credentials token for upstream \"{}\" (in {})",
                self.server,
                self.tokens.path().display()
            ));
        }
        let listener = TcpListener::bind(("127.0.0.1", self.oauth.redirect_port))
            .await
            .map_err(|e| {
                format!(
                    "cannot listen on 127.0.0.1:{} for the redirect: {e}",
                    self.oauth.redirect_port
                )
            })?;
        let port = listener.local_addr().map_err(|e| e.to_string())?.port();
        let redirect = format!("http://127.0.0.1:{port}/callback");
        let challenge = self.probe().await?;
        let fail = |step: &str, e: rmcp::transport::auth::AuthError| format!("{step}: {e}");
        let mut manager = AuthorizationManager::new(self.url)
            .await
            .map_err(|e| fail("the upstream URL", e))?;
        manager.set_credential_store(FileStore {
            tokens: self.tokens.clone(),
            server: self.server.to_owned(),
            url: self.url.to_owned(),
        });
        let resolution = manager
            .resolve_metadata_from_challenge(challenge.as_deref())
            .await
            .map_err(|e| fail("discovery", e))?;
        let metadata = resolution.metadata;
        manager.set_metadata(metadata.clone());
        let wanted = earlier.map(|e| e.wanted_scopes).unwrap_or_default();
        let scopes = self.scopes(&manager, wanted).await;
        let refs: Vec<&str> = scopes.iter().map(String::as_str).collect();
        let takes_documents = metadata
            .additional_fields
            .get("client_id_metadata_document_supported")
            .and_then(serde_json::Value::as_bool)
            .unwrap_or(false);
        let (client_id, secret, registered) = match (&self.oauth.client_id, &self.oauth.client_metadata_url) {
            (Some(id), _) => {
                let secret = self.oauth.client_secret.as_ref().map(|s| s.read()).transpose()?;
                (id.clone(), secret, None)
            }
            (None, Some(document)) if takes_documents => (document.clone(), None, None),
            (None, _) if metadata.registration_endpoint.is_some() => {
                let client = manager
                    .register_client(&self.oauth.client_name, &redirect, &refs)
                    .await
                    .map_err(|e| fail("dynamic client registration", e))?;
                (client.client_id, client.client_secret.clone(), client.client_secret)
            }
            (None, _) => {
                return Err(format!(
                    "the authorization server of upstream \"{}\" offers no dynamic client registration{}: register toolgate there and set \"oauth\": {{\"clientId\": …}}",
                    self.server,
                    if takes_documents {
                        ""
                    } else {
                        " and takes no client ID metadata document"
                    }
                ));
            }
        };
        let mut config = OAuthClientConfig::new(client_id, redirect.clone()).with_scopes(scopes.clone());
        if let Some(secret) = &secret {
            config = config.with_client_secret(secret.clone());
        }
        manager.configure_client(config).map_err(|e| fail("the client", e))?;
        let address = manager
            .get_authorization_url(&refs)
            .await
            .map_err(|e| fail("the authorization request", e))?;
        println!(
            "To authorize toolgate for upstream \"{}\", open this address in a browser:\n\n  {address}\n\nWaiting up to {} s for the authorization server to send the browser back to {redirect} …",
            self.server,
            UPSTREAM_LOGIN_WAIT.as_secs()
        );
        let back = tokio::time::timeout(UPSTREAM_LOGIN_WAIT, callback(&listener, port))
            .await
            .map_err(|_| format!("no redirect came back within {} s", UPSTREAM_LOGIN_WAIT.as_secs()))??;
        if let Some(error) = back.error {
            return Err(format!("the authorization server refused: {error}"));
        }
        let (Some(code), Some(state)) = (back.code, back.state) else {
            return Err("the redirect carried no code and state".to_owned());
        };
        manager
            .exchange_code_for_token_with_issuer(&code, &state, back.issuer.as_deref())
            .await
            .map_err(|e| fail("the token request", e))?;
        self.tokens.update(self.server, self.url, |e| {
            e.client_secret = registered;
            e.redirect_uri = Some(redirect);
            e.metadata = Some(metadata);
        })?;
        let granted = self
            .tokens
            .entry(self.server, self.url)?
            .and_then(|e| e.credentials)
            .map(|c| c.granted_scopes)
            .unwrap_or_default();
        Ok(format!(
            "logged in to upstream \"{}\"{} (tokens in {})",
            self.server,
            if granted.is_empty() {
                String::new()
            } else {
                format!(", scopes granted: {}", granted.join(" "))
            },
            self.tokens.path().display()
        ))
    }

    /// The scopes to ask for: those the challenge or the resource's metadata select, those
    /// configured, and those the server asked for since the last login (`wanted`).
    async fn scopes(&self, manager: &AuthorizationManager, wanted: Vec<String>) -> Vec<String> {
        let mut scopes = manager.select_initial_scopes(&[]).await;
        for s in self.oauth.scopes.iter().cloned().chain(wanted) {
            if !scopes.contains(&s) {
                scopes.push(s);
            }
        }
        scopes
    }

    /// The upstream's challenge to a client without a token: `initialize`, then (for a
    /// server that lets that through) `tools/list` in the session it opened.
    async fn probe(&self) -> Result<Option<String>, String> {
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(UPSTREAM_LOGIN_PROBE_TIMEOUT)
            .build()
            .map_err(|e| e.to_string())?;
        let initialize = json!({
            "jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                       "clientInfo": {"name": "toolgate", "version": env!("CARGO_PKG_VERSION")}}
        });
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
        let mut session = None;
        for message in [initialize, initialized, list] {
            let mut request = client
                .post(self.url)
                .header("content-type", "application/json")
                .header("accept", "application/json, text/event-stream")
                .body(message.to_string());
            for (name, value) in self.headers {
                if !name.eq_ignore_ascii_case("authorization") {
                    request = request.header(name, value);
                }
            }
            if let Some(id) = &session {
                request = request.header("mcp-session-id", id);
            }
            let mut answer = request
                .send()
                .await
                .map_err(|e| format!("cannot reach upstream \"{}\": {e}", self.server))?;
            let status = answer.status().as_u16();
            if matches!(status, 401 | 403) {
                return Ok(answer
                    .headers()
                    .get("www-authenticate")
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_owned));
            }
            if !answer.status().is_success() {
                return Ok(None);
            }
            if let Some(id) = answer.headers().get("mcp-session-id").and_then(|v| v.to_str().ok()) {
                session = Some(id.to_owned());
            }
            // Read (a bounded part of) the answer, so the server finishes it; it says nothing
            // the login needs.
            let mut read = 0;
            while let Ok(Some(chunk)) = answer.chunk().await {
                read += chunk.len();
                if read > UPSTREAM_LOGIN_PROBE_BYTES {
                    break;
                }
            }
        }
        Ok(None)
    }
}

/// What the authorization server sent the browser back with.
#[derive(Debug, Default)]
struct Back {
    code: Option<String>,
    state: Option<String>,
    issuer: Option<String>,
    error: Option<String>,
}

/// Waits for the browser's request to `/callback` on `listener` (other requests, a
/// favicon, are answered 404), and reads its query.
async fn callback(listener: &TcpListener, port: u16) -> Result<Back, String> {
    loop {
        let (mut stream, _) = listener.accept().await.map_err(|e| e.to_string())?;
        let mut head = Vec::new();
        let mut buf = [0u8; 2048];
        let complete = loop {
            let Ok(Ok(n)) = tokio::time::timeout(Duration::from_secs(10), stream.read(&mut buf)).await else {
                break false;
            };
            if n == 0 {
                break false;
            }
            head.extend_from_slice(&buf[..n]);
            if head.windows(4).any(|w| w == b"\r\n\r\n") {
                break true;
            }
            if head.len() > UPSTREAM_LOGIN_REQUEST_BYTES {
                break false;
            }
        };
        let line = String::from_utf8_lossy(&head);
        let target = line.split_whitespace().nth(1).unwrap_or("");
        if !complete || !line.starts_with("GET ") || !target.starts_with("/callback") {
            let _ = stream
                .write_all(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
                .await;
            continue;
        }
        let address = url::Url::parse(&format!("http://127.0.0.1:{port}{target}")).map_err(|e| e.to_string())?;
        let mut back = Back::default();
        for (key, value) in address.query_pairs() {
            let value = Some(value.into_owned());
            match key.as_ref() {
                "code" => back.code = value,
                "state" => back.state = value,
                "iss" => back.issuer = value,
                "error" => back.error = value,
                _ => {}
            }
        }
        let body = "toolgate: authorization received; you may close this page.\n";
        let _ = stream
            .write_all(
                format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                )
                .as_bytes(),
            )
            .await;
        return Ok(back);
    }
}
