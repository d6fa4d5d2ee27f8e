//! The `toolgate` command: parses flags and environment, then runs the chosen mode.
//! Glue only: every behaviour lives in the library.

use std::process::ExitCode;
use std::sync::Arc;

mod cli;
use cli::{CatalogueCommand, Cli, Command, KeysCommand, UpstreamCommand};
use toolgate::api::ApiClient;
use toolgate::backends::Families;
use toolgate::backends::js::JsLimits;
use toolgate::backends::upstream::Upstreams;
use toolgate::catalogue::SourceSpec;
use toolgate::catalogue::Store;
use toolgate::config::Config;
use toolgate::gateway::Gateway;
use toolgate::limits;
use toolgate::mcp::Handler;
use toolgate::search::Meaning;

/// One glibc malloc arena per core instead of glibc's eight, before any thread starts.
/// Memory freed by one build (parsing, the index's scratch) stays pinned in whichever of
/// many arenas it came from; with fewer arenas it is reused and given back. Measured on 2
/// cores, lexical search, RSS after the first search: 10,000 synthetic tools 47.6 → 37.5
/// MB, 100,000 tools 221 → 197 MB (`cargo bench --bench scale`); the embedded catalogue
/// unchanged. An operator's own
/// `MALLOC_ARENA_MAX` wins.
fn cap_malloc_arenas() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    if std::env::var_os("MALLOC_ARENA_MAX").is_none() {
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get()).max(2);
        // SAFETY: mallopt takes plain integers; no thread has started yet.
        unsafe {
            libc::mallopt(libc::M_ARENA_MAX, i32::try_from(cores).unwrap_or(i32::MAX));
        }
    }
}

fn main() -> ExitCode {
    // A JavaScript worker started by this program's own server: no flags, no logging
    // setup, no environment read (it has none).
    if std::env::args_os()
        .nth(1)
        .is_some_and(|a| a == toolgate::backends::js::WORKER_ARG)
    {
        return toolgate::backends::js::worker_main();
    }
    cap_malloc_arenas();
    let (cli, flags) = Cli::parse_with_flags();
    // shell and demo report their connection's failures themselves, in one sentence.
    let is_client = matches!(cli.command, Some(Command::Shell { .. } | Command::Demo { .. }));
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(r) => r,
        Err(e) => return fail(&format!("cannot start the async runtime: {e}")),
    };
    let exporting = init_logging(cli.debug, cli.trace_steps, &cli.log_format, is_client, runtime.handle());
    if cli.version {
        println!("toolgate {}", env!("CARGO_PKG_VERSION"));
        let layers = toolgate::sandbox::Sandbox::get().layers();
        println!("sandbox: {}", layers.required());
        println!("sandbox where the kernel offers it: {}", layers.optional());
        return ExitCode::SUCCESS;
    }
    let outcome = runtime.block_on(run(cli, flags));
    // The spans of the last requests leave before the process does, while the runtime
    // a gRPC exporter's connection lives on still runs.
    if let Some(exporting) = exporting {
        exporting.shutdown();
    }
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

