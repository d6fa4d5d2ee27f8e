//! Search by meaning: which texts of a tool are embedded, the vectors a tool keeps (int8,
//! a quarter of the f32 size), and the query side — token ids from the WordPiece
//! tokenizer, a sentence vector from the model, both compiled in (`toolgate-minilm`).
//! No I/O: `embedding` decides when to compute vectors, `vector_cache` keeps them on disk.

use std::borrow::Cow;
use std::fmt;

pub use toolgate_minilm::DIM;
use toolgate_minilm::{Model, WordPiece};

use super::document::Indexable;

/// Longest token sequence embedded, `[CLS]` and `[SEP]` included. Cost is linear in
/// tokens (the spike measured 11 ms of CPU at 10 tokens, 84 at 122, 220 at 252), and a
/// description's first 128 tokens say what the tool does.
pub const MAX_TOKENS: usize = 128;

/// A unit vector kept as int8 with one scale: 388 bytes instead of 1,536, for a cosine
/// that differs from the f32 one by less than 0.01 (each component is off by at most half
/// a step of `max |v| / 127`).
#[derive(Clone, PartialEq)]
pub struct Vector {
    scale: f32,
    q: Box<[i8; DIM]>,
}

impl fmt::Debug for Vector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Vector")
            .field("scale", &self.scale)
            .finish_non_exhaustive()
    }
}

/// How many bytes [`Vector::to_bytes`] writes.
pub const VECTOR_BYTES: usize = 4 + DIM;

impl Vector {
    /// `v` quantised: each component rounded to the nearest step of `max |v| / 127`.
    pub fn quantise(v: &[f32; DIM]) -> Vector {
        let max = v.iter().fold(0f32, |m, x| m.max(x.abs()));
        let scale = if max > 0.0 { max / 127.0 } else { 1.0 };
        let mut q = Box::new([0i8; DIM]);
        for (q, x) in q.iter_mut().zip(v) {
            *q = (x / scale).round().clamp(-127.0, 127.0) as i8;
        }
        Vector { scale, q }
    }

    /// The dot product with `query` (a cosine when both are unit vectors). A fixed
    /// summation order, so the same on every machine.
    pub fn dot(&self, query: &[f32; DIM]) -> f32 {
        let mut lanes = [0f32; 8];
        for (q, x) in self.q.chunks_exact(8).zip(query.chunks_exact(8)) {
            for i in 0..8 {
                lanes[i] += f32::from(q[i]) * x[i];
            }
        }
        lanes.iter().sum::<f32>() * self.scale
    }

    /// Its bytes: the scale (little-endian f32), then the components.
    pub fn to_bytes(&self) -> [u8; VECTOR_BYTES] {
        let mut out = [0u8; VECTOR_BYTES];
        out[..4].copy_from_slice(&self.scale.to_le_bytes());
        for (o, q) in out[4..].iter_mut().zip(self.q.iter()) {
            *o = *q as u8;
        }
        out
    }

    /// The vector [`Vector::to_bytes`] wrote; `None` for the wrong length or a scale that
    /// is not a positive finite number.
    pub fn from_bytes(bytes: &[u8]) -> Option<Vector> {
        if bytes.len() != VECTOR_BYTES {
            return None;
        }
        let scale = f32::from_le_bytes(bytes[..4].try_into().ok()?);
        if !(scale.is_finite() && scale > 0.0) {
            return None;
        }
        let mut q = Box::new([0i8; DIM]);
        for (q, b) in q.iter_mut().zip(&bytes[4..]) {
            *q = *b as i8;
        }
        Some(Vector { scale, q })
    }
}

/// What a tool's main embedded text holds besides its description. A tool's name and its
/// parameters' names carry the meaning of terse tools (`get_stock_info(symbol)`); MetaTool's
/// prose descriptions need neither. Chosen on several datasets of different styles by a
/// rule fixed before measuring: docs/decisions/search-ranking.md, reproduced by `cargo
/// bench --bench ranking`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recipe {
    /// The description alone (the name when there is none).
    Description,
    /// `name words: description`.
    NameDescription,
    /// `description Parameters: a, b.`
    DescriptionParameters,
    /// `name words: description Parameters: a, b.`
    NameDescriptionParameters,
}

impl Recipe {
    /// Every recipe, for the bench that chooses among them.
    pub const ALL: [Recipe; 4] = [
        Recipe::Description,
        Recipe::NameDescription,
        Recipe::DescriptionParameters,
        Recipe::NameDescriptionParameters,
    ];

