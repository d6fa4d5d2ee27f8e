//! MiniLM-L6's forward pass over several token sequences at once: their rows are
//! concatenated for the linear layers (each row's arithmetic is independent of the
//! others, so a text gives the same bits alone or in a batch) and attention runs per
//! sequence. Then mean pooling and L2 normalisation, as sentence-transformers does.

use super::kernels::{Dot, gelu, layer_norm, linear, quantize, softmax, sum_squares};
use super::weights::{Linear, Weights};
use super::{DIM, FFN, HEADS};

/// Width of one attention head.
const HEAD: usize = DIM / HEADS;

/// The graph scales both queries and keys by 32^-¼ (so their product by 1/√32).
const QK_SCALE: f32 = 0.420_448_2;

/// Working memory for one forward pass of `rows` token rows, allocated per call and
/// dropped after it: ≈ 18 KB per row plus one `longest²` row of attention scores.
struct Scratch {
    h: Vec<f32>,
    q: Vec<f32>,
    k: Vec<f32>,
    v: Vec<f32>,
    ctx: Vec<f32>,
    ffn: Vec<f32>,
    xq: Vec<i16>,
    sx: Vec<f32>,
    scores: Vec<f32>,
}

impl Scratch {
    fn new(rows: usize, longest: usize) -> Scratch {
        Scratch {
            h: vec![0.0; rows * DIM],
            q: vec![0.0; rows * DIM],
            k: vec![0.0; rows * DIM],
            v: vec![0.0; rows * DIM],
            ctx: vec![0.0; rows * DIM],
            ffn: vec![0.0; rows * FFN],
            xq: vec![0; rows * FFN],
            sx: vec![0.0; rows],
            scores: vec![0.0; longest],
        }
    }
}

/// Embeds each of `seqs` (already validated: non-empty, ids below the vocabulary, at
/// most `MAX_POSITIONS` long) and appends the unit vectors to `out`, in order.
///
/// On an x86_64 CPU with AVX2 the whole pass is compiled a second time for AVX2: the
/// same source, so the same IEEE operations in the same order (AVX2 adds no FMA, and
/// Rust never fuses a multiply and an add on its own), only wider registers.
pub(super) fn forward(w: &Weights<'_>, seqs: &[&[u32]], out: &mut Vec<[f32; DIM]>) {
    #[cfg(target_arch = "x86_64")]
    {
        if let Some(avx2) = super::kernels::Avx2::detect() {
            // SAFETY: `detect` checked that the CPU has AVX2.
            unsafe { forward_avx2(avx2, w, seqs, out) };
            return;
        }
        forward_body(super::kernels::Sse2, w, seqs, out);
    }
    #[cfg(not(target_arch = "x86_64"))]
    forward_body(super::kernels::Portable, w, seqs, out);
}

/// The pass with a given kernel, whatever this CPU has: the tests compare the bits of
/// every kernel with [`forward`]'s, standing in for other CPUs.
#[cfg(test)]
pub(super) fn forward_with<D: Dot>(dot: D, w: &Weights<'_>, seqs: &[&[u32]], out: &mut Vec<[f32; DIM]>) {
    forward_body(dot, w, seqs, out);
}

/// [`forward_body`] compiled for AVX2.
///
/// # Safety
/// The CPU must have AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn forward_avx2(dot: super::kernels::Avx2, w: &Weights<'_>, seqs: &[&[u32]], out: &mut Vec<[f32; DIM]>) {
    forward_body(dot, w, seqs, out);
}

#[inline(always)]
fn forward_body<D: Dot>(dot: D, w: &Weights<'_>, seqs: &[&[u32]], out: &mut Vec<[f32; DIM]>) {
    let rows: usize = seqs.iter().map(|s| s.len()).sum();
    let longest = seqs.iter().map(|s| s.len()).max().unwrap_or(0);
    let mut s = Scratch::new(rows, longest);
    embeddings(w, seqs, &mut s.h);
    for layer in &w.layers {
        // Self-attention.
        project(dot, &s.h, DIM, &layer.q, &mut s.xq, &mut s.sx, &mut s.q);
        linear(dot, &s.xq, &s.sx[..rows], &layer.k, &mut s.k);
        linear(dot, &s.xq, &s.sx[..rows], &layer.v, &mut s.v);
        let mut start = 0;
        for seq in seqs {
            attention(&mut s, start, seq.len());
            start += seq.len();
        }
        let mut tmp = std::mem::take(&mut s.q);
        project(dot, &s.ctx, DIM, &layer.o, &mut s.xq, &mut s.sx, &mut tmp);
        residual_norm(&mut s.h, &tmp, &layer.ln1);
        // Feed-forward.
        project(dot, &s.h, DIM, &layer.up, &mut s.xq, &mut s.sx, &mut s.ffn);
        gelu(&mut s.ffn);
        project(dot, &s.ffn, FFN, &layer.down, &mut s.xq, &mut s.sx, &mut tmp);
        residual_norm(&mut s.h, &tmp, &layer.ln2);
        s.q = tmp;
    }
    let mut start = 0;
    for seq in seqs {
        out.push(pool(&s.h[start * DIM..(start + seq.len()) * DIM], seq.len()));
        start += seq.len();
    }
}

