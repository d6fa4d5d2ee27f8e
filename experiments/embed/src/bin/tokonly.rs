//! The tokenizer alone, for the binary-size split between tokenizers and tract.
//!
//! Usage: tokonly TOKENIZER_JSON TEXT
fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let [_, path, text] = args.as_slice() else {
        anyhow::bail!("usage: tokonly TOKENIZER_JSON TEXT");
    };
    let t = tokenizers::Tokenizer::from_file(path).map_err(anyhow::Error::msg)?;
    let enc = t.encode(text.as_str(), true).map_err(anyhow::Error::msg)?;
    println!("{:?}", enc.get_ids());
    Ok(())
}
