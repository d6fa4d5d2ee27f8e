//! The `mcpServers` file (Claude Desktop, Cursor and VS Code write the same shape), read
//! into checked [`Server`]s.
//!
//! Lenient where hosts differ and strict where a guess would be unsafe: `type` or
//! `transport` may name the transport (`stdio`, `http`, `streamable-http`,
//! `streamableHttp`; `sse` is refused, it is not Streamable HTTP), unknown keys are kept
//! out of the way with one note each, and a bad entry costs only itself. This module
//! reads text it is given; opening the file is the caller's.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde_json::Value;

use super::naming;
use crate::patterns::glob;

/// Where the `mcpServers` file is (`TOOLGATE_UPSTREAMS`, `--upstreams`). By default, none:
/// no upstream servers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Source(pub PathBuf);

/// One upstream server as configured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Server {
    /// Its name in the file (the key under `mcpServers`).
    pub name: String,
    /// The prefix of its tools' slugs (`naming::server_part` of the name).
    pub prefix: String,
    /// How to reach it.
    pub transport: Transport,
    /// Which of its tools are exposed.
    pub tools: Filter,
    /// With `TOOLGATE_PINS`: a changed tool definition is pinned anew rather than held
    /// (`"acceptChanges": true`). By default, false.
    pub accept_changes: bool,
    /// Characters of a tool's description kept (`"maxDescription"`); the rest is cut, and
    /// the cut said. By default, no cap beyond the message limits.
    pub max_description: Option<usize>,
}

/// How an upstream is reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transport {
    /// A child process speaking MCP on its stdin and stdout.
    Stdio {
        /// The program.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Variables set for it on top of the allowlisted base (credentials included:
        /// they were configured on purpose).
        env: Vec<(String, String)>,
        /// Its working directory, when configured (`cwd`).
        cwd: Option<PathBuf>,
    },
    /// MCP over Streamable HTTP.
    Http {
        /// The endpoint (`https://host/mcp`).
        url: String,
        /// Headers sent with every request (an `Authorization` bearer token, ...).
        headers: Vec<(String, String)>,
        /// How toolgate gets OAuth tokens for it (`"oauth"`), when it asks for them.
        oauth: Option<super::oauth::OAuth>,
    },
}

/// Which tools of an upstream are exposed: those matching an `allow` glob (every tool
/// when there is none) and no `deny` glob. Globs match the upstream's own tool names;
/// `*` is any run of characters, `?` any one.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filter {
    /// Globs a tool must match one of; empty allows every tool.
    pub allow: Vec<String>,
    /// Globs no exposed tool matches.
    pub deny: Vec<String>,
}

impl Filter {
    /// Returns true if and only if the tool named `name` is exposed.
    pub fn admits(&self, name: &str) -> bool {
        (self.allow.is_empty() || self.allow.iter().any(|g| glob(g, name))) && !self.deny.iter().any(|g| glob(g, name))
    }

    /// Each glob that matches none of `names` (a tool list), as `("allow" | "deny",
    /// glob)`: most likely a typo, which would otherwise expose or hide nothing in silence.
    pub fn unmatched<'a>(&'a self, names: &[&str]) -> Vec<(&'static str, &'a str)> {
        let lists = [("allow", &self.allow), ("deny", &self.deny)];
        lists
            .into_iter()
            .flat_map(|(kind, globs)| globs.iter().map(move |g| (kind, g.as_str())))
            .filter(|(_, g)| !names.iter().any(|n| glob(g, n)))
            .collect()
    }
}

/// The largest `maxDescription` accepted.
const MAX_DESCRIPTION_CAP: u64 = 1_000_000;

/// Keys of a server entry this version reads; any other is noted and ignored.
const KNOWN_KEYS: &[&str] = &[
    "command",
    "args",
    "env",
    "cwd",
    "url",
    "headers",
    "type",
    "transport",
    "tools",
    "acceptChanges",
    "maxDescription",
    "oauth",
];

/// Why a document is not an `mcpServers` file at all (a bad entry is only a note).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotServers {
    /// It is not JSON.
    #[error("not JSON: {0}")]
    NotJson(String),
    /// It has no `mcpServers` (or `servers`) object.
    #[error("no \"mcpServers\" object")]
    NoServers,
}

