//! The `toolgate` command: parses flags and environment, then runs the chosen mode.
//! Glue only: every behaviour lives in the library.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::{Parser, Subcommand};
use toolgate::api::ApiClient;
use toolgate::catalogue::SourceSpec;
use toolgate::catalogue::Store;
use toolgate::config::{Config, Raw};
use toolgate::exec::Executor;
use toolgate::gateway::Gateway;
use toolgate::limits;
use toolgate::mcp::Handler;
use toolgate::registry::Builtins;
use toolgate::upstream::Upstreams;

/// An MCP gateway to a catalogue of tools.
#[derive(Debug, Parser)]
#[command(name = "toolgate", about, disable_version_flag = true)]
struct Cli {
    /// The catalogue: `embedded`, a folder, a `.json` file, or an http(s):// API base.
    #[arg(long, env = "TOOLGATE_CATALOGUE", global = true)]
    catalogue: Option<String>,
    /// Catalogue API base (bare host or its /api form).
    #[arg(long, env = "TOOLGATE_API_URL", global = true)]
    api_url: Option<String>,
    /// Sent to the API as `Authorization: Bearer`.
    #[arg(long, env = "TOOLGATE_API_KEY", global = true, hide_env_values = true)]
    api_key: Option<String>,
    /// Per-request timeout for the API, in milliseconds.
    #[arg(long, env = "TOOLGATE_TIMEOUT_MS", global = true, default_value_t = limits::HTTP_TIMEOUT.as_millis() as u64)]
    timeout_ms: u64,
    /// Catalogue lifetime in milliseconds; 0 fetches on every request.
    #[arg(long, env = "TOOLGATE_CACHE_TTL_MS", global = true, default_value_t = limits::CACHE_TTL.as_millis() as u64)]
    cache_ttl_ms: u64,
    /// Where code from an HTTP catalogue runs: remote, local or auto.
    #[arg(long, env = "TOOLGATE_EXECUTION", global = true, default_value = "remote")]
    execution: String,
    /// Which tools are listed: all, meta or auto.
    #[arg(long, env = "TOOLGATE_ADVERTISE", global = true, default_value = "auto")]
    advertise: String,
    /// Under `auto`, the most bytes `tools/list` may spend on tools.
    #[arg(long, env = "TOOLGATE_ADVERTISE_BYTES", global = true, default_value_t = limits::ADVERTISE_BYTES as u64)]
    advertise_bytes: u64,
    /// Print the version and which sandbox layers this kernel allows, then exit.
    #[arg(short = 'V', long, action = clap::ArgAction::SetTrue)]
    version: bool,
    /// Runtime tools to expose: js (run_javascript, run_typescript), nyxilum (nyxilum_*).
    #[arg(long, env = "TOOLGATE_RUNTIMES", global = true, default_value = "")]
    runtimes: String,
    /// Name of the meta-tool and the resource URI scheme.
    #[arg(long, env = "TOOLGATE_NAME", global = true, default_value = "toolgate")]
    name: String,
    /// Wall-clock deadline of one local JavaScript run, in milliseconds.
    #[arg(long, env = "TOOLGATE_JS_TIMEOUT_MS", global = true, default_value_t = limits::JS_WALL_CLOCK.as_millis() as u64)]
    js_timeout_ms: u64,
    /// Deadline of one `fetch` from JavaScript, body included, in milliseconds.
    #[arg(long, env = "TOOLGATE_FETCH_TIMEOUT_MS", global = true, default_value_t = limits::FETCH_TIMEOUT.as_millis() as u64)]
    fetch_timeout_ms: u64,
    /// Characters of JSON kept of the value a JavaScript run returns.
    #[arg(long, env = "TOOLGATE_RESULT_CHARS", global = true, default_value_t = limits::RESULT_CHARS as u64)]
    result_chars: u64,
    /// JavaScript runs at once, across every client; more wait within their deadline.
    #[arg(long, env = "TOOLGATE_JS_CONCURRENT_RUNS", global = true, default_value_t = limits::JS_CONCURRENT_RUNS as u64)]
    js_concurrent_runs: u64,
    /// NyxilumNode runs at once, across every client; more wait within their deadline.
    #[arg(long, env = "TOOLGATE_NYX_CONCURRENT_RUNS", global = true, default_value_t = limits::NYX_CONCURRENT_RUNS as u64)]
    nyx_concurrent_runs: u64,
    /// Heap of all running JavaScript engines together, in MiB.
    #[arg(long, env = "TOOLGATE_JS_TOTAL_HEAP_MB", global = true, default_value_t = (limits::JS_TOTAL_HEAP_BYTES / (1024 * 1024)) as u64)]
    js_total_heap_mb: u64,
    /// Internal addresses JavaScript `fetch` may reach despite the address policy:
    /// comma-separated host:port, ip, ip:port ([v6]:port) or CIDR (10.1.2.0/24).
    #[arg(long, env = "TOOLGATE_FETCH_ALLOW", global = true, default_value = "")]
    fetch_allow: String,
    /// Heap cap of one local JavaScript run, in MiB.
    #[arg(long, env = "TOOLGATE_JS_HEAP_MB", global = true, default_value_t = (limits::JS_HEAP_BYTES / (1024 * 1024)) as u64)]
    js_heap_mb: u64,
    /// The NyxilumNode binary (a `.dll` runs through `dotnet`); found under
    /// --nx-ecosystem-root when unset.
    #[arg(long, env = "NX_NODE_PATH", global = true)]
    nx_node_path: Option<PathBuf>,
    /// The NyxilumLang checkout whose build output holds NyxilumNode (and its GUIDE.md).
    /// A relative path, the default included, is taken from the working directory toolgate
    /// is started in (an MCP host's own), not from where the binary is.
    #[arg(long, env = "NX_ECOSYSTEM_ROOT", global = true, default_value = "../NyxilumLang")]
    nx_ecosystem_root: PathBuf,
    /// An `mcpServers` JSON file (as Claude Desktop, Cursor or VS Code write it): those MCP
    /// servers' tools are served beside the catalogue as SERVER__TOOL.
    #[arg(long, env = "TOOLGATE_UPSTREAMS", global = true, value_name = "FILE")]
    upstreams: Option<PathBuf>,
    /// How often upstream servers are pinged, in milliseconds; one that does not answer
    /// within the same time is restarted.
    #[arg(long, env = "TOOLGATE_UPSTREAM_PING_MS", global = true, default_value_t = limits::UPSTREAM_PING.as_millis() as u64)]
    upstream_ping_ms: u64,
    /// Compiled input schemas kept at once; the least recently used is compiled again
    /// when a call needs it.
    #[arg(long, env = "TOOLGATE_VALIDATORS", global = true, default_value_t = limits::VALIDATORS as u64)]
    validators: u64,
    /// Diagnostics to stderr at debug level.
    #[arg(long, env = "TOOLGATE_DEBUG", global = true, action = clap::ArgAction::SetTrue, value_parser = clap::builder::FalseyValueParser::new())]
    debug: bool,
    /// Diagnostics and the HTTP access log as `text` lines or `json` objects.
    #[arg(long, env = "TOOLGATE_LOG_FORMAT", global = true, default_value = "text", value_parser = ["text", "json"])]
    log_format: String,
    /// Serve MCP over Streamable HTTP at ADDR (default 127.0.0.1:8765; port 0 picks a
    /// free one, printed on stderr) at /mcp, instead of stdio.
    #[arg(long, env = "TOOLGATE_HTTP", value_name = "ADDR", num_args = 0..=1, default_missing_value = limits::HTTP_LISTEN)]
    http: Option<String>,
    /// Over HTTP, Host values accepted besides the loopback names (comma-separated:
    /// gw.example.com, gw.example.com:443).
    #[arg(long, env = "TOOLGATE_HTTP_ALLOWED_HOSTS", global = true, default_value = "")]
    http_allowed_hosts: String,
    /// Over HTTP, browser Origins accepted besides loopback pages (comma-separated, with
    /// scheme: https://app.example.com:443).
    #[arg(long, env = "TOOLGATE_HTTP_ALLOWED_ORIGINS", global = true, default_value = "")]
    http_allowed_origins: String,
    /// Over HTTP, how long a session may sit unused before it ends, in milliseconds.
    #[arg(long, env = "TOOLGATE_HTTP_SESSION_IDLE_MS", global = true, default_value_t = limits::HTTP_SESSION_IDLE.as_millis() as u64)]
    http_session_idle_ms: u64,
    /// Over HTTP, MCP sessions alive at once; a new one beyond this is answered 503.
    #[arg(long, env = "TOOLGATE_HTTP_MAX_SESSIONS", global = true, default_value_t = limits::HTTP_MAX_SESSIONS as u64)]
    http_max_sessions: u64,
    /// Both HTTP servers: connections held at once; one beyond is answered 503.
    #[arg(long, env = "TOOLGATE_HTTP_MAX_CONNECTIONS", global = true, default_value_t = limits::HTTP_MAX_CONNECTIONS as u64)]
    http_max_connections: u64,
    /// Both HTTP servers: connections one client address may hold at once.
    #[arg(long, env = "TOOLGATE_HTTP_MAX_CONNECTIONS_PER_ADDRESS", global = true, default_value_t = limits::HTTP_MAX_CONNECTIONS_PER_ADDRESS as u64)]
    http_max_connections_per_address: u64,
    /// Both HTTP servers: time allowed to send a request head (and to idle between
    /// requests on a kept-alive connection), in milliseconds.
    #[arg(long, env = "TOOLGATE_HTTP_HEADER_TIMEOUT_MS", global = true, default_value_t = limits::HTTP_HEADER_TIMEOUT.as_millis() as u64)]
    http_header_timeout_ms: u64,
    /// Both HTTP servers: the keys file (`toolgate keys new` writes it). Without one,
    /// every caller is anonymous.
    #[arg(long, env = "TOOLGATE_KEYS_FILE", global = true)]
    keys_file: Option<PathBuf>,
    /// Both HTTP servers: serve callers without a key (30 calls a minute per address);
    /// needed to serve a non-loopback address without a keys file.
    #[arg(long, env = "TOOLGATE_ALLOW_ANONYMOUS", global = true, action = clap::ArgAction::SetTrue, value_parser = clap::builder::FalseyValueParser::new())]
    allow_anonymous: bool,
    /// Both HTTP servers: requests a minute per principal (a key, or an anonymous address).
    #[arg(long, env = "TOOLGATE_REQUESTS_PER_MINUTE", global = true, default_value_t = limits::REQUESTS_PER_MINUTE.into())]
    requests_per_minute: u64,
    /// Both HTTP servers: runs a minute per anonymous client address.
    #[arg(long, env = "TOOLGATE_ANONYMOUS_PER_MINUTE", global = true, default_value_t = limits::ANONYMOUS_PER_MINUTE.into())]
    anonymous_per_minute: u64,
    /// Both HTTP servers: runs one principal may have going at once (more wait, within
    /// the run deadline); 0 is half of --js-concurrent-runs.
    #[arg(long, env = "TOOLGATE_PRINCIPAL_CONCURRENT_RUNS", global = true, default_value_t = 0)]
    principal_concurrent_runs: u64,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Debug, Subcommand)]
