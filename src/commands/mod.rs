//! The command-line subcommands that are not servers: `catalogue eval`, `catalogue check`,
//! `shell` (an MCP client, through `client`). Each prints for people; none
//! of them speaks MCP on this process's stdout.

pub mod check;
pub mod client;
pub mod eval;
pub mod shell;
