//! The OAuth settings as the operator gave them (`TOOLGATE_OAUTH_*`, `TOOLGATE_PUBLIC_URL`),
//! checked: where the JWKS is, which issuer and audiences a token must name, and what the
//! protected-resource metadata says. No I/O: the JWKS is read when a server opens it
//! (`jwks.rs`).

use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::Arc;

use reqwest::Url;

use crate::patterns::ToolPatterns;

/// Where the authorization server's signing keys are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JwksSource {
    /// A JWKS document on disk, re-read when it changes.
    File(PathBuf),
    /// A JWKS URL: `https://`, or `http://` to a loopback host only.
    Url(Url),
}

impl std::fmt::Display for JwksSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            JwksSource::File(path) => write!(f, "{}", path.display()),
            JwksSource::Url(url) => write!(f, "{url}"),
        }
    }
}

/// How bearer JWTs are checked, and what `/.well-known/oauth-protected-resource` says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// The signing keys (`TOOLGATE_OAUTH_JWKS`).
    pub jwks: JwksSource,
    /// The `iss` every token must carry (`TOOLGATE_OAUTH_ISSUER`).
    pub issuer: String,
    /// The `aud` values accepted; a token must name at least one
    /// (`TOOLGATE_OAUTH_AUDIENCE`, comma-separated).
    pub audiences: Vec<String>,
    /// The authorization servers the metadata names
    /// (`TOOLGATE_OAUTH_AUTHORIZATION_SERVERS`). By default, the issuer.
    pub authorization_servers: Vec<String>,
    /// Runs a minute each OAuth principal (each `sub`) may start
    /// (`TOOLGATE_OAUTH_PER_MINUTE`). By default, a key's, `KEY_PER_MINUTE`.
    pub per_minute: u32,
    /// The server's public base URL, `scheme://host[:port]` without a trailing slash
    /// (`TOOLGATE_PUBLIC_URL`). By default, none: `http://` and the request's `Host`.
    pub public_url: Option<String>,
    /// The tools each OAuth scope admits (`TOOLGATE_OAUTH_TOOL_SCOPES`,
    /// `SCOPE=GLOBS;SCOPE=GLOBS`). When any is given, a token sees and runs only the
    /// tools its mapped scopes admit (none, if it holds none of them). By default, none:
    /// every tool its toolgate scopes allow.
    pub tool_scopes: Vec<(String, Arc<ToolPatterns>)>,
}

/// The raw OAuth settings, as clap read them.
#[derive(Debug, Clone, Default)]
pub struct Raw<'a> {
    /// `TOOLGATE_OAUTH_JWKS`.
    pub jwks: Option<&'a str>,
    /// `TOOLGATE_OAUTH_ISSUER`.
    pub issuer: Option<&'a str>,
    /// `TOOLGATE_OAUTH_AUDIENCE`.
    pub audience: Option<&'a str>,
    /// `TOOLGATE_OAUTH_AUTHORIZATION_SERVERS`.
    pub authorization_servers: Option<&'a str>,
    /// `TOOLGATE_OAUTH_PER_MINUTE`.
    pub per_minute: u64,
    /// `TOOLGATE_PUBLIC_URL`.
    pub public_url: Option<&'a str>,
    /// `TOOLGATE_OAUTH_TOOL_SCOPES`.
    pub tool_scopes: Option<&'a str>,
}

