//! Raw settings (flags and environment, as clap parsed them) turned into a checked
//! [`Config`].
//!
//! This module decides what a setting means and refuses what cannot be meant; it does no
//! I/O beyond reading the values it is given. Lenient on purpose only where the reference says
//! so: an unknown `TOOLGATE_EXECUTION` falls back to `remote`, so a typo can never switch
//! on local execution of network code.

use std::path::PathBuf;
use std::time::Duration;

use crate::access::Rates;
use crate::access::oauth;
use crate::backends::Execution;
use crate::backends::js::FetchAllow;
use crate::catalogue::SourceSpec;
use crate::catalogue::source::api_base;
use crate::edge::Connections;
use crate::limits::{Limits, VALIDATORS_RANGE};
use crate::mcp::Advertise;
use crate::search::embedding as meaning;

use crate::backends::upstream;
use crate::registry::Runtimes;
use crate::transport::http::HttpSettings;

/// Everything the settings say, checked.
#[derive(Debug, Clone)]
pub struct Config {
    /// Where the catalogue comes from.
    pub source: SourceSpec,
    /// Sent as `Authorization: Bearer` to the API; anonymous when absent.
    pub api_key: Option<String>,
    /// Where code from an HTTP catalogue runs.
    pub execution: Execution,
    /// Which tools are listed.
    pub advertise: Advertise,
    /// Name of the meta-tool and the resource URI scheme.
    pub name: String,
    /// Runtime tools exposed.
    pub runtimes: Runtimes,
    /// `NX_NODE_PATH`: the NyxilumNode binary or `.dll`, when given.
    pub nx_node_path: Option<PathBuf>,
    /// `NX_ECOSYSTEM_ROOT`: the NyxilumLang checkout searched when `nx_node_path` is unset.
    pub nx_ecosystem_root: PathBuf,
    /// Bounds in force.
    pub limits: Limits,
    /// Internal addresses JavaScript `fetch` may reach despite the address policy
    /// (`TOOLGATE_FETCH_ALLOW`). By default, none.
    pub fetch_allow: FetchAllow,
    /// Hosts JavaScript `fetch` passes the trace context to (`TOOLGATE_FETCH_TRACE`).
    /// By default, none.
    pub fetch_trace: crate::telemetry::FetchTrace,
    /// MCP over Streamable HTTP instead of stdio (`--http`), when asked for.
    pub http: Option<HttpSettings>,
    /// Connection caps and timeouts of both HTTP servers (`--http`, `catalogue serve`).
    pub connections: Connections,
    /// The keys file of both HTTP servers (`TOOLGATE_KEYS_FILE`), read when a server
    /// starts. By default, none: every caller is anonymous.
    pub keys_file: Option<PathBuf>,
    /// Whether callers without a key are served (`--allow-anonymous`): needed to serve
    /// a non-loopback address without a keys file.
    pub allow_anonymous: bool,
    /// Request and run rates, and runs at once, per principal of both HTTP servers.
    pub rates: Rates,
    /// OAuth on both HTTP servers (`TOOLGATE_OAUTH_*`, `TOOLGATE_PUBLIC_URL`): bearer
    /// JWTs checked against a JWKS. By default, off.
    pub oauth: Option<oauth::Settings>,
    /// The `mcpServers` file of upstream MCP servers (`TOOLGATE_UPSTREAMS`), read when
    /// the server starts. By default, none.
    pub upstreams: Option<upstream::Source>,
    /// The approved upstream tool definitions (`TOOLGATE_PINS`), read when the server
    /// starts, and whether new tools wait for approval too (`TOOLGATE_PINS_HOLD_NEW`). By
    /// default, none: definitions are served as the upstreams give them.
    pub pins: Option<(PathBuf, bool)>,
    /// The OAuth tokens of upstreams with `oauth` (`TOOLGATE_UPSTREAM_TOKENS`, by default
    /// under `$XDG_STATE_HOME` or `~/.local/state`). None when neither is known.
    pub upstream_tokens: Option<upstream::oauth::Tokens>,
    /// How search ranks and what embedding may cost (`TOOLGATE_SEARCH`,
    /// `TOOLGATE_EMBED_CACHE`, `TOOLGATE_EMBED_BUDGET_MS`).
    pub search: meaning::Settings,
    /// The Redis a fleet of replicas shares its state in (`TOOLGATE_REDIS`,
    /// `TOOLGATE_REDIS_PREFIX`). By default, none: one process keeps its state itself.
    pub redis: Option<crate::shared::Settings>,
    /// Notes about settings that were read leniently, for stderr at start.
    pub notes: Vec<String>,
}