enum Command {
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
}

#[derive(Debug, Subcommand)]
enum KeysCommand {
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
    },
}

#[derive(Debug, Subcommand)]
enum CatalogueCommand {
    /// Serve a catalogue over the HTTP API (DESIGN §4).
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
    /// Measure search quality: nDCG@10, Recall@5 and Recall@10 over judged queries.
    Eval {
        /// A JSONL file of {"query": "...", "relevant": ["slug", ...]} lines.
        #[arg(long)]
        queries: PathBuf,
        /// The catalogue to search (same forms as --catalogue); else --catalogue,
        /// TOOLGATE_CATALOGUE or TOOLGATE_API_URL; else the embedded catalogue.
        source: Option<String>,
        /// Also print the N worst queries and what ranked above the relevant tool.
        #[arg(long, value_name = "N", default_value_t = 0)]
        show_misses: usize,
    },
}

fn main() -> ExitCode {
    // A JavaScript worker started by this program's own server: no flags, no logging
    // setup, no environment read (it has none).
    if std::env::args_os()
        .nth(1)
        .is_some_and(|a| a == toolgate::exec::js::WORKER_ARG)
    {
        return toolgate::exec::js::worker_main();
    }
    let cli = Cli::parse();
    init_logging(cli.debug, &cli.log_format);
    if cli.version {
        println!("toolgate {}", env!("CARGO_PKG_VERSION"));
        let layers = toolgate::sandbox::Sandbox::get().layers();
        println!("sandbox: {}", layers.required());
        println!("sandbox where the kernel offers it: {}", layers.optional());
        return ExitCode::SUCCESS;
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(r) => r,
        Err(e) => return fail(&format!("cannot start the async runtime: {e}")),
    };
    let outcome = runtime.block_on(run(cli));
    // A JavaScript run still on its blocking thread (the client left mid-call) must not
    // hold the process until its deadline: exit after a short grace.
    runtime.shutdown_timeout(limits::SHUTDOWN_GRACE);
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => fail(&message),
    }
}

