//! Compares the prototype with reference/reference.py's output: token ids on every
//! string (samples, edge cases, then every MetaTool tool text and query), cosine with onnxruntime (same int8 graph) and with the fp32 numpy BERT on 50.
//!
//! Usage: parity MODEL_DIR REF_DIR
use std::path::Path;

use anyhow::Context as _;
use embed_spike::{Embedder, cosine};

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let [_, models, refdir] = args.as_slice() else {
        anyhow::bail!("usage: parity MODEL_DIR REF_DIR");
    };
    let (models, refdir) = (Path::new(models), Path::new(refdir));
    let e = Embedder::from_files(
        &models.join("model.onnx"),
        &models.join("tokenizer.json"),
    )?;
    let read = |name: &str| -> anyhow::Result<serde_json::Value> {
        let text = std::fs::read_to_string(refdir.join(name)).with_context(|| name.to_owned())?;
        Ok(serde_json::from_str(&text)?)
    };
    let strings: Vec<String> = serde_json::from_value(read("strings.json")?)?;
    let tokens: Vec<Vec<u32>> = serde_json::from_value(read("tokens.json")?)?;
    let emb = read("embeddings.json")?;
    let mut same = 0;
    for (s, want) in strings.iter().zip(&tokens) {
        let got = e.tokenize(s)?;
        if &got == want {
            same += 1;
        } else {
            println!("token mismatch: {s:?}\n  got  {got:?}\n  want {want:?}");
        }
    }
    println!("token ids identical on {same} of {} strings (edge cases and samples)", strings.len());
    let all = read("all_tokens.json")?;
    let every: Vec<String> = serde_json::from_value(all["strings"].clone())?;
    let ids: Vec<Vec<u32>> = serde_json::from_value(all["ids"].clone())?;
    let mut same_all = 0;
    for (s, want) in every.iter().zip(&ids) {
        if &e.tokenize(s)? == want {
            same_all += 1;
        } else {
            println!("token mismatch: {s:?}");
        }
    }
    println!("token ids identical on {same_all} of {} strings (every MetaTool tool text and query)", every.len());
    let index: Vec<usize> = serde_json::from_value(emb["index"].clone())?;
    let ort: Vec<Vec<f32>> = serde_json::from_value(emb["ort_int8"].clone())?;
    let fp32: Vec<Vec<f32>> = serde_json::from_value(emb["numpy_fp32"].clone())?;
    let (mut min_ort, mut min_fp32, mut sum_ort, mut sum_fp32) = (f32::MAX, f32::MAX, 0.0, 0.0);
    for ((&i, o), f) in index.iter().zip(&ort).zip(&fp32) {
        let text = strings.get(i).context("index out of range")?;
        let v = e.embed(text)?;
        let (co, cf) = (cosine(&v, o), cosine(&v, f));
        min_ort = min_ort.min(co);
        min_fp32 = min_fp32.min(cf);
        sum_ort += co;
        sum_fp32 += cf;
    }
    let n = index.len() as f32;
    println!(
        "{} embeddings: cosine with onnxruntime int8 min {min_ort:.5} mean {:.5}; with fp32 numpy min {min_fp32:.5} mean {:.5}",
        index.len(),
        sum_ort / n,
        sum_fp32 / n
    );
    Ok(())
}