    /// Its name in reports.
    pub fn label(self) -> &'static str {
        match self {
            Recipe::Description => "description",
            Recipe::NameDescription => "name + description",
            Recipe::DescriptionParameters => "description + parameters",
            Recipe::NameDescriptionParameters => "name + description + parameters",
        }
    }

    fn has_name(self) -> bool {
        matches!(self, Recipe::NameDescription | Recipe::NameDescriptionParameters)
    }

    fn has_parameters(self) -> bool {
        matches!(self, Recipe::DescriptionParameters | Recipe::NameDescriptionParameters)
    }
}

/// The recipe the server embeds tools by.
pub const RECIPE: Recipe = Recipe::NameDescriptionParameters;

/// The texts of a tool that are embedded, one vector each: its main text by [`RECIPE`] and
/// each phrasing. A tool is as close to a query as its closest text.
pub fn texts(tool: &dyn Indexable) -> Vec<Cow<'_, str>> {
    texts_by(tool, RECIPE)
}

/// The texts of a tool that `recipe` embeds: its main text, then each phrasing (blank
/// ones left out).
pub fn texts_by(tool: &dyn Indexable, recipe: Recipe) -> Vec<Cow<'_, str>> {
    std::iter::once(main_text(tool, recipe))
        .chain(tool.phrasings().iter().map(|p| Cow::Borrowed(p.as_str())))
        .filter(|t| !t.trim().is_empty())
        .collect()
}

/// A tool's main text by `recipe`. The name is the tool's name, else its slug, split into
/// words; a description that is empty leaves the name alone (as every recipe does).
fn main_text(tool: &dyn Indexable, recipe: Recipe) -> Cow<'_, str> {
    let description = tool.description().trim();
    let name = if tool.name().trim().is_empty() {
        tool.slug()
    } else {
        tool.name()
    };
    if description.is_empty() {
        return Cow::Owned(words(name));
    }
    if !recipe.has_name() && !recipe.has_parameters() {
        return Cow::Borrowed(tool.description());
    }
    let mut text = String::with_capacity(description.len() + 64);
    if recipe.has_name() {
        text.push_str(&words(name));
        text.push_str(": ");
    }
    text.push_str(description);
    if recipe.has_parameters() {
        let mut names = Vec::new();
        tool.params(&mut |name, _| names.push(words(name)));
        names.retain(|n| !n.is_empty());
        if !names.is_empty() {
            text.push_str(" Parameters: ");
            text.push_str(&names.join(", "));
            text.push('.');
        }
    }
    Cow::Owned(text)
}

/// An identifier as words: split on every character that is not a letter or digit and
/// where a lower-case letter or digit meets a capital (`get_stock_info`, `getStockInfo`,
/// `math.factorial` → "get stock info", "get Stock Info", "math factorial"). The model
/// reads case-folded text, so case is left as it is.
pub fn words(identifier: &str) -> String {
    let mut out = String::with_capacity(identifier.len() + 8);
    let mut previous: Option<char> = None;
    for c in identifier.chars() {
        if !c.is_alphanumeric() {
            previous = None;
            continue;
        }
        let boundary = match previous {
            None => !out.is_empty(),
            Some(p) => (p.is_lowercase() || p.is_ascii_digit()) && c.is_uppercase(),
        };
        if boundary {
            out.push(' ');
        }
        out.push(c);
        previous = Some(c);
    }
    out
}

/// A tool's closeness to `query`: the best of its vectors (-1 with none).
pub fn closeness(vectors: &[Vector], query: &[f32; DIM]) -> f32 {
    vectors.iter().map(|v| v.dot(query)).fold(-1.0, f32::max)
}

/// The model and its tokenizer, loaded once: what turns text into vectors.
#[derive(Debug, Clone, Copy)]
pub struct Embedder {
    model: &'static Model,
    words: &'static WordPiece,
}

impl Embedder {
    /// The compiled-in model, parsed on first use; an error says why it cannot be used
    /// (a build whose weights do not parse), and search stays lexical.
    pub fn get() -> Result<Embedder, toolgate_minilm::BlobError> {
        let model = Model::get()?;
        Ok(Embedder {
            model,
            words: WordPiece::get(),
        })
    }

    /// The identity of the model's weights, which cached vectors are keyed by.
    pub fn model_id(&self) -> &str {
        self.model.id()
    }

    /// How many tokens `text` is embedded as (at most [`MAX_TOKENS`]): its cost.
    pub fn tokens(&self, text: &str) -> usize {
        self.words.count(text, MAX_TOKENS)
    }

    /// `text`'s unit vector. Deterministic: the same text gives the same bits anywhere.
    /// An error only if the tokenizer and the model disagree (a build whose vocabulary
    /// is not the model's).
    pub fn embed(&self, text: &str) -> Result<[f32; DIM], String> {
        self.model
            .embed(&self.words.encode(text, MAX_TOKENS))
            .map_err(|e| e.to_string())
    }

