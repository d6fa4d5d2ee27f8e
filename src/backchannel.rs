//! The back channel: what work running for an MCP call may say to, or ask of, the client
//! whose call it runs — log messages and progress ([`Note`]), and the requests a server
//! may make of its client: sampling, elicitation and roots ([`Ask`]).
//!
//! The MCP layer owns it: the handler wraps each call's client in a [`BackChannel`] and
//! sets it around the call ([`scope`]). Whatever runs inside that call reaches it with
//! [`current`] — a JavaScript run passing on what its script logs or asks, an upstream
//! connection passing on what its server sends — so no layer between them carries it,
//! and none of them knows rmcp's server side. Outside an MCP call (the catalogue API,
//! `catalogue check`) there is none: notes are dropped and asks fail, saying why.

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Something running code tells its client, with no answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "note", rename_all = "snake_case")]
pub enum Note {
    /// `notifications/message`: a log message at an MCP level (`debug` … `emergency`).
    Log {
        /// The level, as MCP spells it.
        level: String,
        /// The logger's name, when the code gave one.
        logger: Option<String>,
        /// What is logged: any JSON.
        data: Value,
    },
    /// `notifications/progress` for the call's progress token (dropped when the call
    /// carried none).
    Progress {
        /// Work done so far; it should grow with each note.
        progress: f64,
        /// Work in all, when known.
        total: Option<f64>,
        /// What is happening now.
        message: Option<String>,
    },
}

/// A request made of the client of a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Ask {
    /// `sampling/createMessage`: the client's model writes a message.
    Sample,
    /// `elicitation/create`: the client's user fills in a form.
    Elicit,
    /// `roots/list`: the folders the client lets servers work in.
    Roots,
}

impl Ask {
    /// The request's MCP method.
    pub fn method(self) -> &'static str {
        match self {
            Ask::Sample => "sampling/createMessage",
            Ask::Elicit => "elicitation/create",
            Ask::Roots => "roots/list",
        }
    }

    /// The client capability it needs.
    pub fn capability(self) -> &'static str {
        match self {
            Ask::Sample => "sampling",
            Ask::Elicit => "elicitation",
            Ask::Roots => "roots",
        }
    }
}

/// Why a request of the client has no answer.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Unanswered {
    /// The client did not declare the capability the request needs.
    #[error("{}: the client did not declare the {} capability, so it cannot be asked", .0.method(), .0.capability())]
    Undeclared(Ask),
    /// The params are not a valid request of that kind.
    #[error("{}: not a valid request: {reason}", ask.method())]
    Invalid {
        /// The request.
        ask: Ask,
        /// What is wrong with its params.
        reason: String,
    },
    /// The client answered with an error of its own (passed on as it came).
    #[error("{}: {message}", ask.method())]
    Refused {
        /// The request.
        ask: Ask,
        /// The client's JSON-RPC error code.
        code: i32,
        /// The client's message.
        message: String,
        /// The client's error data, when it sent some.
        data: Option<Value>,
    },
    /// The request or its answer was lost on the way (the connection closed, an answer
    /// of the wrong kind).
    #[error("{}: {reason}", ask.method())]
    Lost {
        /// The request.
        ask: Ask,
        /// What happened.
        reason: String,
    },
}

/// The client of one call, as work running inside it reaches it.
pub trait BackChannel: Send + Sync + fmt::Debug {
    /// The MCP session the call belongs to: what an upstream's message naming no call is
    /// attributed by.
    fn session(&self) -> u64;

    /// Returns true if and only if the client declared the capability `ask` needs.
    fn declares(&self, ask: Ask) -> bool;

    /// Sends `note` to the client (or drops it: a log below the level the session asked
    /// for, progress for a call without a token). Notes sent one after another arrive in
    /// that order.
    fn note(&self, note: Note) -> BoxFuture<'static, ()>;

    /// Makes request `ask` with `params` (the MCP request's params) and answers its result
    /// as JSON, or why there is none.
    fn ask(&self, ask: Ask, params: Value) -> BoxFuture<'static, Result<Value, Unanswered>>;
}

tokio::task_local! {
    static CURRENT: Arc<dyn BackChannel>;
}

/// Runs `fut` with `channel` as the client that work running inside it reaches.
pub async fn scope<F: Future>(channel: Arc<dyn BackChannel>, fut: F) -> F::Output {
    CURRENT.scope(channel, fut).await
}

/// The client of the call running on this task, when there is one.
pub fn current() -> Option<Arc<dyn BackChannel>> {
    CURRENT.try_with(Arc::clone).ok()
}