fn fail(message: &str) -> ExitCode {
    eprintln!("toolgate: {message}");
    ExitCode::from(2)
}

async fn run(cli: Cli) -> Result<(), String> {
    if let Some(Command::Keys {
        command: KeysCommand::New { scopes, id, file },
    }) = &cli.command
    {
        let scopes = toolgate::access::Scope::parse_list(scopes).map_err(|e| format!("--scopes: {e}"))?;
        let key = toolgate::access::keys::append(file, scopes, id.clone())?;
        println!("{key}");
        return Ok(());
    }
    let raw = Raw {
        catalogue: cli.catalogue,
        api_url: cli.api_url,
        api_key: cli.api_key,
        timeout_ms: cli.timeout_ms,
        cache_ttl_ms: cli.cache_ttl_ms,
        execution: cli.execution,
        advertise: cli.advertise,
        advertise_bytes: cli.advertise_bytes,
        name: cli.name,
        runtimes: cli.runtimes,
        js_timeout_ms: cli.js_timeout_ms,
        js_heap_mb: cli.js_heap_mb,
        fetch_timeout_ms: cli.fetch_timeout_ms,
        result_chars: cli.result_chars,
        js_concurrent_runs: cli.js_concurrent_runs,
        js_total_heap_mb: cli.js_total_heap_mb,
        nyx_concurrent_runs: cli.nyx_concurrent_runs,
        fetch_allow: cli.fetch_allow,
        nx_node_path: cli.nx_node_path,
        nx_ecosystem_root: cli.nx_ecosystem_root,
        http: cli.http,
        http_allowed_hosts: cli.http_allowed_hosts,
        http_allowed_origins: cli.http_allowed_origins,
        http_session_idle_ms: cli.http_session_idle_ms,
        http_max_sessions: cli.http_max_sessions,
        http_max_connections: cli.http_max_connections,
        http_max_connections_per_address: cli.http_max_connections_per_address,
        http_header_timeout_ms: cli.http_header_timeout_ms,
        keys_file: cli.keys_file,
        allow_anonymous: cli.allow_anonymous,
        requests_per_minute: cli.requests_per_minute,
        anonymous_per_minute: cli.anonymous_per_minute,
        principal_concurrent_runs: cli.principal_concurrent_runs,
        upstreams: cli.upstreams,
        upstream_ping_ms: cli.upstream_ping_ms,
        validators: cli.validators,
    };
    let mut config = Config::from_raw(raw)?;
    match cli.command {
        Some(Command::Catalogue {
            command: CatalogueCommand::Check { source },
        }) => {
            config.choose_source(source.as_deref())?;
            let binary = std::env::current_exe().map_err(|e| format!("cannot find this program's path: {e}"))?;
            let report = toolgate::commands::check::run(&binary, &config).await?;
            print!("{}", report.render());
            if report.is_ok() {
                Ok(())
            } else {
                Err("some tools failed the check (listed above)".to_owned())
            }
        }
        Some(Command::Catalogue {
            command: CatalogueCommand::Serve { source, dir, listen },
        }) => {
            match dir {
                Some(dir) => config.source = SourceSpec::Dir(dir),
                None => config.choose_source(source.as_deref())?,
            }
            let access = access(&config, &listen)?;
            let gateway = gateway(&config, true, None, Some(access.limiter()))?;
            toolgate::operator::serve(gateway, &listen, config.connections, access, terminated()).await
        }
        Some(Command::Keys { .. }) => Ok(()),
        Some(Command::Catalogue {
            command:
                CatalogueCommand::Eval {
                    queries,
                    source,
                    show_misses,
                },
        }) => {
            config.choose_source(source.as_deref())?;
            let text =
                std::fs::read_to_string(&queries).map_err(|e| format!("cannot read {}: {e}", queries.display()))?;
            let snapshot = gateway(&config, false, None, None)?
                .snapshot()
                .await
                .map_err(|e| e.to_string())?;
            eval(&snapshot, &text, show_misses)
        }
        None => {
            // Started by hand in a terminal, the server would wait in silence for MCP
            // frames; say what it is. stderr only: stdout stays the transport.
            if config.http.is_none() && std::io::IsTerminal::is_terminal(&std::io::stdin()) {
                eprintln!("{}", terminal_notice(&config.name));
            }
            for note in &config.notes {
                tracing::warn!("{note}");
            }
            if let Some(warning) = config.execution_warning() {
                tracing::warn!("{warning}");
            }
            let layers = toolgate::sandbox::Sandbox::get().layers();
            tracing::debug!("sandbox: {}", layers.required());
            tracing::debug!("sandbox where the kernel offers it: {}", layers.optional());
            let refused = [
                &layers.rlimits,
                &layers.namespaces,
                &layers.pid,
                &layers.quota,
                &layers.landlock,
            ];
            if config.runtimes.nyxilum && refused.iter().any(|l| !l.is_active()) {
                tracing::warn!(
                    "some sandbox layers are unavailable on this kernel; NyxilumNode runs without them: {layers}"
                );
            }
            // SAFETY: geteuid(2) has no preconditions and cannot fail.
            if config.runtimes.nyxilum && unsafe { libc::geteuid() } == 0 {
                tracing::warn!(
                    "toolgate runs as root: sandboxed NyxilumNode children run as uid {}, which needs to read the runtime and to search the temp folder (TMPDIR); run toolgate as an ordinary user where you can",
                    toolgate::limits::SANDBOX_UNPRIVILEGED_ID
                );
            }
            let access = match &config.http {
                Some(settings) => Some(access(&config, &settings.listen)?),
                None => None,
            };
            let upstreams = match &config.upstreams {
                None => None,
                Some(source) => {
                    let (upstreams, notes) = Upstreams::open(source, config.limits.upstream_ping)?;
                    for note in notes {
                        tracing::warn!("{note}");
                    }
                    let upstreams = Arc::new(upstreams);
                    upstreams.start();
                    Some(upstreams)
                }
            };
            let gateway = gateway(&config, true, upstreams.clone(), access.as_ref().map(|a| a.limiter()))?;
            let handler = Handler::new(
                gateway.clone(),
                config.name.clone(),
                config.advertise,
                config.limits.advertise_bytes,
            );
            let served = match (&config.http, access) {
                // Over HTTP, SIGTERM and SIGINT stop new connections and give running
                // calls a grace before every session ends.
                (Some(settings), Some(access)) => {
                    toolgate::transport::http::serve(handler, settings, config.connections, access, terminated()).await
                }
                // SIGTERM and SIGINT end the session like a closed stdin, so the cleanup
                // below runs instead of the process dying with children left behind.
                _ => tokio::select! {
                    served = toolgate::transport::stdio::serve(handler) => served,
                    signal = terminated() => {
                        tracing::debug!("{signal}: shutting down");
                        Ok(())
                    }
                },
            };
            // REPL sessions and upstream servers end with the server: their processes
            // and folders go now.
            gateway.nyxilum().sessions().close_all().await;
            if let Some(upstreams) = &upstreams {
                upstreams.close().await;
            }
            served
        }
    }
}

