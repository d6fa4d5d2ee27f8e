//! The command-line subcommands that are not servers: `catalogue eval`, `catalogue check`,
//! `upstream approve`, `upstream login`, `shell` and `demo` (both MCP clients, through `client`). Each prints for people; none
//! of them speaks MCP on this process's stdout.

pub mod approve;
pub mod check;
pub mod client;
pub mod demo;
pub mod eval;
pub mod login;
pub mod shell;
