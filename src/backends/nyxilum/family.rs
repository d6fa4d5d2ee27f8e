//! The NyxilumLang family as the gateway sees it: the `nyxilum_*` tools it declares and
//! the calls it makes of them, and the REPL sessions freed when their MCP session ends.

use std::sync::Arc;

use futures::future::BoxFuture;

use super::Nyxilum;
use super::answer;
use super::tools::{self, NyxTool};
use crate::backends::seam::{Answer, Backend, Call, Declared, Target};
use crate::backends::share::Party;
use crate::error::Error;
use crate::limits::Limits;

/// The `nyxilum_*` tools on one NyxilumNode backend.
#[derive(Debug, Clone)]
pub struct Family {
    nyx: Arc<Nyxilum>,
}

impl Family {
    /// The family running its tools on `nyx`.
    pub fn new(nyx: Arc<Nyxilum>) -> Family {
        Family { nyx }
    }

    /// The backend (its REPL sessions, its runs of catalogue code).
    pub fn nyxilum(&self) -> &Arc<Nyxilum> {
        &self.nyx
    }
}

impl Backend for Family {
    fn family(&self) -> &'static str {
        "nyxilum"
    }

    fn declare(&self, _limits: &Limits) -> Vec<Declared> {
        tools::declare()
    }

    fn call<'a>(&'a self, call: Call<'a>) -> BoxFuture<'a, Answer> {
        Box::pin(async move {
            let tool = match call.target {
                Target::Builtin(name) => NyxTool::named(name),
                Target::Tool { .. } => None,
            };
            let Some(tool) = tool else {
                return Answer::refused(Error::Internal(
                    "the NyxilumLang tools were asked for another tool".into(),
                ));
            };
            // REPL sessions count against the caller's principal over HTTP; over stdio (no
            // party) against the MCP session, so one client's sessions are still bounded.
            let stdio;
            let party = match call.party.name() {
                Some(_) => call.party,
                None => {
                    stdio = Party::named(format!("session:{}", call.session));
                    &stdio
                }
            };
            answer::call(&self.nyx, (call.session, party), tool, call.params).await
        })
    }

    fn end_session(&self, session: u64) -> BoxFuture<'static, ()> {
        let nyx = self.nyx.clone();
        Box::pin(async move { nyx.sessions().close_owned(session).await })
    }

    fn end_all(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move { self.nyx.sessions().close_all().await })
    }
}