/// What a person who ran `toolgate` in a terminal reads on stderr: what the program is,
/// how it is meant to be used, and where the settings are.
fn terminal_notice(name: &str) -> String {
    format!(
        "toolgate {version}: an MCP server speaking JSON-RPC on stdin/stdout, now waiting for an MCP client.\n\
         Typed text is not a command. Point an MCP client (a desktop host, an IDE, MCP Inspector) at this\n\
         program, e.g. {{\"mcpServers\": {{\"{name}\": {{\"command\": \"toolgate\"}}}}}} in its configuration.\n\
         `toolgate --help` lists the settings; Ctrl-D or Ctrl-C ends this session.",
        version = env!("CARGO_PKG_VERSION"),
    )
}

/// Resolves when the process receives SIGTERM or SIGINT, naming it. Without a handler
/// (it could not be installed) it never resolves.
async fn terminated() -> &'static str {
    use tokio::signal::unix::{SignalKind, signal};
    match (signal(SignalKind::terminate()), signal(SignalKind::interrupt())) {
        (Ok(mut term), Ok(mut int)) => tokio::select! {
            _ = term.recv() => "SIGTERM",
            _ = int.recv() => "SIGINT",
        },
        _ => std::future::pending().await,
    }
}

/// Prints the evaluation report on stdout (this command is not an MCP server) and fails
/// when the query file had unusable lines, after reporting each with its number.
fn eval(snapshot: &toolgate::catalogue::Snapshot, text: &str, show_misses: usize) -> Result<(), String> {
    use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
    let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::hidden());
    if let Ok(style) = ProgressStyle::with_template("{bar:40} {pos}/{len} queries {eta}") {
        bar.set_style(style);
    }
    let started = std::time::Instant::now();
    let report = toolgate::commands::eval::run(snapshot, text, show_misses, |done, total| {
        if done == 1 {
            bar.set_length(total as u64);
        }
        if bar.is_hidden() && started.elapsed() > std::time::Duration::from_secs(1) {
            bar.set_draw_target(ProgressDrawTarget::stderr());
        }
        bar.set_position(done as u64);
    });
    bar.finish_and_clear();
    for bad in &report.bad_lines {
        eprintln!("line {}: {}", bad.line, bad.reason);
    }
    for (line, slug) in &report.unknown_slugs {
        eprintln!("line {line}: relevant tool \"{slug}\" is not in the catalogue");
    }
    print!("{}", report.render(snapshot.tools().len()));
    if report.bad_lines.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "{} unusable lines in the query file (listed above)",
            report.bad_lines.len()
        ))
    }
}

