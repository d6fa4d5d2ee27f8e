//! Transports: rmcp wiring — stdio, with toolgate's own line transport that answers what
//! rmcp's would drop (over-long lines) or misnumber (malformed requests), and Streamable
//! HTTP for many sessions at once.

pub mod http;
mod lines;
mod polling;
mod relay;
mod sessions;
pub mod stdio;
mod triage;