/// Reads an `mcpServers` document. A document that is not JSON, or has no
/// `mcpServers` object, is an error; a bad entry is left out with a note naming it, and
/// so is a second entry whose slug prefix another already took.
pub fn parse(text: &str) -> Result<(Vec<Server>, Vec<String>), NotServers> {
    let doc: Value = serde_json::from_str(text).map_err(|e| NotServers::NotJson(e.to_string()))?;
    let servers = match doc.get("mcpServers").or_else(|| doc.get("servers")) {
        Some(Value::Object(map)) => map,
        _ => return Err(NotServers::NoServers),
    };
    let mut notes = Vec::new();
    let mut taken: BTreeMap<String, String> = BTreeMap::new();
    let mut out = Vec::new();
    for (name, entry) in servers {
        match server(name, entry, &mut notes) {
            Ok(s) => match taken.get(&s.prefix) {
                Some(first) => notes.push(format!(
                    "upstream \"{name}\" left out: its tools would be named {}__… like those of \"{first}\"; rename one",
                    s.prefix
                )),
                None => {
                    taken.insert(s.prefix.clone(), name.clone());
                    out.push(s);
                }
            },
            Err(why) => notes.push(format!("upstream \"{name}\" left out: {why}")),
        }
    }
    Ok((out, notes))
}

fn server(name: &str, entry: &Value, notes: &mut Vec<String>) -> Result<Server, String> {
    let Value::Object(entry) = entry else {
        return Err("its entry is not an object".to_owned());
    };
    let prefix = naming::server_part(name).ok_or("its name has no letter or digit")?;
    let unknown: Vec<&str> = entry
        .keys()
        .map(String::as_str)
        .filter(|k| !KNOWN_KEYS.contains(k))
        .collect();
    if !unknown.is_empty() {
        notes.push(format!(
            "upstream \"{name}\": keys ignored: {} (read: {})",
            unknown.join(", "),
            KNOWN_KEYS.join(", ")
        ));
    }
    let kind = match entry.get("type").or_else(|| entry.get("transport")) {
        None | Some(Value::Null) => None,
        Some(Value::String(t)) => Some(t.to_ascii_lowercase().replace(['-', '_'], "")),
        Some(other) => return Err(format!("\"type\" must be a string, not {other}")),
    };
    if entry.contains_key("oauth") && !entry.contains_key("url") {
        return Err(
            "\"oauth\" is for HTTP upstreams (\"url\"); a stdio server gets its credentials through \"env\"".to_owned(),
        );
    }
    let transport = match (kind.as_deref(), entry.get("command"), entry.get("url")) {
        (Some("sse"), ..) => {
            return Err("the SSE transport is not supported; use the server's Streamable HTTP endpoint".to_owned());
        }
        (None | Some("stdio"), Some(command), None) => Transport::Stdio {
            command: string(command, "command")?,
            args: strings(entry.get("args"), "args")?,
            env: pairs(entry.get("env"), "env")?,
            cwd: entry
                .get("cwd")
                .map(|c| string(c, "cwd").map(PathBuf::from))
                .transpose()?,
        },
        (None | Some("http" | "streamablehttp"), None, Some(url)) => {
            let url = string(url, "url")?;
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return Err(format!("\"url\" must be http:// or https://, not {url}"));
            }
            let headers = pairs(entry.get("headers"), "headers")?;
            let oauth = super::oauth::settings::parse(entry.get("oauth"))?;
            if oauth.is_some() && headers.iter().any(|(n, _)| n.eq_ignore_ascii_case("authorization")) {
                return Err("it has both \"oauth\" and an Authorization header; keep one".to_owned());
            }
            Transport::Http { url, headers, oauth }
        }
        (_, Some(_), Some(_)) => return Err("it has both \"command\" and \"url\"; keep one".to_owned()),
        (_, None, None) => return Err("it has neither \"command\" nor \"url\"".to_owned()),
        (Some(other), ..) => return Err(format!("transport \"{other}\" does not fit its other keys")),
    };
    Ok(Server {
        name: name.to_owned(),
        prefix,
        transport,
        tools: filter(entry.get("tools"))?,
        accept_changes: match entry.get("acceptChanges") {
            None | Some(Value::Null) => false,
            Some(Value::Bool(b)) => *b,
            Some(other) => return Err(format!("\"acceptChanges\" must be true or false, not {other}")),
        },
        max_description: match entry.get("maxDescription") {
            None | Some(Value::Null) => None,
            Some(v) => match v.as_u64() {
                Some(n) if (1..=MAX_DESCRIPTION_CAP).contains(&n) => Some(n as usize),
                _ => {
                    return Err(format!(
                        "\"maxDescription\" must be a number of characters from 1 to {MAX_DESCRIPTION_CAP}, not {v}"
                    ));
                }
            },
        },
    })
}

fn string(v: &Value, key: &str) -> Result<String, String> {
    match v {
        Value::String(s) if !s.trim().is_empty() => Ok(s.clone()),
        _ => Err(format!("\"{key}\" must be a non-empty string")),
    }
}

