//! Embeds one text from the command line: the smallest program that carries the runtime
//! (tract + tokenizers), for the binary-size figure. The model is read from disk.
//!
//! Usage: embed MODEL_ONNX TOKENIZER_JSON TEXT
use anyhow::Context as _;

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let [_, model, tokenizer, text] = args.as_slice() else {
        anyhow::bail!("usage: embed MODEL_ONNX TOKENIZER_JSON TEXT");
    };
    let e = embed_spike::Embedder::from_files(model.as_ref(), tokenizer.as_ref()).context("loading")?;
    let v = e.embed(text)?;
    println!("{:?}", &v[..8]);
    Ok(())
}