/// The settings as given, before checking. Each field mirrors one flag/variable.
#[derive(Debug, Clone, Default)]
pub struct Raw {
    /// `TOOLGATE_CATALOGUE`.
    pub catalogue: Option<String>,
    /// `TOOLGATE_API_URL`.
    pub api_url: Option<String>,
    /// `TOOLGATE_API_KEY`.
    pub api_key: Option<String>,
    /// `TOOLGATE_TIMEOUT_MS`.
    pub timeout_ms: u64,
    /// `TOOLGATE_CACHE_TTL_MS`.
    pub cache_ttl_ms: u64,
    /// `TOOLGATE_EXECUTION`.
    pub execution: String,
    /// `TOOLGATE_ADVERTISE`.
    pub advertise: String,
    /// `TOOLGATE_ADVERTISE_BYTES`.
    pub advertise_bytes: u64,
    /// `TOOLGATE_NAME`.
    pub name: String,
    /// `TOOLGATE_RUNTIMES`.
    pub runtimes: String,
    /// `TOOLGATE_JS_TIMEOUT_MS`.
    pub js_timeout_ms: u64,
    /// `TOOLGATE_JS_HEAP_MB`.
    pub js_heap_mb: u64,
    /// `TOOLGATE_FETCH_TIMEOUT_MS`.
    pub fetch_timeout_ms: u64,
    /// `TOOLGATE_RESULT_CHARS`.
    pub result_chars: u64,
    /// `TOOLGATE_JS_CONCURRENT_RUNS`.
    pub js_concurrent_runs: u64,
    /// `TOOLGATE_JS_TOTAL_HEAP_MB`.
    pub js_total_heap_mb: u64,
    /// `TOOLGATE_NYX_CONCURRENT_RUNS`.
    pub nyx_concurrent_runs: u64,
    /// `TOOLGATE_CODE_CALLS`.
    pub code_calls: u64,
    /// `TOOLGATE_CODE_PARALLEL`.
    pub code_parallel: u64,
    /// `TOOLGATE_FETCH_ALLOW`.
    pub fetch_allow: String,
    /// `TOOLGATE_FETCH_TRACE`.
    pub fetch_trace: String,
    /// `NX_NODE_PATH`.
    pub nx_node_path: Option<PathBuf>,
    /// `NX_ECOSYSTEM_ROOT`.
    pub nx_ecosystem_root: PathBuf,
    /// `TOOLGATE_HTTP`: the address to serve MCP over HTTP at, when given.
    pub http: Option<String>,
    /// `TOOLGATE_HTTP_ALLOWED_HOSTS`.
    pub http_allowed_hosts: String,
    /// `TOOLGATE_HTTP_ALLOWED_ORIGINS`.
    pub http_allowed_origins: String,
    /// `TOOLGATE_HTTP_SESSION_IDLE_MS`.
    pub http_session_idle_ms: u64,
    /// `TOOLGATE_HTTP_MAX_SESSIONS`.
    pub http_max_sessions: u64,
    /// `TOOLGATE_HTTP_MAX_SESSIONS_PER_PRINCIPAL`, when given.
    pub http_max_sessions_per_principal: Option<u64>,
    /// `TOOLGATE_HTTP_SSE_POLL_MS`, when given.
    pub http_sse_poll_ms: Option<u64>,
    /// `TOOLGATE_HTTP_BODY_TIMEOUT_MS`.
    pub http_body_timeout_ms: u64,
    /// `TOOLGATE_HTTP_MAX_CONNECTIONS`.
    pub http_max_connections: u64,
    /// `TOOLGATE_HTTP_MAX_CONNECTIONS_PER_ADDRESS`.
    pub http_max_connections_per_address: u64,
    /// `TOOLGATE_HTTP_HEADER_TIMEOUT_MS`.
    pub http_header_timeout_ms: u64,
    /// `TOOLGATE_KEYS_FILE`.
    pub keys_file: Option<PathBuf>,
    /// `TOOLGATE_ALLOW_ANONYMOUS`.
    pub allow_anonymous: bool,
    /// `TOOLGATE_REQUESTS_PER_MINUTE`.
    pub requests_per_minute: u64,
    /// `TOOLGATE_ANONYMOUS_PER_MINUTE`.
    pub anonymous_per_minute: u64,
    /// `TOOLGATE_PRINCIPAL_CONCURRENT_RUNS`; 0 means half of the JavaScript runs at once.
    pub principal_concurrent_runs: u64,
    /// `TOOLGATE_OAUTH_JWKS`.
    pub oauth_jwks: Option<String>,
    /// `TOOLGATE_OAUTH_ISSUER`.
    pub oauth_issuer: Option<String>,
    /// `TOOLGATE_OAUTH_AUDIENCE`.
    pub oauth_audience: Option<String>,
    /// `TOOLGATE_OAUTH_AUTHORIZATION_SERVERS`.
    pub oauth_authorization_servers: Option<String>,
    /// `TOOLGATE_OAUTH_PER_MINUTE`.
    pub oauth_per_minute: u64,
    /// `TOOLGATE_PUBLIC_URL`.
    pub public_url: Option<String>,
    /// `TOOLGATE_OAUTH_TOOL_SCOPES`.
    pub oauth_tool_scopes: Option<String>,
    /// `TOOLGATE_UPSTREAMS`.
    pub upstreams: Option<PathBuf>,
    /// `TOOLGATE_PINS`.
    pub pins: Option<PathBuf>,
    /// `TOOLGATE_PINS_HOLD_NEW`.
    pub pins_hold_new: bool,
    /// `TOOLGATE_UPSTREAM_TOKENS` (or its default).
    pub upstream_tokens: Option<PathBuf>,
    /// `TOOLGATE_UPSTREAM_PING_MS`.
    pub upstream_ping_ms: u64,
    /// `TOOLGATE_UPSTREAM_FIRST_WAIT_MS`.
    pub upstream_first_wait_ms: u64,
    /// `TOOLGATE_VALIDATORS`.
    pub validators: u64,
    /// `TOOLGATE_SEARCH`.
    pub search: String,
    /// `TOOLGATE_EMBED_CACHE`.
    pub embed_cache: Option<String>,
    /// `TOOLGATE_EMBED_BUDGET_MS`.
    pub embed_budget_ms: u64,
    /// `TOOLGATE_REDIS`.
    pub redis: Option<String>,
    /// `TOOLGATE_REDIS_PREFIX`.
    pub redis_prefix: Option<String>,
    /// `TOOLGATE_REDIS_PASSWORD_FILE`.
    pub redis_password_file: Option<PathBuf>,
}

