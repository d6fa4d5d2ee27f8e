//! Upstream MCP servers (`TOOLGATE_UPSTREAMS`): the user's own servers, federated as
//! catalogue tools named `SERVER__TOOL`.
//!
//! [`Upstreams`] reads the `mcpServers` file, keeps one supervised rmcp client per
//! server (`link.rs`), and offers what the gateway needs: the tools as manifests (for
//! the snapshot, so search, list, schema, batch, history and diff reach them like any
//! tool), a generation that changes with them, each server's status, and the call.
//! With `mcp` and `commands::check`, this is the code that knows rmcp; it knows nothing
//! of the handler: the calling client reaches it only as a [`Caller`].

mod child;
pub mod descriptions;
mod family;
mod link;
pub mod naming;
pub mod oauth;
mod ordered;
mod oversize;
pub mod pins;
mod relay;
pub mod settings;
mod surface;
mod web;

use std::collections::HashSet;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::Duration;

use serde_json::{Map, Value, json};
use tokio::sync::{Notify, watch};
use tokio_util::sync::CancellationToken;

pub use family::Family;
pub use link::ENV_PASS;
pub use settings::{Filter, Server, Source, Transport};

use self::link::Link;
use crate::catalogue::manifest::Json;
use crate::catalogue::{Federated, Manifest};
use crate::error::Error;
use crate::limits::SHUTDOWN_GRACE;

/// The upstream servers of one toolgate.
#[derive(Debug)]
pub struct Upstreams {
    links: Vec<Arc<Link>>,
    /// Woken by a link whenever what it knows changes.
    changed: Arc<Notify>,
    /// Counts changes of the federated tool lists (and first attempts ending).
    generation: watch::Sender<u64>,
    /// The tool lists the generation was last counted for.
    counted: Mutex<Vec<Option<Arc<Vec<rmcp::model::Tool>>>>>,
    stop: CancellationToken,
    tasks: Mutex<Vec<tokio::task::JoinHandle<()>>>,
    /// Notes already printed about names left out.
    noted: Mutex<HashSet<String>>,
    /// How long after [`Upstreams::start`] listings wait for the first attempts.
    first_wait: Duration,
    /// When listings stop waiting for the first attempts: set by [`Upstreams::start`].
    first_deadline: OnceLock<tokio::time::Instant>,
    /// The approved tool definitions (`TOOLGATE_PINS`), when the operator keeps them.
    pins: Option<Arc<pins::Pins>>,
}

/// Why the `mcpServers` file named by `TOOLGATE_UPSTREAMS` cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// It cannot be read.
    #[error("TOOLGATE_UPSTREAMS: cannot read {}: {reason}", path.display())]
    Read {
        /// The file.
        path: std::path::PathBuf,
        /// What the system said.
        reason: String,
    },
    /// It is not an `mcpServers` document.
    #[error("TOOLGATE_UPSTREAMS: {}: {problem}", path.display())]
    File {
        /// The file.
        path: std::path::PathBuf,
        /// What is wrong with it.
        problem: settings::NotServers,
    },
}

impl Upstreams {
    /// Reads the `mcpServers` file at `source`. A missing or unreadable file, or one that
    /// is no `mcpServers` document, is an error; a bad entry is a note (for stderr) and
    /// costs only itself. Each server is pinged every `ping` once connected; listings wait
    /// for the first connection attempts until `first_wait` after the start. Nothing
    /// starts until [`Upstreams::start`].
    pub fn open(source: &Source, ping: Duration, first_wait: Duration) -> Result<(Upstreams, Vec<String>), OpenError> {
        let path = || source.0.clone();
        let text = std::fs::read_to_string(&source.0).map_err(|e| OpenError::Read {
            path: path(),
            reason: e.to_string(),
        })?;
        let (servers, notes) = settings::parse(&text).map_err(|problem| OpenError::File { path: path(), problem })?;
        let changed = Arc::new(Notify::new());
        let links: Vec<Arc<Link>> = servers
            .into_iter()
            .map(|s| Arc::new(Link::new(s, changed.clone(), ping)))
            .collect();
        let counted = Mutex::new(vec![None; links.len()]);
        let upstreams = Upstreams {
            links,
            changed,
            generation: watch::Sender::new(0),
            counted,
            stop: CancellationToken::new(),
            tasks: Mutex::default(),
            noted: Mutex::default(),
            first_wait,
            first_deadline: OnceLock::new(),
            pins: None,
        };
        Ok((upstreams, notes))
    }