async fn run(cli: Cli, flags: Vec<(std::ffi::OsString, std::ffi::OsString)>) -> Result<(), String> {
    if let Some(Command::Keys {
        command: KeysCommand::New {
            scopes,
            id,
            file,
            tools,
        },
    }) = &cli.command
    {
        let scopes = toolgate::access::Scope::parse_list(scopes).map_err(|e| format!("--scopes: {e}"))?;
        let key = toolgate::access::keys::append(file, scopes, id.clone(), tools.as_deref())?;
        println!("{key}");
        return Ok(());
    }
    let (raw, command) = cli.split();
    let mut config = Config::from_raw(raw)?;
    match command {
        Some(Command::Catalogue {
            command: CatalogueCommand::Check { source },
        }) => {
            config.choose_source(source.as_deref())?;
            let binary = std::env::current_exe().map_err(|e| format!("cannot find this program's path: {e}"))?;
            let report = toolgate::commands::check::run(&binary, &config, &flags).await?;
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
            let access = access(&config, &listen).await?;
            let gateway = gateway(&config, None, Some(access.limiter()), false)?;
            gateway.prewarm();
            let served =
                toolgate::operator::serve(gateway.clone(), &listen, config.connections, access, terminated()).await;
            gateway.keep_catalogue_at_exit();
            served
        }
        Some(Command::Keys { .. }) => Ok(()),
        Some(Command::Upstream {
            command: UpstreamCommand::Approve { server, tool },
        }) => toolgate::commands::approve::run(&config, &server, tool.as_deref()).await,
        Some(Command::Upstream {
            command: UpstreamCommand::Login { server },
        }) => toolgate::commands::login::run(&config, &server).await,
        Some(Command::Shell { connect, file, history }) => {
            let input = toolgate::commands::shell::Input::choose(file);
            toolgate::commands::shell::run(connect.target(flags)?, &config.name, input, history.as_deref()).await
        }
        Some(Command::Demo { connect }) => toolgate::commands::demo::run(connect.target(flags)?, &config.name).await,
        Some(Command::Catalogue {
            command:
                CatalogueCommand::Eval {
                    queries,
                    dataset,
                    source,
                    every,
                    min_hybrid,
                    min_margin,
                    show_misses,
                },
        }) => {
            use toolgate::commands::eval::datasets::{self, Floors, Measured};
            let every = usize::try_from(every).unwrap_or(usize::MAX);
            let mut measured = Vec::new();
            if let Some(queries) = queries {
                config.choose_source(source.as_deref())?;
                let text =
                    std::fs::read_to_string(&queries).map_err(|e| format!("cannot read {}: {e}", queries.display()))?;
                let gateway = gateway(&config, None, None, false)?;
                let snapshot = gateway.snapshot().await.map_err(|e| e.to_string())?;
                let meaning = match gateway.meaning().settled(&*snapshot).await {
                    toolgate::search::Ranker::Hybrid => Some(&**gateway.meaning()),
                    toolgate::search::Ranker::Lexical => None,
                };
                let bar = Bar::new();
                let report =
                    toolgate::commands::eval::run(&snapshot, meaning, &text, every, show_misses, |d, t| bar.show(d, t));
                bar.done();
                let name = queries
                    .file_name()
                    .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
                measured.push(Measured {
                    name,
                    tools: snapshot.tools().len(),
                    report,
                });
            }
            for dir in &dataset {
                let bar = Bar::new();
                let (m, problems) =
                    datasets::measure(dir, &config.search, every, show_misses, |d, t| bar.show(d, t)).await?;
                bar.done();
                for problem in problems {
                    eprintln!("{}: {problem}", m.name);
                }
                measured.push(m);
            }
            eval_report(
                &measured,
                Floors {
                    hybrid: min_hybrid,
                    margin: min_margin,
                },
            )
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
                Some(settings) => Some(access(&config, &settings.listen).await?),
                None => None,
            };
            let upstreams = match &config.upstreams {
                None => None,
                Some(source) => {
                    let (upstreams, notes) =
                        Upstreams::open(source, config.limits.upstream_ping, config.limits.upstream_first_wait)
                            .map_err(|e| e.to_string())?;
                    for note in notes {
                        tracing::warn!("{note}");
                    }
                    let upstreams = match &config.upstream_tokens {
                        Some(tokens) => upstreams.with_tokens(tokens),
                        None => upstreams,
                    };
                    let upstreams = match &config.pins {
                        Some((file, hold_new)) => {
                            upstreams.with_pins(toolgate::backends::upstream::pins::Pins::open(file, *hold_new)?)
                        }
                        None => upstreams,
                    };
                    let upstreams = Arc::new(upstreams);
                    upstreams.start();
                    Some(upstreams)
                }
            };
            let gateway = gateway(&config, upstreams.clone(), access.as_ref().map(|a| a.limiter()), true)?;
            // Over stdio the workers start once `initialize` is answered (see
            // `transport::stdio`): on 2 cores, two workers starting beside it held its
            // answer. An HTTP server answers no one before it listens.
            if config.http.is_some() {
                gateway.prewarm();
            }
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
                    toolgate::transport::http::serve(handler, settings, config.connections, access, terminated())
                        .await
                        .map_err(|e| e.to_string())
                }
                // SIGTERM and SIGINT end the session like a closed stdin, so the cleanup
                // below runs instead of the process dying with children left behind.
                _ => tokio::select! {
                    served = toolgate::transport::stdio::serve(handler) => served.map_err(|e| e.to_string()),
                    signal = terminated() => {
                        tracing::debug!("{signal}: shutting down");
                        Ok(())
                    }
                },
            };
            // REPL sessions and upstream servers end with the server: their processes
            // and folders go now.
            gateway.end_all().await;
            if let Some(upstreams) = &upstreams {
                upstreams.close().await;
            }
            gateway.keep_catalogue_at_exit();
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

