//! What both HTTP servers (`--http` in `transport::http`, `catalogue serve` in
//! `operator`) share in front of their routes: the accept loop with its connection caps
//! and timeouts, and the health and readiness probes.

pub mod accept;
pub mod probes;

pub use accept::{Connections, serve};
