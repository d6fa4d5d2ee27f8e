//! all-MiniLM-L6-v2 for toolgate's search by meaning: the model's own WordPiece
//! tokenizer ([`wordpiece`]) and sentence embeddings from a forward pass written here
//! over int8 weights compiled into the binary
//! (`model/minilm-l6-int8.bin`, made from the upstream ONNX graph by
//! `scripts/minilm-convert`). Nothing is downloaded or read from disk.
//!
//! A crate of its own so that it is built optimised in every profile (the workspace's
//! `Cargo.toml` says why); toolgate's `search::meaning` is its one user.
//!
//! The input is token ids (the WordPiece tokenizer is `wordpiece`, `[CLS]` … `[SEP]`
//! included); the output is the unit-length mean of the last hidden states, as
//! sentence-transformers computes it, so cosine similarity is a dot product.
//!
//! **Determinism:** the same ids give the same f32 bits on every CPU and in every batch
//! (integer linear layers, fixed-order f32 reductions, no FMA, pure-Rust `exp`/`erf`;
//! see `kernels.rs`), and one text never runs on more than the calling thread.
//!
//! **Memory:** the int8 weights are used where they lie in the binary (≈ 22.8 MB, no
//! f32 copy); parsing copies ≈ 0.2 MB of f32 scales and biases; a call allocates ≈ 18 KB
//! of scratch per token of the texts it processes together (at most [`BATCH_ROWS`] tokens
//! per pass, or one text of up to 512 tokens: ≤ 10 MB) and frees it on return.
//!
//! Its speed and its parity with onnxruntime are measured by `cargo bench --bench embed`
//! and the parity tests; the current figures are in `docs/performance.md`.

pub mod wordpiece;

mod kernels;
mod model;
#[cfg(test)]
mod tests;
mod weights;

use std::sync::OnceLock;

pub use weights::BlobError;
pub use wordpiece::WordPiece;

/// Width of an embedding (MiniLM-L6's hidden size): every vector has this many f32.
pub const DIM: usize = 384;

/// Size of the WordPiece vocabulary: ids at or above it are refused.
pub const VOCAB: usize = 30_522;

/// Longest sequence the model can embed (it has 512 position embeddings); longer ones
/// are refused, not cut: the caller's tokenizer decides where to cut (sentence-transformers
/// cuts this model's input at 256 tokens).
pub const MAX_POSITIONS: usize = 512;

/// Tokens processed together by one pass of [`Model::embed_batch`]: enough to reuse each
/// weight row across many tokens, few enough to bound the scratch memory.
pub const BATCH_ROWS: usize = 256;

const LAYERS: usize = 6;
const HEADS: usize = 12;
const FFN: usize = 4 * DIM;

/// The blob, in the binary's read-only data.
static BLOB: &[u8] = include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/model/minilm-l6-int8.bin"));

/// sha256 of [`BLOB`], written by `scripts/minilm-convert`'s run into
/// `model/SOURCES.md` and checked by a test (hashing 23 MB at start would cost
/// about 0.1 s for nothing).
const BLOB_SHA256: &str = "c789201447a039c4685ebeaefb89a8123281a86a175b94c0e7e6ca95d540e60d";

/// Revision of the forward-pass arithmetic: bumped whenever a change here changes any
/// output bit, so vectors cached under an older [`Model::id`] are recomputed.
const FORWARD_REVISION: u32 = 1;

/// Why a token sequence was not embedded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EmbedError {
    /// The sequence has no tokens (a tokenizer always adds `[CLS]` and `[SEP]`).
    #[error("sequence {seq}: no tokens")]
    Empty {
        /// Position of the sequence in the batch (0 for [`Model::embed`]).
        seq: usize,
    },
    /// The sequence is longer than [`MAX_POSITIONS`].
    #[error("sequence {seq}: {len} tokens, at most {MAX_POSITIONS} fit")]
    TooLong {
        /// Position of the sequence in the batch.
        seq: usize,
        /// Its length.
        len: usize,
    },
    /// A token id is not below [`VOCAB`].
    #[error("sequence {seq}: token id {id} is outside the vocabulary of {VOCAB}")]
    BadId {
        /// Position of the sequence in the batch.
        seq: usize,
        /// The offending id.
        id: u32,
    },
}

/// The embedding model: parsed weights, shared by every thread (it holds no mutable
/// state, so concurrent calls need no lock).
pub struct Model {
    weights: weights::Weights<'static>,
    id: String,
}

impl std::fmt::Debug for Model {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Model").field("id", &self.id).finish_non_exhaustive()
    }
}

impl Model {
    /// The model, parsed from the compiled-in blob on first use (a few milliseconds)
    /// and kept for the life of the process. An error means the blob and this build
    /// disagree; it is returned, never panicked on, so search can fall back to lexical.
    pub fn get() -> Result<&'static Model, BlobError> {
        static MODEL: OnceLock<Result<Model, BlobError>> = OnceLock::new();
        MODEL.get_or_init(|| Model::parse(BLOB)).as_ref().map_err(Clone::clone)
    }

    fn parse(blob: &'static [u8]) -> Result<Model, BlobError> {
        Ok(Model {
            weights: weights::parse(blob)?,
            id: format!("minilm-l6-int8:{BLOB_SHA256}:fwd{FORWARD_REVISION}"),
        })
    }

    /// A stable identity of the vectors this model produces: the blob's sha256 plus the
    /// forward pass's revision. Key cached vectors by it: equal ids give equal bits.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The unit-length embedding of one token sequence (`[CLS]` … `[SEP]` included):
    /// the mean of the last hidden states over all tokens, L2-normalised. Refuses (does
    /// not cut) an empty sequence, one longer than [`MAX_POSITIONS`], or an id not below
    /// [`VOCAB`].
    pub fn embed(&self, ids: &[u32]) -> Result<[f32; DIM], EmbedError> {
        check(0, ids)?;
        let mut out = Vec::with_capacity(1);
        model::forward(&self.weights, &[ids], &mut out);
        Ok(out.into_iter().next().unwrap_or([0.0; DIM]))
    }

    /// The embeddings of several sequences, in order, each bit for bit what
    /// [`Model::embed`] gives it alone; faster per token because up to [`BATCH_ROWS`]
    /// tokens share each pass over the weights. All sequences are checked first: one
    /// bad sequence fails the call (naming its position) and nothing is computed.
    pub fn embed_batch(&self, seqs: &[&[u32]]) -> Result<Vec<[f32; DIM]>, EmbedError> {
        for (i, ids) in seqs.iter().enumerate() {
            check(i, ids)?;
        }
        let mut out = Vec::with_capacity(seqs.len());
        let mut start = 0;
        while start < seqs.len() {
            // Always at least one sequence, then more while they fit in BATCH_ROWS.
            let mut end = start + 1;
            let mut rows = seqs[start].len();
            while end < seqs.len() && rows + seqs[end].len() <= BATCH_ROWS {
                rows += seqs[end].len();
                end += 1;
            }
            model::forward(&self.weights, &seqs[start..end], &mut out);
            start = end;
        }
        Ok(out)
    }
}

fn check(seq: usize, ids: &[u32]) -> Result<(), EmbedError> {
    if ids.is_empty() {
        return Err(EmbedError::Empty { seq });
    }
    if ids.len() > MAX_POSITIONS {
        return Err(EmbedError::TooLong { seq, len: ids.len() });
    }
    match ids.iter().find(|&&id| id as usize >= VOCAB) {
        Some(&id) => Err(EmbedError::BadId { seq, id }),
        None => Ok(()),
    }
}
