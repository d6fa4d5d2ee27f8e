//! The caps on a manifest's text (`limits.rs`), applied when a snapshot is built, and the
//! search index's view of a manifest. A catalogue, local or fetched, decides how much text
//! search reads and `tools/list` carries; these caps keep that bounded per tool, and each
//! tool they cut is named once on stderr.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

use super::manifest::{Json, Manifest};
use super::parse::Key;
use super::snapshot::Tool;
use crate::limits::{
    INDEXED_PARAM_DOC_CHARS, INDEXED_PARAM_NAME_CHARS, INDEXED_PARAMS, MANIFEST_CATEGORY_CHARS,
    MANIFEST_DESCRIPTION_CHARS, MANIFEST_NAME_CHARS, MANIFEST_PHRASING_CHARS, MANIFEST_PHRASINGS, MANIFEST_TAG_CHARS,
    MANIFEST_TAGS,
};
use crate::search::Indexable;

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
    if m.phrasings.len() > MANIFEST_PHRASINGS {
        cuts.push(format!(
            "{} phrasings dropped (at most {MANIFEST_PHRASINGS} are kept)",
            m.phrasings.len() - MANIFEST_PHRASINGS
        ));
        m.phrasings.truncate(MANIFEST_PHRASINGS);
    }
    if m.phrasings
        .iter_mut()
        .fold(false, |any, p| cut(p, MANIFEST_PHRASING_CHARS) | any)
    {
        cuts.push(format!("phrasings cut to {MANIFEST_PHRASING_CHARS} characters"));
    }
    if let Some(params) = Params::of(&m.input_schema) {
        if params.count > INDEXED_PARAMS {
            cuts.push(format!(
                "only the first {INDEXED_PARAMS} of its {} parameters are searched",
                params.count
            ));
        }
        let long = params
            .first
            .iter()
            .any(|(name, doc)| is_longer(name, INDEXED_PARAM_NAME_CHARS) || is_longer(doc, INDEXED_PARAM_DOC_CHARS));
        if long {
            cuts.push(format!(
                "search reads the first {INDEXED_PARAM_NAME_CHARS} characters of a parameter name and {INDEXED_PARAM_DOC_CHARS} of its description"
            ));
        }
    }
    cuts
}

/// What the search index sees of a tool: its manifest's text fields and its first
/// [`INDEXED_PARAMS`] top-level parameters' names and descriptions, each cut to its cap.
/// Read by the index's build threads, so the schemas are read on every core.
impl Indexable for Tool {
    fn slug(&self) -> &str {
        &self.manifest.slug
    }
    fn name(&self) -> &str {
        &self.manifest.name
    }
    fn description(&self) -> &str {
        &self.manifest.description
    }
    fn category(&self) -> &str {
        &self.manifest.category
    }
    fn tags(&self) -> &[String] {
        &self.manifest.tags
    }
    fn phrasings(&self) -> &[String] {
        &self.manifest.phrasings
    }
    fn params(&self, f: &mut dyn FnMut(&str, &str)) {
        for_each_param(&self.manifest, f);
    }
}

/// Calls `f` with the name and description of each parameter search reads, cut to their
/// caps.
fn for_each_param(m: &Manifest, f: &mut dyn FnMut(&str, &str)) {
    if let Some(params) = Params::of(&m.input_schema) {
        for (name, doc) in &params.first {
            f(
                prefix(name, INDEXED_PARAM_NAME_CHARS),
                prefix(doc, INDEXED_PARAM_DOC_CHARS),
            );
        }
    }
}

/// A schema's top-level parameters as search reads them: how many `properties` it
/// declares, and the names and descriptions (`""` when not a string) of the first
/// [`INDEXED_PARAMS`], borrowed from the schema's text where they hold no escapes. Read
/// from the text in one pass, skipping the rest, instead of parsing it to a `Value`: a
/// build reads every schema twice (here and for the index), and with `Value`s those two
/// passes took about 1.5 s of the 3.4 s build at 100,000 tools.
struct Params<'a> {
    count: usize,
    first: Vec<(Cow<'a, str>, Cow<'a, str>)>,
}

