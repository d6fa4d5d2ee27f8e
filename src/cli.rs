//! The command line: every flag and subcommand, each flag with its environment
//! variable (`docs/reference/settings.md`). Part of the binary, not the library: it only names settings;
//! `config::Config` checks them.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::parser::ValueSource;
use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand};
use toolgate::commands::client::Target;
use toolgate::config::Raw;
use toolgate::limits;

/// An MCP gateway to a catalogue of tools.
#[derive(Debug, Parser)]
#[command(name = "toolgate", about, disable_version_flag = true)]
pub struct Cli {
    /// The catalogue: `embedded`, a folder, a `.json` file, or an http(s):// API base.
    #[arg(long, env = "TOOLGATE_CATALOGUE", global = true)]
    pub catalogue: Option<String>,
    /// Catalogue API base (bare host or its /api form).
    #[arg(long, env = "TOOLGATE_API_URL", global = true)]
    pub api_url: Option<String>,
    /// Sent to the API as `Authorization: Bearer`.
    #[arg(long, env = "TOOLGATE_API_KEY", global = true, hide_env_values = true)]
    pub api_key: Option<String>,
    /// Per-request timeout for the API, in milliseconds.
    #[arg(long, env = "TOOLGATE_TIMEOUT_MS", global = true, default_value_t = limits::HTTP_TIMEOUT.as_millis() as u64)]
    pub timeout_ms: u64,
    /// Catalogue lifetime in milliseconds; 0 fetches on every request.
    #[arg(long, env = "TOOLGATE_CACHE_TTL_MS", global = true, default_value_t = limits::CACHE_TTL.as_millis() as u64)]
    pub cache_ttl_ms: u64,
    /// Where code from an HTTP catalogue runs: remote, local or auto.
    #[arg(long, env = "TOOLGATE_EXECUTION", global = true, default_value = "remote")]
    pub execution: String,
    /// Which tools are listed: all, meta or auto.
    #[arg(long, env = "TOOLGATE_ADVERTISE", global = true, default_value = "auto")]
    pub advertise: String,
    /// Under `auto`, the most bytes `tools/list` may spend on tools.
    #[arg(long, env = "TOOLGATE_ADVERTISE_BYTES", global = true, default_value_t = limits::ADVERTISE_BYTES as u64)]
    pub advertise_bytes: u64,
    /// Print the version and which sandbox layers this kernel allows, then exit.
    #[arg(short = 'V', long, action = clap::ArgAction::SetTrue)]
    pub version: bool,
    /// Runtime tools to expose: js (run_javascript, run_typescript), nyxilum (nyxilum_*).
    #[arg(long, env = "TOOLGATE_RUNTIMES", global = true, default_value = "")]
    pub runtimes: String,
    /// Name of the meta-tool and the resource URI scheme.
    #[arg(long, env = "TOOLGATE_NAME", global = true, default_value = "toolgate")]
    pub name: String,
    /// Wall-clock deadline of one local JavaScript run, in milliseconds.
    #[arg(long, env = "TOOLGATE_JS_TIMEOUT_MS", global = true, default_value_t = limits::JS_WALL_CLOCK.as_millis() as u64)]
    pub js_timeout_ms: u64,
    /// Deadline of one `fetch` from JavaScript, body included, in milliseconds.
    #[arg(long, env = "TOOLGATE_FETCH_TIMEOUT_MS", global = true, default_value_t = limits::FETCH_TIMEOUT.as_millis() as u64)]
    pub fetch_timeout_ms: u64,
    /// Characters of JSON kept of the value a JavaScript run returns.
    #[arg(long, env = "TOOLGATE_RESULT_CHARS", global = true, default_value_t = limits::RESULT_CHARS as u64)]
    pub result_chars: u64,
    /// JavaScript runs at once, across every client; more wait within their deadline.
    #[arg(long, env = "TOOLGATE_JS_CONCURRENT_RUNS", global = true, default_value_t = limits::JS_CONCURRENT_RUNS as u64)]
    pub js_concurrent_runs: u64,
    /// NyxilumNode runs at once, across every client; more wait within their deadline.
    #[arg(long, env = "TOOLGATE_NYX_CONCURRENT_RUNS", global = true, default_value_t = limits::NYX_CONCURRENT_RUNS as u64)]
    pub nyx_concurrent_runs: u64,
    /// Tool calls one snippet's code may make (`tools.call`, `tools.<name>`).
    #[arg(long, env = "TOOLGATE_CODE_CALLS", global = true, default_value_t = limits::CODE_CALLS as u64)]
    pub code_calls: u64,
    /// Tool calls one snippet's code may have in flight at once.
    #[arg(long, env = "TOOLGATE_CODE_PARALLEL", global = true, default_value_t = limits::CODE_PARALLEL as u64)]
    pub code_parallel: u64,
    /// Heap of all running JavaScript engines together, in MiB.
    #[arg(long, env = "TOOLGATE_JS_TOTAL_HEAP_MB", global = true, default_value_t = (limits::JS_TOTAL_HEAP_BYTES / (1024 * 1024)) as u64)]
    pub js_total_heap_mb: u64,
    /// Internal addresses JavaScript `fetch` may reach despite the address policy:
    /// comma-separated host:port, ip, ip:port ([v6]:port) or CIDR (10.1.2.0/24).
    #[arg(long, env = "TOOLGATE_FETCH_ALLOW", global = true, default_value = "")]
    pub fetch_allow: String,
    /// Hosts JavaScript `fetch` passes the trace context to (traceparent, tracestate),
    /// when traces are exported: comma-separated host or host:port, or *. None by default.
    #[arg(long, env = "TOOLGATE_FETCH_TRACE", global = true, default_value = "")]
    pub fetch_trace: String,
    /// When traces are exported: the steps of each call too (admission, the run, its
    /// waits for a place, validation, execution), a span each.
    #[arg(long, env = "TOOLGATE_TRACE_STEPS", global = true, action = clap::ArgAction::SetTrue, value_parser = clap::builder::FalseyValueParser::new())]
    pub trace_steps: bool,
    /// Heap cap of one local JavaScript run, in MiB.
    #[arg(long, env = "TOOLGATE_JS_HEAP_MB", global = true, default_value_t = (limits::JS_HEAP_BYTES / (1024 * 1024)) as u64)]
    pub js_heap_mb: u64,
    /// The NyxilumNode binary (a `.dll` runs through `dotnet`); found under
    /// --nx-ecosystem-root when unset.
    #[arg(long, env = "NX_NODE_PATH", global = true)]
    pub nx_node_path: Option<PathBuf>,
    /// The NyxilumLang checkout whose build output holds NyxilumNode (and its GUIDE.md).
    /// A relative path, the default included, is taken from the working directory toolgate
    /// is started in (an MCP host's own), not from where the binary is.
    #[arg(long, env = "NX_ECOSYSTEM_ROOT", global = true, default_value = "../NyxilumLang")]
    pub nx_ecosystem_root: PathBuf,
    /// An `mcpServers` JSON file (as Claude Desktop, Cursor or VS Code write it): those MCP
    /// servers' tools are served beside the catalogue as SERVER__TOOL.
    #[arg(long, env = "TOOLGATE_UPSTREAMS", global = true, value_name = "FILE")]
    pub upstreams: Option<PathBuf>,
    /// A file of approved upstream tool definitions: each tool is pinned when first seen,
    /// and one whose definition later differs is held until `toolgate upstream approve`.
    #[arg(long, env = "TOOLGATE_PINS", global = true, value_name = "FILE")]
    pub pins: Option<PathBuf>,
    /// With --pins: hold upstream tools seen for the first time too, until approved.
    #[arg(long, env = "TOOLGATE_PINS_HOLD_NEW", global = true, action = clap::ArgAction::SetTrue, value_parser = clap::builder::FalseyValueParser::new())]
    pub pins_hold_new: bool,
    /// The file of OAuth tokens for upstreams whose entry has `oauth` (owner-only, 0600),
    /// written by `toolgate upstream login` and by refreshes. By default,
    /// $XDG_STATE_HOME/toolgate/upstream-tokens.json (~/.local/state/… without it).
    #[arg(long, env = "TOOLGATE_UPSTREAM_TOKENS", global = true, value_name = "FILE")]
    pub upstream_tokens: Option<PathBuf>,
    /// How often upstream servers are pinged, in milliseconds; one that does not answer
    /// within the same time is restarted.
    #[arg(long, env = "TOOLGATE_UPSTREAM_PING_MS", global = true, default_value_t = limits::UPSTREAM_PING.as_millis() as u64)]
    pub upstream_ping_ms: u64,
    /// How long, from the start, requests that list tools, resources or prompts wait for
    /// every upstream server's first connection attempt, in milliseconds; past it they are
    /// answered without the servers still starting.
    #[arg(long, env = "TOOLGATE_UPSTREAM_FIRST_WAIT_MS", global = true, default_value_t = limits::UPSTREAM_FIRST_WAIT.as_millis() as u64)]
    pub upstream_first_wait_ms: u64,
    /// Compiled input schemas kept at once; the least recently used is compiled again
    /// when a call needs it.
    #[arg(long, env = "TOOLGATE_VALIDATORS", global = true, default_value_t = limits::VALIDATORS as u64)]
    pub validators: u64,
    /// How search ranks: hybrid (words and meaning, from the compiled-in model) or
    /// lexical (words only; the model is never loaded).
    #[arg(long, env = "TOOLGATE_SEARCH", global = true, default_value = "hybrid")]
    pub search: String,
    /// Where tool vectors are cached between runs: a directory, or `off`. Default:
    /// $XDG_CACHE_HOME/toolgate, else ~/.cache/toolgate.
    #[arg(long, env = "TOOLGATE_EMBED_CACHE", global = true, value_name = "DIR")]
    pub embed_cache: Option<String>,
    /// The longest embedding a catalogue's tools may be estimated to take, in
    /// milliseconds; a catalogue over it is searched lexically.
    #[arg(long, env = "TOOLGATE_EMBED_BUDGET_MS", global = true, default_value_t = limits::EMBED_BUDGET.as_millis() as u64)]
    pub embed_budget_ms: u64,
    /// Diagnostics to stderr at debug level.
    #[arg(long, env = "TOOLGATE_DEBUG", global = true, action = clap::ArgAction::SetTrue, value_parser = clap::builder::FalseyValueParser::new())]
    pub debug: bool,
    /// Diagnostics and the HTTP access log as `text` lines or `json` objects.
    #[arg(long, env = "TOOLGATE_LOG_FORMAT", global = true, default_value = "text", value_parser = ["text", "json"])]
    pub log_format: String,
    /// Serve MCP over Streamable HTTP at ADDR (default 127.0.0.1:8765; port 0 picks a
    /// free one, printed on stderr) at /mcp, instead of stdio.
    #[arg(long, env = "TOOLGATE_HTTP", value_name = "ADDR", num_args = 0..=1, default_missing_value = limits::HTTP_LISTEN)]
    pub http: Option<String>,
    /// Over HTTP, Host values accepted besides the loopback names (comma-separated:
    /// gw.example.com, gw.example.com:443).
    #[arg(long, env = "TOOLGATE_HTTP_ALLOWED_HOSTS", global = true, default_value = "")]
    pub http_allowed_hosts: String,
    /// Over HTTP, browser Origins accepted besides loopback pages (comma-separated, with
    /// scheme: https://app.example.com:443).
    #[arg(long, env = "TOOLGATE_HTTP_ALLOWED_ORIGINS", global = true, default_value = "")]
    pub http_allowed_origins: String,
    /// Over HTTP, how long a session may sit unused before it ends, in milliseconds.
    #[arg(long, env = "TOOLGATE_HTTP_SESSION_IDLE_MS", global = true, default_value_t = limits::HTTP_SESSION_IDLE.as_millis() as u64)]
    pub http_session_idle_ms: u64,
    /// Over HTTP, MCP sessions alive at once; a new one beyond this is answered 503.
    #[arg(long, env = "TOOLGATE_HTTP_MAX_SESSIONS", global = true, default_value_t = limits::HTTP_MAX_SESSIONS as u64)]
    pub http_max_sessions: u64,
    /// Over HTTP, MCP sessions one principal (an API key, an OAuth subject, or an
    /// anonymous client address, an IPv6 /64 counting as one) may hold at once; by
    /// default an eighth of the sessions, at least one.
    #[arg(long, env = "TOOLGATE_HTTP_MAX_SESSIONS_PER_PRINCIPAL", global = true)]
    pub http_max_sessions_per_principal: Option<u64>,
    /// Over HTTP, how long a request's SSE stream stays open while its call runs, in
    /// milliseconds, before the server closes it and the client resumes it with
    /// Last-Event-ID (SEP-1699 polling); by default it stays open until the answer.
    #[arg(long, env = "TOOLGATE_HTTP_SSE_POLL_MS", global = true)]
    pub http_sse_poll_ms: Option<u64>,
    /// Both HTTP servers: time a request body may take, in milliseconds, before it must
    /// keep arriving at 8 KiB a second (each 8 KiB received buys a second more).
    #[arg(long, env = "TOOLGATE_HTTP_BODY_TIMEOUT_MS", global = true, default_value_t = limits::HTTP_BODY_TIMEOUT.as_millis() as u64)]
    pub http_body_timeout_ms: u64,
    /// Both HTTP servers: connections held at once; one beyond is answered 503.
    #[arg(long, env = "TOOLGATE_HTTP_MAX_CONNECTIONS", global = true, default_value_t = limits::HTTP_MAX_CONNECTIONS as u64)]
    pub http_max_connections: u64,
    /// Both HTTP servers: connections one client address may hold at once.
    #[arg(long, env = "TOOLGATE_HTTP_MAX_CONNECTIONS_PER_ADDRESS", global = true, default_value_t = limits::HTTP_MAX_CONNECTIONS_PER_ADDRESS as u64)]
    pub http_max_connections_per_address: u64,
    /// Both HTTP servers: time allowed to send a request head (and to idle between
    /// requests on a kept-alive connection), in milliseconds.
    #[arg(long, env = "TOOLGATE_HTTP_HEADER_TIMEOUT_MS", global = true, default_value_t = limits::HTTP_HEADER_TIMEOUT.as_millis() as u64)]
    pub http_header_timeout_ms: u64,
    /// Both HTTP servers: the keys file (`toolgate keys new` writes it). Without one,
    /// every caller is anonymous.
    #[arg(long, env = "TOOLGATE_KEYS_FILE", global = true)]
    pub keys_file: Option<PathBuf>,
    /// Both HTTP servers: serve callers without a key (30 calls a minute per address);
    /// needed to serve a non-loopback address without a keys file.
    #[arg(long, env = "TOOLGATE_ALLOW_ANONYMOUS", global = true, action = clap::ArgAction::SetTrue, value_parser = clap::builder::FalseyValueParser::new())]
    pub allow_anonymous: bool,
    /// Both HTTP servers: requests a minute per principal (a key, or an anonymous address).
    #[arg(long, env = "TOOLGATE_REQUESTS_PER_MINUTE", global = true, default_value_t = limits::REQUESTS_PER_MINUTE.into())]
    pub requests_per_minute: u64,
    /// Both HTTP servers: runs a minute per anonymous client address.
    #[arg(long, env = "TOOLGATE_ANONYMOUS_PER_MINUTE", global = true, default_value_t = limits::ANONYMOUS_PER_MINUTE.into())]
    pub anonymous_per_minute: u64,
    /// Both HTTP servers: runs one principal may have going at once (more wait, within
    /// the run deadline); 0 is half of --js-concurrent-runs.
    #[arg(long, env = "TOOLGATE_PRINCIPAL_CONCURRENT_RUNS", global = true, default_value_t = 0)]
    pub principal_concurrent_runs: u64,
    /// Both HTTP servers: turns OAuth on. The authorization server's signing keys: a
    /// JWKS file, or an https:// URL (http:// to loopback hosts only).
    #[arg(long, env = "TOOLGATE_OAUTH_JWKS", global = true, value_name = "FILE|URL")]
    pub oauth_jwks: Option<String>,
    /// With --oauth-jwks: the `iss` every token must carry (required).
    #[arg(long, env = "TOOLGATE_OAUTH_ISSUER", global = true)]
    pub oauth_issuer: Option<String>,
    /// With --oauth-jwks: the `aud` values accepted, comma-separated (required; usually
    /// this server's resource URL, https://gw.example.com/mcp).
    #[arg(long, env = "TOOLGATE_OAUTH_AUDIENCE", global = true)]
    pub oauth_audience: Option<String>,
    /// With --oauth-jwks: the authorization servers the protected-resource metadata names,
    /// comma-separated (default: the issuer).
    #[arg(long, env = "TOOLGATE_OAUTH_AUTHORIZATION_SERVERS", global = true)]
    pub oauth_authorization_servers: Option<String>,
    /// With --oauth-jwks: runs a minute each OAuth principal (each token subject) may start.
    #[arg(long, env = "TOOLGATE_OAUTH_PER_MINUTE", global = true, default_value_t = limits::KEY_PER_MINUTE.into())]
    pub oauth_per_minute: u64,
    /// With --oauth-jwks: the base URL clients reach this server at (https://gw.example.com,
    /// no path), named in the OAuth metadata and challenges; default http:// and the
    /// request's Host.
    #[arg(long, env = "TOOLGATE_PUBLIC_URL", global = true)]
    pub public_url: Option<String>,
    /// With --oauth-jwks: the tools each token scope admits, `SCOPE=PATTERNS` entries
    /// separated by `;` (`github:read=github__get_*,github__list_*;ops=*`); a token then
    /// sees and runs only what its mapped scopes admit (default: every tool).
    #[arg(long, env = "TOOLGATE_OAUTH_TOOL_SCOPES", global = true)]
    pub oauth_tool_scopes: Option<String>,
    /// Both HTTP servers: the Redis a fleet of replicas shares its state in
    /// (redis://[user:password@]host:port/db, or rediss:// for TLS). Unset: this process
    /// keeps its state itself.
    #[arg(
        long,
        env = "TOOLGATE_REDIS",
        global = true,
        value_name = "URL",
        hide_env_values = true
    )]
    pub redis: Option<String>,
    /// With --redis: the prefix of every key this fleet writes (default `toolgate:`), so
    /// several fleets can share one Redis.
    #[arg(long, env = "TOOLGATE_REDIS_PREFIX", global = true)]
    pub redis_prefix: Option<String>,
    /// With --redis: a file holding the Redis password (one line), in place of one in the
    /// URL: a mounted secret, kept out of the environment.
    #[arg(long, env = "TOOLGATE_REDIS_PASSWORD_FILE", global = true, value_name = "FILE")]
    pub redis_password_file: Option<std::path::PathBuf>,
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Work with catalogues.
    Catalogue {
        #[command(subcommand)]
        command: CatalogueCommand,
    },
    /// Manage the API keys of the HTTP servers.
    Keys {
        #[command(subcommand)]
        command: KeysCommand,
    },
    /// Work with the upstream MCP servers of TOOLGATE_UPSTREAMS.
    Upstream {
        #[command(subcommand)]
        command: UpstreamCommand,
    },
    /// An interactive MCP client: tools, search, schema, call, history, diff, with tab
    /// completion. Reads commands from --file, or from stdin when it is not a terminal.
    Shell {
        #[command(flatten)]
        connect: Connect,
        /// Run the commands in FILE (`-` is stdin) instead of prompting; every command
        /// runs, and any that failed makes the exit status non-zero.
        #[arg(long, value_name = "FILE")]
        file: Option<PathBuf>,
        /// Keep the prompt's line history in FILE. By default, none is kept.
        #[arg(long, env = "TOOLGATE_SHELL_HISTORY", value_name = "FILE")]
        history: Option<PathBuf>,
    },
    /// Walk the path an agent takes against a real server, with no model: discover,
    /// search, schema, run, batch, recover from an error. Fails if any step misbehaves.
    Demo {
        #[command(flatten)]
        connect: Connect,
    },
}