    /// These upstreams reduced to `server` (by its name in the file), before they start:
    /// `toolgate upstream approve` starts only the server it approves.
    pub fn only(mut self, server: &str) -> Result<Upstreams, String> {
        self.links.retain(|l| l.server.name == server);
        if self.links.is_empty() {
            return Err(format!("the mcpServers file names no server \"{server}\""));
        }
        self.counted = Mutex::new(vec![None; self.links.len()]);
        Ok(self)
    }

    /// The tools `server` offers now that its entry exposes, once its first connection
    /// attempt has ended (within the first wait); an error says why it offers none.
    pub async fn offered(&self, server: &str) -> Result<Vec<rmcp::model::Tool>, String> {
        self.settled().await;
        let link = self.link(server).map_err(|e| e.to_string())?;
        link.status().map_err(|e| e.to_string())?;
        let tools = link.tools();
        Ok(tools
            .iter()
            .filter(|t| link.server.tools.admits(&t.name))
            .cloned()
            .collect())
    }

    /// These upstreams with the OAuth tokens of those whose entry has `oauth` kept in
    /// `tokens` (`TOOLGATE_UPSTREAM_TOKENS`). Without it, such an upstream cannot connect.
    #[must_use]
    pub fn with_tokens(mut self, tokens: &oauth::Tokens) -> Upstreams {
        for link in &mut self.links {
            if let Some(link) = Arc::get_mut(link) {
                link.use_tokens(tokens);
            }
        }
        self
    }

    /// These upstreams with their tools' definitions held to `pins` ([`pins`]).
    #[must_use]
    pub fn with_pins(mut self, pins: pins::Pins) -> Upstreams {
        self.pins = Some(Arc::new(pins));
        self
    }

    /// Starts one supervisor per server, and the task that turns their changes into
    /// generations. Call once, inside the runtime.
    pub fn start(self: &Arc<Self>) {
        let _ = self.first_deadline.set(tokio::time::Instant::now() + self.first_wait);
        let mut tasks = self.tasks.lock().unwrap_or_else(PoisonError::into_inner);
        for link in &self.links {
            tasks.push(tokio::spawn(link.clone().supervise(self.stop.child_token())));
        }
        if let Some(pins) = self.pins.clone() {
            // An approval made by another process (`toolgate upstream approve`) reaches
            // the listing within a poll: a new generation lists the tool again.
            let (this, stop) = (Arc::downgrade(self), self.stop.clone());
            tasks.push(tokio::spawn(async move {
                let mut every = tokio::time::interval(pins::PINS_POLL);
                loop {
                    tokio::select! {
                        _ = every.tick() => {}
                        () = stop.cancelled() => return,
                    }
                    let Some(upstreams) = this.upgrade() else { return };
                    let pins = pins.clone();
                    if tokio::task::spawn_blocking(move || pins.reload_if_changed())
                        .await
                        .unwrap_or(false)
                    {
                        upstreams.generation.send_modify(|g| *g += 1);
                    }
                }
            }));
        }
        let this = Arc::downgrade(self);
        let (changed, stop) = (self.changed.clone(), self.stop.clone());
        tasks.push(tokio::spawn(async move {
            loop {
                let notified = changed.notified();
                match this.upgrade() {
                    Some(upstreams) => upstreams.count(),
                    None => return,
                }
                tokio::select! {
                    () = notified => {}
                    () = stop.cancelled() => return,
                }
            }
        }));
    }

    /// Advances the generation when some link's tool list (or first attempt) changed.
    fn count(&self) {
        let now: Vec<Option<Arc<Vec<rmcp::model::Tool>>>> =
            self.links.iter().map(|l| l.is_tried().then(|| l.tools())).collect();
        let mut counted = self.counted.lock().unwrap_or_else(PoisonError::into_inner);
        if *counted != now {
            *counted = now;
            self.generation.send_modify(|g| *g += 1);
        }
    }

