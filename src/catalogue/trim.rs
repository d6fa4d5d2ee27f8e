//! The caps on a manifest's text (`limits.rs`), applied when a snapshot is built, and the
//! search index's view of a manifest. A catalogue, local or fetched, decides how much text
//! search reads and `tools/list` carries; these caps keep that bounded per tool, and each
//! tool they cut is named once on stderr.

use super::manifest::Manifest;
use crate::limits::{
    INDEXED_PARAM_DOC_CHARS, INDEXED_PARAM_NAME_CHARS, INDEXED_PARAMS, MANIFEST_CATEGORY_CHARS,
    MANIFEST_DESCRIPTION_CHARS, MANIFEST_NAME_CHARS, MANIFEST_TAG_CHARS, MANIFEST_TAGS,
};
use crate::search::Document;

/// Cuts the manifest's name, description, category and tags to their caps, and says what
/// was cut (and which parameter text search will not read), one phrase each; empty when
/// the manifest fits. The input schema is never changed: validation needs it whole.
pub(super) fn trim(m: &mut Manifest) -> Vec<String> {
    let mut cuts = Vec::new();
    for (label, text, max) in [
        ("name", &mut m.name, MANIFEST_NAME_CHARS),
        ("description", &mut m.description, MANIFEST_DESCRIPTION_CHARS),
        ("category", &mut m.category, MANIFEST_CATEGORY_CHARS),
    ] {
        if cut(text, max) {
            cuts.push(format!("{label} cut to {max} characters"));
        }
    }
    if m.tags.len() > MANIFEST_TAGS {
        cuts.push(format!(
            "{} tags dropped (at most {MANIFEST_TAGS} are kept)",
            m.tags.len() - MANIFEST_TAGS
        ));
        m.tags.truncate(MANIFEST_TAGS);
    }
    if m.tags
        .iter_mut()
        .fold(false, |any, tag| cut(tag, MANIFEST_TAG_CHARS) | any)
    {
        cuts.push(format!("tags cut to {MANIFEST_TAG_CHARS} characters"));
    }
    let schema = m.input_schema.value();
    if let Some(props) = properties(&schema) {
        if props.len() > INDEXED_PARAMS {
            cuts.push(format!(
                "only the first {INDEXED_PARAMS} of its {} parameters are searched",
                props.len()
            ));
        }
        let long = props.iter().take(INDEXED_PARAMS).any(|(name, schema)| {
            is_longer(name, INDEXED_PARAM_NAME_CHARS) || is_longer(param_doc(schema), INDEXED_PARAM_DOC_CHARS)
        });
        if long {
            cuts.push(format!(
                "search reads the first {INDEXED_PARAM_NAME_CHARS} characters of a parameter name and {INDEXED_PARAM_DOC_CHARS} of its description"
            ));
        }
    }
    cuts
}

/// What the search index sees of a manifest: its text fields and its first
/// [`INDEXED_PARAMS`] top-level parameters' names and descriptions, each cut to its cap.
pub(super) fn document(m: &Manifest) -> Document {
    let schema = m.input_schema.value();
    let params = properties(&schema)
        .map(|props| {
            props
                .iter()
                .take(INDEXED_PARAMS)
                .map(|(name, schema)| {
                    (
                        prefix(name, INDEXED_PARAM_NAME_CHARS).to_owned(),
                        prefix(param_doc(schema), INDEXED_PARAM_DOC_CHARS).to_owned(),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    Document {
        slug: m.slug.clone(),
        name: m.name.clone(),
        description: m.description.clone(),
        category: m.category.clone(),
        tags: m.tags.clone(),
        params,
    }
}

fn properties(schema: &serde_json::Value) -> Option<&serde_json::Map<String, serde_json::Value>> {
    schema.get("properties").and_then(|p| p.as_object())
}

fn param_doc(schema: &serde_json::Value) -> &str {
    schema.get("description").and_then(|d| d.as_str()).unwrap_or_default()
}

/// The first `max` characters of `text`.
fn prefix(text: &str, max: usize) -> &str {
    match text.char_indices().nth(max) {
        Some((i, _)) => &text[..i],
        None => text,
    }
}

/// Returns true if and only if `text` has more than `max` characters.
fn is_longer(text: &str, max: usize) -> bool {
    text.len() > max && text.chars().nth(max).is_some()
}

/// Cuts `text` to `max` characters; returns true if and only if it was longer.
fn cut(text: &mut String, max: usize) -> bool {
    let keep = prefix(text, max).len();
    let longer = keep < text.len();
    text.truncate(keep);
    longer
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_text_field_is_capped_and_named() {
        let params: serde_json::Map<String, serde_json::Value> = (0..INDEXED_PARAMS + 1)
            .map(|i| {
                (
                    format!("p{i}"),
                    json!({"description": "é".repeat(INDEXED_PARAM_DOC_CHARS + 1)}),
                )
            })
            .collect();
        let mut m: Manifest = serde_json::from_value(json!({
            "slug": "big",
            "name": "n".repeat(MANIFEST_NAME_CHARS + 1),
            "description": "é".repeat(MANIFEST_DESCRIPTION_CHARS + 5),
            "category": "c".repeat(MANIFEST_CATEGORY_CHARS),
            "tags": vec!["t".repeat(MANIFEST_TAG_CHARS + 1); MANIFEST_TAGS + 2],
            "input_schema": {"type": "object", "properties": params},
        }))
        .unwrap();
        let cuts = trim(&mut m);
        assert_eq!(cuts.len(), 6, "{cuts:?}");
        assert!(cuts[1].starts_with("description cut to"), "{cuts:?}");
        assert_eq!(m.description.chars().count(), MANIFEST_DESCRIPTION_CHARS);
        assert_eq!(m.name.chars().count(), MANIFEST_NAME_CHARS);
        assert_eq!(m.category.chars().count(), MANIFEST_CATEGORY_CHARS);
        assert_eq!(m.tags.len(), MANIFEST_TAGS);
        assert!(m.tags.iter().all(|t| t.chars().count() == MANIFEST_TAG_CHARS));
        let doc = document(&m);
        assert_eq!(doc.params.len(), INDEXED_PARAMS);
        assert!(
            doc.params
                .iter()
                .all(|(_, d)| d.chars().count() == INDEXED_PARAM_DOC_CHARS)
        );
        // The schema is untouched.
        assert_eq!(
            m.input_schema.value()["properties"].as_object().unwrap().len(),
            INDEXED_PARAMS + 1
        );

        let mut small: Manifest = serde_json::from_value(json!({"slug": "s", "description": "Short."})).unwrap();
        assert!(trim(&mut small).is_empty());
        assert_eq!(small.description, "Short.");
    }
}
