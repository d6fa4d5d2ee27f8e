//! The `oauth` object of an HTTP upstream's entry in the `mcpServers` file: how toolgate
//! gets a token for that server (which grant, which client, which scopes). The tokens
//! themselves never live here but in the tokens file (`store.rs`); secrets may, when the
//! operator writes them inline, but are better named by file (`clientSecretFile`).

use std::path::PathBuf;

use serde_json::Value;

/// How toolgate obtains tokens for one upstream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OAuth {
    /// The grant: a person's authorization code (`toolgate upstream login`) or the
    /// client-credentials grant of a service. By default, the authorization code.
    pub grant: Grant,
    /// A client registered beforehand (`clientId`). Without one, a client ID metadata
    /// document (`clientMetadataUrl`) when the server takes it, else dynamic registration.
    pub client_id: Option<String>,
    /// The pre-registered client's secret, if it has one.
    pub client_secret: Option<Secret>,
    /// For `client_credentials` with `private_key_jwt`: the PEM file of the client's key.
    pub private_key_file: Option<PathBuf>,
    /// The algorithm the key signs with (`RS256`, `RS384`, `RS512`, `ES256`, `ES384`).
    /// By default, `ES256` for an EC key and `RS256` otherwise.
    pub signing_algorithm: Option<String>,
    /// An `https://` URL of a client ID metadata document toolgate is known by.
    pub client_metadata_url: Option<String>,
    /// Scopes always asked for, on top of those the server names.
    pub scopes: Vec<String>,
    /// The loopback port of the login's redirect (`http://127.0.0.1:PORT/callback`), for a
    /// client registered with a fixed redirect URI. By default (0), any free port.
    pub redirect_port: u16,
    /// The name toolgate registers under (dynamic registration). By default, `toolgate`.
    pub client_name: String,
}

/// How tokens are granted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Grant {
    /// A person signs in through a browser (`toolgate upstream login NAME`); toolgate
    /// keeps the refresh token and refreshes before expiry.
    AuthorizationCode,
    /// toolgate is the client, with its own credentials (`client_credentials`).
    ClientCredentials,
}

/// A secret as configured: written in the file, or the path of a file holding it.
#[derive(Clone, PartialEq, Eq)]
pub enum Secret {
    /// The secret itself.
    Inline(String),
    /// A file whose content (trimmed) is the secret.
    File(PathBuf),
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Secret::Inline(_) => f.write_str("Inline(<redacted>)"),
            Secret::File(path) => f.debug_tuple("File").field(path).finish(),
        }
    }
}

/// Keys of an `oauth` object.
const KEYS: &[&str] = &[
    "grant",
    "clientId",
    "clientSecret",
    "clientSecretFile",
    "privateKeyFile",
    "signingAlgorithm",
    "clientMetadataUrl",
    "scopes",
    "redirectPort",
    "clientName",
];

/// Signing algorithms of `private_key_jwt` rmcp offers.
pub const ALGORITHMS: &[&str] = &["RS256", "RS384", "RS512", "ES256", "ES384"];

/// Reads an entry's `oauth` value (absent or null: none). The error is a sentence naming
/// the key at fault.
pub fn parse(value: Option<&Value>) -> Result<Option<OAuth>, String> {
    let map = match value {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Object(map)) => map,
        Some(_) => return Err("\"oauth\" must be an object".to_owned()),
    };
    if let Some(extra) = map.keys().find(|k| !KEYS.contains(&k.as_str())) {
        return Err(format!(
            "\"oauth\" has an unknown key \"{extra}\" ({})",
            KEYS.join(", ")
        ));
    }
    let text = |key: &str| -> Result<Option<String>, String> {
        match map.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) if !s.trim().is_empty() => Ok(Some(s.trim().to_owned())),
            Some(_) => Err(format!("\"oauth.{key}\" must be a non-empty string")),
        }
    };
    let grant = match text("grant")?.as_deref() {
        None | Some("authorization_code") => Grant::AuthorizationCode,
        Some("client_credentials") => Grant::ClientCredentials,
        Some(other) => {
            return Err(format!(
                "\"oauth.grant\" must be \"authorization_code\" or \"client_credentials\", not \"{other}\""
            ));
        }
    };
    let client_secret = match (text("clientSecret")?, text("clientSecretFile")?) {
        (Some(_), Some(_)) => {
            return Err("\"oauth\" has both \"clientSecret\" and \"clientSecretFile\"; keep one".into());
        }
        (Some(s), None) => Some(Secret::Inline(s)),
        (None, Some(f)) => Some(Secret::File(PathBuf::from(f))),
        (None, None) => None,
    };
    let client_metadata_url = text("clientMetadataUrl")?;
    if let Some(u) = &client_metadata_url
        && !url::Url::parse(u).is_ok_and(|u| u.scheme() == "https" && u.path() != "/" && u.host_str().is_some())
    {
        return Err(format!(
            "\"oauth.clientMetadataUrl\" must be an https:// URL with a path, not {u}"
        ));
    }
    let signing_algorithm = text("signingAlgorithm")?;
    if let Some(a) = &signing_algorithm
        && !ALGORITHMS.contains(&a.as_str())
    {
        return Err(format!(
            "\"oauth.signingAlgorithm\" must be one of {}, not {a}",
            ALGORITHMS.join(", ")
        ));
    }
    let oauth = OAuth {
        grant,
        client_id: text("clientId")?,
        client_secret,
        private_key_file: text("privateKeyFile")?.map(PathBuf::from),
        signing_algorithm,
        client_metadata_url,
        scopes: match map.get("scopes") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(items)) => items
                .iter()
                .map(|i| i.as_str().filter(|s| !s.contains(char::is_whitespace) && !s.is_empty()))
                .map(|s| s.map(str::to_owned))
                .collect::<Option<Vec<_>>>()
                .ok_or("\"oauth.scopes\" must be an array of scopes (strings without spaces)")?,
            Some(Value::String(s)) => s.split_whitespace().map(str::to_owned).collect(),
            Some(_) => return Err("\"oauth.scopes\" must be an array of scopes".to_owned()),
        },
        redirect_port: match map.get("redirectPort") {
            None | Some(Value::Null) => 0,
            Some(v) => v
                .as_u64()
                .and_then(|p| u16::try_from(p).ok())
                .ok_or_else(|| format!("\"oauth.redirectPort\" must be a port number (0 to 65535), not {v}"))?,
        },
        client_name: text("clientName")?.unwrap_or_else(|| "toolgate".to_owned()),
    };
    check(&oauth)?;
    Ok(Some(oauth))
}