/// Word + token type 0 + position, dequantised as the graph does (`q · scale`), then
/// LayerNorm.
#[inline(always)]
fn embeddings(w: &Weights<'_>, seqs: &[&[u32]], h: &mut [f32]) {
    let mut rows = h.chunks_exact_mut(DIM);
    for seq in seqs {
        for (pos, (&id, row)) in seq.iter().zip(rows.by_ref()).enumerate() {
            let id = id as usize;
            let word = &w.word_q[id * DIM..(id + 1) * DIM];
            let place = &w.pos_q[pos * DIM..(pos + 1) * DIM];
            let (ws, ps) = (w.word_scale[id], w.pos_scale[pos]);
            for (((d, &a), &b), &t) in row.iter_mut().zip(word).zip(place).zip(&w.type0) {
                *d = (f32::from(a as i8) * ws + t) + f32::from(b as i8) * ps;
            }
            layer_norm(row, &w.ln);
        }
    }
}

/// Quantises `x` (rows `cols` wide) and applies `lin` into `out`.
#[inline(always)]
fn project<D: Dot>(dot: D, x: &[f32], cols: usize, lin: &Linear<'_>, xq: &mut [i16], sx: &mut [f32], out: &mut [f32]) {
    let rows = x.len() / cols;
    quantize(x, cols, &mut xq[..rows * cols], &mut sx[..rows]);
    linear(dot, &xq[..rows * cols], &sx[..rows], lin, out);
}

/// `h = LayerNorm(y + h)`, row by row.
#[inline(always)]
fn residual_norm(h: &mut [f32], y: &[f32], norm: &super::weights::Norm) {
    for (row, add) in h.chunks_exact_mut(DIM).zip(y.chunks_exact(DIM)) {
        for (d, &a) in row.iter_mut().zip(add) {
            *d += a; // = a + *d: f32 addition is commutative, bit for bit
        }
        layer_norm(row, norm);
    }
}

/// Multi-head self-attention of the `n` rows starting at `start` (one sequence, every
/// token attended: no padding exists), into `s.ctx`.
#[inline(always)]
fn attention(s: &mut Scratch, start: usize, n: usize) {
    let rows = start..start + n;
    for head in 0..HEADS {
        let col = head * HEAD;
        for i in rows.clone() {
            let mut query = [0f32; HEAD];
            for (d, &v) in query.iter_mut().zip(&s.q[i * DIM + col..][..HEAD]) {
                *d = v * QK_SCALE;
            }
            let scores = &mut s.scores[..n];
            for (score, j) in scores.iter_mut().zip(rows.clone()) {
                let key = &s.k[j * DIM + col..][..HEAD];
                // Eight lanes, each summing four products in order, then a fixed tree.
                let mut acc = [0f32; 8];
                for (qc, kc) in query.chunks_exact(8).zip(key.chunks_exact(8)) {
                    for l in 0..8 {
                        acc[l] += qc[l] * (kc[l] * QK_SCALE);
                    }
                }
                *score = ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
            }
            softmax(scores);
            let mut ctx = [0f32; HEAD];
            for (&p, j) in scores.iter().zip(rows.clone()) {
                for (c, &v) in ctx.iter_mut().zip(&s.v[j * DIM + col..][..HEAD]) {
                    *c += p * v;
                }
            }
            s.ctx[i * DIM + col..][..HEAD].copy_from_slice(&ctx);
        }
    }
}

/// Mean over the `n` token rows (summed in token order), then `v / max(|v|, 1e-12)`.
#[inline(always)]
fn pool(rows: &[f32], n: usize) -> [f32; DIM] {
    let mut v = [0f32; DIM];
    for row in rows.chunks_exact(DIM) {
        for (d, &x) in v.iter_mut().zip(row) {
            *d += x;
        }
    }
    let count = n.max(1) as f32;
    for d in v.iter_mut() {
        *d /= count;
    }
    let norm = sum_squares(&v).sqrt().max(1e-12);
    for d in v.iter_mut() {
        *d /= norm;
    }
    v
}
