//! The MCP surface: the server handler, the meta-tool, the advertised list and the one
//! conversion of toolgate results to MCP results. Only this module and `transport` know
//! rmcp.

mod advertise;
mod batch;
mod client;
mod convert;
mod extras;
mod handler;
mod meta;
mod page;
mod prompts;
mod resources;
mod runs;
mod spans;
mod subscriptions;
mod tools;
mod types;
mod upstreams;
mod watch;

pub use advertise::Advertise;
pub use extras::reserved;
pub use handler::Handler;
pub use resources::tool_uri;
