//! `TOOLGATE_REDIS` and `TOOLGATE_REDIS_PREFIX` read into [`Settings`]: which Redis a
//! fleet shares its state in, and under which key prefix. Parsing only, no I/O: the
//! connection is made by [`super::Shared::open`].

use crate::limits::REDIS_PREFIX;

/// The longest key prefix accepted: a prefix is repeated in every key.
const PREFIX_MAX: usize = 64;

/// Where the fleet's shared state lives.
#[derive(Clone)]
pub struct Settings {
    /// The parsed address, credentials included.
    pub(super) info: redis::ConnectionInfo,
    /// The address as it may be shown (`redis://host:port/db`, never a password).
    shown: String,
    /// Put before every key.
    pub(super) prefix: String,
}

impl std::fmt::Debug for Settings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Settings")
            .field("redis", &self.shown)
            .field("prefix", &self.prefix)
            .finish()
    }
}

impl Settings {
    /// Reads `url` (`redis://[user:password@]host[:port][/db]`, or `rediss://` for TLS)
    /// and `prefix` (empty: [`REDIS_PREFIX`]). `None` when `url` is unset or blank: the
    /// server then runs alone, with no Redis code on its path. An error is a sentence
    /// naming the setting.
    pub fn parse(url: Option<&str>, prefix: Option<&str>) -> Result<Option<Settings>, String> {
        let Some(url) = url.map(str::trim).filter(|u| !u.is_empty()) else {
            if prefix.is_some_and(|p| !p.trim().is_empty()) {
                return Err(
                    "TOOLGATE_REDIS_PREFIX is set but TOOLGATE_REDIS is not: name the Redis the prefix is for".into(),
                );
            }
            return Ok(None);
        };
        let scheme = url.split_once("://").map(|(s, _)| s.to_ascii_lowercase());
        let tls = match scheme.as_deref() {
            Some("redis") => false,
            Some("rediss") => true,
            _ => {
                return Err(format!(
                    "TOOLGATE_REDIS must be a redis:// or rediss:// URL (redis://host:6379/0), not \"{}\"",
                    shown_without_credentials(url)
                ));
            }
        };
        let info = redis::IntoConnectionInfo::into_connection_info(url).map_err(|e| {
            format!(
                "TOOLGATE_REDIS \"{}\" does not read as a Redis URL: {e}",
                shown_without_credentials(url)
            )
        })?;
        let (host, port) = match info.addr() {
            redis::ConnectionAddr::Tcp(host, port) => (host.clone(), *port),
            redis::ConnectionAddr::TcpTls { host, port, .. } => (host.clone(), *port),
            _ => return Err("TOOLGATE_REDIS must name a host and port, not a Unix socket".into()),
        };
        let scheme = if tls { "rediss" } else { "redis" };
        let host = if host.contains(':') { format!("[{host}]") } else { host };
        let shown = format!("{scheme}://{host}:{port}/{}", info.redis_settings().db());
        let prefix = match prefix.map(str::trim).filter(|p| !p.is_empty()) {
            None => REDIS_PREFIX.to_owned(),
            Some(p) if p.len() <= PREFIX_MAX && p.chars().all(|c| c.is_ascii_graphic()) => p.to_owned(),
            Some(_) => {
                return Err(format!(
                    "TOOLGATE_REDIS_PREFIX must be 1 to {PREFIX_MAX} printable ASCII characters without spaces"
                ));
            }
        };
        Ok(Some(Settings { info, shown, prefix }))
    }

    /// The Redis as it may be shown in messages: scheme, host, port and database, never
    /// the credentials.
    pub fn shown(&self) -> &str {
        &self.shown
    }

    /// The prefix every key starts with.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }
}

/// `url` with any `user:password@` taken out, for an error message.
fn shown_without_credentials(url: &str) -> String {
    match (url.split_once("://"), url.rfind('@')) {
        (Some((scheme, _)), Some(at)) => format!("{scheme}://…@{}", &url[at + 1..]),
        _ => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unset_means_no_redis_and_a_url_reads_with_its_database() {
        assert!(Settings::parse(None, None).unwrap().is_none());
        assert!(Settings::parse(Some("  "), None).unwrap().is_none());
        let s = Settings::parse(Some("redis://127.0.0.1:6380/3"), None)
            .unwrap()
            .unwrap();
        assert_eq!(s.shown(), "redis://127.0.0.1:6380/3");
        assert_eq!(s.prefix(), REDIS_PREFIX);
        let s = Settings::parse(Some("redis://cache"), Some("team-a:"))
            .unwrap()
            .unwrap();
        assert_eq!(s.shown(), "redis://cache:6379/0");
        assert_eq!(s.prefix(), "team-a:");
    }

    #[test]
    fn credentials_are_read_but_never_shown() {
        let s = Settings::parse(Some("redis://app:s3cret@10.0.0.5:6379/1"), None)
            .unwrap()
            .unwrap();
        assert_eq!(s.info.redis_settings().password(), Some("s3cret"));
        assert_eq!(s.shown(), "redis://10.0.0.5:6379/1");
        assert!(!format!("{s:?}").contains("s3cret"));
        let e = Settings::parse(Some("http://app:s3cret@h"), None).unwrap_err();
        assert!(e.contains("TOOLGATE_REDIS") && !e.contains("s3cret"), "{e}");
    }

    #[test]
    fn tls_is_kept_and_bad_settings_are_refused_naming_them() {
        let s = Settings::parse(Some("rediss://cache.example.com:6380/0"), None)
            .unwrap()
            .unwrap();
        assert_eq!(s.shown(), "rediss://cache.example.com:6380/0");
        for bad in ["127.0.0.1:6379", "redis://", "redis://h:notaport"] {
            let e = Settings::parse(Some(bad), None).unwrap_err();
            assert!(e.contains("TOOLGATE_REDIS"), "{bad}: {e}");
        }
        let e = Settings::parse(Some("redis://h"), Some("has space")).unwrap_err();
        assert!(e.contains("TOOLGATE_REDIS_PREFIX"), "{e}");
        let e = Settings::parse(None, Some("p:")).unwrap_err();
        assert!(e.contains("TOOLGATE_REDIS_PREFIX"), "{e}");
    }
}
