//! all-MiniLM-L6-v2 for toolgate's search by meaning (issue 16): the model's own WordPiece
//! tokenizer ([`wordpiece`]) and sentence vectors from its int8 weights, compiled in.
//!
//! A crate of its own so that it is built optimised in every profile (the workspace's
//! `Cargo.toml` says why); toolgate's `search::meaning` is its one user.

pub mod wordpiece;

mod model;

pub use model::{DIM, Model};
pub use wordpiece::WordPiece;
