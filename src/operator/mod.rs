//! `toolgate catalogue serve`: the catalogue HTTP API (`docs/reference/http-api.md`), for operators who
//! host their own tools. It drives the same [`Gateway`](crate::gateway::Gateway) as the
//! MCP server, so validation and execution are the same code.

mod listing;
mod routes;

pub use routes::{router, serve};
