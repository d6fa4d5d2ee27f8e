//! The JavaScript backend: every run in a worker process under the process sandbox, in a
//! fresh QuickJS runtime and context with a heap cap enforced by the allocator, a deadline
//! enforced by the interrupt handler and the allocator and, from outside, by the server
//! killing the worker; console output captured, and `fetch` made by the server within its
//! own limits and address policy. Engines are built ahead of the call that uses them,
//! never reused. Three parts, each its own folder or file:
//!
//! - `server/`: the server's side — the pool of workers and the runs it hands them, one
//!   worker seen from the server, `fetch` on a script's behalf, notes to the client;
//! - `worker/`: the worker process (`toolgate __js-worker`) — its engine, host functions,
//!   state, allocator and the scripts it runs;
//! - `wire.rs` (and `output.rs`, the captured console): what passes between them — frames,
//!   messages, the run's limits and the control pipe's stop messages;
//! - `typings.rs`: how a snippet's code sees the tools it may call (code mode's `tools`
//!   global), as TypeScript declarations.

mod family;
pub mod output;
mod server;
pub(crate) mod tools;
pub mod typings;
mod wire;
pub mod worker;

pub use family::Family;
pub(crate) use family::tool_answer;
pub use server::policy::FetchAllow;
pub use server::pool::{Js, JsOutput, SnippetOutput};
pub use wire::{JsLimits, WORKER_ARG};
pub use worker::main as worker_main;