/// Which server `shell` and `demo` talk to: by default this toolgate, started as a stdio
/// child with the current settings.
#[derive(Debug, Args)]
pub struct Connect {
    /// A server over Streamable HTTP, e.g. http://127.0.0.1:8765/mcp (a URL without a
    /// path means its /mcp).
    #[arg(long, value_name = "URL", conflicts_with = "command")]
    pub url: Option<String>,
    /// The key sent with --url as `Authorization: Bearer` (from `toolgate keys new`).
    /// TOOLGATE_API_KEY is never sent: it is the catalogue API's key, not a gateway's.
    #[arg(long, env = "TOOLGATE_SHELL_KEY", hide_env_values = true)]
    pub key: Option<String>,
    /// Start this MCP server command instead, over stdio (after `--`).
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<OsString>,
}

impl Connect {
    /// The target: `--url`, the command after `--`, else this program with `flags` (the
    /// settings given as flags, as variables) and without `TOOLGATE_HTTP`, so the child
    /// serves stdio.
    pub fn target(self, flags: Vec<(OsString, OsString)>) -> Result<Target, String> {
        if let Some(url) = self.url {
            return Ok(Target::http(&url, self.key));
        }
        let mut words = self.command.into_iter();
        match words.next() {
            Some(program) => Ok(Target::Child {
                program: program.into(),
                args: words.collect(),
                env: Vec::new(),
                remove: Vec::new(),
            }),
            None => Ok(Target::Child {
                program: std::env::current_exe().map_err(|e| format!("cannot find this program's path: {e}"))?,
                args: Vec::new(),
                env: flags,
                remove: vec!["TOOLGATE_HTTP".into()],
            }),
        }
    }
}

