//! The arithmetic of the forward pass, written so that the same inputs give the same f32
//! bits on every CPU:
//!
//! - Linear layers are **integer**: each activation row is quantised to i16 with its own
//!   f32 scale (`max |x| / qmax`), multiplied by the int8 weights and summed exactly in
//!   i32, then scaled back in f32 (`acc · (sx · sw) + bias`). Integer sums do not depend
//!   on their order, so every kernel gives the same bits: AVX2 and SSE2 intrinsics
//!   (`pmaddwd`) on x86_64, plain loops that LLVM vectorises elsewhere. `qmax` is
//!   chosen per input width so that no sum can overflow i32 (see [`qmax`]).
//! - Every f32 reduction (LayerNorm, attention, pooling) has a fixed order written in
//!   the source: eight-lane accumulators combined by a fixed tree, or sequential sums.
//!   Rust never contracts `a * b + c` into an FMA unless asked (`mul_add`), and nothing
//!   here asks.
//! - `exp` and `erf` are written below with plain multiplications, additions, one
//!   division and bit manipulation, never the platform's libm; `sqrt` is IEEE-754's
//!   correctly rounded square root, the same everywhere. Both vectorise.

use super::weights::{Linear, Norm};

/// The largest |i16| an activation is quantised to when rows of `cols` values meet
/// int8 weights: `cols · 128 · qmax` must stay below `i32::MAX` (weights may be -128),
/// so a 384-wide input uses the full 32,767 and the 1,536-wide FFN input 10,922.
pub(super) fn qmax(cols: usize) -> f32 {
    let bound = i32::MAX as usize / (cols.max(1) * 128);
    bound.min(i16::MAX as usize) as f32
}

/// Quantises each row of `x` (`cols` wide) to i16 in `q`, its scale in `scales`.
/// A row of zeros gets scale 0 (its products are then 0, as they should be).
#[inline(always)]
pub(super) fn quantize(x: &[f32], cols: usize, q: &mut [i16], scales: &mut [f32]) {
    let top = qmax(cols);
    for ((row, qrow), s) in x
        .chunks_exact(cols)
        .zip(q.chunks_exact_mut(cols))
        .zip(scales.iter_mut())
    {
        // max is exact and order-independent, so a vectorised max is still deterministic.
        let max = row.iter().fold(0f32, |m, v| m.max(v.abs()));
        if max == 0.0 {
            *s = 0.0;
            qrow.fill(0);
            continue;
        }
        *s = max / top;
        let inv = top / max;
        for (d, &v) in qrow.iter_mut().zip(row) {
            let t = v * inv;
            // Round half away from zero, then truncate: `as` saturates and is exact.
            let r = t + 0.5f32.copysign(t);
            *d = (r as i32).clamp(-(top as i32), top as i32) as i16;
        }
    }
}

/// Tokens per block: a block of quantised rows (at most 64 × 1,536 × 2 bytes = 192 KB,
/// in L2) is reused against every weight row before moving on, and each weight row is
/// widened to i16 once per block.
const BLOCK: usize = 64;

/// `out[t, j] = (Σ_k x[t, k] · w[j, k]) · (sx[t] · scale[j]) + bias[j]` for every token
/// row `t` of the quantised input `x` (`w.cols` wide), into `out` (`w.rows` wide).
///
/// Register tile: four weight rows (widened to i16 once per block, then in L1) against
/// two tokens, eight exact i32 sums per pass over `k`. The sums are parked in `out` as raw bits and
/// scaled in a second, vectorisable pass.
#[inline(always)]
pub(super) fn linear<D: Dot>(dot: D, x: &[i16], sx: &[f32], w: &Linear<'_>, out: &mut [f32]) {
    let (k, n) = (w.cols, w.rows);
    let tokens = sx.len().min(x.len() / k.max(1)).min(out.len() / n.max(1));
    let mut wide = vec![0i16; 4 * k];
    let mut t0 = 0;
    while t0 < tokens {
        let t1 = (t0 + BLOCK).min(tokens);
        let mut j = 0;
        while j < n {
            let quad = (n - j).min(4);
            for (d, &b) in wide.iter_mut().zip(&w.q[j * k..(j + quad) * k]) {
                *d = i16::from(b as i8);
            }
            let mut wrows = [&wide[..k]; 4];
            for (r, slot) in wrows.iter_mut().enumerate().take(quad) {
                *slot = &wide[r * k..(r + 1) * k];
            }
            let mut t = t0;
            while t < t1 {
                let two = (t1 - t).min(2);
                let x0 = &x[t * k..(t + 1) * k];
                let x1 = if two == 2 { &x[(t + 1) * k..(t + 2) * k] } else { x0 };
                // The kernel's "four rows" are the weight rows, its "two" the tokens.
                let sums = dot.dot(wrows, [x0, x1]);
                for (i, token_sums) in sums.iter().enumerate().take(two) {
                    for (r, &acc) in token_sums.iter().enumerate().take(quad) {
                        out[(t + i) * n + j + r] = f32::from_bits(acc as u32);
                    }
                }
                t += two;
            }
            j += quad;
        }
        t0 = t1;
    }
    for (row, &s) in out.chunks_exact_mut(n).zip(sx).take(tokens) {
        for ((o, &scale), &bias) in row.iter_mut().zip(&w.scale).zip(&w.bias) {
            *o = (o.to_bits() as i32) as f32 * (s * scale) + bias;
        }
    }
}

