//! Transports: rmcp wiring only.

pub mod stdio;