#[derive(Debug, Subcommand)]
pub enum KeysCommand {
    /// Append a new key to a keys file (created if missing; only the key's SHA-256 is
    /// stored) and print the key once, alone, on stdout.
    New {
        /// What the key may do, comma-separated: search, run, runtimes, admin.
        #[arg(long)]
        scopes: String,
        /// The key's id, shown in logs and history in place of the key (default key-N).
        #[arg(long)]
        id: Option<String>,
        /// The keys file.
        #[arg(long)]
        file: PathBuf,
        /// The only tools the key may see and run, comma-separated globs (`*` any run of
        /// characters, `?` any one), `!` before one that excludes:
        /// 'github__*,!github__delete_*'. By default, every tool its scopes allow.
        #[arg(long)]
        tools: Option<String>,
    },
}

#[derive(Debug, Subcommand)]
pub enum UpstreamCommand {
    /// Show how SERVER's tool definitions differ from those approved in TOOLGATE_PINS, and
    /// approve what it offers now (only TOOL's, when given): held tools are served again.
    Approve {
        /// The server's name in the mcpServers file.
        server: String,
        /// One tool's own name on that server; by default, every tool it offers.
        tool: Option<String>,
    },
    /// Authorize toolgate at SERVER's OAuth authorization server (its entry has `oauth`):
    /// prints the address to open in a browser and waits for it on a loopback redirect;
    /// the tokens go to TOOLGATE_UPSTREAM_TOKENS. A client_credentials upstream gets a
    /// token at once.
    Login {
        /// The server's name in the mcpServers file.
        server: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum CatalogueCommand {
    /// Serve a catalogue over the HTTP API (`docs/reference/http-api.md`).
    Serve {
        /// The catalogue to serve (same forms as --catalogue); else --catalogue,
        /// TOOLGATE_CATALOGUE or TOOLGATE_API_URL; else the embedded catalogue.
        source: Option<String>,
        /// The catalogue folder: the older spelling of SOURCE, kept so scripts still work.
        #[arg(long, hide = true, value_name = "DIR", conflicts_with = "source")]
        dir: Option<PathBuf>,
        /// Address to listen on; port 0 picks a free port (printed on stderr).
        #[arg(long, default_value = "127.0.0.1:8080")]
        listen: String,
    },
    /// Walk every tool through a real server: advertise, describe, run its example, check
    /// the answer against its output schema, read it as a resource. Fails on any failure.
    Check {
        /// The catalogue to check (same forms as --catalogue); else --catalogue,
        /// TOOLGATE_CATALOGUE or TOOLGATE_API_URL; else the embedded catalogue.
        source: Option<String>,
    },
    /// Measure search quality: nDCG@10, Recall@5 and Recall@10 over judged queries, with
    /// the lexical and the hybrid ranker side by side.
    Eval {
        /// A JSONL file of {"query": "...", "relevant": ["slug", ...]} lines.
        #[arg(long, required_unless_present = "dataset", conflicts_with = "dataset")]
        queries: Option<PathBuf>,
        /// A dataset folder holding catalogue.json and queries.jsonl; repeat it for
        /// several: each is measured, then one table gives every dataset, the mean and the
        /// hybrid ranker's margin over the lexical one.
        #[arg(long, value_name = "DIR")]
        dataset: Vec<PathBuf>,
        /// The catalogue to search with --queries (same forms as --catalogue); else
        /// --catalogue, TOOLGATE_CATALOGUE or TOOLGATE_API_URL; else the embedded catalogue.
        #[arg(conflicts_with = "dataset")]
        source: Option<String>,
        /// Only every N-th query of each file (a fixed subset, for a quick check).
        #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..))]
        every: u64,
        /// Fail when the hybrid ranker's nDCG@10 on some dataset is below this.
        #[arg(long, value_name = "NDCG")]
        min_hybrid: Option<f64>,
        /// Fail when the hybrid ranker's nDCG@10 on some dataset is not this much above the
        /// lexical ranker's.
        #[arg(long, value_name = "NDCG", allow_negative_numbers = true)]
        min_margin: Option<f64>,
        /// Also print the N worst queries and what ranked above the relevant tool.
        #[arg(long, value_name = "N", default_value_t = 0)]
        show_misses: usize,
    },
}

impl Cli {
    /// Parses this process's command line (exiting with clap's message when it does not
    /// parse), and returns beside it every setting given as a flag as its environment
    /// variable: a toolgate child started by `shell` or `demo` then runs with the same
    /// settings (those given as variables it inherits). `--http` is not among them.
    pub fn parse_with_flags() -> (Cli, Vec<(OsString, OsString)>) {
        let command = Cli::command();
        let matches = command.clone().get_matches();
        let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
        let flags = command
            .get_arguments()
            .filter_map(|arg| {
                let var = arg.get_env()?;
                let id = arg.get_id().as_str();
                if var == "TOOLGATE_HTTP" || matches.value_source(id) != Some(ValueSource::CommandLine) {
                    return None;
                }
                let value = matches.get_raw(id)?.next_back()?;
                Some((var.to_owned(), value.to_owned()))
            })
            .collect();
        (cli, flags)
    }

    /// The settings as given, before `Config` checks them, and the subcommand chosen.
    pub fn split(self) -> (Raw, Option<Command>) {
        let raw = Raw {
            catalogue: self.catalogue,
            api_url: self.api_url,
            api_key: self.api_key,
            timeout_ms: self.timeout_ms,
            cache_ttl_ms: self.cache_ttl_ms,
            execution: self.execution,
            advertise: self.advertise,
            advertise_bytes: self.advertise_bytes,
            name: self.name,
            runtimes: self.runtimes,
            js_timeout_ms: self.js_timeout_ms,
            js_heap_mb: self.js_heap_mb,
            fetch_timeout_ms: self.fetch_timeout_ms,
            result_chars: self.result_chars,
            js_concurrent_runs: self.js_concurrent_runs,
            js_total_heap_mb: self.js_total_heap_mb,
            nyx_concurrent_runs: self.nyx_concurrent_runs,
            code_calls: self.code_calls,
            code_parallel: self.code_parallel,
            fetch_allow: self.fetch_allow,
            fetch_trace: self.fetch_trace,
            nx_node_path: self.nx_node_path,
            nx_ecosystem_root: self.nx_ecosystem_root,
            http: self.http,
            http_allowed_hosts: self.http_allowed_hosts,
            http_allowed_origins: self.http_allowed_origins,
            http_session_idle_ms: self.http_session_idle_ms,
            http_max_sessions: self.http_max_sessions,
            http_max_sessions_per_principal: self.http_max_sessions_per_principal,
            http_sse_poll_ms: self.http_sse_poll_ms,
            http_body_timeout_ms: self.http_body_timeout_ms,
            http_max_connections: self.http_max_connections,
            http_max_connections_per_address: self.http_max_connections_per_address,
            http_header_timeout_ms: self.http_header_timeout_ms,
            keys_file: self.keys_file,
            allow_anonymous: self.allow_anonymous,
            requests_per_minute: self.requests_per_minute,
            anonymous_per_minute: self.anonymous_per_minute,
            principal_concurrent_runs: self.principal_concurrent_runs,
            oauth_jwks: self.oauth_jwks,
            oauth_issuer: self.oauth_issuer,
            oauth_audience: self.oauth_audience,
            oauth_authorization_servers: self.oauth_authorization_servers,
            oauth_per_minute: self.oauth_per_minute,
            public_url: self.public_url,
            oauth_tool_scopes: self.oauth_tool_scopes,
            upstreams: self.upstreams,
            pins: self.pins,
            pins_hold_new: self.pins_hold_new,
            upstream_tokens: self.upstream_tokens.or_else(default_tokens),
            upstream_ping_ms: self.upstream_ping_ms,
            upstream_first_wait_ms: self.upstream_first_wait_ms,
            validators: self.validators,
            search: self.search,
            embed_cache: self.embed_cache,
            embed_budget_ms: self.embed_budget_ms,
            redis: self.redis,
            redis_prefix: self.redis_prefix,
            redis_password_file: self.redis_password_file,
        };
        (raw, self.command)
    }
}

/// Where the upstream tokens file is when TOOLGATE_UPSTREAM_TOKENS is unset: under
/// $XDG_STATE_HOME, else ~/.local/state; none without either.
fn default_tokens() -> Option<PathBuf> {
    let state = std::env::var_os("XDG_STATE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|v| !v.is_empty())
                .map(|h| PathBuf::from(h).join(".local/state"))
        })?;
    Some(state.join("toolgate/upstream-tokens.json"))
}