/// A progress bar on stderr for `catalogue eval`, drawn only once a run has taken a
/// second.
struct Bar {
    bar: indicatif::ProgressBar,
    started: std::time::Instant,
}

impl Bar {
    fn new() -> Bar {
        use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::hidden());
        if let Ok(style) = ProgressStyle::with_template("{bar:40} {pos}/{len} queries {eta}") {
            bar.set_style(style);
        }
        Bar {
            bar,
            started: std::time::Instant::now(),
        }
    }

    fn show(&self, done: usize, total: usize) {
        if done == 1 {
            self.bar.set_length(total as u64);
        }
        if self.bar.is_hidden() && self.started.elapsed() > std::time::Duration::from_secs(1) {
            self.bar.set_draw_target(indicatif::ProgressDrawTarget::stderr());
        }
        self.bar.set_position(done as u64);
    }

    fn done(&self) {
        self.bar.finish_and_clear();
    }
}

/// Prints each evaluation's report on stdout (this command is not an MCP server), then,
/// for several datasets or floors, the table of all; fails when a query file had unusable
/// lines (each reported with its number) or a dataset is below a floor.
fn eval_report(
    measured: &[toolgate::commands::eval::datasets::Measured],
    floors: toolgate::commands::eval::datasets::Floors,
) -> Result<(), String> {
    use toolgate::commands::eval::datasets;
    let mut unusable = 0;
    for (i, m) in measured.iter().enumerate() {
        let prefix = if measured.len() > 1 {
            format!("{}: ", m.name)
        } else {
            String::new()
        };
        for bad in &m.report.bad_lines {
            eprintln!("{prefix}line {}: {}", bad.line, bad.reason);
        }
        for (line, slug) in &m.report.unknown_slugs {
            eprintln!("{prefix}line {line}: relevant tool \"{slug}\" is not in the catalogue");
        }
        unusable += m.report.bad_lines.len();
        if measured.len() > 1 {
            println!("{}{}", if i > 0 { "\n" } else { "" }, m.name);
        }
        print!("{}", m.report.render(m.tools));
    }
    if measured.len() > 1 || floors != datasets::Floors::default() {
        print!("\n{}", datasets::table(measured));
    }
    if unusable > 0 {
        return Err(format!("{unusable} unusable lines in the query files (listed above)"));
    }
    let below = datasets::below(measured, floors);
    if below.is_empty() {
        Ok(())
    } else {
        Err(format!("below the floor: {}", below.join("; ")))
    }
}

/// The access rule of an HTTP server listening on `listen`: the keys file read (and
/// watched), the OAuth keys read when OAuth is configured, the fleet's Redis (watched)
/// when one is named, and a refusal to serve a non-loopback address to anonymous callers unless
/// the operator asked for it.
async fn access(config: &Config, listen: &str) -> Result<toolgate::access::Access, String> {
    let oauth = match &config.oauth {
        Some(settings) => Some(
            toolgate::access::oauth::OAuth::open(settings.clone())
                .await
                .map_err(|e| e.to_string())?,
        ),
        None => None,
    };
    let shared = match &config.redis {
        Some(settings) => {
            let shared = toolgate::shared::Shared::open(settings)?;
            shared.watch();
            Some(shared)
        }
        None => None,
    };
    let access = toolgate::access::Access::open(
        config.keys_file.as_deref(),
        config.allow_anonymous,
        config.rates,
        oauth,
        shared,
    )?;
    access.check_exposure(listen).map_err(|e| e.to_string())?;
    access.watch();
    Ok(access)
}

