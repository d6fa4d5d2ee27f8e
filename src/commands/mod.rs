//! The command-line subcommands that are not servers: `catalogue eval` (and, as they
//! land, `catalogue check`, `shell`, `demo`). Each prints a report for people; none of them
//! speaks MCP on this process's stdout.

pub mod eval;
