//! The weight blob `model/minilm-l6-int8.bin` (written by
//! `scripts/minilm-convert`, whose docstring is the format's specification): parsed and
//! validated into borrowed int8 matrices plus small f32 vectors.
//!
//! The int8 data stays where it is (in the binary's read-only data): only the f32
//! vectors (scales, biases, LayerNorm parameters, ≈ 0.2 MB) are copied out, because the
//! blob gives them no alignment. Nothing here panics on a bad blob: every length, shape,
//! name and value is checked and reported as a [`BlobError`].

use std::collections::HashMap;

use super::{DIM, FFN, LAYERS, MAX_POSITIONS, VOCAB};

/// The blob's first eight bytes.
pub(super) const MAGIC: &[u8; 8] = b"TGMINILM";
/// The only format version this parser reads.
pub(super) const VERSION: u32 = 1;

const DTYPE_F32: u8 = 1;
const DTYPE_I8: u8 = 2;

/// Why the compiled-in weight blob was refused (it is built by a script, so any of these
/// means the blob and this parser disagree, not that the input was bad at run time).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BlobError {
    /// The blob does not start with `TGMINILM`.
    #[error("weight blob: bad magic (not a toolgate MiniLM blob)")]
    BadMagic,
    /// The blob's format version is not the one this build reads.
    #[error("weight blob: format version {0}, this build reads version {VERSION}")]
    Version(u32),
    /// The blob ends inside a header or a tensor.
    #[error("weight blob: truncated at byte {0}")]
    Truncated(usize),
    /// A tensor header is malformed (name not UTF-8, unknown dtype, size overflow).
    #[error("weight blob: malformed tensor header at byte {0}")]
    Header(usize),
    /// A tensor name occurs twice.
    #[error("weight blob: tensor {0} occurs twice")]
    Duplicate(String),
    /// A tensor the model needs is absent.
    #[error("weight blob: tensor {0} is missing")]
    Missing(String),
    /// A tensor has another dtype or shape than the model needs.
    #[error("weight blob: tensor {name} is {found}, expected {expected}")]
    Shape {
        /// The tensor's name.
        name: String,
        /// What the model needs, e.g. `i8[384, 384]`.
        expected: String,
        /// What the blob holds.
        found: String,
    },
    /// An f32 value is NaN or infinite.
    #[error("weight blob: tensor {0} holds a non-finite value")]
    NotFinite(String),
    /// Bytes follow the last tensor, or tensors the model does not use are present.
    #[error("weight blob: {0} unexpected trailing bytes or tensors")]
    Trailing(usize),
}

/// One linear layer: `y = x · Wᵀ · scale + bias`, `W` int8 `[rows, cols]` row-major
/// (`rows` outputs, `cols` inputs), one f32 scale per output row.
pub(super) struct Linear<'a> {
    pub(super) q: &'a [u8],
    pub(super) scale: Vec<f32>,
    pub(super) bias: Vec<f32>,
    pub(super) rows: usize,
    pub(super) cols: usize,
}

/// LayerNorm's gain and shift.
pub(super) struct Norm {
    pub(super) gamma: Vec<f32>,
    pub(super) beta: Vec<f32>,
}

/// One transformer layer.
pub(super) struct Layer<'a> {
    pub(super) q: Linear<'a>,
    pub(super) k: Linear<'a>,
    pub(super) v: Linear<'a>,
    pub(super) o: Linear<'a>,
    pub(super) ln1: Norm,
    pub(super) up: Linear<'a>,
    pub(super) down: Linear<'a>,
    pub(super) ln2: Norm,
}

/// Every weight of the model.
pub(super) struct Weights<'a> {
    pub(super) word_q: &'a [u8],
    pub(super) word_scale: Vec<f32>,
    pub(super) pos_q: &'a [u8],
    pub(super) pos_scale: Vec<f32>,
    /// Token type 0's embedding (toolgate embeds single texts: type 1 is never used).
    pub(super) type0: Vec<f32>,
    pub(super) ln: Norm,
    pub(super) layers: Vec<Layer<'a>>,
}

struct Tensor<'a> {
    dtype: u8,
    dims: Vec<usize>,
    data: &'a [u8],
}

struct Reader<'a> {
    blob: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], BlobError> {
        let end = self.at.checked_add(n).ok_or(BlobError::Header(self.at))?;
        let bytes = self.blob.get(self.at..end).ok_or(BlobError::Truncated(self.at))?;
        self.at = end;
        Ok(bytes)
    }
    fn u8(&mut self) -> Result<u8, BlobError> {
        Ok(self.take(1)?[0])
    }
    fn u16(&mut self) -> Result<u16, BlobError> {
        let b = self.take(2)?;
        Ok(u16::from_le_bytes([b[0], b[1]]))
    }
    fn u32(&mut self) -> Result<u32, BlobError> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
}

fn describe(dtype: u8, dims: &[usize]) -> String {
    let t = if dtype == DTYPE_I8 { "i8" } else { "f32" };
    format!("{t}{dims:?}")
}

