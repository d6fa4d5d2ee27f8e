//! One OAuth upstream's tokens at run time: the token to send, and what to do when the
//! server refuses it. Built on rmcp's `AuthorizationManager` (discovery, refresh before
//! expiry, the client-credentials grant, `private_key_jwt`), over the tokens file.
//!
//! Without a person present, a refusal is answered as far as a service can: a 401 with a
//! token is answered by refreshing it (or, for client credentials, by a new one); a 403
//! `insufficient_scope` by a client-credentials token for the scopes it names, at most
//! [`UPSTREAM_SCOPE_UPGRADES`] in a row. Otherwise the request fails with a sentence telling
//! the operator to run `toolgate upstream login NAME`, and the scopes the server wanted
//! are kept in the tokens file for that login to ask for. A token toolgate's own clients
//! send is never passed on: only tokens from the tokens file go upstream.

use oauth2::TokenResponse;
use rmcp::transport::auth::{
    AuthError, AuthorizationManager, ClientCredentialsConfig, JwtSigningAlgorithm, OAuthClientConfig,
    WWWAuthenticateParams,
};
use tokio::sync::Mutex;

use super::settings::{Grant, OAuth, read_small};
use super::store::{FileStore, Tokens};
use crate::limits::UPSTREAM_SCOPE_UPGRADES;

/// One upstream's OAuth state.
pub struct Auth {
    server: String,
    url: String,
    oauth: OAuth,
    tokens: Tokens,
    state: Mutex<State>,
    /// Why the last request could not be authorized, until the connection reports it.
    refusal: std::sync::Mutex<Option<String>>,
}

impl std::fmt::Debug for Auth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Auth")
            .field("server", &self.server)
            .finish_non_exhaustive()
    }
}

#[derive(Default)]
struct State {
    manager: Option<AuthorizationManager>,
    /// Authorization code: the client ID and redirect URI the manager was set up for.
    built_for: Option<(String, String)>,
    /// Client-credentials tokens asked for in a row on `insufficient_scope`.
    upgrades: u32,
}

/// What the server said when it refused a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// 401: no token, or one it does not take.
    Unauthorized,
    /// 403 with a challenge (perhaps `insufficient_scope`).
    Forbidden,
}

impl Auth {
    /// The OAuth state of upstream `server` at `url`, configured by `oauth`, its tokens in
    /// `tokens`. Nothing is read or asked for until the first request.
    pub fn new(server: &str, url: &str, oauth: OAuth, tokens: Tokens) -> Auth {
        Auth {
            server: server.to_owned(),
            url: url.to_owned(),
            oauth,
            tokens,
            state: Mutex::default(),
            refusal: std::sync::Mutex::default(),
        }
    }

    fn store(&self) -> FileStore {
        FileStore {
            tokens: self.tokens.clone(),
            server: self.server.clone(),
            url: self.url.clone(),
        }
    }

    /// The error that asks the operator for a login, saying why.
    fn login_needed(&self, why: &str) -> AuthError {
        AuthError::AuthorizationFailed(format!("{why}; run `toolgate upstream login {}`", self.server))
    }

    /// Keeps why the last request could not be authorized, in words for the operator (the
    /// upstream's connection reports it in place of the transport's wording).
    pub fn note(&self, refused: &AuthError) {
        let why = match refused {
            AuthError::AuthorizationFailed(why) => why.clone(),
            other => format!("toolgate could not get an OAuth token for it ({other})"),
        };
        *self.refusal.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(why);
    }

    /// Why the last request could not be authorized, once (see [`Auth::note`]).
    pub fn take_refusal(&self) -> Option<String> {
        self.refusal
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take()
    }

    /// The token to send now (refreshed first when it is about to expire), or none when
    /// there is none yet (the server's 401 then says so).
    pub async fn token(&self) -> Result<Option<String>, AuthError> {
        let mut state = self.state.lock().await;
        match self.oauth.grant {
            Grant::AuthorizationCode => {
                if !self.ready(&mut state).await? {
                    return Ok(None);
                }
                match manager(&state)?.get_access_token().await {
                    Ok(token) => Ok(Some(token)),
                    Err(AuthError::AuthorizationRequired) => Ok(None),
                    Err(e) => Err(e),
                }
            }
            Grant::ClientCredentials => {
                drop(state);
                if let Some(token) = self.fresh()? {
                    return Ok(Some(token));
                }
                self.exchange(None, Vec::new()).await?;
                self.fresh()?
                    .map(Some)
                    .ok_or_else(|| AuthError::ClientCredentialsError("the new token expires at once".to_owned()))
            }
        }
    }

