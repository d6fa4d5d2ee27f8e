//! The catalogue: manifests from one source, resolved by slug, held as immutable
//! snapshots with the resources and prompts the source carries. It never runs code and
//! knows nothing of MCP.

mod beneath;
pub mod example;
pub mod extras;
mod fill;
pub mod load;
pub mod manifest;
mod parse;
mod problem;
pub mod prompt;
mod reserved;
pub mod resource;
pub mod slug;
pub mod snapshot;
pub mod source;
pub mod store;
mod trim;

pub use extras::{Extras, Found};
pub use manifest::{Manifest, Returns, Runtime};
pub use reserved::Reserved;
pub use snapshot::{Federated, Origin, Problem, Snapshot, Tool};
pub use source::SourceSpec;
pub use store::Store;