impl Settings {
    /// Checks `raw`: `None` when no JWKS is named (OAuth off), an error naming the
    /// setting when one is missing or malformed. The issuer and audience are required
    /// with a JWKS; naming them without one is an error too, so a typo in the JWKS
    /// variable cannot leave a server the operator thinks is protected open.
    pub fn parse(raw: &Raw<'_>) -> Result<Option<Settings>, String> {
        let given = |v: Option<&str>| v.map(str::trim).filter(|v| !v.is_empty()).map(str::to_owned);
        let public_url = given(raw.public_url).map(|u| public_url(&u)).transpose()?;
        let Some(jwks) = given(raw.jwks) else {
            let stray = [
                ("TOOLGATE_OAUTH_ISSUER", raw.issuer),
                ("TOOLGATE_OAUTH_AUDIENCE", raw.audience),
                ("TOOLGATE_OAUTH_AUTHORIZATION_SERVERS", raw.authorization_servers),
                ("TOOLGATE_OAUTH_TOOL_SCOPES", raw.tool_scopes),
            ]
            .into_iter()
            .find(|(_, v)| given(*v).is_some());
            if let Some((name, _)) = stray {
                return Err(format!(
                    "{name} is set but TOOLGATE_OAUTH_JWKS is not: name the authorization server's keys (a JWKS file or https:// URL) to turn OAuth on"
                ));
            }
            return Ok(None);
        };
        let jwks = jwks_source(&jwks)?;
        let issuer = given(raw.issuer).ok_or(
            "TOOLGATE_OAUTH_ISSUER is required with TOOLGATE_OAUTH_JWKS: the `iss` your authorization server puts in its tokens (https://auth.example.com/)",
        )?;
        let audiences = list(&given(raw.audience).unwrap_or_default());
        if audiences.is_empty() {
            return Err("TOOLGATE_OAUTH_AUDIENCE is required with TOOLGATE_OAUTH_JWKS: the `aud` your authorization server puts in tokens meant for this server (usually its resource URL, https://gw.example.com/mcp)".to_owned());
        }
        let mut authorization_servers = list(&given(raw.authorization_servers).unwrap_or_default());
        if authorization_servers.is_empty() {
            authorization_servers.push(issuer.clone());
        }
        if let Some(bad) = authorization_servers.iter().find(|s| Url::parse(s).is_err()) {
            return Err(format!(
                "TOOLGATE_OAUTH_AUTHORIZATION_SERVERS: \"{bad}\" is not a URL (clients read the server's metadata from it)"
            ));
        }
        let per_minute = u32::try_from(raw.per_minute).ok().filter(|n| *n > 0).ok_or_else(|| {
            format!(
                "TOOLGATE_OAUTH_PER_MINUTE={} is outside 1..={}",
                raw.per_minute,
                u32::MAX
            )
        })?;
        let tool_scopes = tool_scopes(&given(raw.tool_scopes).unwrap_or_default())?;
        Ok(Some(Settings {
            jwks,
            issuer,
            audiences,
            authorization_servers,
            per_minute,
            public_url,
            tool_scopes,
        }))
    }
}

/// Reads `TOOLGATE_OAUTH_TOOL_SCOPES`: `SCOPE=GLOBS` entries separated by `;`, each
/// `GLOBS` a comma-separated tool policy (`github:read=github__get_*,github__list_*`).
fn tool_scopes(text: &str) -> Result<Vec<(String, Arc<ToolPatterns>)>, String> {
    let mut mapped: Vec<(String, Arc<ToolPatterns>)> = Vec::new();
    for entry in text.split(';').map(str::trim).filter(|e| !e.is_empty()) {
        let Some((scope, globs)) = entry.split_once('=') else {
            return Err(format!(
                "TOOLGATE_OAUTH_TOOL_SCOPES: \"{entry}\" is not SCOPE=PATTERNS (e.g. github:read=github__get_*,github__list_*)"
            ));
        };
        let scope = scope.trim();
        if scope.is_empty() || scope.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(format!(
                "TOOLGATE_OAUTH_TOOL_SCOPES: \"{scope}\" is not a scope name (one word, as tokens carry it)"
            ));
        }
        if mapped.iter().any(|(s, _)| s == scope) {
            return Err(format!("TOOLGATE_OAUTH_TOOL_SCOPES names the scope \"{scope}\" twice"));
        }
        let patterns = ToolPatterns::parse_list(globs)
            .map_err(|e| format!("TOOLGATE_OAUTH_TOOL_SCOPES, scope \"{scope}\": {e}"))?;
        mapped.push((scope.to_owned(), Arc::new(patterns)));
    }
    Ok(mapped)
}

