//! The MCP client side of `shell` and `demo`: a connection to a toolgate, or to any MCP
//! server, over real stdio (a child process: this binary, or a command the user named)
//! or over Streamable HTTP, through rmcp's client. It checks that an HTTP server can be
//! reached before it speaks MCP to it, finds the server's meta-tool, and turns each
//! answer into text for people. It does not print, prompt or decide what a command
//! means: `shell` and `demo` do.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::Stdio;

use rmcp::model::{CallToolRequestParams, CallToolResult, JsonObject, Tool as McpTool};
use rmcp::service::ClientInitializeError;
use rmcp::transport::streamable_http_client::{StreamableHttpClientTransportConfig, StreamableHttpError};
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{RoleClient, ServiceExt, service::RunningService};
use serde_json::{Value, json};

use crate::limits::{CLIENT_LIST_PAGES, CLIENT_REACH_TIMEOUT};

/// Which server a client command talks to.
#[derive(Debug, Clone)]
pub enum Target {
    /// A child process speaking MCP on its stdin and stdout.
    Child {
        /// The program: this binary (`std::env::current_exe`) or the user's command.
        program: PathBuf,
        /// Its arguments.
        args: Vec<OsString>,
        /// Variables set for it on top of this process's environment (the settings
        /// given as flags, so a child toolgate runs with them).
        env: Vec<(OsString, OsString)>,
        /// Variables removed from its environment (`TOOLGATE_HTTP`: the child must
        /// serve stdio).
        remove: Vec<OsString>,
    },
    /// A server over Streamable HTTP.
    Http {
        /// Its MCP endpoint; a URL with no path gets `/mcp`.
        url: String,
        /// Sent as `Authorization: Bearer`. By default, none (anonymous).
        key: Option<String>,
    },
}

impl Target {
    /// A connection over HTTP to `url` (a bare `http://host:port` means its `/mcp`).
    pub fn http(url: &str, key: Option<String>) -> Target {
        let trimmed = url.trim();
        let url = match reqwest::Url::parse(trimmed) {
            Ok(mut parsed) if matches!(parsed.path(), "" | "/") => {
                parsed.set_path("/mcp");
                parsed.to_string()
            }
            _ => trimmed.to_owned(),
        };
        Target::Http { url, key }
    }

    /// The target in words: the URL, or the command line.
    pub fn describe(&self) -> String {
        match self {
            Target::Http { url, .. } => url.clone(),
            Target::Child { program, args, .. } => {
                let mut words = vec![program.display().to_string()];
                words.extend(args.iter().map(|a| a.to_string_lossy().into_owned()));
                format!("{} (over stdio)", words.join(" "))
            }
        }
    }
}

/// What a `tools/call` answered, read for people and programs.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// True if and only if the result had `isError` set.
    pub is_error: bool,
    /// The text blocks joined (other blocks named by kind).
    pub text: String,
    /// `structuredContent`, or `null` when there was none.
    pub structured: Value,
}

impl Outcome {
    fn from_result(result: CallToolResult) -> Outcome {
        let text = result
            .content
            .iter()
            .map(|block| match block.as_text() {
                Some(t) => t.text.clone(),
                None => "[a non-text content block]".to_owned(),
            })
            .collect::<Vec<_>>()
            .join("\n");
        let structured = result.structured_content.unwrap_or(Value::Null);
        let text = if text.is_empty() && !structured.is_null() {
            serde_json::to_string_pretty(&structured).unwrap_or_default()
        } else {
            text
        };
        Outcome {
            is_error: result.is_error == Some(true),
            text,
            structured,
        }
    }

    /// The failure's stable code (`INVALID_PARAMS`, …), when it carries one.
    pub fn code(&self) -> Option<&str> {
        self.structured.get("code").and_then(Value::as_str)
    }

    /// The result text when it succeeded, else the text as an error.
    pub fn into_result(self) -> Result<String, String> {
        if self.is_error { Err(self.text) } else { Ok(self.text) }
    }
}

type Client = RunningService<RoleClient, ()>;

/// A live MCP session with the tools it listed when it began.
pub struct Connection {
    client: Client,
    tools: Vec<McpTool>,
    meta: Option<String>,
    target: Target,
}