/// Exact i32 dot products of four token rows with two weight rows (all the same
/// length). Implementations differ in speed only, never in result.
pub(super) trait Dot: Copy {
    /// `out[r][t] = Σ_k x[t][k] · w[r][k]`.
    fn dot(self, x: [&[i16]; 4], w: [&[i16]; 2]) -> [[i32; 4]; 2];
}

/// The portable kernel: plain integer arithmetic that LLVM vectorises (`pmaddwd` on
/// x86_64, `smlal` on aarch64).
/// Built where it runs (not x86_64) and for the tests, which compare its bits.
#[cfg(any(test, not(target_arch = "x86_64")))]
#[derive(Clone, Copy)]
pub(super) struct Portable;

#[cfg(any(test, not(target_arch = "x86_64")))]
impl Dot for Portable {
    #[inline(always)]
    fn dot(self, x: [&[i16]; 4], w: [&[i16]; 2]) -> [[i32; 4]; 2] {
        let mut out = [[0i32; 4]; 2];
        for (o, wr) in out.iter_mut().zip(w) {
            for (s, xr) in o.iter_mut().zip(x) {
                *s = xr.iter().zip(wr).map(|(&a, &b)| i32::from(a) * i32::from(b)).sum();
            }
        }
        out
    }
}

/// The SSE2 kernel (part of every x86_64 CPU): `pmaddwd` on 128-bit registers, for
/// x86_64 CPUs without AVX2. The portable kernel's loops do not tile registers.
#[cfg(target_arch = "x86_64")]
#[derive(Clone, Copy)]
pub(super) struct Sse2;

#[cfg(target_arch = "x86_64")]
impl Dot for Sse2 {
    #[inline(always)]
    fn dot(self, x: [&[i16]; 4], w: [&[i16]; 2]) -> [[i32; 4]; 2] {
        // SAFETY: SSE2 is part of every x86_64 CPU.
        unsafe { dot_sse2(x, w) }
    }
}

/// [`Sse2`]'s kernel: the shape of `dot_avx2` on 128-bit registers.
///
/// # Safety
/// The CPU must have SSE2 (every x86_64 CPU does).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sse2")]
unsafe fn dot_sse2(x: [&[i16]; 4], w: [&[i16]; 2]) -> [[i32; 4]; 2] {
    use std::arch::x86_64::*;
    let k = x.iter().chain(&w).map(|s| s.len()).min().unwrap_or(0);
    let mut acc = [[_mm_setzero_si128(); 4]; 2];
    let mut i = 0;
    while i + 8 <= k {
        // SAFETY: i + 8 <= k <= every slice's length, so each
        // 16-byte unaligned load stays inside its slice.
        let (w0, w1, xs) = unsafe {
            let load = |s: &[i16]| _mm_loadu_si128(s.as_ptr().add(i).cast());
            (load(w[0]), load(w[1]), [load(x[0]), load(x[1]), load(x[2]), load(x[3])])
        };
        for t in 0..4 {
            acc[0][t] = _mm_add_epi32(acc[0][t], _mm_madd_epi16(xs[t], w0));
            acc[1][t] = _mm_add_epi32(acc[1][t], _mm_madd_epi16(xs[t], w1));
        }
        i += 8;
    }
    let mut out = [[0i32; 4]; 2];
    for ((o, a), wr) in out.iter_mut().zip(&acc).zip(w) {
        for ((s, v), xr) in o.iter_mut().zip(a).zip(x) {
            let mut lanes = [0i32; 4];
            // SAFETY: `lanes` is 16 bytes, the size of one __m128i.
            unsafe { _mm_storeu_si128(lanes.as_mut_ptr().cast(), *v) };
            let tail: i32 = (i..k).map(|j| i32::from(xr[j]) * i32::from(wr[j])).sum();
            *s = lanes.iter().sum::<i32>() + tail;
        }
    }
    out
}