fn list(text: &str) -> Vec<String> {
    text.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

/// A JWKS named by a URL (`https://`, or `http://` to a loopback host) or else a path.
fn jwks_source(text: &str) -> Result<JwksSource, String> {
    let lower = text.to_ascii_lowercase();
    if !lower.starts_with("http://") && !lower.starts_with("https://") {
        return Ok(JwksSource::File(PathBuf::from(text)));
    }
    let url = Url::parse(text).map_err(|e| format!("TOOLGATE_OAUTH_JWKS \"{text}\" is not a URL: {e}"))?;
    if url.scheme() == "http" && !is_loopback_host(&url) {
        return Err(format!(
            "TOOLGATE_OAUTH_JWKS \"{text}\": keys fetched over plain http:// could be swapped on the way; use https:// (http:// is allowed to loopback hosts only)"
        ));
    }
    Ok(JwksSource::Url(url))
}

/// Returns true if and only if `url` names `localhost` or a loopback address.
fn is_loopback_host(url: &Url) -> bool {
    let host = url.host_str().unwrap_or_default();
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost") || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// `TOOLGATE_PUBLIC_URL` checked: `http(s)://host[:port]`, no path, query or fragment
/// (the metadata's well-known path goes right after the host), returned without a
/// trailing slash.
fn public_url(text: &str) -> Result<String, String> {
    let url = Url::parse(text).map_err(|e| format!("TOOLGATE_PUBLIC_URL \"{text}\" is not a URL: {e}"))?;
    let bare = matches!(url.scheme(), "http" | "https")
        && url.host().is_some()
        && url.path() == "/"
        && url.query().is_none()
        && url.fragment().is_none()
        && url.username().is_empty()
        && url.password().is_none();
    if !bare {
        return Err(format!(
            "TOOLGATE_PUBLIC_URL \"{text}\" must be scheme://host[:port] with no path (https://gw.example.com): clients reach /mcp and /.well-known/ right under it"
        ));
    }
    Ok(url.as_str().trim_end_matches('/').to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(raw: Raw<'_>) -> Result<Option<Settings>, String> {
        Settings::parse(&Raw { per_minute: 600, ..raw })
    }

    #[test]
    fn settings_need_issuer_and_audience_with_a_jwks_and_say_what_is_wrong() {
        assert_eq!(parse(Raw::default()), Ok(None));
        let stray = parse(Raw {
            issuer: Some("https://auth.example.com"),
            ..Raw::default()
        });
        assert!(stray.unwrap_err().contains("TOOLGATE_OAUTH_JWKS is not"));
        let no_issuer = parse(Raw {
            jwks: Some("jwks.json"),
            audience: Some("a"),
            ..Raw::default()
        });
        assert!(no_issuer.unwrap_err().contains("TOOLGATE_OAUTH_ISSUER is required"));
        let no_audience = parse(Raw {
            jwks: Some("jwks.json"),
            issuer: Some("https://auth.example.com"),
            ..Raw::default()
        });
        assert!(no_audience.unwrap_err().contains("TOOLGATE_OAUTH_AUDIENCE is required"));
        let plain = parse(Raw {
            jwks: Some("http://auth.example.com/jwks"),
            issuer: Some("https://auth.example.com"),
            audience: Some("a"),
            ..Raw::default()
        });
        assert!(plain.unwrap_err().contains("https://"));
        let with_path = parse(Raw {
            public_url: Some("https://gw.example.com/mcp"),
            ..Raw::default()
        });
        assert!(with_path.unwrap_err().contains("no path"));
    }

    #[test]
    fn good_settings_read_lists_default_the_servers_to_the_issuer_and_trim_the_url() {
        let ok = parse(Raw {
            jwks: Some("http://127.0.0.1:9/jwks"),
            issuer: Some("https://auth.example.com/"),
            audience: Some("https://gw.example.com/mcp, api://toolgate"),
            public_url: Some("https://gw.example.com/"),
            ..Raw::default()
        })
        .unwrap()
        .unwrap();
        assert!(matches!(ok.jwks, JwksSource::Url(_)));
        assert_eq!(ok.audiences, ["https://gw.example.com/mcp", "api://toolgate"]);
        assert_eq!(ok.authorization_servers, ["https://auth.example.com/"]);
        assert_eq!(ok.public_url.as_deref(), Some("https://gw.example.com"));
        let file = parse(Raw {
            jwks: Some("/etc/toolgate/jwks.json"),
            issuer: Some("i"),
            audience: Some("a"),
            authorization_servers: Some("https://a.example.com,https://b.example.com"),
            ..Raw::default()
        })
        .unwrap()
        .unwrap();
        assert_eq!(file.jwks, JwksSource::File("/etc/toolgate/jwks.json".into()));
        assert_eq!(file.authorization_servers.len(), 2);
    }

    #[test]
    fn tool_scopes_map_scopes_to_patterns_and_bad_maps_are_refused() {
        let mapped = tool_scopes("gh:read=github__get_*,github__list_*; ops=*,!ops-delete").unwrap();
        assert_eq!(mapped.len(), 2);
        assert_eq!(mapped[0].0, "gh:read");
        assert!(mapped[1].1.admits("ops-restart") && !mapped[1].1.admits("ops-delete"));
        assert!(tool_scopes("").unwrap().is_empty());
        for bad in ["gh:read", "=x", "a b=x", "a=x;a=y", "a=", "a=!"] {
            let e = tool_scopes(bad).unwrap_err();
            assert!(e.starts_with("TOOLGATE_OAUTH_TOOL_SCOPES"), "{bad}: {e}");
        }
    }
}
