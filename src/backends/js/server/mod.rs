//! The server's side of the JavaScript backend: the pool of workers and the runs it
//! hands them (`pool.rs`), one worker seen from the server (`client.rs`), `fetch` made on
//! a script's behalf (`fetch.rs`) under the address policy (`policy.rs`), and the notes a
//! run sends its client (`tell.rs`).

mod calls;
pub(super) mod client;
pub(super) mod fetch;
pub(super) mod policy;
pub(super) mod pool;
pub(super) mod tell;