impl<'a> Params<'a> {
    /// `None` when the schema has no `properties` object. The text never holds a key
    /// twice ([`Json`]), so the first `properties` and `description` found are the ones a
    /// `Value` would give.
    fn of(schema: &'a Json) -> Option<Params<'a>> {
        let mut de = serde_json::Deserializer::from_str(schema.text());
        // The text was written by serde_json, so it is JSON; nothing if it ever is not.
        match de.deserialize_any(Find::Properties) {
            Ok(Some(Found::Params(params))) => Some(params),
            _ => None,
        }
    }
}

/// What a pass over a schema's text looks for.
#[derive(Clone, Copy)]
enum Find {
    /// The top-level `properties` object.
    Properties,
    /// That object's members: the parameters (nothing when it is not an object).
    Params,
    /// In it, each property's `description`.
    Description,
    /// The value itself, when it is a string.
    Text,
}

/// What a [`Find`] found: the parameters, or a description.
enum Found<'a> {
    Params(Params<'a>),
    Text(Cow<'a, str>),
}

impl<'de> Find {
    fn skip_seq<A: SeqAccess<'de>>(mut seq: A) -> Result<(), A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(())
    }

    /// The members of a `properties` object: their count, and the first
    /// [`INDEXED_PARAMS`] names with their descriptions.
    fn params<A: MapAccess<'de>>(mut map: A) -> Result<Params<'de>, A::Error> {
        let mut params = Params {
            count: 0,
            first: Vec::new(),
        };
        while let Some(Key(name)) = map.next_key::<Key<'de>>()? {
            params.count += 1;
            if params.first.len() < INDEXED_PARAMS {
                let doc = match map.next_value_seed(Find::Description)? {
                    Some(Found::Text(doc)) => doc,
                    _ => Cow::Borrowed(""),
                };
                params.first.push((name, doc));
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(params)
    }
}

impl<'de> DeserializeSeed<'de> for Find {
    type Value = Option<Found<'de>>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

/// Any value that is not what is looked for is read past.
impl<'de> Visitor<'de> for Find {
    type Value = Option<Found<'de>>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(matches!(self, Find::Text).then_some(Found::Text(Cow::Borrowed(v))))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(matches!(self, Find::Text).then(|| Found::Text(Cow::Owned(v.to_owned()))))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        Find::skip_seq(seq).map(|()| None)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        if let Find::Params = self {
            return Find::params(map).map(|params| Some(Found::Params(params)));
        }
        let mut found = None;
        while let Some(Key(key)) = map.next_key::<Key<'de>>()? {
            match self {
                Find::Properties if key == "properties" && found.is_none() => {
                    found = map.next_value_seed(Find::Params)?;
                }
                Find::Description if key == "description" && found.is_none() => {
                    found = map.next_value_seed(Find::Text)?;
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(found)
    }
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
        let mut params = Vec::new();
        for_each_param(&m, &mut |name, doc| params.push((name.to_owned(), doc.to_owned())));
        assert_eq!(params.len(), INDEXED_PARAMS);
        assert!(params.iter().all(|(_, d)| d.chars().count() == INDEXED_PARAM_DOC_CHARS));
        // The schema is untouched.
        assert_eq!(
            m.input_schema.value()["properties"].as_object().unwrap().len(),
            INDEXED_PARAMS + 1
        );

        let mut small: Manifest = serde_json::from_value(json!({"slug": "s", "description": "Short."})).unwrap();
        assert!(trim(&mut small).is_empty());
        assert_eq!(small.description, "Short.");
    }

    #[test]
    fn parameters_read_from_the_text_are_those_of_the_value() {
        for schema in [
            json!({"type": "object", "properties": {"b": {"description": "B \"q\" é"}, "a": {}, "c": 5, "d": {"description": 7}, "e": {"x": {"description": "no"}, "description": ["no"]}}}),
            json!({"properties": {"only": {"type": "string", "description": "first"}}, "description": "top"}),
            json!({"properties": [1, 2]}),
            json!({"properties": "x"}),
            json!({"items": {"properties": {"deep": {}}}}),
            json!({"properties": {}}),
        ] {
            let m: Manifest = serde_json::from_value(json!({"slug": "s", "input_schema": schema})).unwrap();
            let mut read = Vec::new();
            for_each_param(&m, &mut |name, doc| read.push((name.to_owned(), doc.to_owned())));
            let value = m.input_schema.value();
            let expected: Vec<(String, String)> = value
                .get("properties")
                .and_then(|p| p.as_object())
                .map(|props| {
                    props
                        .iter()
                        .map(|(name, s)| {
                            let doc = s.get("description").and_then(|d| d.as_str()).unwrap_or_default();
                            (name.clone(), doc.to_owned())
                        })
                        .collect()
                })
                .unwrap_or_default();
            assert_eq!(read, expected, "{schema}");
        }
    }
}
