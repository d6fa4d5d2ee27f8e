//! The command-line subcommands that are not servers: `catalogue eval`, `catalogue check`
//! (and, as they land, `shell`, `demo`). Each prints a report for people; none of them
//! speaks MCP on this process's stdout.

pub mod check;
pub mod eval;
