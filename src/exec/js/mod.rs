//! The JavaScript backend: a fresh QuickJS runtime and context per call, with a heap cap
//! enforced by the allocator, a deadline enforced by the interrupt handler and by an
//! outer timeout (for promises that never settle), and console output captured.

mod alloc;
mod engine;
pub mod output;
mod typescript;

pub use engine::{JsLimits, JsOutput, SnippetOutput, run_snippet, run_tool, run_typescript_tool};
