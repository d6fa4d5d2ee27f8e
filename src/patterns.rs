//! Name patterns: the glob every tool filter matches with (an upstream's `tools` filter,
//! a key's or an OAuth scope's tool policy), and [`ToolPatterns`], the tools a principal
//! may see and run.
//!
//! A ground module: it knows names and nothing else, so the access layer (which reads a
//! principal's patterns), the catalogue (which keeps a view of only the tools a set of
//! patterns admits) and the upstream settings share one matcher and one reading of it.

use std::fmt;

use crate::limits::{TOOL_PATTERN_CHARS, TOOL_PATTERNS};

/// Returns true if and only if `name` matches `pattern` (`*` any run, `?` any one
/// character), by the usual backtracking over the last `*`: linear in practice, at worst
/// the product of both lengths, both of which are short names (a pattern is at most
/// [`TOOL_PATTERN_CHARS`] where a caller's settings give it).
pub fn glob(pattern: &str, name: &str) -> bool {
    let (p, n): (Vec<char>, Vec<char>) = (pattern.chars().collect(), name.chars().collect());
    let (mut i, mut j, mut star, mut mark) = (0, 0, None, 0);
    while j < n.len() {
        if i < p.len() && (p[i] == '?' || p[i] == n[j]) {
            i += 1;
            j += 1;
        } else if i < p.len() && p[i] == '*' {
            star = Some(i);
            mark = j;
            i += 1;
        } else if let Some(s) = star {
            i = s + 1;
            mark += 1;
            j = mark;
        } else {
            return false;
        }
    }
    p[i..].iter().all(|c| *c == '*')
}

/// One rule: the names matching one of `allow` (every name when it is empty) and none of
/// `deny`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Rule {
    allow: Vec<String>,
    deny: Vec<String>,
}

impl Rule {
    fn admits(&self, name: &str) -> bool {
        (self.allow.is_empty() || self.allow.iter().any(|g| glob(g, name))) && !self.deny.iter().any(|g| glob(g, name))
    }
}

/// Which tools a principal may see and run: the names one of its rules admits. A rule is
/// a list of globs, `!` before the ones that exclude: `github__*,!github__delete_*` admits
/// every `github__` tool but the deleting ones; `!admin_*` alone admits every tool but
/// those. A key has one rule; an OAuth token has one per scope it holds that
/// `TOOLGATE_OAUTH_TOOL_SCOPES` maps, and a tool one of them admits is admitted.
///
/// Its [`Display`](fmt::Display) is a canonical text, the same for equal patterns: what a
/// cache of per-policy views is keyed by.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ToolPatterns {
    rules: Vec<Rule>,
}

impl ToolPatterns {
    /// Reads one rule from `globs` (each a glob, or `!` and a glob). Refused: no glob,
    /// an empty one, only `!`, more than [`TOOL_PATTERNS`] globs or one longer than
    /// [`TOOL_PATTERN_CHARS`] characters.
    pub fn parse<'a>(globs: impl IntoIterator<Item = &'a str>) -> Result<ToolPatterns, String> {
        let mut rule = Rule {
            allow: Vec::new(),
            deny: Vec::new(),
        };
        for raw in globs {
            let text = raw.trim();
            let (list, glob) = match text.strip_prefix('!') {
                Some(rest) => (&mut rule.deny, rest.trim()),
                None => (&mut rule.allow, text),
            };
            if glob.is_empty() {
                return Err(format!(
                    "\"{text}\" is not a tool pattern: write a tool name, with * for any run of characters and ? for any one, and ! before a pattern that excludes"
                ));
            }
            if glob.chars().count() > TOOL_PATTERN_CHARS {
                return Err(format!(
                    "a tool pattern may be at most {TOOL_PATTERN_CHARS} characters; \"{}…\" is longer",
                    glob.chars().take(40).collect::<String>()
                ));
            }
            if !list.iter().any(|g| g == glob) {
                list.push(glob.to_owned());
            }
            if rule.allow.len() + rule.deny.len() > TOOL_PATTERNS {
                return Err(format!("at most {TOOL_PATTERNS} tool patterns may be given"));
            }
        }
        if rule.allow.is_empty() && rule.deny.is_empty() {
            return Err("name at least one tool pattern, e.g. 'github__*,!github__delete_*'".to_owned());
        }
        Ok(ToolPatterns { rules: vec![rule] })
    }

    /// Reads one rule from a comma-separated list (`github__*,!github__delete_*`), as the
    /// command line and `TOOLGATE_OAUTH_TOOL_SCOPES` give it.
    pub fn parse_list(text: &str) -> Result<ToolPatterns, String> {
        ToolPatterns::parse(text.split(',').filter(|g| !g.trim().is_empty()))
    }

    /// The tools any of `all` admits; `None` when `all` is empty (nothing admitted is
    /// the caller's to decide: see [`ToolPatterns::nothing`]).
    pub fn union<'a>(all: impl IntoIterator<Item = &'a ToolPatterns>) -> Option<ToolPatterns> {
        let mut rules: Vec<Rule> = Vec::new();
        for patterns in all {
            for rule in &patterns.rules {
                if !rules.contains(rule) {
                    rules.push(rule.clone());
                }
            }
        }
        (!rules.is_empty()).then_some(ToolPatterns { rules })
    }

    /// Patterns that admit no tool: an OAuth token whose scopes map to none.
    pub fn nothing() -> ToolPatterns {
        ToolPatterns { rules: Vec::new() }
    }

    /// Returns true if and only if the tool named `name` is admitted.
    pub fn admits(&self, name: &str) -> bool {
        self.rules.iter().any(|r| r.admits(name))
    }

    /// Each glob (as written, `!` included) that matches none of `names`: most likely a
    /// typo, which would otherwise admit or exclude nothing in silence.
    pub fn unmatched(&self, names: &[&str]) -> Vec<String> {
        let mut found = Vec::new();
        for rule in &self.rules {
            let globs = rule
                .allow
                .iter()
                .map(|g| (g, ""))
                .chain(rule.deny.iter().map(|g| (g, "!")));
            for (glob, bang) in globs {
                let text = format!("{bang}{glob}");
                if !names.iter().any(|n| self::glob(glob, n)) && !found.contains(&text) {
                    found.push(text);
                }
            }
        }
        found
    }
}