/// Accepted range of `TOOLGATE_TIMEOUT_MS`.
const TIMEOUT_MS_RANGE: std::ops::RangeInclusive<u64> = 1..=600_000;
/// Accepted range of `TOOLGATE_JS_TIMEOUT_MS`.
const JS_TIMEOUT_MS_RANGE: std::ops::RangeInclusive<u64> = 10..=600_000;
/// Accepted range of `TOOLGATE_FETCH_TIMEOUT_MS`.
const FETCH_TIMEOUT_MS_RANGE: std::ops::RangeInclusive<u64> = 10..=600_000;
/// Accepted range of `TOOLGATE_ADVERTISE_BYTES`: at least room for the meta-tool.
const ADVERTISE_BYTES_RANGE: std::ops::RangeInclusive<u64> = 1_024..=64 * 1024 * 1024;
/// Accepted range of `TOOLGATE_RESULT_CHARS`.
const RESULT_CHARS_RANGE: std::ops::RangeInclusive<u64> = 1_024..=64 * 1024 * 1024;
/// Accepted range of `TOOLGATE_JS_CONCURRENT_RUNS`.
const JS_CONCURRENT_RUNS_RANGE: std::ops::RangeInclusive<u64> = 1..=1_024;
/// Accepted range of `TOOLGATE_CODE_CALLS` (0: code may call no tool).
const CODE_CALLS_RANGE: std::ops::RangeInclusive<u64> = 0..=100_000;
/// Accepted range of `TOOLGATE_CODE_PARALLEL`.
const CODE_PARALLEL_RANGE: std::ops::RangeInclusive<u64> = 1..=1_024;
/// Accepted range of `TOOLGATE_JS_TOTAL_HEAP_MB`.
const JS_TOTAL_HEAP_MB_RANGE: std::ops::RangeInclusive<u64> = 1..=1_048_576;
/// Accepted range of `TOOLGATE_EMBED_BUDGET_MS`: up to an hour.
const EMBED_BUDGET_MS_RANGE: std::ops::RangeInclusive<u64> = 0..=3_600_000;
/// Accepted range of `TOOLGATE_UPSTREAM_PING_MS`.
const UPSTREAM_PING_MS_RANGE: std::ops::RangeInclusive<u64> = 100..=600_000;
/// Accepted range of `TOOLGATE_UPSTREAM_FIRST_WAIT_MS`: from not waiting to ten minutes.
const UPSTREAM_FIRST_WAIT_MS_RANGE: std::ops::RangeInclusive<u64> = 0..=600_000;
/// Accepted range of `TOOLGATE_HTTP_MAX_CONNECTIONS` and
/// `TOOLGATE_HTTP_MAX_CONNECTIONS_PER_ADDRESS`.
const MAX_CONNECTIONS_RANGE: std::ops::RangeInclusive<u64> = 1..=1_000_000;
/// Accepted range of `TOOLGATE_HTTP_HEADER_TIMEOUT_MS`: 100 ms to an hour.
const HEADER_TIMEOUT_MS_RANGE: std::ops::RangeInclusive<u64> = 100..=3_600_000;
/// Accepted range of `TOOLGATE_REQUESTS_PER_MINUTE` and `TOOLGATE_ANONYMOUS_PER_MINUTE`.
const PER_MINUTE_RANGE: std::ops::RangeInclusive<u64> = 1..=1_000_000_000;
/// Accepted range of `TOOLGATE_PRINCIPAL_CONCURRENT_RUNS` (0: the default).
const PRINCIPAL_RUNS_RANGE: std::ops::RangeInclusive<u64> = 0..=100_000;
/// Accepted range of `TOOLGATE_JS_HEAP_MB`.
const JS_HEAP_MB_RANGE: std::ops::RangeInclusive<u64> = 1..=16_384;

