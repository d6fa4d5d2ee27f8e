//! The seam between the one call path (`gateway`) and the tool families: what a family
//! offers (its built-in tools' [`Declared`] definitions), what it is asked ([`Call`]) and
//! what it answers — one typed [`Answer`], built once by the family, from which the run's
//! body is laid out (`gateway::run`) without knowing which family made it.
//!
//! Code a family runs reaches the other tools only through [`Tools`], which the gateway
//! implements and hands down with the call.
//!
//! Every family implements [`Backend`]: JavaScript (`js`), NyxilumLang (`nyxilum`), the
//! catalogue's tools wherever they run (`catalogue`: here, or through the catalogue API
//! over HTTP, `remote`), and upstream MCP servers (`upstream`). The gateway holds each as
//! an `Arc<dyn Backend>`, reached through the entry a name resolves to, and never matches
//! on a family.

use std::fmt;
use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use super::share::Party;
use crate::catalogue::{Origin, Tool};
use crate::error::Error;
use crate::limits::Limits;

/// How a tool is described to clients: what `tools/list` and the meta-tool's `schema`
/// show.
#[derive(Debug, Clone)]
pub struct Definition {
    /// Its name (a catalogue tool's slug).
    pub name: String,
    /// A short human title.
    pub title: String,
    /// What it does, for the model.
    pub description: String,
    /// Its input schema.
    pub input_schema: Value,
    /// The schema of its whole `structuredContent`, failures admitted; `null` when none
    /// is advertised (an upstream tool whose server declares none).
    pub output_schema: Value,
    /// MCP tool annotations (`readOnlyHint`, `openWorldHint`, `title`, ...).
    pub annotations: Value,
}

/// How a run's answer is laid out: the family's own answer format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// The run envelope: `{success, result, duration_ms, run_id, ...}`.
    Envelope,
    /// A code snippet's `{success, stdout, stderr, result, error, duration_ms, truncated,
    /// timed_out}`.
    Snippet,
    /// Flat bodies (`{success, exitCode, ...}`, `{success, sessionId}`, ...), as the
    /// NyxilumLang tools answer.
    Flat,
    /// An upstream MCP server's own answer, passed on as it came to a direct call (and
    /// in the run envelope where runs are gathered: batch, history, the API).
    Passthrough,
}

/// A built-in tool as its family declares it, before its schema is compiled.
#[derive(Debug, Clone)]
pub struct Declared {
    /// How clients see it (its output schema is the success body; failures are admitted
    /// when it is registered).
    pub definition: Definition,
    /// How its answers are laid out.
    pub shape: Shape,
    /// Params worth showing as a ready-to-send call.
    pub examples: Vec<Value>,
}

/// Which tool a call runs.
#[derive(Debug, Clone, Copy)]
pub enum Target<'a> {
    /// A built-in tool of the family, by name.
    Builtin(&'a str),
    /// A catalogue or upstream tool, with where its catalogue came from.
    Tool {
        /// The tool.
        tool: &'a Arc<Tool>,
        /// Whose code it is (which decides where it may run).
        origin: Origin,
    },
}

/// One validated call, as a family is asked to make it.
#[derive(Debug, Clone, Copy)]
pub struct Call<'a> {
    /// What runs.
    pub target: Target<'a>,
    /// Its params, already validated.
    pub params: &'a Value,
    /// The MCP session it is made for (REPL sessions belong to one).
    pub session: u64,
    /// Whose share of the shared places it takes.
    pub party: &'a Party,
    /// Fires when the caller cancels; a family stops what it started.
    pub cancel: &'a CancellationToken,
    /// The tools the call's code may call (code mode: `run_javascript`'s `tools`), each
    /// through the gateway's one path as the same caller; `None` outside a snippet run
    /// by the gateway.
    pub tools: Option<&'a dyn Tools>,
}

