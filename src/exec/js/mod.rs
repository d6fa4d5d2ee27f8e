//! The JavaScript backend: every run in a worker process under the process sandbox
//! (`pool.rs` on the server's side, `worker.rs` in the worker, `wire.rs` between them),
//! in a fresh QuickJS runtime and context with a heap cap enforced by the allocator, a
//! deadline enforced by the interrupt handler and the allocator (`state.rs`) and, from
//! outside, by the server killing the worker; console output captured, and `fetch`
//! made by the server within its own limits and address policy (`fetch.rs`,
//! `policy.rs`). Engines are built ahead of the call that uses them, never reused.

mod alloc;
mod bytecode;
mod client;
mod engine;
mod fetch;
mod host;
mod local;
pub mod output;
mod policy;
mod pool;
mod program;
mod state;
mod tell;
mod thrown;
mod typescript;
mod wire;
mod worker;

pub use engine::JsLimits;
pub use policy::FetchAllow;
pub use pool::{Js, JsOutput, SnippetOutput};
pub use worker::{WORKER_ARG, main as worker_main};