/// The AVX2 kernel; only made by [`Avx2::detect`], so only on a CPU that has AVX2.
#[cfg(target_arch = "x86_64")]
#[derive(Clone, Copy)]
pub(super) struct Avx2(());

#[cfg(target_arch = "x86_64")]
impl Avx2 {
    /// `Some` if this CPU has AVX2.
    pub(super) fn detect() -> Option<Avx2> {
        std::arch::is_x86_feature_detected!("avx2").then_some(Avx2(()))
    }
}

#[cfg(target_arch = "x86_64")]
impl Dot for Avx2 {
    #[inline(always)]
    fn dot(self, x: [&[i16]; 4], w: [&[i16]; 2]) -> [[i32; 4]; 2] {
        // SAFETY: an `Avx2` exists only if the CPU has AVX2.
        unsafe { dot_avx2(x, w) }
    }
}

/// AVX2: `vpmaddwd` multiplies sixteen i16 pairs and adds adjacent products into eight
/// i32 lanes; eight accumulators (4 tokens × 2 rows) share each load.
///
/// # Safety
/// The CPU must have AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn dot_avx2(x: [&[i16]; 4], w: [&[i16]; 2]) -> [[i32; 4]; 2] {
    use std::arch::x86_64::*;
    let k = x.iter().chain(&w).map(|s| s.len()).min().unwrap_or(0);
    let mut acc = [[_mm256_setzero_si256(); 4]; 2];
    let mut i = 0;
    while i + 16 <= k {
        // SAFETY: i + 16 <= k <= every slice's length, so each 32-byte unaligned load
        // stays inside its slice.
        let (w0, w1, xs) = unsafe {
            let load = |s: &[i16]| _mm256_loadu_si256(s.as_ptr().add(i).cast());
            (load(w[0]), load(w[1]), [load(x[0]), load(x[1]), load(x[2]), load(x[3])])
        };
        for t in 0..4 {
            acc[0][t] = _mm256_add_epi32(acc[0][t], _mm256_madd_epi16(xs[t], w0));
            acc[1][t] = _mm256_add_epi32(acc[1][t], _mm256_madd_epi16(xs[t], w1));
        }
        i += 16;
    }
    // Eight horizontal sums at once: pairwise hadds, then the two 128-bit halves.
    let h0 = _mm256_hadd_epi32(acc[0][0], acc[0][1]);
    let h1 = _mm256_hadd_epi32(acc[0][2], acc[0][3]);
    let h2 = _mm256_hadd_epi32(acc[1][0], acc[1][1]);
    let h3 = _mm256_hadd_epi32(acc[1][2], acc[1][3]);
    let (r0, r1) = (_mm256_hadd_epi32(h0, h1), _mm256_hadd_epi32(h2, h3));
    let sums = _mm256_add_epi32(
        _mm256_permute2x128_si256::<0x20>(r0, r1),
        _mm256_permute2x128_si256::<0x31>(r0, r1),
    );
    let mut lanes = [0i32; 8];
    // SAFETY: `lanes` is 32 bytes, the size of one __m256i.
    unsafe { _mm256_storeu_si256(lanes.as_mut_ptr().cast(), sums) };
    let mut out = [[0i32; 4]; 2];
    for (r, (o, wr)) in out.iter_mut().zip(w).enumerate() {
        for (t, (s, xr)) in o.iter_mut().zip(x).enumerate() {
            let tail: i32 = (i..k).map(|j| i32::from(xr[j]) * i32::from(wr[j])).sum();
            *s = lanes[r * 4 + t] + tail;
        }
    }
    out
}

/// Σ x in a fixed order: eight lane accumulators (what SIMD would use), then a fixed
/// tree; the tail (if the length is not a multiple of 8) folds into lane 0 in order.
#[inline(always)]
pub(super) fn sum(x: &[f32]) -> f32 {
    let mut acc = [0f32; 8];
    let chunks = x.chunks_exact(8);
    let tail = chunks.remainder();
    for c in chunks {
        for l in 0..8 {
            acc[l] += c[l];
        }
    }
    for &v in tail {
        acc[0] += v;
    }
    ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]))
}