impl Connection {
    /// Reaches `target` (for HTTP, a TCP connection first, so an absent server is one
    /// clear sentence), completes the MCP handshake and lists every page of tools.
    /// `meta_name` is the meta-tool expected (`TOOLGATE_NAME`); when the server lists no
    /// tool of that name, the one whose `command` argument offers `search` and `schema`
    /// is taken, if any.
    pub async fn open(target: Target, meta_name: &str) -> Result<Connection, String> {
        let client = match &target {
            Target::Child {
                program,
                args,
                env,
                remove,
            } => {
                let mut cmd = tokio::process::Command::new(program);
                // Its own process group: Ctrl-C at the shell's terminal interrupts the
                // shell's call, not the server.
                cmd.args(args).kill_on_drop(true).process_group(0);
                for name in remove {
                    cmd.env_remove(name);
                }
                cmd.envs(env.iter().map(|(k, v)| (k, v)));
                let (transport, _) = TokioChildProcess::builder(cmd)
                    .stderr(Stdio::inherit())
                    .spawn()
                    .map_err(|e| format!("cannot start {}: {e}", program.display()))?;
                ().serve(transport).await.map_err(|e| {
                    format!(
                        "{} did not complete the MCP handshake: {e} (its own message, if any, is above)",
                        target.describe()
                    )
                })?
            }
            Target::Http { url, key } => {
                reach(url).await?;
                let mut config = StreamableHttpClientTransportConfig::with_uri(url.as_str());
                if let Some(key) = key {
                    config = config.auth_header(key.clone());
                }
                let transport = StreamableHttpClientTransport::from_config(config);
                ().serve(transport).await.map_err(|e| match (wants_key(&e), key) {
                    (true, None) => format!("{url} wants a key (401): pass --key or set TOOLGATE_SHELL_KEY"),
                    (true, Some(_)) => format!("{url} refused the key (401): it is not in the server's keys file"),
                    (false, _) => format!("{url} did not complete the MCP handshake: {e}"),
                })?
            }
        };
        let tools = client
            .list_all_tools()
            .await
            .map_err(|e| format!("tools/list failed: {e}"))?;
        let meta = find_meta(&tools, meta_name);
        Ok(Connection {
            client,
            tools,
            meta,
            target,
        })
    }

    /// The target this connection reached.
    pub fn target(&self) -> &Target {
        &self.target
    }

    /// The server's name and version as it gave them in `initialize`.
    pub fn server(&self) -> String {
        let info = self.client.peer_info();
        match info.as_ref().and_then(|info| info.server_info.as_ref()) {
            Some(server) => format!("{} {}", server.name, server.version),
            None => "an unnamed server".to_owned(),
        }
    }

    /// Every tool `tools/list` showed when the session began, in the server's order.
    pub fn tools(&self) -> &[McpTool] {
        &self.tools
    }

    /// The meta-tool's name, when the server has one.
    pub fn meta_name(&self) -> Option<&str> {
        self.meta.as_deref()
    }

    /// Returns true if and only if `tools/list` advertised a tool named `name`.
    pub fn is_advertised(&self, name: &str) -> bool {
        self.tools.iter().any(|t| t.name == name)
    }

    /// Calls the tool `name` with `args`. A protocol or transport failure is an `Err`
    /// sentence; a failed run is an `Outcome` with `is_error`.
    pub async fn call(&self, name: &str, args: JsonObject) -> Result<Outcome, String> {
        let result = self
            .client
            .call_tool(CallToolRequestParams::new(name.to_owned()).with_arguments(args))
            .await
            .map_err(|e| format!("tools/call {name}: {e}"))?;
        Ok(Outcome::from_result(result))
    }

    /// Calls the meta-tool with `args` (an object holding `command`).
    pub async fn meta(&self, args: Value) -> Result<Outcome, String> {
        let name = self.meta.as_deref().ok_or_else(|| {
            "this server has no toolgate meta-tool (is it a toolgate? --name/TOOLGATE_NAME names the meta-tool)"
                .to_owned()
        })?;
        let Value::Object(args) = args else {
            return Err("the meta-tool's arguments must be a JSON object".to_owned());
        };
        self.call(name, args).await
    }

    /// Runs the tool `slug` with `params`: a direct `tools/call` when the server
    /// advertises it, else the meta-tool's `run` (which reaches every tool).
    pub async fn run(&self, slug: &str, params: JsonObject) -> Result<Outcome, String> {
        if self.is_advertised(slug) || self.meta.is_none() {
            self.call(slug, params).await
        } else {
            self.meta(json!({"command": "run", "slug": slug, "params": params}))
                .await
        }
    }

    /// Every row of the meta-tool's `list`, all pages; empty when there is no meta-tool.
    pub async fn catalogue(&self) -> Result<Vec<Value>, String> {
        if self.meta.is_none() {
            return Ok(Vec::new());
        }
        let mut rows = Vec::new();
        let mut args = json!({"command": "list"});
        for _ in 0..CLIENT_LIST_PAGES {
            let page = self.meta(args.clone()).await?;
            if page.is_error {
                return Err(page.text);
            }
            if let Some(tools) = page.structured.get("tools").and_then(Value::as_array) {
                rows.extend(tools.iter().cloned());
            }
            match page.structured.get("next_cursor").and_then(Value::as_str) {
                Some(next) => args["cursor"] = json!(next),
                None => return Ok(rows),
            }
        }
        Err(format!(
            "the catalogue list did not end within {CLIENT_LIST_PAGES} pages"
        ))
    }