/// The gateway `config` describes, with `upstreams` joined to its catalogue and runs
/// admitted through `limiter` (an HTTP server's); `serves_mcp` when it serves the
/// meta-tool (whose name no catalogue tool may then take). A server starts its idle JavaScript
/// workers itself (`Gateway::prewarm`), when they no longer compete with its start.
fn gateway(
    config: &Config,
    upstreams: Option<Arc<Upstreams>>,
    limiter: Option<Arc<toolgate::access::Limiter>>,
    serves_mcp: bool,
) -> Result<Arc<Gateway>, String> {
    let client = match &config.source {
        SourceSpec::Http(base) => {
            Some(ApiClient::new(base, config.api_key.clone(), config.limits.http_timeout).map_err(|e| e.to_string())?)
        }
        _ => None,
    };
    let builtins: Vec<String> = toolgate::backends::declared(config.runtimes, &config.limits)
        .into_iter()
        .map(|d| d.definition.name)
        .collect();
    let namespaces = upstreams.as_ref().map(|u| u.namespaces()).unwrap_or_default();
    let reserved = toolgate::mcp::reserved(&config.name, &builtins, serves_mcp).with_namespaces(namespaces);
    let store = Store::open(
        &config.source,
        client.clone(),
        (config.limits.cache_ttl, config.limits.validators),
        reserved,
    )?;
    let locator = toolgate::backends::nyxilum::Locator {
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
        toolgate::backends::nyxilum::Nyxilum::new(locator).with_concurrent_runs(config.limits.nyx_concurrent_runs);
    let worker = std::env::current_exe().map_err(|e| format!("cannot find this program's path: {e}"))?;
    let js = toolgate::backends::js::Js::new(JsLimits::from(&config.limits), worker)
        .with_fetch_allow(config.fetch_allow.clone())
        .with_fetch_trace(config.fetch_trace.clone());
    let families = Families::new(
        config.runtimes,
        config.execution,
        &config.limits,
        (Arc::new(js), Arc::new(nyxilum)),
        client,
    );
    let mut gateway = Gateway::new(store, families, config.limits.clone())
        .with_meaning(Arc::new(Meaning::new(config.search.clone())));
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
/// `RUST_LOG`; one JSON object a line with `TOOLGATE_LOG_FORMAT=json`. A client command
/// (`is_client`: shell, demo) leaves rmcp's own errors out: it reports them itself.
/// With an OTLP endpoint set (`toolgate::telemetry`), toolgate's spans are also exported
/// (the steps of each call too with `trace_steps`); the exporter is returned, to be
/// flushed at exit.
fn init_logging(
    debug: bool,
    trace_steps: bool,
    format: &str,
    is_client: bool,
    runtime: &tokio::runtime::Handle,
) -> Option<toolgate::telemetry::Exporting> {
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    use tracing_subscriber::{EnvFilter, Layer};
    let default = match (debug, is_client) {
        (true, _) => "toolgate=debug,toolgate_access=info,rmcp=info",
        (false, false) => "toolgate=warn,toolgate_access=info,rmcp=error",
        (false, true) => "toolgate=warn,rmcp=off",
    };
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default));
    let fmt = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(false);
    let fmt = match format {
        "json" => fmt.json().with_filter(filter).boxed(),
        _ => fmt.with_filter(filter).boxed(),
    };
    // Spans of toolgate's own, whatever the log filter says (`telemetry::exported`).
    let (otel, exporting, refused) = match toolgate::telemetry::start(runtime, trace_steps) {
        Ok(Some((layer, exporting))) => (Some(layer), Some(exporting), None),
        Ok(None) => (None, None, None),
        Err(e) => (None, None, Some(e)),
    };
    tracing_subscriber::registry().with(fmt).with(otel).init();
    if let Some(e) = refused {
        tracing::warn!("{e}; traces are not exported");
    }
    exporting
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