/// What the grants need of the keys together.
fn check(o: &OAuth) -> Result<(), String> {
    if o.client_secret.is_some() && o.client_id.is_none() {
        return Err("\"oauth\" has a client secret but no \"clientId\"".to_owned());
    }
    match o.grant {
        Grant::ClientCredentials => {
            if o.client_id.is_none() {
                return Err("\"oauth\" with grant client_credentials needs \"clientId\"".to_owned());
            }
            match (&o.client_secret, &o.private_key_file) {
                (None, None) => Err(
                    "\"oauth\" with grant client_credentials needs \"clientSecret\", \"clientSecretFile\" or \"privateKeyFile\""
                        .to_owned(),
                ),
                (Some(_), Some(_)) => Err("\"oauth\" has both a client secret and \"privateKeyFile\"; keep one".to_owned()),
                _ => Ok(()),
            }
        }
        Grant::AuthorizationCode if o.private_key_file.is_some() => {
            Err("\"oauth.privateKeyFile\" is for grant client_credentials".to_owned())
        }
        Grant::AuthorizationCode => Ok(()),
    }
}

impl Secret {
    /// The secret, read from its file when it is one (bounded, trimmed). The error is a
    /// sentence naming the file.
    pub fn read(&self) -> Result<String, String> {
        match self {
            Secret::Inline(s) => Ok(s.clone()),
            Secret::File(path) => read_small(path).map(|s| s.trim().to_owned()),
        }
    }
}

/// The text of a small file an `oauth` entry names (a secret, a key), refused past
/// [`UPSTREAM_OAUTH_SECRET_BYTES`](crate::limits::UPSTREAM_OAUTH_SECRET_BYTES).
pub fn read_small(path: &std::path::Path) -> Result<String, String> {
    use std::io::Read;
    let limit = crate::limits::UPSTREAM_OAUTH_SECRET_BYTES;
    let file = std::fs::File::open(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let mut text = String::new();
    file.take(limit + 1)
        .read_to_string(&mut text)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    if text.len() as u64 > limit {
        return Err(format!("{} is over {limit} bytes", path.display()));
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_both_grants_and_refuses_what_cannot_work() {
        let person = parse(Some(&json!({"scopes": ["read", "write"], "redirectPort": 8765})))
            .unwrap()
            .unwrap();
        assert_eq!(person.grant, Grant::AuthorizationCode);
        assert_eq!(person.scopes, ["read", "write"]);
        assert_eq!(person.redirect_port, 8765);
        assert_eq!(person.client_name, "toolgate");
        let service = parse(Some(&json!({
            "grant": "client_credentials", "clientId": "svc", "clientSecretFile": "/run/secret"
        })))
        .unwrap()
        .unwrap();
        assert_eq!(service.client_secret, Some(Secret::File("/run/secret".into())));
        assert_eq!(parse(None).unwrap(), None);
        for bad in [
            json!({"grant": "password"}),
            json!({"grant": "client_credentials", "clientId": "svc"}),
            json!({"grant": "client_credentials", "clientSecret": "s"}),
            json!({"privateKeyFile": "/k.pem"}),
            json!({"clientMetadataUrl": "http://example.com/client.json"}),
            json!({"clientMetadataUrl": "https://example.com/"}),
            json!({"signingAlgorithm": "HS256"}),
            json!({"redirectPort": 70000}),
            json!({"scopes": ["two words"]}),
            json!({"token": "x"}),
            json!("yes"),
        ] {
            assert!(parse(Some(&bad)).is_err(), "{bad}");
        }
    }

    #[test]
    fn an_inline_secret_is_not_shown_by_debug() {
        let shown = format!("{:?}", Secret::Inline("hunter2".into()));
        assert!(!shown.contains("hunter2"), "{shown}");
    }
}
