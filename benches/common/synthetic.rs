//! Deterministic synthetic catalogues for benchmarks: realistic tool names, descriptions
//! and parameters drawn from a fixed vocabulary with a fixed-seed generator, so every run
//! measures the same catalogue.

#![allow(dead_code)]

use serde_json::{Value, json};
use toolgate::search::Document;

const VERBS: &[&str] = &[
    "convert",
    "validate",
    "parse",
    "generate",
    "format",
    "extract",
    "compress",
    "encrypt",
    "decrypt",
    "resize",
    "translate",
    "summarize",
    "search",
    "fetch",
    "analyze",
    "calculate",
    "schedule",
    "monitor",
    "merge",
    "split",
    "compare",
    "sort",
    "filter",
    "render",
    "export",
    "import",
    "sync",
    "backup",
    "restore",
    "scan",
    "detect",
    "classify",
    "normalize",
    "minify",
    "lint",
    "test",
    "deploy",
    "track",
    "estimate",
    "forecast",
];
const OBJECTS: &[&str] = &[
    "json",
    "csv",
    "yaml",
    "xml",
    "image",
    "pdf",
    "email",
    "invoice",
    "url",
    "date",
    "timezone",
    "currency",
    "weather",
    "stock",
    "recipe",
    "password",
    "token",
    "certificate",
    "log",
    "metric",
    "ticket",
    "calendar",
    "contact",
    "address",
    "map",
    "route",
    "flight",
    "hotel",
    "playlist",
    "video",
    "audio",
    "podcast",
    "article",
    "tweet",
    "repository",
    "commit",
    "container",
    "database",
    "query",
    "spreadsheet",
    "chart",
    "report",
    "budget",
    "expense",
    "tax",
    "loan",
    "mortgage",
    "workout",
    "calorie",
    "sleep",
    "habit",
    "note",
    "task",
    "invoice",
    "receipt",
    "barcode",
    "qr",
    "color",
    "font",
    "icon",
    "sitemap",
    "dns",
    "ip",
    "cron",
    "regex",
];
const QUALIFIERS: &[&str] = &[
    "quickly",
    "in bulk",
    "from a URL",
    "for teams",
    "with history",
    "offline",
    "securely",
    "in real time",
    "across accounts",
    "with previews",
    "as markdown",
    "for developers",
    "on a schedule",
    "with alerts",
];
const PARAMS: &[(&str, &str)] = &[
    ("input", "The text or document to process."),
    ("format", "Output format, such as json, csv or markdown."),
    ("limit", "Maximum number of results to return."),
    ("timezone", "IANA timezone used for dates and times."),
    ("language", "Language code of the content, e.g. en or fr."),
    ("url", "Address of the resource to fetch."),
    ("query", "Search terms describing what to find."),
    ("width", "Target width in pixels."),
    ("currency", "Three-letter ISO currency code."),
    ("seed", "Seed for deterministic output."),
    ("start_date", "First day of the period, ISO 8601."),
    ("api_version", "Version of the upstream API to call."),
];

/// SplitMix64: tiny, fixed, good enough to pick words.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[(self.next() % items.len() as u64) as usize]
    }
}

/// `n` tools; the same `n` always gives the same catalogue.
pub fn catalogue(n: usize) -> Vec<Document> {
    let mut rng = Rng(0x5EED);
    (0..n)
        .map(|i| {
            let verb = *rng.pick(VERBS);
            let object = *rng.pick(OBJECTS);
            let other = *rng.pick(OBJECTS);
            let qualifier = *rng.pick(QUALIFIERS);
            let params = (0..1 + rng.next() % 4)
                .map(|_| {
                    let (name, doc) = *rng.pick(PARAMS);
                    (name.to_owned(), doc.to_owned())
                })
                .collect();
            Document {
                slug: format!("{object}-{verb}er-{i}"),
                name: format!("{}{} {verb}er", object[..1].to_uppercase(), &object[1..]),
                description: format!(
                    "Helps you {verb} {object} data {qualifier}. Works with {other} files and reports what changed."
                ),
                category: (*rng.pick(OBJECTS)).to_owned(),
                tags: vec![verb.to_owned(), object.to_owned(), other.to_owned()],
                params,
                phrasings: Vec::new(),
            }
        })
        .collect()
}