impl Config {
    /// Checks raw settings. An error is a sentence naming the setting and what it accepts.
    pub fn from_raw(raw: Raw) -> Result<Config, String> {
        let mut notes = Vec::new();
        let catalogue = raw.catalogue.as_deref().map(str::trim).filter(|s| !s.is_empty());
        let api_url = raw.api_url.as_deref().map(str::trim).filter(|s| !s.is_empty());
        let source = match (catalogue, api_url) {
            (Some(c), _) if c != "embedded" => SourceSpec::parse(c)?,
            (_, Some(url)) => SourceSpec::Http(api_base(url).map_err(|e| format!("TOOLGATE_API_URL: {e}"))?),
            _ => SourceSpec::Embedded,
        };
        let (execution, note) = Execution::parse(&raw.execution);
        notes.extend(note);
        let (advertise, note) = Advertise::parse(&raw.advertise);
        notes.extend(note);
        let (runtimes, runtime_notes) = Runtimes::parse(&raw.runtimes);
        notes.extend(runtime_notes);
        check_range("TOOLGATE_TIMEOUT_MS", raw.timeout_ms, TIMEOUT_MS_RANGE)?;
        check_range("TOOLGATE_JS_TIMEOUT_MS", raw.js_timeout_ms, JS_TIMEOUT_MS_RANGE)?;
        check_range("TOOLGATE_JS_HEAP_MB", raw.js_heap_mb, JS_HEAP_MB_RANGE)?;
        check_range("TOOLGATE_ADVERTISE_BYTES", raw.advertise_bytes, ADVERTISE_BYTES_RANGE)?;
        check_range("TOOLGATE_RESULT_CHARS", raw.result_chars, RESULT_CHARS_RANGE)?;
        check_range(
            "TOOLGATE_JS_CONCURRENT_RUNS",
            raw.js_concurrent_runs,
            JS_CONCURRENT_RUNS_RANGE,
        )?;
        check_range(
            "TOOLGATE_JS_TOTAL_HEAP_MB",
            raw.js_total_heap_mb,
            JS_TOTAL_HEAP_MB_RANGE,
        )?;
        check_range(
            "TOOLGATE_NYX_CONCURRENT_RUNS",
            raw.nyx_concurrent_runs,
            JS_CONCURRENT_RUNS_RANGE,
        )?;
        check_range("TOOLGATE_CODE_CALLS", raw.code_calls, CODE_CALLS_RANGE)?;
        check_range("TOOLGATE_CODE_PARALLEL", raw.code_parallel, CODE_PARALLEL_RANGE)?;
        check_range(
            "TOOLGATE_FETCH_TIMEOUT_MS",
            raw.fetch_timeout_ms,
            FETCH_TIMEOUT_MS_RANGE,
        )?;
        check_range(
            "TOOLGATE_UPSTREAM_PING_MS",
            raw.upstream_ping_ms,
            UPSTREAM_PING_MS_RANGE,
        )?;
        check_range(
            "TOOLGATE_UPSTREAM_FIRST_WAIT_MS",
            raw.upstream_first_wait_ms,
            UPSTREAM_FIRST_WAIT_MS_RANGE,
        )?;
        check_range(
            "TOOLGATE_HTTP_MAX_CONNECTIONS",
            raw.http_max_connections,
            MAX_CONNECTIONS_RANGE,
        )?;
        check_range(
            "TOOLGATE_HTTP_MAX_CONNECTIONS_PER_ADDRESS",
            raw.http_max_connections_per_address,
            MAX_CONNECTIONS_RANGE,
        )?;
        check_range(
            "TOOLGATE_HTTP_HEADER_TIMEOUT_MS",
            raw.http_header_timeout_ms,
            HEADER_TIMEOUT_MS_RANGE,
        )?;
        check_range(
            "TOOLGATE_REQUESTS_PER_MINUTE",
            raw.requests_per_minute,
            PER_MINUTE_RANGE,
        )?;
        check_range(
            "TOOLGATE_ANONYMOUS_PER_MINUTE",
            raw.anonymous_per_minute,
            PER_MINUTE_RANGE,
        )?;
        check_range(
            "TOOLGATE_PRINCIPAL_CONCURRENT_RUNS",
            raw.principal_concurrent_runs,
            PRINCIPAL_RUNS_RANGE,
        )?;
        check_range(
            "TOOLGATE_HTTP_BODY_TIMEOUT_MS",
            raw.http_body_timeout_ms,
            crate::limits::HTTP_BODY_TIMEOUT_MS_RANGE,
        )?;
        let connections = Connections {
            body_timeout: Duration::from_millis(raw.http_body_timeout_ms),
            max: usize::try_from(raw.http_max_connections).unwrap_or(usize::MAX),
            per_address: usize::try_from(raw.http_max_connections_per_address).unwrap_or(usize::MAX),
            header_timeout: Duration::from_millis(raw.http_header_timeout_ms),
        };
        check_range("TOOLGATE_VALIDATORS", raw.validators, VALIDATORS_RANGE)?;
        let fetch_allow = FetchAllow::parse(&raw.fetch_allow)?;
        let fetch_trace = crate::telemetry::FetchTrace::parse(&raw.fetch_trace)?;
        let http = match raw.http.as_deref().map(str::trim).filter(|a| !a.is_empty()) {
            Some(listen) => Some(
                HttpSettings::parse(
                    listen,
                    &raw.http_allowed_hosts,
                    &raw.http_allowed_origins,
                    raw.http_session_idle_ms,
                    raw.http_max_sessions,
                    raw.http_max_sessions_per_principal,
                )?
                .with_sse_poll(raw.http_sse_poll_ms)?,
            ),
            None => None,
        };
        if !is_valid_name(&raw.name) {
            return Err(format!(
                "TOOLGATE_NAME \"{}\" must be a letter followed by up to 63 letters, digits or '-' (it names a tool and a URI scheme)",
                raw.name
            ));
        }
        let limits = Limits {
            http_timeout: Duration::from_millis(raw.timeout_ms),
            cache_ttl: Duration::from_millis(raw.cache_ttl_ms),
            js_wall_clock: Duration::from_millis(raw.js_timeout_ms),
            js_heap_bytes: usize::try_from(raw.js_heap_mb * 1024 * 1024).unwrap_or(usize::MAX),
            fetch_timeout: Duration::from_millis(raw.fetch_timeout_ms),
            advertise_bytes: usize::try_from(raw.advertise_bytes).unwrap_or(usize::MAX),
            result_chars: usize::try_from(raw.result_chars).unwrap_or(usize::MAX),
            js_concurrent_runs: usize::try_from(raw.js_concurrent_runs).unwrap_or(usize::MAX),
            js_total_heap_bytes: usize::try_from(raw.js_total_heap_mb * 1024 * 1024).unwrap_or(usize::MAX),
            nyx_concurrent_runs: usize::try_from(raw.nyx_concurrent_runs).unwrap_or(usize::MAX),
            code_calls: usize::try_from(raw.code_calls).unwrap_or(usize::MAX),
            code_parallel: usize::try_from(raw.code_parallel).unwrap_or(usize::MAX),
            upstream_ping: Duration::from_millis(raw.upstream_ping_ms),
            upstream_first_wait: Duration::from_millis(raw.upstream_first_wait_ms),
            validators: usize::try_from(raw.validators).unwrap_or(usize::MAX),
            ..Limits::default()
        };
        check_range("TOOLGATE_EMBED_BUDGET_MS", raw.embed_budget_ms, EMBED_BUDGET_MS_RANGE)?;
        let search = meaning::Settings::parse(&raw.search, raw.embed_cache.as_deref(), raw.embed_budget_ms)?;
        check_range("TOOLGATE_OAUTH_PER_MINUTE", raw.oauth_per_minute, PER_MINUTE_RANGE)?;
        let oauth = oauth::Settings::parse(&oauth::settings::Raw {
            jwks: raw.oauth_jwks.as_deref(),
            issuer: raw.oauth_issuer.as_deref(),
            audience: raw.oauth_audience.as_deref(),
            authorization_servers: raw.oauth_authorization_servers.as_deref(),
            per_minute: raw.oauth_per_minute,
            public_url: raw.public_url.as_deref(),
            tool_scopes: raw.oauth_tool_scopes.as_deref(),
        })?;
        if oauth.is_none() && raw.public_url.as_deref().is_some_and(|u| !u.trim().is_empty()) {
            notes.push("TOOLGATE_PUBLIC_URL is used only with OAuth (TOOLGATE_OAUTH_JWKS); it is ignored".to_owned());
        }
        let rates = Rates {
            requests_per_minute: u32::try_from(raw.requests_per_minute).unwrap_or(u32::MAX),
            anonymous_per_minute: u32::try_from(raw.anonymous_per_minute).unwrap_or(u32::MAX),
            runs_at_once: match raw.principal_concurrent_runs {
                0 => (limits.js_concurrent_runs / 2).max(1),
                n => usize::try_from(n).unwrap_or(usize::MAX),
            },
            queue_wait: limits.js_wall_clock,
        };
        Ok(Config {
            source,
            api_key: raw.api_key.filter(|k| !k.trim().is_empty()),
            execution,
            advertise,
            name: raw.name,
            runtimes,
            nx_node_path: raw.nx_node_path.filter(|p| !p.as_os_str().is_empty()),
            nx_ecosystem_root: raw.nx_ecosystem_root,
            limits,
            fetch_allow,
            fetch_trace,
            http,
            connections,
            keys_file: raw.keys_file.filter(|p| !p.as_os_str().is_empty()),
            allow_anonymous: raw.allow_anonymous,
            rates,
            oauth,
            upstreams: raw
                .upstreams
                .filter(|p| !p.as_os_str().is_empty())
                .map(upstream::Source),
            pins: raw
                .pins
                .filter(|p| !p.as_os_str().is_empty())
                .map(|p| (p, raw.pins_hold_new)),
            upstream_tokens: raw
                .upstream_tokens
                .filter(|p| !p.as_os_str().is_empty())
                .map(upstream::oauth::Tokens::new),
            search,
            redis: crate::shared::Settings::parse(
                raw.redis.as_deref(),
                raw.redis_prefix.as_deref(),
                raw.redis_password_file.as_deref(),
            )?,
            notes,
        })
    }

