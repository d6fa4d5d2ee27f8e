//! The JavaScript backend: a fresh QuickJS runtime and context per call, with a heap cap
//! enforced by the allocator, a deadline enforced by the interrupt handler, the
//! allocator and the caller's own wait (`state.rs`), console output captured, and `fetch`
//! bridged to the host within its own limits and address policy (`policy.rs`). Engines are built ahead of the call that
//! uses them (`pool.rs`), never reused.

mod alloc;
mod bytecode;
mod engine;
mod fetch;
pub mod output;
mod policy;
mod pool;
mod program;
mod state;
mod thrown;
mod typescript;

pub use engine::JsLimits;
pub use policy::FetchAllow;
pub use pool::{Js, JsOutput, SnippetOutput};
