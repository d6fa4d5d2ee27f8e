//! OAuth 2.1 for HTTP upstreams, as MCP's authorization specification describes it: an
//! upstream entry's `oauth` object (`settings`), the tokens file outside the `mcpServers`
//! file (`store`), the token on every request and the answer to a refusal (`session`,
//! `client`), and the person's login (`login`). rmcp's `auth` feature does the protocol
//! (discovery, registration, PKCE, refresh, client credentials, `private_key_jwt`); this
//! folder decides where tokens live and what a gateway without a person present does.

mod client;
mod login;
mod session;
pub mod settings;
mod store;

pub use client::Authorized;
pub use login::Login;
pub use session::Auth;
pub use settings::{Grant, OAuth, Secret};
pub use store::Tokens;
