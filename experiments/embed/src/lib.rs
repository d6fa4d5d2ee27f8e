//! The prototype of issue 16's sentence embedder: all-MiniLM-L6-v2 (int8 ONNX) run by
//! `tract-onnx`, tokenised by the `tokenizers` crate from the model's own
//! `tokenizer.json`, pooled as sentence-transformers pools it (mean over the attention
//! mask, then L2 normalisation), and the fusion arithmetic the hybrid ranker would use.
//!
//! It deliberately does no I/O beyond reading the two files it is pointed at, keeps no
//! cache and knows nothing of toolgate: the spike's binaries (`src/bin/`) measure it.
//! Nothing here unwraps data that comes from outside (model bytes, tokenizer JSON, text).

mod gather_nd;
mod range;

pub use gather_nd::builder as gather_nd_builder;
pub use range::builder as range_builder;

use std::fmt;
use std::path::Path;

use tokenizers::{Tokenizer, TruncationParams};
use tract_onnx::prelude::*;

/// Width of one embedding (MiniLM-L6's hidden size).
pub const DIM: usize = 384;

/// Longest token sequence embedded, special tokens included: sentence-transformers'
/// `max_seq_length` for this model (the tokenizer.json itself says 128; the reference
/// follows sentence-transformers).
pub const MAX_TOKENS: usize = 256;

/// Size of the WordPiece vocabulary: ids at or above it are refused, not looked up.
pub const VOCAB: usize = 30_522;

/// Why the embedder could not be built or could not embed a text.
#[derive(Debug)]
pub enum Error {
    /// The tokenizer JSON could not be read or used.
    Tokenizer(String),
    /// The ONNX graph could not be loaded, optimised or run.
    Model(String),
    /// The model's output did not have the shape `[1, tokens, DIM]`.
    Shape(Vec<usize>),
    /// A token sequence was empty or held an id outside the vocabulary.
    BadIds,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Tokenizer(e) => write!(f, "tokenizer: {e}"),
            Error::Model(e) => write!(f, "model: {e}"),
            Error::Shape(s) => write!(f, "model output has shape {s:?}, expected [1, n, {DIM}]"),
            Error::BadIds => write!(f, "token ids must be 1 to {MAX_TOKENS} ids below {VOCAB}"),
        }
    }
}

impl std::error::Error for Error {}

fn model_err(e: impl fmt::Display) -> Error {
    Error::Model(format!("{e:#}"))
}

/// A loaded tokenizer and an optimised, runnable graph. Inference is single-threaded
/// (tract runs one graph on the calling thread), so a vector depends only on the text.
pub struct Embedder {
    tokenizer: Tokenizer,
    model: TypedSimplePlan<TypedModel>,
}

impl fmt::Debug for Embedder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Embedder").finish_non_exhaustive()
    }
}

impl Embedder {
    /// Loads `model.onnx` and `tokenizer.json` from disk.
    pub fn from_files(model: &Path, tokenizer: &Path) -> Result<Embedder, Error> {
        let model = std::fs::read(model).map_err(model_err)?;
        let tokenizer = std::fs::read(tokenizer).map_err(|e| Error::Tokenizer(e.to_string()))?;
        Embedder::from_bytes(&model, &tokenizer)
    }