impl fmt::Display for ToolPatterns {
    /// `a,!b` per rule, rules joined by ` | `; `(none)` for [`ToolPatterns::nothing`].
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.rules.is_empty() {
            return f.write_str("(none)");
        }
        for (i, rule) in self.rules.iter().enumerate() {
            if i > 0 {
                f.write_str(" | ")?;
            }
            let globs = rule
                .allow
                .iter()
                .map(|g| g.to_owned())
                .chain(rule.deny.iter().map(|g| format!("!{g}")));
            f.write_str(&globs.collect::<Vec<_>>().join(","))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_match_runs_and_single_characters() {
        assert!(glob("*", "") && glob("a*b*c", "aXbYc") && !glob("a*b", "ac"));
        assert!(glob("github__get_?", "github__get_x") && !glob("github__get_?", "github__get_xy"));
    }

    #[test]
    fn a_rule_admits_its_globs_but_the_excluded_and_rules_add_up() {
        let key = ToolPatterns::parse_list("github__*, !github__delete_*").unwrap();
        assert!(key.admits("github__list_issues"));
        assert!(!key.admits("github__delete_repo"));
        assert!(!key.admits("json-formatter"));
        let all_but = ToolPatterns::parse_list("!admin_*").unwrap();
        assert!(all_but.admits("json-formatter") && !all_but.admits("admin_reset"));
        let both = ToolPatterns::union([&key, &ToolPatterns::parse_list("json-*").unwrap()]).unwrap();
        assert!(both.admits("json-formatter") && both.admits("github__get_me"));
        assert!(!both.admits("github__delete_repo"), "no rule admits it");
        assert_eq!(both.to_string(), "github__*,!github__delete_* | json-*");
        assert!(ToolPatterns::union([]).is_none());
        assert!(!ToolPatterns::nothing().admits("anything"));
        assert_eq!(ToolPatterns::nothing().to_string(), "(none)");
    }

    #[test]
    fn bad_patterns_are_refused_and_unmatched_ones_named() {
        for bad in ["", " , ", "!", "a,!", &"x".repeat(TOOL_PATTERN_CHARS + 1)] {
            assert!(ToolPatterns::parse_list(bad).is_err(), "{bad:?}");
        }
        let many: Vec<String> = (0..=TOOL_PATTERNS).map(|i| format!("t{i}")).collect();
        assert!(ToolPatterns::parse(many.iter().map(String::as_str)).is_err());
        let p = ToolPatterns::parse_list("github__*,gitlab__*,!github__delete_*,!nope_*").unwrap();
        assert_eq!(
            p.unmatched(&["github__get_me", "github__delete_repo"]),
            ["gitlab__*", "!nope_*"]
        );
    }
}