/// A fixed set of queries in the forms agents write: intents, abbreviations, typos.
pub fn queries() -> Vec<String> {
    let mut rng = Rng(0xA11CE);
    let mut out = Vec::new();
    for i in 0..200 {
        let verb = *rng.pick(VERBS);
        let object = *rng.pick(OBJECTS);
        let other = *rng.pick(OBJECTS);
        out.push(match i % 5 {
            0 => format!("{verb} {object}"),
            1 => format!("how can I {verb} my {object} files into {other}"),
            2 => object[..object.len().min(3)].to_owned(),
            3 => format!("{verb} {}", typo(object)),
            _ => format!("tool to {verb} {object} {other} {}", rng.pick(QUALIFIERS)),
        });
    }
    out
}

/// Swaps two adjacent letters in the middle, the commonest typing slip.
fn typo(word: &str) -> String {
    let mut chars: Vec<char> = word.chars().collect();
    if chars.len() > 3 {
        let mid = chars.len() / 2;
        chars.swap(mid - 1, mid);
    }
    chars.into_iter().collect()
}

/// A synthetic catalogue of `n` tools as a catalogue file: each tool a JavaScript tool
/// whose input schema declares its parameters (typed, described, the first required).
pub fn write_file(path: &std::path::Path, n: usize) -> std::io::Result<()> {
    let tools: Vec<Value> = catalogue(n)
        .into_iter()
        .map(|d| {
            let properties: serde_json::Map<String, Value> = d
                .params
                .iter()
                .map(|(name, doc)| (name.clone(), json!({"type": "string", "description": doc, "maxLength": 10_000})))
                .collect();
            let first = d.params.first().map(|p| p.0.clone());
            json!({
                "slug": d.slug,
                "name": d.name,
                "description": d.description,
                "category": d.category,
                "tags": d.tags,
                "input_schema": {"type": "object", "properties": properties, "required": first.into_iter().collect::<Vec<_>>(), "additionalProperties": false},
                "annotations": {"readOnlyHint": true},
                "runtime": "javascript",
                "source": "function run(params) { return params; }",
            })
        })
        .collect();
    let bytes = serde_json::to_vec(&json!({ "tools": tools })).map_err(std::io::Error::other)?;
    std::fs::write(path, bytes)
}

/// A catalogue size and its file (`None`: the embedded catalogue).
pub type ScaleFile = (usize, Option<std::path::PathBuf>);

/// The catalogues a scale bench measures: the sizes in `TOOLGATE_SCALE_SIZES`
/// (comma-separated; 0 is the embedded catalogue, which has no file), else `default`,
/// each written by [`write_file`] into `TOOLGATE_SCALE_DIR` (kept, to profile a server on
/// them) or a temp folder the returned guard keeps. Every file is flushed to disk before
/// this returns, so no measurement pays for the kernel writing back the bench's own 65 MB.
pub fn scale_files(default: &[usize]) -> Result<(tempfile::TempDir, Vec<ScaleFile>), String> {
    let sizes: Vec<usize> = std::env::var("TOOLGATE_SCALE_SIZES")
        .ok()
        .map(|s| s.split(',').filter_map(|n| n.trim().parse().ok()).collect())
        .unwrap_or_else(|| default.to_vec());
    let temp = tempfile::tempdir().map_err(|e| format!("cannot make a temp folder: {e}"))?;
    let dir = std::env::var_os("TOOLGATE_SCALE_DIR").map_or_else(|| temp.path().to_owned(), Into::into);
    let mut files = Vec::new();
    for n in sizes {
        if n == 0 {
            files.push((n, None));
            continue;
        }
        let path = dir.join(format!("catalogue-{n}.json"));
        write_file(&path, n)
            .and_then(|()| std::fs::File::open(&path))
            .and_then(|f| f.sync_all())
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        files.push((n, Some(path)));
    }
    Ok((temp, files))
}
