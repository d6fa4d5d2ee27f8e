//! The environment of a child process: built from nothing, never inherited whole.
//!
//! Only allowlisted names pass from the server's environment; `HOME` and the temp
//! variables point into the child's own folder; the backend adds its own settings; and
//! last, every name that looks like a credential (`docs/reference/limits.md`, by the one rule of
//! [`crate::secrets`], the same that masks history) is removed, even one that was
//! allowlisted or set on purpose.

use std::ffi::{OsStr, OsString};
use std::path::Path;

/// Names passed from the server's environment to a sandboxed child when they are set:
/// what a runtime needs to find itself and its locale, nothing about the operator.
pub const ALLOWLIST: &[&str] = &[
    "PATH",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "LC_MESSAGES",
    "TZ",
    "TERM",
    "DOTNET_ROOT",
    "DOTNET_CLI_HOME",
    "SystemRoot",
];

/// How a child's environment is made.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Env {
    /// Pass every variable of the server (less credentials) instead of the allowlist:
    /// only for the unsandboxed dev tools, which build with the operator's own toolchain.
    pub inherit_all: bool,
    /// Names allowed besides [`ALLOWLIST`].
    pub pass: Vec<String>,
    /// Variables set by the backend (`NX_SANDBOX=1`, ...), after the allowlist.
    pub set: Vec<(String, String)>,
}

/// Returns true if and only if `name` looks like it holds a credential: it names a
/// secret by [`crate::secrets::is_secret_name`] (`AWS_SECRET_ACCESS_KEY`, `PGPASSWORD`,
/// `MYSQL_PWD`, `DB_PASS`, `XAUTHORITY`; not `KEYBOARD_LAYOUT` or `BYPASS_PROXY`).
pub fn is_credential(name: &OsStr) -> bool {
    crate::secrets::is_secret_name(&name.to_string_lossy())
}

/// The child's environment: from `parent` (the server's variables), the policy `env`, and
/// `folder` (its own folder, for `HOME`, `TMPDIR`, `TMP` and `TEMP`) when it has one.
pub fn build(
    parent: impl IntoIterator<Item = (OsString, OsString)>,
    env: &Env,
    folder: Option<&Path>,
) -> Vec<(OsString, OsString)> {
    let allowed = |name: &OsStr| {
        env.inherit_all
            || ALLOWLIST.iter().any(|a| OsStr::new(a) == name)
            || env.pass.iter().any(|a| OsStr::new(a) == name)
    };
    let mut vars: Vec<(OsString, OsString)> = parent.into_iter().filter(|(name, _)| allowed(name)).collect();
    let mut set = |name: &str, value: OsString| {
        vars.retain(|(n, _)| n != name);
        vars.push((OsString::from(name), value));
    };
    if let Some(folder) = folder {
        for name in ["HOME", "TMPDIR", "TMP", "TEMP"] {
            set(name, folder.as_os_str().to_owned());
        }
    }
    for (name, value) in &env.set {
        set(name, OsString::from(value));
    }
    vars.retain(|(name, _)| !is_credential(name));
    vars
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parent() -> Vec<(OsString, OsString)> {
        [
            ("PATH", "/usr/bin"),
            ("HOME", "/home/op"),
            ("AWS_SECRET_ACCESS_KEY", "s"),
            ("UNLISTED", "u"),
            ("MY_AUTH_HEADER", "a"),
            ("EXTRA", "e"),
        ]
        .into_iter()
        .map(|(k, v)| (k.into(), v.into()))
        .collect()
    }

    fn names(vars: &[(OsString, OsString)]) -> Vec<String> {
        let mut n: Vec<String> = vars.iter().map(|(k, _)| k.to_string_lossy().into_owned()).collect();
        n.sort();
        n
    }

    #[test]
    fn only_allowlisted_names_pass_and_home_points_into_the_folder() {
        let env = Env {
            pass: vec!["EXTRA".into(), "MY_AUTH_HEADER".into()],
            set: vec![("NX_SANDBOX".into(), "1".into()), ("GITHUB_TOKEN".into(), "t".into())],
            ..Env::default()
        };
        let vars = build(parent(), &env, Some(Path::new("/tmp/run")));
        assert_eq!(
            names(&vars),
            ["EXTRA", "HOME", "NX_SANDBOX", "PATH", "TEMP", "TMP", "TMPDIR"]
        );
        assert!(vars.contains(&("HOME".into(), "/tmp/run".into())));
    }

    #[test]
    fn inheriting_still_strips_credentials_by_word_in_any_case() {
        let env = Env {
            inherit_all: true,
            ..Env::default()
        };
        let vars = build(parent(), &env, None);
        assert_eq!(names(&vars), ["EXTRA", "HOME", "PATH", "UNLISTED"]);
        assert!(is_credential(OsStr::new("npm_config_password")));
        assert!(is_credential(OsStr::new("XAUTHORITY")));
        assert!(is_credential(OsStr::new("MYSQL_PWD")));
        assert!(is_credential(OsStr::new("DB_PASS")));
        assert!(is_credential(OsStr::new("OPENAI_APIKEY")));
        assert!(!is_credential(OsStr::new("LANG")));
        assert!(!is_credential(OsStr::new("BYPASS_PROXY")));
    }
}