    /// Builds the embedder from the bytes of the ONNX graph and of the tokenizer JSON
    /// (what `include_bytes!` would hand it once the weights are compiled in).
    pub fn from_bytes(model: &[u8], tokenizer: &[u8]) -> Result<Embedder, Error> {
        let mut tokenizer = Tokenizer::from_bytes(tokenizer).map_err(|e| Error::Tokenizer(e.to_string()))?;
        // One text at a time: no padding; sentence-transformers' truncation.
        tokenizer.with_padding(None);
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: MAX_TOKENS,
                ..TruncationParams::default()
            }))
            .map_err(|e| Error::Tokenizer(e.to_string()))?;
        let mut onnx = tract_onnx::onnx();
        onnx.op_register.insert("GatherND", gather_nd::builder);
        onnx.op_register.insert("Range", range::builder);
        let model = onnx
            .model_for_read(&mut std::io::Cursor::new(model))
            .map_err(model_err)?
            .into_typed()
            .map_err(model_err)?;
        // One text per run: batch 1 (the graph's "batch" symbol), the sequence length
        // left symbolic.
        let batch = model.symbols.sym("batch");
        let model = model
            .concretize_dims(&SymbolValues::default().with(&batch, 1))
            .map_err(model_err)?
            .into_optimized()
            .map_err(model_err)?
            .into_runnable()
            .map_err(model_err)?;
        Ok(Embedder { tokenizer, model })
    }

    /// The token ids of `text`, `[CLS]` and `[SEP]` included, cut to [`MAX_TOKENS`].
    pub fn tokenize(&self, text: &str) -> Result<Vec<u32>, Error> {
        let enc = self
            .tokenizer
            .encode(text, true)
            .map_err(|e| Error::Tokenizer(e.to_string()))?;
        Ok(enc.get_ids().to_vec())
    }

    /// The unit-length embedding of `text`.
    pub fn embed(&self, text: &str) -> Result<Vec<f32>, Error> {
        let ids = self.tokenize(text)?;
        self.embed_ids(&ids)
    }

    /// The unit-length embedding of a token sequence (from [`Embedder::tokenize`]): 1 to
    /// [`MAX_TOKENS`] ids, each below [`VOCAB`].
    pub fn embed_ids(&self, ids: &[u32]) -> Result<Vec<f32>, Error> {
        let n = ids.len();
        if n == 0 || n > MAX_TOKENS || ids.iter().any(|&i| i as usize >= VOCAB) {
            return Err(Error::BadIds);
        }
        let as_i64: Vec<i64> = ids.iter().map(|&i| i64::from(i)).collect();
        let input = tract_ndarray::Array2::from_shape_vec((1, n), as_i64).map_err(model_err)?;
        let mask = tract_ndarray::Array2::<i64>::ones((1, n));
        let types = tract_ndarray::Array2::<i64>::zeros((1, n));
        let out = self
            .model
            .run(tvec!(
                Tensor::from(input).into(),
                Tensor::from(mask).into(),
                Tensor::from(types).into()
            ))
            .map_err(model_err)?;
        let hidden = out.first().ok_or_else(|| Error::Shape(Vec::new()))?;
        let view = hidden.to_array_view::<f32>().map_err(model_err)?;
        let shape = view.shape().to_vec();
        if shape.len() != 3 || shape[0] != 1 || shape[1] != n || shape[2] != DIM {
            return Err(Error::Shape(shape));
        }
        // Mean over the tokens (every token is attended: there is no padding), in f64 so
        // the sum's order matters less, then L2 normalisation.
        let mut sum = [0f64; DIM];
        for row in view.index_axis(tract_ndarray::Axis(0), 0).outer_iter() {
            for (s, v) in sum.iter_mut().zip(row.iter()) {
                *s += f64::from(*v);
            }
        }
        Ok(normalise(&sum.map(|s| s / n.max(1) as f64)))
    }
}

/// `v / |v|` as f32 (a zero vector stays zero).
fn normalise(v: &[f64]) -> Vec<f32> {
    let norm = v.iter().map(|x| x * x).sum::<f64>().sqrt().max(1e-12);
    v.iter().map(|x| (x / norm) as f32).collect()
}

/// The dot product, which is the cosine for unit vectors.
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// Min-max normalisation into [0, 1]; a constant list (no signal) becomes all zeros.
pub fn min_max(scores: &[f32]) -> Vec<f32> {
    let lo = scores.iter().copied().fold(f32::INFINITY, f32::min);
    let hi = scores.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let span = hi - lo;
    if !(span > 0.0) {
        return vec![0.0; scores.len()];
    }
    scores.iter().map(|s| (s - lo) / span).collect()
}

/// `w · minmax(lexical) + (1 − w) · minmax(cosine)`, per document. Documents the lexical
/// ranker did not return score 0 there.
pub fn fuse(lexical: &[f32], cosine: &[f32], w: f32) -> Vec<f32> {
    min_max(lexical)
        .iter()
        .zip(min_max(cosine))
        .map(|(l, c)| w * l + (1.0 - w) * c)
        .collect()
}

/// Document positions by descending score, ties by `slug_rank` (a document's position
/// in slug order), so a ranking never depends on the input order.
pub fn rank(scores: &[f32], slug_rank: &[u32]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..scores.len()).collect();
    order.sort_by(|&a, &b| {
        scores[b]
            .total_cmp(&scores[a])
            .then_with(|| slug_rank.get(a).cmp(&slug_rank.get(b)))
    });
    order
}

/// FNV-1a, 64 bits: the split of queries into halves A (even) and B (odd) must not
/// change between builds or machines.
pub fn fnv1a(text: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn min_max_maps_to_unit_interval_and_flat_to_zero() {
        assert_eq!(min_max(&[2.0, 4.0, 3.0]), vec![0.0, 1.0, 0.5]);
        assert_eq!(min_max(&[5.0, 5.0]), vec![0.0, 0.0]);
        assert_eq!(min_max(&[]), Vec::<f32>::new());
    }

    #[test]
    fn fusion_weights_the_normalised_scores() {
        let f = fuse(&[0.0, 10.0], &[0.5, 0.3], 0.25);
        assert!((f[0] - 0.75).abs() < 1e-6);
        assert!((f[1] - 0.25).abs() < 1e-6);
    }

    #[test]
    fn ties_break_by_slug_order() {
        assert_eq!(rank(&[1.0, 2.0, 1.0], &[2, 0, 1]), vec![1, 2, 0]);
    }
}
