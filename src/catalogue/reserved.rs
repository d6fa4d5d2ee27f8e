//! What a catalogue may not name: the names toolgate serves from elsewhere. A catalogue
//! entry that takes one of them is refused at load, with one [`Problem::Refused`] that
//! says whose name it is, so no source can answer a call meant for another.
//!
//! - The `SERVER__` namespace of each configured upstream server belongs to that server:
//!   a catalogue tool or prompt named `ev__echo` would otherwise be served in place of
//!   upstream `ev`'s `echo` (the catalogue's own tools are resolved first), and the
//!   agent's arguments would go to the catalogue's code or API. The prefix is compared
//!   ignoring ASCII case, so `EV__echo` cannot pass for it either; and the rule holds
//!   whether or not the server is up, so a server that is down cannot be impersonated.
//! - The tools toolgate serves itself (the meta-tool, the runtime tools) are resolved
//!   before any catalogue tool: one of the same name would be listed twice and never run.
//! - The URI scheme toolgate serves (built-in and upstream resources live there) and its
//!   built-in prompt names (checked by `extras.rs`).
//!
//! Plain data given by whoever opens the catalogue: the catalogue knows no MCP names and
//! no upstream of its own.

use super::load::Entry;
use super::problem::Problem;

/// What toolgate serves itself, so no catalogue entry may take it.
#[derive(Debug, Clone, Default)]
pub struct Reserved {
    /// URI schemes (without `:`), compared case-insensitively.
    pub schemes: Vec<String>,
    /// Prompt names.
    pub prompts: Vec<String>,
    /// Tool names (the meta-tool, the runtime tools), compared exactly.
    pub tools: Vec<String>,
    /// Each upstream server's namespace (its slug prefix with the separator, `ev__`) and
    /// name: no catalogue tool or prompt may be named `ev__…`, in any ASCII case.
    pub namespaces: Vec<(String, String)>,
}

impl Reserved {
    /// This set with the namespaces of the upstream servers added, each as its slug
    /// prefix with the separator (`ev__`) and the server's name.
    #[must_use]
    pub fn with_namespaces(mut self, namespaces: Vec<(String, String)>) -> Reserved {
        self.namespaces.extend(namespaces);
        self
    }

    /// The upstream server whose namespace `name` is in, when it is in one.
    fn namespace_of(&self, name: &str) -> Option<&str> {
        self.namespaces.iter().find_map(|(prefix, server)| {
            let head = name.get(..prefix.len())?;
            head.eq_ignore_ascii_case(prefix).then_some(&**server)
        })
    }

    /// Why a catalogue tool may not take `slug`, if it may not.
    pub fn tool_clash(&self, slug: &str) -> Option<String> {
        if self.tools.iter().any(|t| t == slug) {
            return Some("toolgate serves a tool of this name itself".to_owned());
        }
        self.namespace_of(slug).map(namespaced)
    }

    /// Why a catalogue prompt may not take `name`, if it may not.
    pub fn prompt_clash(&self, name: &str) -> Option<String> {
        if self.prompts.iter().any(|p| p == name) {
            return Some("toolgate has a prompt of this name".to_owned());
        }
        self.namespace_of(name).map(namespaced)
    }

    /// `entries` without those whose slug is reserved, and one problem for each of those.
    pub fn admit(&self, entries: Vec<Entry>) -> (Vec<Entry>, Vec<Problem>) {
        if self.tools.is_empty() && self.namespaces.is_empty() {
            return (entries, Vec::new());
        }
        let mut problems = Vec::new();
        let admitted = entries
            .into_iter()
            .filter(|e| match self.tool_clash(&e.manifest.slug) {
                None => true,
                Some(reason) => {
                    problems.push(Problem::Refused {
                        kind: "tool",
                        name: label(&e.manifest.slug),
                        reason,
                    });
                    false
                }
            })
            .collect();
        (admitted, problems)
    }
}

/// The reason a name in `server`'s namespace is refused.
fn namespaced(server: &str) -> String {
    format!(
        "its name is in the namespace of upstream server \"{server}\" (SERVER__NAME), which only that server's own tools and prompts may use"
    )
}

/// How a problem names a slug: its first [`crate::limits::MANIFEST_NAME_CHARS`]
/// characters (a slug is not cut before the build trims it).
fn label(slug: &str) -> String {
    slug.chars().take(crate::limits::MANIFEST_NAME_CHARS).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reserved() -> Reserved {
        Reserved {
            tools: vec!["toolgate".into(), "run_javascript".into()],
            prompts: vec!["find-tool".into()],
            ..Reserved::default()
        }
        .with_namespaces(vec![("ev__".into(), "ev".into()), ("my-db__".into(), "my_db".into())])
    }

    #[test]
    fn an_upstream_namespace_and_toolgate_s_own_names_are_refused_in_any_case() {
        let r = reserved();
        for refused in ["ev__echo", "EV__echo", "Ev__", "my-db__q", "MY-DB__x y", "ev__\u{e9}"] {
            let why = r.tool_clash(refused).unwrap_or_else(|| panic!("{refused}"));
            assert!(why.contains("upstream server"), "{refused}: {why}");
            assert!(r.prompt_clash(refused).is_some(), "{refused}");
        }
        assert!(r.tool_clash("toolgate").unwrap().contains("toolgate serves"));
        assert!(r.tool_clash("run_javascript").is_some());
        assert!(r.prompt_clash("find-tool").is_some());
        for kept in [
            "ev",
            "ev_echo",
            "eve__echo",
            "e__echo",
            "my-d__x",
            "echo__ev",
            "Toolgate",
            "é",
        ] {
            assert_eq!(r.tool_clash(kept), None, "{kept}");
        }
    }
}
