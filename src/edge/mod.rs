//! What both HTTP servers (`--http` in `transport::http`, `catalogue serve` in
//! `operator`) share in front of their routes: the accept loop with its connection caps
//! and timeouts, the health and readiness probes, and the access log, request ids and
//! `/metrics` (`observe`), and the reading of request bodies (`body`).

pub mod accept;
pub mod body;
pub mod observe;
pub mod probes;

pub use accept::{Connections, serve};