    /// The unit vectors of `texts`, in order, as [`Embedder::embed`] gives them.
    pub fn embed_all(&self, texts: &[&str]) -> Result<Vec<[f32; DIM]>, String> {
        let ids: Vec<Vec<u32>> = texts.iter().map(|t| self.words.encode(t, MAX_TOKENS)).collect();
        let seqs: Vec<&[u32]> = ids.iter().map(Vec::as_slice).collect();
        self.model.embed_batch(&seqs).map_err(|e| e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Document;
    use crate::testutil::doc;

    fn unit(seed: u32) -> [f32; DIM] {
        let mut v = [0f32; DIM];
        let mut x = seed.wrapping_mul(2_654_435_761).max(1);
        for c in &mut v {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            *c = (x % 2001) as f32 / 1000.0 - 1.0;
        }
        let norm = v.iter().map(|c| c * c).sum::<f32>().sqrt();
        v.map(|c| c / norm)
    }

    fn exact(a: &[f32; DIM], b: &[f32; DIM]) -> f32 {
        a.iter().zip(b).map(|(x, y)| x * y).sum()
    }

    #[test]
    fn a_quantised_cosine_stays_within_a_hundredth_of_the_exact_one() {
        for seed in 1..50 {
            let (a, b) = (unit(seed), unit(seed + 1000));
            let q = Vector::quantise(&a);
            assert!((q.dot(&b) - exact(&a, &b)).abs() < 0.01, "seed {seed}");
            assert!((q.dot(&a) - 1.0).abs() < 0.01, "seed {seed}");
        }
    }

    #[test]
    fn bytes_round_trip_and_bad_bytes_are_refused() {
        let v = Vector::quantise(&unit(7));
        assert_eq!(Vector::from_bytes(&v.to_bytes()), Some(v.clone()));
        assert_eq!(Vector::from_bytes(&v.to_bytes()[1..]), None);
        let mut bad = v.to_bytes();
        bad[..4].copy_from_slice(&f32::NAN.to_le_bytes());
        assert_eq!(Vector::from_bytes(&bad), None);
        assert_eq!(Vector::quantise(&[0.0; DIM]).dot(&unit(3)), 0.0);
    }

    #[test]
    fn a_tool_embeds_its_description_and_phrasings_and_is_as_close_as_the_best() {
        let mut d = doc("env-validator", "Env validator", "Checks a .env file.", &["dotenv"]);
        d.phrasings = vec!["check my dotenv".into(), " ".into()];
        assert_eq!(
            texts_by(&d, Recipe::Description),
            vec!["Checks a .env file.", "check my dotenv"]
        );
        d.description.clear();
        assert_eq!(texts_by(&d, Recipe::Description)[0], "Env validator");
        let q = unit(5);
        let near = Vector::quantise(&q);
        let far = Vector::quantise(&unit(6));
        assert!((closeness(&[far.clone(), near], &q) - 1.0).abs() < 0.01);
        assert_eq!(closeness(&[], &q), -1.0);
    }

    #[test]
    fn identifiers_are_split_into_words() {
        for (id, want) in [
            ("get_current_stock_price", "get current stock price"),
            ("convertToPdf", "convert To Pdf"),
            ("math.factorial", "math factorial"),
            ("env-validator", "env validator"),
            ("ABCmouse", "ABCmouse"),
            ("AbleStyle", "Able Style"),
            ("sha256Digest", "sha256 Digest"),
            ("__x__", "x"),
            ("", ""),
        ] {
            assert_eq!(words(id), want, "{id}");
        }
    }

    #[test]
    fn each_recipe_writes_the_main_text_it_names() {
        let mut d = doc("get-stock-info", "get_stock_info", "Returns a stock's price.", &[]);
        d.params = vec![("symbol".into(), "Ticker.".into()), ("startDate".into(), String::new())];
        let main = |d: &Document, r| texts_by(d, r)[0].clone().into_owned();
        assert_eq!(main(&d, Recipe::Description), "Returns a stock's price.");
        assert_eq!(
            main(&d, Recipe::NameDescription),
            "get stock info: Returns a stock's price."
        );
        assert_eq!(
            main(&d, Recipe::DescriptionParameters),
            "Returns a stock's price. Parameters: symbol, start Date."
        );
        assert_eq!(
            main(&d, Recipe::NameDescriptionParameters),
            "get stock info: Returns a stock's price. Parameters: symbol, start Date."
        );
        d.params.clear();
        assert_eq!(
            main(&d, Recipe::NameDescriptionParameters),
            "get stock info: Returns a stock's price."
        );
        d.description.clear();
        d.name.clear();
        assert_eq!(main(&d, Recipe::NameDescriptionParameters), "get stock info");
    }
}