    /// Each server's namespace, `PREFIX__` (its slugs and its prompts' names begin so),
    /// with the server's name: a catalogue may name nothing inside it
    /// (`catalogue::Reserved`).
    pub fn namespaces(&self) -> Vec<(String, String)> {
        self.links
            .iter()
            .map(|l| {
                (
                    format!("{}{}", l.server.prefix, naming::SEPARATOR),
                    l.server.name.clone(),
                )
            })
            .collect()
    }

    /// Returns true if and only if no server is configured.
    pub fn is_empty(&self) -> bool {
        self.links.is_empty()
    }

    /// A number that changes whenever the federated tools may have.
    pub fn generation(&self) -> u64 {
        *self.generation.borrow()
    }

    /// A receiver that wakes on every new generation.
    pub fn changes(&self) -> watch::Receiver<u64> {
        self.generation.subscribe()
    }

    /// Waits until every server's first connection attempt has ended, at most until the
    /// first wait after [`Upstreams::start`] is over
    /// ([`crate::limits::UPSTREAM_FIRST_WAIT`] by default):
    /// one deadline for every caller, so no request waits past it, and none waits again.
    pub async fn settled(&self) {
        let mut changes = self.changes();
        let all_tried = || self.links.iter().all(|l| l.is_tried());
        let wait = async {
            while !all_tried() {
                if changes.changed().await.is_err() {
                    return;
                }
            }
        };
        let deadline = *self
            .first_deadline
            .get_or_init(|| tokio::time::Instant::now() + self.first_wait);
        let _ = tokio::time::timeout_at(deadline, wait).await;
    }

    /// Every exposed tool of every server as a manifest, with where it is served from.
    /// A tool its server's `tools` filter excludes is not here, nor one its pin holds
    /// ([`Upstreams::held`]); one the naming rule had to leave out is noted once on
    /// stderr. May write the pins file (a first pin): call it off the async workers.
    pub fn manifests(&self) -> Vec<(Manifest, Federated)> {
        let mut out = Vec::new();
        let mut held = std::collections::HashMap::new();
        for link in &self.links {
            let server = &link.server;
            let tools = link.tools();
            let exposed: Vec<&rmcp::model::Tool> = tools.iter().filter(|t| server.tools.admits(&t.name)).collect();
            let names: Vec<&str> = exposed.iter().map(|t| t.name.as_ref()).collect();
            // Slugs are fitted over every exposed tool, held ones included, so holding one
            // never renames another.
            for (tool, slug) in exposed.iter().zip(naming::slugs(&server.prefix, &names)) {
                let verdict = match (&self.pins, &slug) {
                    (Some(pins), Some(_)) => pins.judge(&server.name, server.accept_changes, tool),
                    _ => pins::Verdict::Pass,
                };
                if let (pins::Verdict::Held(what), Some(slug)) = (verdict, &slug) {
                    let error = Error::DefinitionChanged {
                        server: server.name.clone(),
                        tool: tool.name.to_string(),
                        what,
                    };
                    held.insert(slug.clone(), error);
                    continue;
                }
                match slug {
                    Some(slug) => out.push((
                        manifest(server, slug, tool),
                        Federated {
                            server: server.name.clone(),
                            tool: tool.name.to_string(),
                        },
                    )),
                    None => self.note(format!(
                        "upstream \"{}\": tool \"{}\" left out: its name is listed twice or its fitted slug is taken",
                        server.name, tool.name
                    )),
                }
            }
        }
        if let Some(pins) = &self.pins {
            pins.set_held(held);
        }
        out
    }

    /// Every tool held by its pin now, by slug (sorted), with why.
    pub fn held_all(&self) -> Vec<(String, Error)> {
        self.pins.as_ref().map(|p| p.held_all()).unwrap_or_default()
    }

    /// `DEFINITION_CHANGED` for `name` when it is the slug of an upstream tool held by
    /// its pin (as the latest listing found it).
    pub fn held(&self, name: &str) -> Option<Error> {
        self.pins.as_ref()?.held(name)
    }

