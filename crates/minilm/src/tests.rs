use sha2::{Digest, Sha256};

use super::kernels::{erf, exp, qmax, quantize};
use super::weights::{self, BlobError, MAGIC};
use super::*;

fn model() -> &'static Model {
    Model::get().unwrap()
}

struct Case {
    text: String,
    ids: Vec<u32>,
    ort: Vec<f64>,
}

/// ~50 strings' ids and onnxruntime's vectors (testdata/onnx_reference.py).
fn cases() -> Vec<Case> {
    let raw: serde_json::Value = serde_json::from_str(include_str!("testdata/minilm-parity.json")).unwrap();
    raw["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| Case {
            text: c["text"].as_str().unwrap().to_string(),
            ids: c["ids"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_u64().unwrap() as u32)
                .collect(),
            ort: c["ort"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_f64().unwrap())
                .collect(),
        })
        .collect()
}

fn cosine(a: &[f32], b: &[f64]) -> f64 {
    let dot: f64 = a.iter().zip(b).map(|(x, y)| f64::from(*x) * y).sum();
    let na: f64 = a.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>().sqrt();
    let nb: f64 = b.iter().map(|y| y * y).sum::<f64>().sqrt();
    dot / (na * nb)
}

fn bits(v: &[f32; DIM]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

#[test]
fn matches_onnxruntime_on_every_fixture_string() {
    let cases = cases();
    assert!(cases.len() >= 50);
    assert!(
        cases.iter().any(|c| c.ids.len() == 256),
        "the fixture covers a 256-token text"
    );
    let mut worst = (f64::INFINITY, String::new());
    for c in &cases {
        let v = model().embed(&c.ids).unwrap();
        let cos = cosine(&v, &c.ort);
        if cos < worst.0 {
            worst = (cos, c.text.clone());
        }
    }
    eprintln!("min cosine with onnxruntime: {:.7} ({:?})", worst.0, worst.1);
    assert!(worst.0 >= 0.9999, "cosine {} for {:?}", worst.0, worst.1);
}

#[test]
fn vectors_are_unit_length() {
    let v = model().embed(&[101, 7592, 2088, 102]).unwrap();
    let norm: f64 = v.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>().sqrt();
    assert!((norm - 1.0).abs() < 1e-5, "{norm}");
}

#[test]
fn batch_gives_the_same_bits_as_one_by_one() {
    let cases = cases();
    // Twenty short texts around the 256-token one (the fixture's last): the batch is cut
    // into several passes of up to BATCH_ROWS tokens, one of them the long text alone.
    let long = cases.iter().position(|c| c.ids.len() == 256).unwrap();
    let picked = (0..12).chain([long]).chain(12..20);
    let seqs: Vec<&[u32]> = picked.map(|i| cases[i].ids.as_slice()).collect();
    let batch = model().embed_batch(&seqs).unwrap();
    assert_eq!(batch.len(), seqs.len());
    for (ids, b) in seqs.iter().zip(&batch) {
        assert_eq!(bits(&model().embed(ids).unwrap()), bits(b));
    }
}

#[test]
fn identical_calls_give_identical_bits() {
    let ids = &cases()[3].ids;
    let a = model().embed(ids).unwrap();
    let b = model().embed(ids).unwrap();
    assert_eq!(bits(&a), bits(&b));
    // A text of one more token than a tile of four, and of one token.
    let c = model().embed(&[101, 2023, 2003, 1037, 102]).unwrap();
    assert_eq!(bits(&c), bits(&model().embed(&[101, 2023, 2003, 1037, 102]).unwrap()));
    assert!(model().embed(&[101]).is_ok());
}

#[test]
fn every_kernel_gives_the_same_bits() {
    // On x86_64 with AVX2 `embed` runs the AVX2 build; an x86_64 CPU without it runs the
    // SSE2 kernel, aarch64 the portable one. Texts of 1, 5 and 18 tokens cover the tile
    // remainders.
    let cases = cases();
    let seqs: Vec<&[u32]> = vec![&[101], &[101, 2023, 2003, 1037, 102], &cases[1].ids];
    let want: Vec<Vec<u32>> = seqs.iter().map(|ids| bits(&model().embed(ids).unwrap())).collect();
    let mut portable = Vec::new();
    super::model::forward_with(super::kernels::Portable, &model().weights, &seqs, &mut portable);
    assert_eq!(portable.iter().map(bits).collect::<Vec<_>>(), want);
    #[cfg(target_arch = "x86_64")]
    {
        let mut sse2 = Vec::new();
        super::model::forward_with(super::kernels::Sse2, &model().weights, &seqs, &mut sse2);
        assert_eq!(sse2.iter().map(bits).collect::<Vec<_>>(), want);
    }
}

#[test]
fn bad_sequences_are_refused_not_panicked_on() {
    let m = model();
    assert_eq!(m.embed(&[]), Err(EmbedError::Empty { seq: 0 }));
    let long = vec![1000u32; MAX_POSITIONS + 1];
    assert_eq!(m.embed(&long), Err(EmbedError::TooLong { seq: 0, len: 513 }));
    assert!(m.embed(&long[..MAX_POSITIONS]).is_ok(), "512 tokens fit");
    assert_eq!(
        m.embed(&[101, 30_522, 102]),
        Err(EmbedError::BadId { seq: 0, id: 30_522 })
    );
    let ok: &[u32] = &[101, 102];
    assert_eq!(
        m.embed_batch(&[ok, &[101, u32::MAX]]),
        Err(EmbedError::BadId { seq: 1, id: u32::MAX })
    );
    assert_eq!(m.embed_batch(&[]), Ok(Vec::new()));
}

#[test]
fn id_is_the_blobs_sha256_and_forward_revision() {
    let digest = Sha256::digest(BLOB);
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(hex, BLOB_SHA256, "update BLOB_SHA256 (and SOURCES.md) with the blob");
    assert_eq!(model().id(), format!("minilm-l6-int8:{hex}:fwd{FORWARD_REVISION}"));
}

#[test]
fn truncated_blobs_are_errors() {
    for cut in [0, 4, 8, 12, 15, 40, 1_000, BLOB.len() / 2, BLOB.len() - 1] {
        let err = weights::parse(&BLOB[..cut]).err();
        assert!(matches!(err, Some(BlobError::Truncated(_))), "cut at {cut}: {err:?}");
    }
}

#[test]
fn corrupted_blobs_are_errors() {
    let mut bad = BLOB.to_vec();
    bad[0] = b'X';
    assert_eq!(weights::parse(&bad).err(), Some(BlobError::BadMagic));

    let mut bad = BLOB.to_vec();
    bad[8] = 2;
    assert_eq!(weights::parse(&bad).err(), Some(BlobError::Version(2)));

    // The first tensor is emb.word.q [30522, 384]: its first dim becomes 30521, so the
    // following tensors shift and the parse fails (never panics) somewhere after it.
    let first_dim = MAGIC.len() + 8 + 2 + "emb.word.q".len() + 2;
    let mut bad = BLOB.to_vec();
    bad[first_dim..first_dim + 4].copy_from_slice(&30_521u32.to_le_bytes());
    assert!(weights::parse(&bad).is_err());

    // An unknown dtype.
    let mut bad = BLOB.to_vec();
    bad[first_dim - 2] = 7;
    assert!(matches!(weights::parse(&bad).err(), Some(BlobError::Header(_))));

    // A NaN in emb.word.scale (the second tensor, right after the first's data).
    let second = first_dim + 8 + VOCAB * DIM;
    let data = second + 2 + "emb.word.scale".len() + 2 + 4;
    let mut bad = BLOB.to_vec();
    bad[data..data + 4].copy_from_slice(&f32::NAN.to_le_bytes());
    assert_eq!(
        weights::parse(&bad).err(),
        Some(BlobError::NotFinite("emb.word.scale".into()))
    );

    let mut bad = BLOB.to_vec();
    bad.push(0);
    assert_eq!(weights::parse(&bad).err(), Some(BlobError::Trailing(1)));
}

#[test]
fn erf_is_accurate() {
    let mut worst = 0f64;
    for i in -6000..=6000 {
        let x = i as f32 / 1000.0;
        worst = worst.max((f64::from(erf(x)) - libm::erf(f64::from(x))).abs());
    }
    assert!(worst < 5e-7, "max |erf error| {worst}");
}

#[test]
fn exp_is_accurate() {
    let mut worst = 0f64;
    for i in 0..=87_000 {
        let x = -(i as f32) / 1000.0;
        let want = f64::from(libm::expf(x));
        worst = worst.max((f64::from(exp(x)) - want).abs() / want);
    }
    assert!(worst < 3e-7, "max relative exp error {worst}");
    assert_eq!(exp(0.0), 1.0);
    assert!(exp(-1000.0) >= 0.0 && exp(-1000.0) < 1e-37);
}

#[test]
fn quantised_sums_cannot_overflow() {
    for cols in [DIM, FFN] {
        let top = qmax(cols) as i64;
        assert!(cols as i64 * 128 * top <= i64::from(i32::MAX));
    }
    assert_eq!(qmax(DIM), 32_767.0);
    let x = [0.5f32, -1.0, 0.25, 0.0, 0.0, 0.0, 0.0, 0.0];
    let (mut q, mut s) = ([0i16; 8], [0f32; 2]);
    quantize(&x, 4, &mut q, &mut s);
    assert_eq!(&q[..4], &[16_384, -32_767, 8_192, 0]);
    assert_eq!(s, [1.0 / 32_767.0, 0.0]);
}
