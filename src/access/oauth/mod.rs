//! OAuth 2.1 resource server, as MCP's authorization spec describes it: bearer JWTs
//! issued by the operator's authorization server are checked here (`token.rs`) against
//! its signing keys (`jwks.rs`), and clients are told where to get one (`resource.rs`:
//! the RFC 9728 metadata and the `WWW-Authenticate` challenge). Settings in
//! `settings.rs`.
//!
//! toolgate issues no tokens and runs no authorization flow: it only checks them. A
//! valid token acts as the principal `oauth:SUB` with the known scopes of its `scope`
//! claim, beside the API keys of the keys file (a key id cannot begin with `oauth:`).

pub mod jwks;
pub mod resource;
pub mod settings;
pub mod token;

pub use settings::{JwksSource, Settings};
pub use token::{Rejection, Verified};

use jwks::Keyring;

/// The prefix of every OAuth principal's id, so none can be taken for a key's.
pub const PRINCIPAL_PREFIX: &str = "oauth:";

/// OAuth as configured: the settings and the keyring read from them. Shared by every
/// request of a server.
#[derive(Debug)]
pub struct OAuth {
    settings: Settings,
    keyring: Keyring,
}

impl OAuth {
    /// Reads the JWKS `settings` names; an error says why it cannot be used (the server
    /// then refuses to start).
    pub async fn open(settings: Settings) -> Result<OAuth, jwks::JwksError> {
        let keyring = Keyring::open(settings.jwks.clone()).await?;
        Ok(OAuth { settings, keyring })
    }

    /// The settings in force.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// Checks a bearer JWT: its subject and scopes, or why it is refused.
    pub async fn verify(&self, token: &str) -> Result<Verified, Rejection> {
        token::verify(token, &self.keyring, &self.settings).await
    }
}