/// Σ x² in the same fixed order as [`sum`].
#[inline(always)]
pub(super) fn sum_squares(x: &[f32]) -> f32 {
    let mut acc = [0f32; 8];
    let chunks = x.chunks_exact(8);
    let tail = chunks.remainder();
    for c in chunks {
        for l in 0..8 {
            acc[l] += c[l] * c[l];
        }
    }
    for &v in tail {
        acc[0] += v * v;
    }
    ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]))
}

/// The LayerNorm epsilon of the graph (1e-12 as f32).
const EPS: f32 = 1e-12;

/// LayerNorm of one row in place: `(x − mean) / √(var + ε) · γ + β`.
#[inline(always)]
pub(super) fn layer_norm(x: &mut [f32], norm: &Norm) {
    let n = x.len() as f32;
    let mean = sum(x) / n;
    for v in x.iter_mut() {
        *v -= mean;
    }
    let var = sum_squares(x) / n;
    let inv = 1.0 / (var + EPS).sqrt();
    for ((v, g), b) in x.iter_mut().zip(&norm.gamma).zip(&norm.beta) {
        *v = *v * inv * g + b;
    }
}

/// erf for f32: a rational approximation on [-4, 4] (outside it erf is ±1 in f32), odd
/// numerator of degree 13 over an even denominator of degree 8, the coefficients used by
/// Eigen's and XLA's `erf`. Only +, ×, ÷ in a fixed order: the same bits everywhere,
/// and it vectorises, unlike a call per value.
#[inline(always)]
pub(super) fn erf(x: f32) -> f32 {
    let x = x.clamp(-4.0, 4.0);
    let x2 = x * x;
    let mut p = x2 * -2.726_142_4e-10 + 2.770_681_5e-8;
    p = x2 * p + -2.101_024e-6;
    p = x2 * p + -5.692_506_2e-5;
    p = x2 * p + -7.349_906_4e-4;
    p = x2 * p + -2.954_6e-3;
    p = x2 * p + -1.609_603_3e-2;
    p *= x;
    let mut q = x2 * -1.456_607_15e-5 + -2.133_740_5e-4;
    q = x2 * q + -1.682_827e-3;
    q = x2 * q + -7.373_329_3e-3;
    q = x2 * q + -1.426_473_9e-2;
    p / q
}

/// GELU as the graph computes it: `x · (0.5 · (erf(x / 1.4142135) + 1))`, in place.
#[inline(always)]
pub(super) fn gelu(x: &mut [f32]) {
    for v in x.iter_mut() {
        *v *= 0.5 * (erf(*v / std::f32::consts::SQRT_2) + 1.0);
    }
}

/// Softmax in place: `exp(x − max) / Σ exp(x − max)`, the sum in index order.
#[inline(always)]
pub(super) fn softmax(x: &mut [f32]) {
    let max = x.iter().fold(f32::NEG_INFINITY, |m, &v| m.max(v));
    let mut total = 0f32;
    for v in x.iter_mut() {
        *v = exp(*v - max);
        total += *v;
    }
    for v in x.iter_mut() {
        *v /= total;
    }
}

/// `e^x` for f32 as Cephes' `expf` computes it: `x = n·ln 2 + r` (Cody–Waite, two
/// parts of ln 2), a degree-7 polynomial for `e^r`, `2^n` built from its bits. Inputs
/// are clamped to [-87, 88] (softmax only passes values ≤ 0; below -87 the result is
/// ~1e-38, where the exact value is 0 for every practical purpose).
#[inline(always)]
pub(super) fn exp(x: f32) -> f32 {
    let x = x.clamp(-87.0, 88.0);
    let t = x * std::f32::consts::LOG2_E;
    let n = (t + 0.5f32.copysign(t)) as i32;
    let nf = n as f32;
    let r = (x - nf * 0.693_359_4) - nf * -2.121_944_4e-4;
    let mut p = r * 1.987_569_1e-4 + 1.398_199_9e-3;
    p = p * r + 8.333_452e-3;
    p = p * r + 4.166_579_6e-2;
    p = p * r + 0.166_666_66;
    p = p * r + 0.5;
    p = (p * (r * r) + r) + 1.0;
    p * f32::from_bits(((n + 127) as u32) << 23)
}