    /// Names the catalogue a command works on, one rule for every command that takes a
    /// SOURCE (`catalogue serve`, `check`, `eval`): the positional SOURCE when given, else
    /// what `--catalogue`/`TOOLGATE_CATALOGUE`/`TOOLGATE_API_URL` named (already in
    /// `source`), else the embedded catalogue.
    pub fn choose_source(&mut self, positional: Option<&str>) -> Result<(), String> {
        if let Some(raw) = positional {
            self.source = SourceSpec::parse(raw).map_err(|e| format!("SOURCE: {e}"))?;
        }
        Ok(())
    }

    /// The warning printed once at start when network code may run on this machine, or
    /// `None` when it cannot.
    pub fn execution_warning(&self) -> Option<&'static str> {
        if self.source.is_local() || self.execution == Execution::Remote {
            return None;
        }
        Some(
            "local execution is ON: tool code from the catalogue API runs on this machine. It runs in an isolated QuickJS engine with a heap cap and a deadline (NyxilumLang in a sandboxed NyxilumNode process), but it is code that arrived over the network; enable this only for a catalogue you trust.",
        )
    }
}

fn check_range(name: &str, value: u64, range: std::ops::RangeInclusive<u64>) -> Result<(), String> {
    if range.contains(&value) {
        Ok(())
    } else {
        Err(format!("{name}={value} is outside {}..={}", range.start(), range.end()))
    }
}

