//! Search by intent: a lexical, deterministic ranker over each catalogue snapshot, built
//! once per snapshot and never per query (`index`); closeness in meaning from the
//! compiled-in model (`meaning`), with the background job that embeds a snapshot's tools
//! (`embedding`) and the disk cache of their vectors (`vector_cache`); and the metrics that
//! measure it all (`catalogue eval`).
//!
//! **Invariant:** search knows nothing of the catalogue's types: it indexes what
//! implements [`Indexable`] and embeds what implements [`embedding::Corpus`]. Its only I/O
//! is the vector cache's file.

#![warn(missing_docs, unreachable_pub)]

mod budget;
mod build;
mod document;
pub mod embedding;
pub mod eval;
mod index;
pub mod limits;
pub mod meaning;
pub mod memory;
mod query;
#[cfg(test)]
mod testutil;
pub mod tokenize;
mod typo;
mod vector_cache;

pub use budget::{Budget, OverBudget};
pub use document::{Document, Indexable};
pub use embedding::{Meaning, Ranker, SearchMode};
pub use index::{FUSION, Field, Fusion, Hit, Index, Norm, QueryError, Tuning};
pub use query::{Cut, cut};
