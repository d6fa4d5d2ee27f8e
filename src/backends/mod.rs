//! The tool families and the seam they share (`seam.rs`): every family offers its
//! built-in tools and makes validated calls through [`Backend`], answering one typed
//! [`Answer`]. Each family is one folder or file:
//!
//! - `catalogue.rs`: the catalogue's tools, run where the rule says — here, or through
//!   the catalogue API over HTTP;
//! - `js/`: JavaScript and TypeScript in sandboxed worker processes (`run_javascript`,
//!   `run_typescript`, and catalogue tools written in them);
//! - `nyxilum/`: NyxilumLang on NyxilumNode in the process sandbox (`nyxilum_*`, and
//!   catalogue tools written in it);
//! - `upstream/`: the user's own MCP servers, reached as their client.
//!
//! Shared by the families: `share.rs` (places shared fairly between callers),
//! `process/` (a sandboxed child process), `envelope.rs` (the advertised output schemas)
//! and `content.rs` (the check of MCP content blocks a tool returns). Nothing here
//! knows the gateway, the registry or the MCP server: a family receives a resolved target
//! and params that already passed validation.

pub mod catalogue;
mod content;
pub mod envelope;
pub mod js;
mod mode;
pub mod nyxilum;
pub mod process;
pub mod seam;
pub mod share;
pub mod upstream;

use std::sync::Arc;

pub use catalogue::Catalogue;
pub use mode::Execution;
pub use seam::{Answer, Backend, Call, Declared, Definition, Form, Output, Shape, Target, Tools};
pub use share::Party;

use crate::limits::Limits;

/// The runtime tools exposed (`TOOLGATE_RUNTIMES`). By default, none.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Runtimes {
    /// `run_javascript` and `run_typescript`.
    pub js: bool,
    /// The `nyxilum_*` tools.
    pub nyxilum: bool,
}

impl Runtimes {
    /// Reads a comma- or space-separated list; unknown names come back as notes for
    /// stderr.
    pub fn parse(raw: &str) -> (Runtimes, Vec<String>) {
        let mut runtimes = Runtimes::default();
        let mut notes = Vec::new();
        for name in raw
            .split(|c: char| c == ',' || c.is_whitespace())
            .filter(|n| !n.is_empty())
        {
            match name.to_ascii_lowercase().as_str() {
                "js" | "javascript" => runtimes.js = true,
                "nyxilum" | "nx" => runtimes.nyxilum = true,
                other => notes.push(format!(
                    "TOOLGATE_RUNTIMES: unknown runtime \"{other}\" ignored (known: js, nyxilum)"
                )),
            }
        }
        (runtimes, notes)
    }
}

/// The families of one server: the catalogue's tools, and the runtime families whose
/// built-in tools it offers. The registration lines of every family are here.
#[derive(Debug, Clone)]
pub struct Families {
    /// The catalogue's tools (always).
    pub catalogue: Arc<Catalogue>,
    /// The families whose built-in tools are offered (`TOOLGATE_RUNTIMES`), in listed
    /// order.
    pub runtimes: Vec<Arc<dyn Backend>>,
}

impl Families {
    /// The catalogue's tools under `mode` through `api` (for an HTTP catalogue), and the
    /// runtime families `runtimes` enables, on the engines `js` and `nyxilum` (which also
    /// run the catalogue's own code).
    pub fn new(
        runtimes: Runtimes,
        mode: Execution,
        limits: &Limits,
        (js, nyxilum): (Arc<js::Js>, Arc<nyxilum::Nyxilum>),
        api: Option<crate::api::ApiClient>,
    ) -> Families {
        let catalogue = Arc::new(Catalogue::new(mode, limits, js.clone(), nyxilum.clone(), api));
        let mut offered: Vec<Arc<dyn Backend>> = Vec::new();
        if runtimes.js {
            offered.push(Arc::new(js::Family::new(js)));
        }
        if runtimes.nyxilum {
            offered.push(Arc::new(nyxilum::Family::new(nyxilum)));
        }
        Families {
            catalogue,
            runtimes: offered,
        }
    }
}

/// The built-in tools `runtimes` enables, as their families declare them with `limits`:
/// their names and definitions, for a reader that runs none of them (`catalogue check`).
pub fn declared(runtimes: Runtimes, limits: &Limits) -> Vec<Declared> {
    let mut all = Vec::new();
    if runtimes.js {
        all.extend(js::tools::declare(limits));
    }
    if runtimes.nyxilum {
        all.extend(nyxilum::tools::declare());
    }
    all
}
