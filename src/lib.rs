//! toolgate: an MCP gateway to a catalogue of tools.
//!
//! Data flows one way (see ARCHITECTURE.md): transport → mcp → gateway → registry →
//! backends → {catalogue, search, validate, history, sandbox}. This file only declares
//! modules.

#![warn(missing_docs, unreachable_pub)]

pub mod access;
pub mod api;
pub mod backchannel;
pub mod backends;
pub mod catalogue;
pub mod commands;
pub mod config;
pub mod edge;
pub mod error;
pub mod gateway;
pub mod heavy;
pub mod history;
pub mod limits;
pub mod mcp;
pub mod message;
pub mod metrics;
pub mod operator;
pub mod patterns;
pub mod plural;
pub mod registry;
pub mod sandbox;
pub mod secrets;
pub mod shared;
pub mod telemetry;
pub mod transport;
pub mod validate;

pub use error::{Error, Result};
/// Search by intent and by meaning: a crate of its own (`crates/search`), so the compiler
/// holds it to knowing nothing of the catalogue, the gateway or MCP.
pub use toolgate_search as search;
/// The process's memory helpers, shared with search's embedding job.
pub use toolgate_search::memory;