/// The blob's tensors by name, each checked to be complete.
fn tensors<'a>(blob: &'a [u8]) -> Result<HashMap<&'a str, Tensor<'a>>, BlobError> {
    let mut r = Reader { blob, at: 0 };
    if r.take(MAGIC.len())? != MAGIC {
        return Err(BlobError::BadMagic);
    }
    let version = r.u32()?;
    if version != VERSION {
        return Err(BlobError::Version(version));
    }
    let count = r.u32()?;
    let mut out = HashMap::new();
    for _ in 0..count {
        let start = r.at;
        let len = usize::from(r.u16()?);
        let name = std::str::from_utf8(r.take(len)?).map_err(|_| BlobError::Header(start))?;
        let dtype = r.u8()?;
        let size = match dtype {
            DTYPE_F32 => 4usize,
            DTYPE_I8 => 1,
            _ => return Err(BlobError::Header(start)),
        };
        let ndim = r.u8()?;
        let mut dims = Vec::with_capacity(usize::from(ndim));
        let mut bytes = size;
        for _ in 0..ndim {
            let d = r.u32()? as usize;
            bytes = bytes.checked_mul(d).ok_or(BlobError::Header(start))?;
            dims.push(d);
        }
        let data = r.take(bytes)?;
        if out.insert(name, Tensor { dtype, dims, data }).is_some() {
            return Err(BlobError::Duplicate(name.to_string()));
        }
    }
    if r.at != blob.len() {
        return Err(BlobError::Trailing(blob.len() - r.at));
    }
    Ok(out)
}

struct Table<'a>(HashMap<&'a str, Tensor<'a>>);

impl<'a> Table<'a> {
    fn get(&mut self, name: &str, dtype: u8, dims: &[usize]) -> Result<&'a [u8], BlobError> {
        let t = self
            .0
            .remove(name)
            .ok_or_else(|| BlobError::Missing(name.to_string()))?;
        if t.dtype != dtype || t.dims != dims {
            return Err(BlobError::Shape {
                name: name.to_string(),
                expected: describe(dtype, dims),
                found: describe(t.dtype, &t.dims),
            });
        }
        Ok(t.data)
    }
    fn int8(&mut self, name: &str, dims: &[usize]) -> Result<&'a [u8], BlobError> {
        self.get(name, DTYPE_I8, dims)
    }
    fn f32(&mut self, name: &str, len: usize) -> Result<Vec<f32>, BlobError> {
        floats(name, self.get(name, DTYPE_F32, &[len])?)
    }
    /// A `[rows, DIM]` f32 matrix, flattened.
    fn f32_matrix(&mut self, name: &str, rows: usize) -> Result<Vec<f32>, BlobError> {
        floats(name, self.get(name, DTYPE_F32, &[rows, DIM])?)
    }
    fn norm(&mut self, prefix: &str) -> Result<Norm, BlobError> {
        Ok(Norm {
            gamma: self.f32(&format!("{prefix}.gamma"), DIM)?,
            beta: self.f32(&format!("{prefix}.beta"), DIM)?,
        })
    }
    fn linear(&mut self, prefix: &str, rows: usize, cols: usize) -> Result<Linear<'a>, BlobError> {
        Ok(Linear {
            q: self.int8(&format!("{prefix}.q"), &[rows, cols])?,
            scale: self.f32(&format!("{prefix}.scale"), rows)?,
            bias: self.f32(&format!("{prefix}.bias"), rows)?,
            rows,
            cols,
        })
    }
}

/// Parses and validates the whole blob.
pub(super) fn parse(blob: &[u8]) -> Result<Weights<'_>, BlobError> {
    let mut t = Table(tensors(blob)?);
    let mut type_emb = t.f32_matrix("emb.type", 2)?;
    type_emb.truncate(DIM);
    let mut w = Weights {
        word_q: t.int8("emb.word.q", &[VOCAB, DIM])?,
        word_scale: t.f32("emb.word.scale", VOCAB)?,
        pos_q: t.int8("emb.pos.q", &[MAX_POSITIONS, DIM])?,
        pos_scale: t.f32("emb.pos.scale", MAX_POSITIONS)?,
        type0: type_emb,
        ln: t.norm("emb.ln")?,
        layers: Vec::with_capacity(LAYERS),
    };
    for l in 0..LAYERS {
        let p = format!("layer.{l}");
        w.layers.push(Layer {
            q: t.linear(&format!("{p}.q"), DIM, DIM)?,
            k: t.linear(&format!("{p}.k"), DIM, DIM)?,
            v: t.linear(&format!("{p}.v"), DIM, DIM)?,
            o: t.linear(&format!("{p}.o"), DIM, DIM)?,
            ln1: t.norm(&format!("{p}.ln1"))?,
            up: t.linear(&format!("{p}.up"), FFN, DIM)?,
            down: t.linear(&format!("{p}.down"), DIM, FFN)?,
            ln2: t.norm(&format!("{p}.ln2"))?,
        });
    }
    if !t.0.is_empty() {
        return Err(BlobError::Trailing(t.0.len()));
    }
    Ok(w)
}

/// Little-endian f32 values, all finite.
fn floats(name: &str, data: &[u8]) -> Result<Vec<f32>, BlobError> {
    let v: Vec<f32> = data
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    if v.iter().any(|x| !x.is_finite()) {
        return Err(BlobError::NotFinite(name.to_string()));
    }
    Ok(v)
}
