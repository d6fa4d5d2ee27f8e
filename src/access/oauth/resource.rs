//! What a client is told about this protected resource (RFC 9728, as MCP's
//! authorization spec uses it): the metadata document at
//! `/.well-known/oauth-protected-resource` (and, for `/mcp`, its path-suffixed twin
//! `/.well-known/oauth-protected-resource/mcp`), and the `WWW-Authenticate: Bearer`
//! challenge of a 401 or 403 that points at it.
//!
//! Both need this server's base URL as clients reach it: `TOOLGATE_PUBLIC_URL` when set
//! (needed behind a TLS proxy), else `http://` and the request's `Host` header. A `Host`
//! that is not a plain `host[:port]` gives no base: the challenge then names no metadata
//! and the document is answered 400.

use axum::http::{HeaderMap, HeaderValue, header};
use serde_json::{Value, json};

use super::settings::Settings;
use crate::access::{Face, Scope};

/// The well-known path of the metadata document (RFC 9728 §3).
pub const METADATA_PATH: &str = "/.well-known/oauth-protected-resource";

/// The path-suffixed form for the MCP endpoint: the resource `BASE/mcp` has its metadata
/// at `BASE/.well-known/oauth-protected-resource/mcp` (RFC 9728 §3.1).
pub const MCP_METADATA_PATH: &str = "/.well-known/oauth-protected-resource/mcp";

/// Returns true if and only if `path` is where `face` serves its metadata document.
pub fn is_metadata_path(face: Face, path: &str) -> bool {
    path == METADATA_PATH || (face == Face::Mcp && path == MCP_METADATA_PATH)
}

/// The base URL clients reach this server at, without a trailing slash: the public URL
/// when configured, else `http://HOST` from the request; `None` when neither is usable.
pub fn base(settings: &Settings, headers: &HeaderMap) -> Option<String> {
    if let Some(url) = &settings.public_url {
        return Some(url.clone());
    }
    let host = headers.get(header::HOST)?.to_str().ok()?;
    let plain = !host.is_empty()
        && host.len() <= 300
        && host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b':' | b'[' | b']'));
    plain.then(|| format!("http://{host}"))
}

/// The resource identifier of `face` under `base`: the MCP endpoint (`BASE/mcp`), or the
/// catalogue API's base (`BASE`).
pub fn resource(face: Face, base: &str) -> String {
    match face {
        Face::Mcp => format!("{base}/mcp"),
        Face::Catalogue => base.to_owned(),
    }
}

/// Where `face`'s metadata document is under `base`.
pub fn metadata_url(face: Face, base: &str) -> String {
    match face {
        Face::Mcp => format!("{base}{MCP_METADATA_PATH}"),
        Face::Catalogue => format!("{base}{METADATA_PATH}"),
    }
}

/// The metadata document of `face` under `base` (RFC 9728 §2). Both paths the MCP face
/// serves name the MCP endpoint: it is the one protected resource there.
pub fn document(face: Face, base: &str, settings: &Settings) -> Value {
    json!({
        "resource": resource(face, base),
        "authorization_servers": settings.authorization_servers,
        "scopes_supported": Scope::ALL.map(Scope::name),
        "bearer_methods_supported": ["header"],
        "resource_name": "toolgate",
    })
}

/// Why a request is challenged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Challenge {
    /// No credentials were sent (RFC 6750 §3: no error code then).
    Missing,
    /// A token or key was sent and refused: `invalid_token`, with the reason.
    Invalid(&'static str),
    /// The principal lacks the scope the route needs: `insufficient_scope`.
    Scope(Scope),
}

/// The `WWW-Authenticate` value for `challenge`, naming the metadata at `metadata` when
/// there is a base URL to build it from.
pub fn www_authenticate(challenge: Challenge, metadata: Option<&str>) -> HeaderValue {
    let mut value = String::from("Bearer realm=\"toolgate\"");
    match challenge {
        Challenge::Missing => {}
        Challenge::Invalid(why) => {
            value.push_str(", error=\"invalid_token\", error_description=\"");
            value.extend(
                why.chars()
                    .filter(|c| *c != '"' && *c != '\\' && c.is_ascii() && !c.is_ascii_control()),
            );
            value.push('"');
        }
        Challenge::Scope(scope) => {
            value.push_str(&format!(", error=\"insufficient_scope\", scope=\"{}\"", scope.name()));
        }
    }
    if let Some(url) = metadata {
        value.push_str(&format!(", resource_metadata=\"{url}\""));
    }
    // Every part is ASCII without controls: the base is a checked URL or a Host of
    // plain characters, the reasons are our own sentences.
    HeaderValue::from_str(&value).unwrap_or_else(|_| HeaderValue::from_static("Bearer realm=\"toolgate\""))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::access::oauth::settings::JwksSource;

    fn settings(public_url: Option<&str>) -> Settings {
        Settings {
            jwks: JwksSource::File("jwks.json".into()),
            issuer: "https://auth.example.com".into(),
            audiences: vec!["https://gw.example.com/mcp".into()],
            authorization_servers: vec!["https://auth.example.com".into()],
            per_minute: 600,
            public_url: public_url.map(str::to_owned),
            tool_scopes: Vec::new(),
        }
    }

    fn host(value: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(header::HOST, HeaderValue::from_str(value).unwrap());
        headers
    }

    #[test]
    fn the_base_is_the_public_url_else_a_plain_host() {
        let public = settings(Some("https://gw.example.com"));
        assert_eq!(
            base(&public, &host("evil.example")).as_deref(),
            Some("https://gw.example.com")
        );
        let local = settings(None);
        assert_eq!(
            base(&local, &host("127.0.0.1:8765")).as_deref(),
            Some("http://127.0.0.1:8765")
        );
        assert_eq!(base(&local, &host("[::1]:80")).as_deref(), Some("http://[::1]:80"));
        assert_eq!(base(&local, &host("a\"b")), None);
        assert_eq!(base(&local, &host("a/b")), None);
        assert_eq!(base(&local, &HeaderMap::new()), None);
    }

    #[test]
    fn the_document_and_the_challenge_name_the_face_s_resource() {
        let s = settings(None);
        let doc = document(Face::Mcp, "https://gw", &s);
        assert_eq!(doc["resource"], "https://gw/mcp");
        assert_eq!(doc["scopes_supported"], json!(["search", "run", "runtimes", "admin"]));
        assert_eq!(doc["bearer_methods_supported"], json!(["header"]));
        assert_eq!(document(Face::Catalogue, "https://gw", &s)["resource"], "https://gw");
        assert_eq!(
            metadata_url(Face::Mcp, "https://gw"),
            "https://gw/.well-known/oauth-protected-resource/mcp"
        );
        assert!(is_metadata_path(Face::Mcp, MCP_METADATA_PATH));
        assert!(!is_metadata_path(Face::Catalogue, MCP_METADATA_PATH));
        let missing = www_authenticate(Challenge::Missing, Some("https://gw/m"));
        assert_eq!(missing, "Bearer realm=\"toolgate\", resource_metadata=\"https://gw/m\"");
        let invalid = www_authenticate(Challenge::Invalid("the \"token\" has expired"), None);
        assert_eq!(
            invalid,
            "Bearer realm=\"toolgate\", error=\"invalid_token\", error_description=\"the token has expired\""
        );
        let scope = www_authenticate(Challenge::Scope(Scope::Run), Some("u"));
        assert!(
            scope
                .to_str()
                .unwrap()
                .contains("error=\"insufficient_scope\", scope=\"run\"")
        );
    }
}
