//! The catalogue: manifests from one source, resolved by slug, held as immutable
//! snapshots. It never runs code and knows nothing of MCP.

pub mod example;
pub mod load;
pub mod manifest;
pub mod slug;
pub mod snapshot;
pub mod source;
pub mod store;
mod trim;

pub use manifest::{Manifest, Returns, Runtime};
pub use snapshot::{Federated, Origin, Problem, Snapshot, Tool};
pub use source::SourceSpec;
pub use store::Store;
