//! Search by intent: a lexical, deterministic ranker (no model, no network) over each
//! catalogue snapshot, built once per snapshot and never per query, and the metrics that
//! measure it (`catalogue eval`).
//!
//! **Invariant:** search never does I/O and knows nothing of the catalogue's types; it
//! indexes plain [`Document`]s.

mod budget;
mod build;
mod document;
pub mod eval;
mod index;
pub mod meaning;
mod query;
#[cfg(test)]
mod testutil;
pub mod tokenize;
mod typo;

pub use budget::{Budget, OverBudget};
pub use document::{Document, Indexable};
pub use index::{FUSION, Field, Fusion, Hit, Index, Norm, QueryError, Tuning};
pub use query::{Cut, cut};