/// What a snippet's code reaches through its `tools` global, implemented above the
/// families (by the gateway), so code calls every family only through the one call path:
/// validation, the caller's scope and rate, history (each inner call its own run, naming
/// the snippet's as its parent) and the limits of code mode.
pub trait Tools: Send + Sync + fmt::Debug {
    /// Calls the tool `name` — a slug or, when `function` is true, a function name (the
    /// slug with `-` as `_`) — with `params`, unless `cancel` fires first; its structured
    /// body on success.
    /// What limits the calls of a run is counted when this is called, not when the
    /// future is first polled, so calls count in the order they were made.
    fn call<'a>(
        &'a self,
        name: String,
        function: bool,
        params: Value,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<Value, Error>>;

    /// The ranked list the meta-tool's `search` gives for `query`, at most `limit` long.
    fn search<'a>(&'a self, query: String, limit: Option<usize>) -> BoxFuture<'a, Result<Value, Error>>;
}

/// Console or process output captured during a run (empty when there was none).
#[derive(Debug, Clone, Default)]
pub struct Output {
    /// What the code printed on stdout.
    pub stdout: String,
    /// What the code printed on stderr.
    pub stderr: String,
    /// True if and only if a stream was cut at its cap.
    pub truncated: bool,
    /// That cap in words ("262,144 characters"), for the note that says so.
    pub cap: String,
    /// The cap, in characters of JSON, at which the returned value was cut, when it was
    /// (it is then the start of its JSON text).
    pub result_cut: Option<usize>,
}

/// What a family's answer carries beyond its result and output.
#[derive(Debug, Clone, Default)]
pub enum Form {
    /// Nothing more.
    #[default]
    Plain,
    /// MCP content blocks a catalogue tool returned (its manifest says `"returns":
    /// "content"`), checked, so a direct call answers them as they are.
    Content(Vec<Value>),
    /// A flat body's fields present on both paths (`exitCode`, `timedOut`, ...) and its
    /// first line of text ("nyxilum_run finished in 0.1 s: exit code 0.").
    Flat {
        /// The fields.
        fields: Map<String, Value>,
        /// The first line of the text answer.
        headline: String,
    },
    /// An upstream server's answer (its `CallToolResult` as JSON), kept whole so a
    /// direct call gets it as it came.
    Passthrough(Value),
}

/// What one call produced, typed, before the gateway numbers and records it.
#[derive(Debug)]
pub struct Answer {
    /// The result (a catalogue tool's `result`, a snippet's returned value, a flat
    /// body's own fields as an object, an upstream's `structuredContent`), or why it
    /// failed.
    pub ended: Result<Value, Error>,
    /// Captured output, kept on every path.
    pub output: Output,
    /// True if and only if the family's own answer format applies: the call reached its
    /// backend. Otherwise the answer is the bare failure.
    pub reached: bool,
    /// What the family adds.
    pub form: Form,
}

impl Answer {
    /// A call that never reached its backend.
    pub fn refused(e: Error) -> Answer {
        Answer {
            ended: Err(e),
            output: Output::default(),
            reached: false,
            form: Form::Plain,
        }
    }

    /// A call that reached its backend and ended `ended`.
    pub fn reached(ended: Result<Value, Error>, output: Output) -> Answer {
        Answer {
            ended,
            output,
            reached: true,
            form: Form::Plain,
        }
    }

    /// This answer carrying `form`.
    #[must_use]
    pub fn with_form(mut self, form: Form) -> Answer {
        self.form = form;
        self
    }
}

/// A tool family: the built-in tools it offers and the calls it makes.
pub trait Backend: Send + Sync + fmt::Debug {
    /// The family's name, for metrics (`family` label) and logs: `catalogue`,
    /// `javascript`, `nyxilum` or `upstream`.
    fn family(&self) -> &'static str;

    /// The built-in tools it offers, described with the limits in force. By default,
    /// none.
    fn declare(&self, _limits: &Limits) -> Vec<Declared> {
        Vec::new()
    }

    /// Makes one validated call.
    fn call<'a>(&'a self, call: Call<'a>) -> BoxFuture<'a, Answer>;

    /// Readies what the first call would otherwise wait for. By default, nothing.
    fn prewarm(&self) {}

    /// Frees what MCP session `session` held (it ended). By default, nothing.
    fn end_session(&self, _session: u64) -> BoxFuture<'static, ()> {
        Box::pin(async {})
    }

    /// Frees what every session held (the server is ending). By default, nothing.
    fn end_all(&self) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }
}