    fn note(&self, line: String) {
        if self
            .noted
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(line.clone())
        {
            tracing::warn!("{line}");
        }
    }

    fn link(&self, server: &str) -> Result<&Arc<Link>, Error> {
        self.links
            .iter()
            .find(|l| l.server.name == server)
            .ok_or_else(|| Error::UpstreamUnavailable {
                server: server.to_owned(),
                reason: "it is not configured".to_owned(),
            })
    }

    /// `Ok` while the tool's server is connected, else `UPSTREAM_UNAVAILABLE` naming it
    /// and its last error.
    pub fn status(&self, tool: &Federated) -> Result<(), Error> {
        self.link(&tool.server)?.status().map(|_| ())
    }

    /// `UPSTREAM_UNAVAILABLE` for `name` when it is a `SERVER__TOOL` slug of a server
    /// that is down now (it never started, crashed or is restarting), naming the server
    /// and its last error: a tool no snapshot knows may still be one of its tools. `None`
    /// when no server has the slug's prefix, or its server is up (the tool does not exist).
    pub fn unavailable(&self, name: &str) -> Option<Error> {
        let (prefix, _) = name.split_once(naming::SEPARATOR)?;
        let link = self.links.iter().find(|l| l.server.prefix == prefix)?;
        link.status().err()
    }

    /// Every server that is down now (never started, crashed or restarting), with why:
    /// `(name, reason)`, in the order of the `mcpServers` file.
    pub fn down(&self) -> Vec<(String, String)> {
        self.links
            .iter()
            .filter_map(|l| match l.status() {
                Err(Error::UpstreamUnavailable { server, reason }) => Some((server, reason)),
                _ => None,
            })
            .collect()
    }

    /// Calls `tool` with `params` (already validated). The answer is the upstream's
    /// `CallToolResult` as JSON, passed on as it came.
    pub async fn call(&self, tool: &Federated, params: &Value) -> Result<Value, Error> {
        let arguments = match params {
            Value::Object(map) => map.clone(),
            _ => Map::new(),
        };
        self.link(&tool.server)?.call(&tool.tool, arguments).await
    }

    /// Stops every supervisor; their connections close and their children are killed.
    pub async fn close(&self) {
        self.stop.cancel();
        let tasks = std::mem::take(&mut *self.tasks.lock().unwrap_or_else(PoisonError::into_inner));
        let _ = tokio::time::timeout(SHUTDOWN_GRACE, futures::future::join_all(tasks)).await;
    }
}

/// An upstream tool as a manifest: its title, description, schemas and annotations
/// kept; its server's name as category and tag, so a search for the server finds it.
/// The description is held to the server's `maxDescription`, and flagged when it
/// addresses the model ([`descriptions`]), as the whole text reads.
fn manifest(entry: &Server, slug: String, tool: &rmcp::model::Tool) -> Manifest {
    let server = entry.name.as_str();
    let description = tool.description.as_deref().unwrap_or_default();
    let annotations = tool
        .annotations
        .as_ref()
        .and_then(|a| serde_json::to_value(a).ok())
        .filter(Value::is_object)
        .map(|v| Json::from(&v));
    let name = tool
        .title
        .clone()
        .or_else(|| tool.annotations.as_ref().and_then(|a| a.title.clone()))
        .unwrap_or_else(|| tool.name.to_string());
    let mut extra = Map::new();
    extra.insert("upstream".to_owned(), json!({"server": server, "tool": tool.name}));
    let flags = descriptions::flags(description);
    if !flags.is_empty() {
        extra.insert("flags".to_owned(), json!(flags));
    }
    Manifest {
        slug,
        name,
        description: descriptions::capped(description, entry.max_description),
        category: server.to_owned(),
        tags: vec![server.to_owned(), "upstream".to_owned()],
        phrasings: Vec::new(),
        input_schema: Json::from(&Value::Object((*tool.input_schema).clone())),
        output_schema: tool
            .output_schema
            .as_ref()
            .map(|s| Json::from(&Value::Object((**s).clone()))),
        annotations,
        examples: Vec::new(),
        runtime: None,
        returns: crate::catalogue::Returns::Value,
        source: None,
        extra,
    }
}
