//! `TOOLGATE_REDIS`, `TOOLGATE_REDIS_PREFIX` and `TOOLGATE_REDIS_PASSWORD_FILE` read into
//! [`Settings`]: which Redis a fleet shares its state in, under which key prefix, and
//! where its password is kept apart from the URL (a mounted secret). Parsing only, no
//! I/O: the password file is read and the connection made by [`super::Shared::open`].

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
    /// A file whose content is the password, read when the handle is opened.
    pub(super) password_file: Option<std::path::PathBuf>,
}

impl std::fmt::Debug for Settings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Settings")
            .field("redis", &self.shown)
            .field("prefix", &self.prefix)
            .field("password_file", &self.password_file)
            .finish()
    }
}

impl Settings {
    /// Reads `url` (`redis://[user:password@]host[:port][/db]`, or `rediss://` for TLS)
    /// and `prefix` (empty: [`REDIS_PREFIX`]), with the password in `password_file` when
    /// given (it takes the place of one in the URL). `None` when `url` is unset or blank:
    /// the server then runs alone, with no Redis code on its path. An error is a sentence
    /// naming the setting.
    pub fn parse(
        url: Option<&str>,
        prefix: Option<&str>,
        password_file: Option<&std::path::Path>,
    ) -> Result<Option<Settings>, String> {
        let Some(url) = url.map(str::trim).filter(|u| !u.is_empty()) else {
            if prefix.is_some_and(|p| !p.trim().is_empty()) {
                return Err(
                    "TOOLGATE_REDIS_PREFIX is set but TOOLGATE_REDIS is not: name the Redis the prefix is for".into(),
                );
            }
            if password_file.is_some() {
                return Err(
                    "TOOLGATE_REDIS_PASSWORD_FILE is set but TOOLGATE_REDIS is not: name the Redis the password is for"
                        .into(),
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
        Ok(Some(Settings {
            info,
            shown,
            prefix,
            password_file: password_file.map(std::path::Path::to_path_buf),
        }))
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

/// The password in `file`'s first line (a trailing newline is no part of it), at most
/// [`PASSWORD_MAX`] bytes: what a mounted secret holds. An error names the setting and
/// the file, never its content.
pub(super) fn read_password(file: &std::path::Path) -> Result<String, String> {
    use std::io::Read;
    let fail = |why: &str| format!("TOOLGATE_REDIS_PASSWORD_FILE {}: {why}", file.display());
    let mut text = String::new();
    std::fs::File::open(file)
        .map_err(|e| fail(&e.to_string()))?
        .take(PASSWORD_MAX as u64 + 2)
        .read_to_string(&mut text)
        .map_err(|_| fail("cannot be read as UTF-8 text"))?;
    let password = text.strip_suffix('\n').unwrap_or(&text);
    let password = password.strip_suffix('\r').unwrap_or(password);
    if password.is_empty() {
        return Err(fail("is empty"));
    }
    if password.len() > PASSWORD_MAX || password.contains('\n') {
        return Err(fail(&format!("must hold one line of at most {PASSWORD_MAX} bytes")));
    }
    Ok(password.to_owned())
}

/// The longest password a password file may hold.
const PASSWORD_MAX: usize = 4096;

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

    impl Settings {
        fn parse_url(url: Option<&str>, prefix: Option<&str>) -> Result<Option<Settings>, String> {
            Settings::parse(url, prefix, None)
        }
    }

    #[test]
    fn a_password_file_holds_one_line_and_needs_the_url() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("password");
        std::fs::write(&file, "s3cret\n").unwrap();
        assert_eq!(read_password(&file).unwrap(), "s3cret");
        std::fs::write(&file, "s3cret\r\n").unwrap();
        assert_eq!(read_password(&file).unwrap(), "s3cret");
        for bad in ["", "\n", "two\nlines", &"x".repeat(PASSWORD_MAX + 1)] {
            std::fs::write(&file, bad).unwrap();
            let e = read_password(&file).unwrap_err();
            assert!(
                e.contains("TOOLGATE_REDIS_PASSWORD_FILE") && !e.contains("lines"),
                "{e}"
            );
        }
        assert!(read_password(&dir.path().join("missing")).is_err());
        let e = Settings::parse(None, None, Some(&file)).unwrap_err();
        assert!(e.contains("TOOLGATE_REDIS_PASSWORD_FILE"), "{e}");
        let s = Settings::parse(Some("redis://h"), None, Some(&file)).unwrap().unwrap();
        assert_eq!(s.password_file.as_deref(), Some(file.as_path()));
    }

    #[test]
    fn unset_means_no_redis_and_a_url_reads_with_its_database() {
        assert!(Settings::parse_url(None, None).unwrap().is_none());
        assert!(Settings::parse_url(Some("  "), None).unwrap().is_none());
        let s = Settings::parse_url(Some("redis://127.0.0.1:6380/3"), None)
            .unwrap()
            .unwrap();
        assert_eq!(s.shown(), "redis://127.0.0.1:6380/3");
        assert_eq!(s.prefix(), REDIS_PREFIX);
        let s = Settings::parse_url(Some("redis://cache"), Some("team-a:"))
            .unwrap()
            .unwrap();
        assert_eq!(s.shown(), "redis://cache:6379/0");
        assert_eq!(s.prefix(), "team-a:");
    }

    #[test]
    fn credentials_are_read_but_never_shown() {
        let s = Settings::parse_url(Some("redis://app:s3cret@10.0.0.5:6379/1"), None)
            .unwrap()
            .unwrap();
        assert_eq!(s.info.redis_settings().password(), Some("s3cret"));
        assert_eq!(s.shown(), "redis://10.0.0.5:6379/1");
        assert!(!format!("{s:?}").contains("s3cret"));
        let e = Settings::parse_url(Some("http://app:s3cret@h"), None).unwrap_err();
        assert!(e.contains("TOOLGATE_REDIS") && !e.contains("s3cret"), "{e}");
    }

    #[test]
    fn tls_is_kept_and_bad_settings_are_refused_naming_them() {
        let s = Settings::parse_url(Some("rediss://cache.example.com:6380/0"), None)
            .unwrap()
            .unwrap();
        assert_eq!(s.shown(), "rediss://cache.example.com:6380/0");
        for bad in ["127.0.0.1:6379", "redis://", "redis://h:notaport"] {
            let e = Settings::parse_url(Some(bad), None).unwrap_err();
            assert!(e.contains("TOOLGATE_REDIS"), "{bad}: {e}");
        }
        let e = Settings::parse_url(Some("redis://h"), Some("has space")).unwrap_err();
        assert!(e.contains("TOOLGATE_REDIS_PREFIX"), "{e}");
        let e = Settings::parse_url(None, Some("p:")).unwrap_err();
        assert!(e.contains("TOOLGATE_REDIS_PREFIX"), "{e}");
    }
}