fn strings(v: Option<&Value>, key: &str) -> Result<Vec<String>, String> {
    match v {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .map(|i| i.as_str().map(str::to_owned))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| format!("\"{key}\" must be an array of strings")),
        Some(_) => Err(format!("\"{key}\" must be an array of strings")),
    }
}

fn pairs(v: Option<&Value>, key: &str) -> Result<Vec<(String, String)>, String> {
    let map = match v {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Object(map)) => map,
        Some(_) => return Err(format!("\"{key}\" must be an object of strings")),
    };
    map.iter()
        .map(|(k, v)| match v {
            Value::String(s) => Ok((k.clone(), s.clone())),
            Value::Number(n) => Ok((k.clone(), n.to_string())),
            Value::Bool(b) => Ok((k.clone(), b.to_string())),
            _ => Err(format!("\"{key}\".\"{k}\" must be a string")),
        })
        .collect()
}

/// `tools`: an array (allow globs) or `{"allow": [...], "deny": [...]}`.
fn filter(v: Option<&Value>) -> Result<Filter, String> {
    match v {
        None | Some(Value::Null) => Ok(Filter::default()),
        Some(Value::Array(_)) => Ok(Filter {
            allow: strings(v, "tools")?,
            deny: Vec::new(),
        }),
        Some(Value::Object(map)) => {
            let get = |k: &str| strings(map.get(k), &format!("tools.{k}"));
            if let Some(extra) = map.keys().find(|k| !matches!(k.as_str(), "allow" | "deny")) {
                return Err(format!("\"tools\" has an unknown key \"{extra}\" (allow, deny)"));
            }
            Ok(Filter {
                allow: get("allow")?,
                deny: get("deny")?,
            })
        }
        Some(_) => Err("\"tools\" must be an array of globs or {\"allow\": [...], \"deny\": [...]}".to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn globs_that_match_no_tool_are_named() {
        let filter = Filter {
            allow: vec!["get-*".into(), "echo".into()],
            deny: vec!["get-env".into(), "get-secrets".into()],
        };
        let names = ["echo", "get-env", "get-sum"];
        assert_eq!(filter.unmatched(&names), [("deny", "get-secrets")]);
        assert_eq!(Filter::default().unmatched(&names), []);
    }

    #[test]
    fn reads_stdio_and_http_entries_and_keeps_going_past_a_bad_one() {
        let text = json!({"mcpServers": {
            "files": {"command": "npx", "args": ["-y", "fs"], "env": {"ROOT": "/tmp", "N": 3}, "disabled": false},
            "remote": {"type": "http", "url": "https://example.com/mcp", "headers": {"Authorization": "Bearer x"}},
            "vscode": {"type": "streamable-http", "url": "http://127.0.0.1:1/mcp"},
            "broken": {"args": []},
            "old": {"type": "sse", "url": "http://h/sse"},
            "both": {"command": "a", "url": "http://h"},
        }})
        .to_string();
        let (servers, notes) = parse(&text).unwrap();
        let names: Vec<_> = servers.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["files", "remote", "vscode"]);
        assert_eq!(
            servers[0].transport,
            Transport::Stdio {
                command: "npx".into(),
                args: vec!["-y".into(), "fs".into()],
                env: vec![("ROOT".into(), "/tmp".into()), ("N".into(), "3".into())],
                cwd: None
            }
        );
        assert!(matches!(&servers[1].transport, Transport::Http { headers, .. } if headers[0].0 == "Authorization"));
        let all = notes.join("\n");
        assert!(all.contains("\"files\": keys ignored: disabled"), "{all}");
        for bad in ["broken", "old", "both"] {
            assert!(all.contains(&format!("upstream \"{bad}\" left out")), "{all}");
        }
        assert!(parse("[]").is_err() && parse("{").is_err());
    }

    #[test]
    fn two_names_with_one_prefix_keep_the_first() {
        let text = json!({"mcpServers": {"my.server": {"command": "a"}, "my-server": {"command": "b"}}}).to_string();
        let (servers, notes) = parse(&text).unwrap();
        assert_eq!(servers.len(), 1);
        assert!(notes[0].contains("rename one"), "{notes:?}");
    }

    #[test]
    fn tool_filters_allow_then_deny_by_glob() {
        let f = filter(Some(&json!({"allow": ["get_*", "echo"], "deny": ["*secret*"]}))).unwrap();
        assert!(f.admits("echo") && f.admits("get_file"));
        assert!(!f.admits("get_secret_file") && !f.admits("put_file"));
        assert!(filter(Some(&json!(["a?c"]))).unwrap().admits("abc"));
        assert!(Filter::default().admits("anything"));
        assert!(filter(Some(&json!({"only": []}))).is_err());
    }
}