/// Returns true if and only if `name` can be both an MCP tool name and a URI scheme.
fn is_valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic())
        && name.len() <= crate::limits::SLUG_MAX_LEN
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '-')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw() -> Raw {
        Raw {
            timeout_ms: 15_000,
            cache_ttl_ms: 60_000,
            execution: "remote".into(),
            advertise: "auto".into(),
            advertise_bytes: 24_576,
            name: "toolgate".into(),
            js_timeout_ms: 30_000,
            js_heap_mb: 512,
            fetch_timeout_ms: 15_000,
            result_chars: 262_144,
            js_concurrent_runs: 8,
            js_total_heap_mb: 2048,
            nyx_concurrent_runs: 4,
            code_calls: 50,
            code_parallel: 8,
            upstream_ping_ms: 15_000,
            upstream_first_wait_ms: 10_000,
            upstream_tokens: None,
            http_max_connections: 1_024,
            http_max_connections_per_address: 128,
            http_header_timeout_ms: 10_000,
            http_body_timeout_ms: 10_000,
            validators: 4_096,
            search: "hybrid".into(),
            embed_budget_ms: 60_000,
            requests_per_minute: 1_200,
            anonymous_per_minute: 30,
            oauth_per_minute: 600,
            ..Raw::default()
        }
    }

    #[test]
    fn api_base_accepts_bare_host_and_api_form() {
        assert_eq!(api_base("http://h:1").unwrap(), "http://h:1/api");
        assert_eq!(api_base("http://h:1/").unwrap(), "http://h:1/api");
        assert_eq!(api_base("https://h/api/").unwrap(), "https://h/api");
        assert!(api_base("h:1").is_err());
        assert!(api_base("http://").is_err());
    }

    #[test]
    fn source_spec_reads_each_form() {
        assert_eq!(SourceSpec::parse("embedded").unwrap(), SourceSpec::Embedded);
        assert_eq!(
            SourceSpec::parse("x/tools.json").unwrap(),
            SourceSpec::File("x/tools.json".into())
        );
        assert_eq!(SourceSpec::parse("x/tools").unwrap(), SourceSpec::Dir("x/tools".into()));
        assert_eq!(
            SourceSpec::parse("http://h").unwrap(),
            SourceSpec::Http("http://h/api".into())
        );
    }

    #[test]
    fn a_source_setting_reads_back_as_the_same_source() {
        for raw in [
            "embedded",
            "x/tools.json",
            "x/tools",
            "x/tools/",
            "http://h:1",
            "some.json/",
        ] {
            let spec = SourceSpec::parse(raw).unwrap();
            assert_eq!(SourceSpec::parse(&spec.setting()).unwrap(), spec, "{raw}");
        }
        let odd = SourceSpec::Dir("odd.json".into());
        assert_eq!(SourceSpec::parse(&odd.setting()).unwrap(), odd);
    }

    #[test]
    fn a_positional_source_wins_over_the_settings_and_its_absence_keeps_them() {
        let mut r = raw();
        r.catalogue = Some("from/env".into());
        let mut config = Config::from_raw(r).unwrap();
        config.choose_source(None).unwrap();
        assert_eq!(config.source, SourceSpec::Dir("from/env".into()));
        config.choose_source(Some("embedded")).unwrap();
        assert_eq!(config.source, SourceSpec::Embedded);
        config.choose_source(Some("http://h")).unwrap();
        assert_eq!(config.source, SourceSpec::Http("http://h/api".into()));
        assert!(
            config.choose_source(Some("ftp://h")).is_ok(),
            "anything else is a folder"
        );
        assert!(config.choose_source(Some("http://")).unwrap_err().contains("SOURCE"));
    }

    #[test]
    fn execution_typo_falls_back_to_remote_with_a_note() {
        let (mode, note) = Execution::parse("lcoal");
        assert_eq!(mode, Execution::Remote);
        assert!(note.unwrap().contains("using remote"));
        assert_eq!(Execution::parse("AUTO").0, Execution::Auto);
    }

    #[test]
    fn api_url_is_used_when_catalogue_is_unset_or_embedded() {
        let mut r = raw();
        r.api_url = Some("http://127.0.0.1:9".into());
        assert_eq!(
            Config::from_raw(r.clone()).unwrap().source,
            SourceSpec::Http("http://127.0.0.1:9/api".into())
        );
        r.catalogue = Some("some/dir".into());
        assert_eq!(Config::from_raw(r).unwrap().source, SourceSpec::Dir("some/dir".into()));
    }

    #[test]
    fn bad_name_and_out_of_range_timeout_are_refused() {
        let mut r = raw();
        r.name = "my tools".into();
        assert!(Config::from_raw(r).unwrap_err().contains("TOOLGATE_NAME"));
        let mut r = raw();
        r.timeout_ms = 0;
        assert!(Config::from_raw(r).unwrap_err().contains("TOOLGATE_TIMEOUT_MS"));
    }

    #[test]
    fn fetch_allow_is_read_and_a_bad_entry_is_refused_naming_it() {
        let mut r = raw();
        r.fetch_allow = " 127.0.0.1:8080, 10.1.2.0/24 ,".into();
        assert!(!Config::from_raw(r.clone()).unwrap().fetch_allow.is_empty());
        r.fetch_allow = "10.1.2.3/24".into();
        let e = Config::from_raw(r).unwrap_err();
        assert!(e.contains("TOOLGATE_FETCH_ALLOW") && e.contains("10.1.2.0/24"), "{e}");
        assert!(
            Config::from_raw(raw()).unwrap().fetch_allow.is_empty(),
            "empty by default"
        );
    }

    #[test]
    fn runs_at_once_per_principal_default_to_half_the_javascript_runs() {
        let mut r = raw();
        assert_eq!(Config::from_raw(r.clone()).unwrap().rates.runs_at_once, 4);
        r.js_concurrent_runs = 1;
        assert_eq!(Config::from_raw(r.clone()).unwrap().rates.runs_at_once, 1);
        r.principal_concurrent_runs = 3;
        assert_eq!(Config::from_raw(r.clone()).unwrap().rates.runs_at_once, 3);
        r.anonymous_per_minute = 0;
        let e = Config::from_raw(r).unwrap_err();
        assert!(e.contains("TOOLGATE_ANONYMOUS_PER_MINUTE"), "{e}");
    }

    #[test]
    fn upstreams_name_a_file_and_an_empty_setting_names_none() {
        let mut r = raw();
        assert_eq!(Config::from_raw(r.clone()).unwrap().upstreams, None);
        r.upstreams = Some("".into());
        assert_eq!(Config::from_raw(r.clone()).unwrap().upstreams, None);
        r.upstreams = Some("servers.json".into());
        assert_eq!(
            Config::from_raw(r).unwrap().upstreams,
            Some(upstream::Source("servers.json".into()))
        );
    }

    #[test]
    fn warning_only_when_network_code_may_run_here() {
        let mut r = raw();
        r.execution = "auto".into();
        assert!(
            Config::from_raw(r.clone()).unwrap().execution_warning().is_none(),
            "embedded code is the operator's own"
        );
        r.api_url = Some("http://h".into());
        assert!(Config::from_raw(r).unwrap().execution_warning().is_some());
    }
}