    /// Answers the server's refusal of a request sent with `sent`: `Ok(Some(token))` to
    /// send it again with, `Ok(None)` when the refusal is not about the token (the
    /// request's own error stands), or an error saying what the operator must do.
    pub async fn answer(
        &self,
        refusal: Refusal,
        challenge: &str,
        sent: Option<&str>,
    ) -> Result<Option<String>, AuthError> {
        let base = url::Url::parse(&self.url)?;
        let params = WWWAuthenticateParams::parse(challenge, &base);
        let named: Vec<String> = params
            .scope
            .as_deref()
            .unwrap_or("")
            .split_whitespace()
            .map(str::to_owned)
            .collect();
        let mut state = self.state.lock().await;
        match (refusal, self.oauth.grant) {
            (Refusal::Forbidden, _) if !params.is_insufficient_scope() => Ok(None),
            (Refusal::Unauthorized, Grant::AuthorizationCode) => {
                if sent.is_some() && self.ready(&mut state).await? {
                    let manager = manager(&state)?;
                    if manager.refresh_token().await.is_ok()
                        && let Ok(token) = manager.get_access_token().await
                        && Some(token.as_str()) != sent
                    {
                        return Ok(Some(token));
                    }
                }
                Err(self.login_needed(match sent {
                    Some(_) => "it refused toolgate's token, which could not be refreshed",
                    None => "it asks for OAuth authorization and toolgate holds no token for it",
                }))
            }
            (Refusal::Unauthorized, Grant::ClientCredentials) => {
                // Discovery again, from the challenge: the server may name its metadata.
                self.exchange(Some(challenge.to_owned()), named).await?;
                match self.fresh()? {
                    Some(token) if Some(token.as_str()) != sent => Ok(Some(token)),
                    _ => Err(AuthError::AuthorizationFailed(
                        "it refused a fresh client-credentials token".to_owned(),
                    )),
                }
            }
            (Refusal::Forbidden, grant) => {
                let shown = if named.is_empty() {
                    "more".to_owned()
                } else {
                    named.join(" ")
                };
                tracing::warn!(
                    "upstream \"{}\" answered insufficient_scope: it needs scope {shown}",
                    self.server
                );
                let wanted = named.clone();
                self.tokens
                    .update(&self.server, &self.url, |e| {
                        for s in wanted {
                            if !e.wanted_scopes.contains(&s) {
                                e.wanted_scopes.push(s);
                            }
                        }
                    })
                    .map_err(AuthError::CredentialStoreError)?;
                if grant == Grant::AuthorizationCode {
                    return Err(self.login_needed(&format!("it needs scope {shown}, which toolgate's token lacks")));
                }
                if state.upgrades >= UPSTREAM_SCOPE_UPGRADES {
                    return Err(AuthError::AuthorizationFailed(format!(
                        "it still answers insufficient_scope (scope {shown}) after {UPSTREAM_SCOPE_UPGRADES} new tokens; check the client's grants there"
                    )));
                }
                state.upgrades += 1;
                drop(state);
                self.exchange(Some(challenge.to_owned()), named).await?;
                Ok(self.fresh()?)
            }
        }
    }

    /// Notes that a request with a token was taken: the step-up count starts again.
    pub async fn taken(&self) {
        self.state.lock().await.upgrades = 0;
    }

    /// Authorization code: sets the manager up from the tokens file's entry (again when a
    /// login changed the client); false when there is no login yet.
    async fn ready(&self, state: &mut State) -> Result<bool, AuthError> {
        let entry = self
            .tokens
            .entry(&self.server, &self.url)
            .map_err(AuthError::CredentialStoreError)?;
        let Some(entry) = entry else { return Ok(false) };
        let (Some(credentials), Some(metadata), Some(redirect)) =
            (&entry.credentials, &entry.metadata, &entry.redirect_uri)
        else {
            return Ok(false);
        };
        let key = (credentials.client_id.clone(), redirect.clone());
        if state.built_for.as_ref() == Some(&key) && state.manager.is_some() {
            return Ok(true);
        }
        let mut manager = AuthorizationManager::new(self.url.as_str()).await?;
        manager.set_credential_store(self.store());
        manager.set_metadata(metadata.clone());
        let mut config = OAuthClientConfig::new(key.0.clone(), redirect.clone());
        if let Some(secret) = self.client_secret(&key.0, entry.client_secret.as_deref())? {
            config = config.with_client_secret(secret);
        }
        manager.configure_client(config)?;
        state.manager = Some(manager);
        state.built_for = Some(key);
        Ok(true)
    }

    /// The secret of client `client_id`: the configured one for the configured client, else
    /// the one its dynamic registration returned.
    fn client_secret(&self, client_id: &str, registered: Option<&str>) -> Result<Option<String>, AuthError> {
        match (&self.oauth.client_id, &self.oauth.client_secret) {
            (Some(id), Some(secret)) if id == client_id => secret.read().map(Some).map_err(AuthError::InternalError),
            _ => Ok(registered.map(str::to_owned)),
        }
    }

    /// Client credentials: the stored token while it is not about to expire (the margin
    /// rmcp keeps for refreshes).
    fn fresh(&self) -> Result<Option<String>, AuthError> {
        let entry = self
            .tokens
            .entry(&self.server, &self.url)
            .map_err(AuthError::CredentialStoreError)?;
        let Some(stored) = entry.and_then(|e| e.credentials) else {
            return Ok(None);
        };
        let Some(response) = &stored.token_response else {
            return Ok(None);
        };
        if let (Some(expires_in), Some(received)) = (response.expires_in(), stored.token_received_at) {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap_or_default()
                .as_secs();
            let remaining = expires_in.as_secs().saturating_sub(now.saturating_sub(received));
            let margin = REFRESH_MARGIN_SECS.min(expires_in.as_secs() / 2).max(1);
            if remaining < margin {
                return Ok(None);
            }
        }
        Ok(Some(response.access_token().secret().clone()))
    }