/// The access rule of an HTTP server listening on `listen`: the keys file read (and
/// watched), and a refusal to serve a non-loopback address to anonymous callers unless
/// the operator asked for it.
fn access(config: &Config, listen: &str) -> Result<toolgate::access::Access, String> {
    let access = toolgate::access::Access::open(config.keys_file.as_deref(), config.allow_anonymous, config.rates)?;
    access.check_exposure(listen)?;
    access.watch();
    Ok(access)
}

/// The gateway `config` describes, with `upstreams` joined to its catalogue and runs
/// admitted through `limiter` (an HTTP server's); `serving` starts the idle JavaScript
/// workers now.
fn gateway(
    config: &Config,
    serving: bool,
    upstreams: Option<Arc<Upstreams>>,
    limiter: Option<Arc<toolgate::access::Limiter>>,
) -> Result<Arc<Gateway>, String> {
    let client = match &config.source {
        SourceSpec::Http(base) => Some(ApiClient::new(
            base,
            config.api_key.clone(),
            config.limits.http_timeout,
        )?),
        _ => None,
    };
    let reserved = toolgate::mcp::reserved(&config.name);
    let store = Store::open(
        &config.source,
        client,
        (config.limits.cache_ttl, config.limits.validators),
        reserved,
    )?;
    let locator = toolgate::exec::nyxilum::Locator {
        node_path: config.nx_node_path.clone(),
        ecosystem_root: config.nx_ecosystem_root.clone(),
    };
    match &locator.node_path {
        Some(path) => tracing::debug!("NyxilumNode: NX_NODE_PATH={}", path.display()),
        None => tracing::debug!(
            "NyxilumNode: searched for under NX_ECOSYSTEM_ROOT={} (resolves to {}; a relative root is taken from the working directory)",
            locator.ecosystem_root.display(),
            locator.root().display()
        ),
    }
    let nyxilum =
        toolgate::exec::nyxilum::Nyxilum::new(locator).with_concurrent_runs(config.limits.nyx_concurrent_runs);
    let worker = std::env::current_exe().map_err(|e| format!("cannot find this program's path: {e}"))?;
    let exec =
        Executor::new(config.execution, &config.limits, nyxilum, worker).with_fetch_allow(config.fetch_allow.clone());
    if serving {
        exec.prewarm();
    }
    let builtins = Builtins::new(config.runtimes, &config.limits);
    let mut gateway = Gateway::new(store, exec, builtins, config.limits.clone());
    if let Some(limiter) = limiter {
        gateway = gateway.with_limiter(limiter);
    }
    Ok(Arc::new(match upstreams {
        Some(upstreams) => gateway.with_upstreams(upstreams),
        None => gateway,
    }))
}

/// Diagnostics go to stderr only: stdout is the MCP transport. Warnings and the HTTP
/// access log by default, debug with `--debug`/`TOOLGATE_DEBUG`, anything with
/// `RUST_LOG`; one JSON object a line with `TOOLGATE_LOG_FORMAT=json`.
fn init_logging(debug: bool, format: &str) {
    use tracing_subscriber::EnvFilter;
    let default = if debug {
        "toolgate=debug,toolgate_access=info,rmcp=info"
    } else {
        "toolgate=warn,toolgate_access=info,rmcp=error"
    };
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(false);
    match format {
        "json" => builder.json().init(),
        _ => builder.init(),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_terminal_notice_says_what_this_is_and_how_to_use_it() {
        let notice = super::terminal_notice("tools");
        assert!(
            notice.contains("an MCP server speaking JSON-RPC on stdin/stdout"),
            "{notice}"
        );
        assert!(notice.contains("Point an MCP client"), "{notice}");
        assert!(
            notice.contains(r#"{"mcpServers": {"tools": {"command": "toolgate"}}}"#),
            "{notice}"
        );
        assert!(notice.contains("toolgate --help"), "{notice}");
    }
}
