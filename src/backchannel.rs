//! The back channel: what code running for an MCP call may say to, or ask of, the client
//! whose call it runs — log messages and progress ([`Note`]), and the requests a server
//! may make of its client, sampling and elicitation ([`Ask`]).
//!
//! The MCP handler sets the channel around each call ([`scope`]); a backend running code
//! inside that call reaches it with [`current`], so no layer between them carries it (the
//! upstream relay's `Caller` is found the same way). Outside an MCP call — the catalogue
//! API, `catalogue check` — there is none: notes are dropped and asks fail, saying why.

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

/// A request running code makes of its client.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Ask {
    /// `sampling/createMessage`: the client's model writes a message.
    Sample,
    /// `elicitation/create`: the client's user fills in a form.
    Elicit,
}

impl Ask {
    /// The request's MCP method.
    pub fn method(self) -> &'static str {
        match self {
            Ask::Sample => "sampling/createMessage",
            Ask::Elicit => "elicitation/create",
        }
    }
}

/// The client of one call, as code running inside it reaches it.
pub trait BackChannel: Send + Sync {
    /// Sends `note` to the client (or drops it: a log below the level the session asked
    /// for, progress for a call without a token). Notes sent one after another arrive in
    /// that order.
    fn note(&self, note: Note) -> BoxFuture<'static, ()>;

    /// Makes request `ask` with `params` (the MCP request's params) and answers its result,
    /// or why there is none: the client did not declare the capability, the params are not
    /// a valid request, or the client refused.
    fn ask(&self, ask: Ask, params: Value) -> BoxFuture<'static, Result<Value, String>>;
}

tokio::task_local! {
    static CURRENT: Arc<dyn BackChannel>;
}

/// Runs `fut` with `channel` as the client that code running inside it reaches.
pub async fn scope<F: Future>(channel: Arc<dyn BackChannel>, fut: F) -> F::Output {
    CURRENT.scope(channel, fut).await
}

/// The client of the call running on this task, when there is one.
pub fn current() -> Option<Arc<dyn BackChannel>> {
    CURRENT.try_with(Arc::clone).ok()
}
