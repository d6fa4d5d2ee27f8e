//! Execution: where a validated call runs (remote API or a local backend) and the
//! backends themselves. It knows nothing of MCP; it receives a resolved tool and params
//! that already passed validation.

pub mod js;
mod mode;
pub mod nyxilum;
mod plan;
pub mod process;
pub mod share;
pub mod upstream;

pub use mode::Execution;
pub use plan::{Executor, Outcome};
pub use share::Party;