    /// Client credentials: a new token for the configured scopes, those the tokens file
    /// says the server wanted, and `named` (else those the challenge or the resource's
    /// metadata select), discovered afresh (from `challenge` when a 401 gave one), and
    /// stored.
    ///
    /// It runs on a thread of its own: rmcp's `private_key_jwt` exchange is a future that
    /// cannot move between threads, so it gets a runtime of its own there (and a manager
    /// whose connections live and die with it).
    async fn exchange(&self, challenge: Option<String>, named: Vec<String>) -> Result<(), AuthError> {
        let wanted = self
            .tokens
            .entry(&self.server, &self.url)
            .map_err(AuthError::CredentialStoreError)?
            .map(|e| e.wanted_scopes)
            .unwrap_or_default();
        let mut scopes = self.oauth.scopes.clone();
        for s in wanted.into_iter().chain(named) {
            if !scopes.contains(&s) {
                scopes.push(s);
            }
        }
        let client = self.client()?;
        let (url, store) = (self.url.clone(), self.store());
        let job = move || -> Result<(), AuthError> {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| AuthError::InternalError(e.to_string()))?;
            runtime.block_on(async move {
                let mut manager = AuthorizationManager::new(url.as_str()).await?;
                manager.set_credential_store(store);
                let resolution = manager.resolve_metadata_from_challenge(challenge.as_deref()).await?;
                manager.set_metadata(resolution.metadata);
                if scopes.is_empty() {
                    scopes = manager.select_initial_scopes(&[]).await;
                }
                let config = client.config(scopes, url.clone());
                manager.validate_client_credentials_metadata(&config)?;
                manager.configure_client_credentials(&config)?;
                manager.exchange_client_credentials(&config).await.map(|_| ())
            })
        };
        tokio::task::spawn_blocking(job)
            .await
            .map_err(|e| AuthError::InternalError(format!("the token request's thread: {e}")))?
    }

    /// Client credentials: the configured client, its secret or key read.
    fn client(&self) -> Result<Client, AuthError> {
        let id = self
            .oauth
            .client_id
            .clone()
            .ok_or_else(|| AuthError::InternalError("client_credentials without a clientId".to_owned()))?;
        if let Some(path) = &self.oauth.private_key_file {
            let key = read_small(path).map_err(AuthError::InternalError)?;
            let algorithm = algorithm(self.oauth.signing_algorithm.as_deref(), &key);
            return Ok(Client::Key(id, key.into_bytes(), algorithm));
        }
        let secret = self
            .oauth
            .client_secret
            .as_ref()
            .ok_or_else(|| AuthError::InternalError("client_credentials without a secret".to_owned()))?
            .read()
            .map_err(AuthError::InternalError)?;
        Ok(Client::Secret(id, secret))
    }
}

/// Seconds before expiry a client-credentials token is replaced (at most half its life):
/// rmcp's margin for refreshes.
const REFRESH_MARGIN_SECS: u64 = 30;

/// A client-credentials client: its ID, and its secret or its key and algorithm.
enum Client {
    Secret(String, String),
    Key(String, Vec<u8>, JwtSigningAlgorithm),
}

impl Client {
    /// rmcp's configuration of this client asking for `scopes` for `resource`.
    fn config(self, scopes: Vec<String>, resource: String) -> ClientCredentialsConfig {
        match self {
            Client::Secret(client_id, client_secret) => ClientCredentialsConfig::ClientSecret {
                client_id,
                client_secret,
                scopes,
                resource: Some(resource),
            },
            Client::Key(client_id, signing_key, signing_algorithm) => ClientCredentialsConfig::PrivateKeyJwt {
                client_id,
                signing_key,
                signing_algorithm,
                token_endpoint_audience: None,
                scopes,
                resource: Some(resource),
            },
        }
    }
}

fn manager(state: &State) -> Result<&AuthorizationManager, AuthError> {
    state
        .manager
        .as_ref()
        .ok_or_else(|| AuthError::InternalError("the OAuth client is not set up".to_owned()))
}

/// The configured signing algorithm, or the one the key's PEM label suggests.
fn algorithm(configured: Option<&str>, key: &str) -> JwtSigningAlgorithm {
    match configured {
        Some("RS384") => JwtSigningAlgorithm::RS384,
        Some("RS512") => JwtSigningAlgorithm::RS512,
        Some("ES256") => JwtSigningAlgorithm::ES256,
        Some("ES384") => JwtSigningAlgorithm::ES384,
        Some(_) => JwtSigningAlgorithm::RS256,
        None if key.contains("BEGIN EC PRIVATE KEY") => JwtSigningAlgorithm::ES256,
        None => JwtSigningAlgorithm::RS256,
    }
}