    /// Names of every tool reachable: advertised ones, then the catalogue's others.
    pub async fn names(&self) -> Result<Vec<String>, String> {
        let mut names: Vec<String> = self.tools.iter().map(|t| t.name.to_string()).collect();
        for row in self.catalogue().await? {
            if let Some(slug) = row.get("slug").and_then(Value::as_str)
                && !names.iter().any(|n| n == slug)
            {
                names.push(slug.to_owned());
            }
        }
        Ok(names)
    }

    /// Ends the session (the child exits when its stdin closes).
    pub async fn close(self) {
        let _ = self.client.cancel().await;
    }
}

/// The meta-tool among `tools`: the one named `expected`, else the first whose `command`
/// argument enumerates `search` and `schema`.
fn find_meta(tools: &[McpTool], expected: &str) -> Option<String> {
    if tools.iter().any(|t| t.name == expected) {
        return Some(expected.to_owned());
    }
    tools
        .iter()
        .find(|t| {
            let commands = t
                .input_schema
                .get("properties")
                .and_then(|p| p.get("command"))
                .and_then(|c| c.get("enum"))
                .and_then(Value::as_array);
            commands.is_some_and(|c| ["search", "schema"].iter().all(|w| c.iter().any(|v| v == w)))
        })
        .map(|t| t.name.to_string())
}

/// Returns true if and only if the handshake failed because the server answered 401.
fn wants_key(e: &ClientInitializeError) -> bool {
    let ClientInitializeError::TransportError { error, .. } = e else {
        return false;
    };
    matches!(
        error.error.downcast_ref::<StreamableHttpError<reqwest::Error>>(),
        Some(StreamableHttpError::AuthRequired(_))
    )
}

/// Opens (and drops) a TCP connection to `url`'s host and port, so an absent server is
/// one sentence naming the URL and the likely cause rather than a transport error.
async fn reach(url: &str) -> Result<(), String> {
    let parsed = reqwest::Url::parse(url).map_err(|e| format!("{url} is not a URL: {e}"))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(format!("{url}: only http:// and https:// URLs are served over MCP"));
    }
    let (Some(host), Some(port)) = (parsed.host_str(), parsed.port_or_known_default()) else {
        return Err(format!("{url} names no host"));
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let unreachable = |why: String| format!("cannot reach {url}: {why} — is `toolgate --http` running there?");
    let connect = async {
        let addrs = tokio::net::lookup_host((host, port))
            .await
            .map_err(|e| format!("cannot resolve {host}: {e}"))?;
        let mut last = format!("{host} resolves to no address");
        for addr in addrs {
            match tokio::net::TcpStream::connect(addr).await {
                Ok(_) => return Ok(()),
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => last = "connection refused".to_owned(),
                Err(e) => last = e.to_string(),
            }
        }
        Err(last)
    };
    match tokio::time::timeout(CLIENT_REACH_TIMEOUT, connect).await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(why)) => Err(unreachable(why)),
        Err(_) => Err(unreachable(format!(
            "no answer within {} s",
            CLIENT_REACH_TIMEOUT.as_secs()
        ))),
    }
}

/// The first sentence of `text`, at most `max` characters (cut with `…`).
pub fn summary(text: &str, max: usize) -> String {
    let line = text.lines().next().unwrap_or_default();
    let sentence = match line.find(". ") {
        Some(end) => &line[..=end],
        None => line,
    };
    if sentence.chars().count() <= max {
        sentence.to_owned()
    } else {
        let cut: String = sentence.chars().take(max.saturating_sub(1)).collect();
        format!("{cut}…")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bare_url_means_its_mcp_endpoint() {
        let check = |given: &str, expected: &str| match Target::http(given, None) {
            Target::Http { url, .. } => assert_eq!(url, expected, "{given}"),
            other => panic!("{other:?}"),
        };
        check("http://127.0.0.1:8765", "http://127.0.0.1:8765/mcp");
        check("http://127.0.0.1:8765/", "http://127.0.0.1:8765/mcp");
        check("http://127.0.0.1:8765/mcp", "http://127.0.0.1:8765/mcp");
        check("http://gw.example/custom/path", "http://gw.example/custom/path");
        check("not a url", "not a url");
    }

    #[test]
    fn a_summary_is_the_first_sentence_within_its_width() {
        assert_eq!(summary("Encodes text. Decodes it too.", 80), "Encodes text.");
        assert_eq!(summary("abcdef", 4), "abc…");
        assert_eq!(summary("", 4), "");
    }

    #[tokio::test]
    async fn a_closed_port_is_one_sentence_naming_the_url() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        drop(listener);
        let why = reach(&url).await.unwrap_err();
        assert_eq!(
            why,
            format!("cannot reach {url}: connection refused — is `toolgate --http` running there?")
        );
    }
}
