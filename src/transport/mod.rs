//! Transports: rmcp wiring, and the stdio line transport that answers what rmcp's own
//! would drop (over-long lines) or misnumber (malformed requests).

mod lines;
pub mod stdio;
mod triage;
