//! Reading one manifest straight from its JSON text, in one pass: no `Value` tree of the
//! whole manifest, no buffered copy of its fields (what `#[serde(flatten)]` makes the
//! derived reader do), and its schemas written to compact text as they are read.
//!
//! It is the fast path of [`super::load`] only: whenever it is not sure to give exactly
//! what the derived reader gives from a `Value` (a duplicate key anywhere, any error), it
//! gives up and the caller reads the manifest that way instead, so messages and results
//! stay those of the derived reader. `Value` then `from_value` made three copies of every
//! schema (a `Value`, a buffered copy, the text); with this reader and the file split
//! over two cores (`load::parse_list`), reading 100,000 tools went from 1.2–1.3 s to
//! 0.73–0.80 s. The writer is hand-written rather than `serde_transcode` (not a
//! dependency) because it must also refuse an object with a key twice, which a
//! transcoder would copy through.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

use super::manifest::{self, Example, Json, Manifest, Returns, Runtime};

/// The manifest in `text`, or `None` when the derived reader must decide (see the module
/// documentation). `buf` is where schemas are written before they are kept: one buffer
/// reused for every tool a thread reads, rather than one grown for each schema.
pub(super) fn manifest(text: &str, buf: &mut Vec<u8>) -> Option<Manifest> {
    let mut de = serde_json::Deserializer::from_str(text);
    let m = de.deserialize_map(ManifestVisitor { buf }).ok()?;
    de.end().ok()?;
    Some(m)
}

/// A key as written: borrowed from the text unless it holds escapes.
pub(super) struct Key<'de>(pub(super) Cow<'de, str>);

impl<'de> de::Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a key")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v.to_owned())))
            }
        }
        d.deserialize_str(V)
    }
}

/// Sets a field once; a second occurrence of its key is the derived reader's to judge.
fn once<T, E: de::Error>(slot: &mut Option<T>, value: T) -> Result<(), E> {
    if slot.is_some() {
        return Err(E::custom("duplicate key"));
    }
    *slot = Some(value);
    Ok(())
}

struct ManifestVisitor<'b> {
    buf: &'b mut Vec<u8>,
}

impl<'de> Visitor<'de> for ManifestVisitor<'_> {
    type Value = Manifest;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a manifest")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Manifest, A::Error> {
        let (mut slug, mut name, mut description, mut category) = (None, None, None, None);
        let (mut tags, mut phrasings) = (None::<Vec<String>>, None::<Vec<String>>);
        let (mut input_schema, mut output_schema) = (None, None);
        let (mut annotations, mut examples) = (None::<Option<Map<String, Value>>>, None::<Vec<Example>>);
        let (mut runtime, mut returns, mut source) = (None::<Option<Runtime>>, None::<Returns>, None);
        let mut extra = Map::new();
        while let Some(Key(key)) = map.next_key::<Key<'de>>()? {
            match key.as_ref() {
                "slug" => once(&mut slug, map.next_value::<String>()?)?,
                "name" => once(&mut name, map.next_value::<String>()?)?,
                "description" => once(&mut description, map.next_value::<String>()?)?,
                "category" => once(&mut category, map.next_value::<String>()?)?,
                "tags" => once(&mut tags, map.next_value()?)?,
                "phrasings" => once(&mut phrasings, map.next_value()?)?,
                "input_schema" => once(&mut input_schema, map.next_value_seed(CompactJson { buf: self.buf })?)?,
                "output_schema" => once(&mut output_schema, map.next_value_seed(OptionalJson { buf: self.buf })?)?,
                "annotations" => once(&mut annotations, map.next_value()?)?,
                "examples" => once(&mut examples, map.next_value()?)?,
                "runtime" => once(&mut runtime, map.next_value()?)?,
                "returns" => once(&mut returns, map.next_value()?)?,
                "source" => once(&mut source, map.next_value::<Option<String>>()?)?,
                _ => {
                    let key = key.into_owned();
                    if extra.contains_key(&key) {
                        return Err(de::Error::custom("duplicate key"));
                    }
                    let value: Value = map.next_value()?;
                    extra.insert(key, value);
                }
            }
        }
        Ok(Manifest {
            slug: slug.ok_or_else(|| de::Error::missing_field("slug"))?,
            name: name.unwrap_or_default(),
            description: description.unwrap_or_default(),
            category: category.unwrap_or_default(),
            tags: tags.unwrap_or_default(),
            phrasings: phrasings.unwrap_or_default(),
            input_schema: input_schema.unwrap_or_else(manifest::empty_object_schema),
            output_schema: output_schema.flatten(),
            annotations: annotations.flatten().map(manifest::object_text),
            examples: examples.unwrap_or_default(),
            runtime: runtime.flatten(),
            returns: returns.unwrap_or_default(),
            source: source.flatten(),
            extra,
        })
    }
}

/// A JSON value read into its compact text, as `Value::to_string` writes it, by way of
/// `buf`.
struct CompactJson<'b> {
    buf: &'b mut Vec<u8>,
}

impl<'de> DeserializeSeed<'de> for CompactJson<'_> {
    type Value = Json;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Json, D::Error> {
        self.buf.clear();
        Compact { out: self.buf }.deserialize(d)?;
        std::str::from_utf8(self.buf)
            .map(Json::from_compact)
            .map_err(de::Error::custom)
    }
}

/// `null` or a JSON value read into its compact text.
struct OptionalJson<'b> {
    buf: &'b mut Vec<u8>,
}

impl<'de> DeserializeSeed<'de> for OptionalJson<'_> {
    type Value = Option<Json>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Option<Json>, D::Error> {
        d.deserialize_option(self)
    }
}

impl<'de> Visitor<'de> for OptionalJson<'_> {
    type Value = Option<Json>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("null or a JSON value")
    }
    fn visit_none<E: de::Error>(self) -> Result<Option<Json>, E> {
        Ok(None)
    }
    fn visit_unit<E: de::Error>(self) -> Result<Option<Json>, E> {
        Ok(None)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Option<Json>, D::Error> {
        CompactJson { buf: self.buf }.deserialize(d).map(Some)
    }
}

/// Writes the value it reads to `out` as compact JSON: serde_json's own writer for
/// strings and numbers, so the text is the one `Value::to_string` gives. An object with a
/// key twice is refused: a `Value` keeps one of them, and only the derived reader should
/// say which.
struct Compact<'b> {
    out: &'b mut Vec<u8>,
}

impl Compact<'_> {
    fn write<T: serde::Serialize + ?Sized, E: de::Error>(&mut self, v: &T) -> Result<(), E> {
        serde_json::to_writer(&mut *self.out, v).map_err(E::custom)
    }
}

impl<'de> DeserializeSeed<'de> for Compact<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Compact<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E: de::Error>(mut self, v: bool) -> Result<(), E> {
        self.write(&v)
    }
    fn visit_i64<E: de::Error>(mut self, v: i64) -> Result<(), E> {
        self.write(&v)
    }
    fn visit_u64<E: de::Error>(mut self, v: u64) -> Result<(), E> {
        self.write(&v)
    }
    fn visit_f64<E: de::Error>(mut self, v: f64) -> Result<(), E> {
        // As `Value` holds it: a number when finite, else null.
        match serde_json::Number::from_f64(v) {
            Some(n) => self.write(&n),
            None => self.write(&()),
        }
    }
    fn visit_str<E: de::Error>(mut self, v: &str) -> Result<(), E> {
        self.write(v)
    }
    fn visit_unit<E: de::Error>(mut self) -> Result<(), E> {
        self.write(&())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        self.out.push(b'[');
        let mut first = true;
        loop {
            let mark = self.out.len();
            if !first {
                self.out.push(b',');
            }
            if seq.next_element_seed(Compact { out: self.out })?.is_none() {
                self.out.truncate(mark);
                break;
            }
            first = false;
        }
        self.out.push(b']');
        Ok(())
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        self.out.push(b'{');
        // Where each key's text sits in `out`, to find a key written twice.
        let mut keys: Vec<(usize, usize)> = Vec::new();
        loop {
            let mark = self.out.len();
            if !keys.is_empty() {
                self.out.push(b',');
            }
            let start = self.out.len();
            if map.next_key_seed(CompactKey { out: self.out })?.is_none() {
                self.out.truncate(mark);
                break;
            }
            keys.push((start, self.out.len()));
            self.out.push(b':');
            map.next_value_seed(Compact { out: self.out })?;
        }
        if keys.len() > 1 {
            let out = &*self.out;
            keys.sort_unstable_by(|a, b| out[a.0..a.1].cmp(&out[b.0..b.1]));
            if keys.windows(2).any(|w| out[w[0].0..w[0].1] == out[w[1].0..w[1].1]) {
                return Err(de::Error::custom("duplicate key"));
            }
        }
        self.out.push(b'}');
        Ok(())
    }
}

/// An object key, written as a JSON string.
struct CompactKey<'b> {
    out: &'b mut Vec<u8>,
}

impl<'de> DeserializeSeed<'de> for CompactKey<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for CompactKey<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a key")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<(), E> {
        serde_json::to_writer(&mut *self.out, v).map_err(E::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fast reading either gives up or agrees with `Value` then `from_value`.
    fn check(text: &str, fast_reads_it: bool) {
        let fast = manifest(text, &mut Vec::new());
        assert_eq!(fast.is_some(), fast_reads_it, "{text}");
        if let Some(fast) = fast {
            let value: Value = serde_json::from_str(text).unwrap();
            let slow: Manifest = serde_json::from_value(value).unwrap();
            assert_eq!(fast, slow, "{text}");
            assert_eq!(fast.input_schema.text(), slow.input_schema.text(), "{text}");
            let texts = |m: &Manifest| m.output_schema.as_ref().map(|j| j.text().to_owned());
            assert_eq!(texts(&fast), texts(&slow), "{text}");
            let notes = |m: &Manifest| m.annotations.as_ref().map(|j| j.text().to_owned());
            assert_eq!(notes(&fast), notes(&slow), "{text}");
        }
    }

    #[test]
    fn agrees_with_the_derived_reader_or_gives_up() {
        check(r#"{"slug": "a"}"#, true);
        check(
            r#"{"slug": "a", "name": "N", "description": "D", "category": "c", "tags": ["x"],
                "input_schema": {"type": "object", "properties": {"z": {"description": "\u00e9\n\"q\"", "enum": [1, -2, 1.5, 1e3, -0, true, null, [], {}]}, "a": {}}},
                "output_schema": {"type": "string"}, "annotations": {"readOnlyHint": true, "k": 1, "k": 2},
                "examples": [{"name": "e", "params": {"z": 1}}, ["n", {}]], "runtime": "javascript",
                "returns": "content", "source": "code", "x_custom": {"b": 1, "a": [2]}, "y": null}"#,
            true,
        );
        check(
            r#"{"slug": "a", "output_schema": null, "runtime": null, "source": null}"#,
            true,
        );
        check(r#"{"slug": "a", "input_schema": 5}"#, true);
        check(
            r#"{"slug": "a", "input_schema": {"type": "object", "type": "string"}}"#,
            false,
        );
        check(
            r#"{"slug": "a", "input_schema": {"p": {"x": 1, "y": 2, "x": 3}}}"#,
            false,
        );
        check(r#"{"slug": "a", "slug": "b"}"#, false);
        check(r#"{"slug": "a", "x": 1, "x": 2}"#, false);
        check(r#"{"name": "no slug"}"#, false);
        check(r#"{"slug": "a", "tags": null}"#, false);
        check(r#"{"slug": "a", "runtime": "cobol"}"#, false);
        // Annotations are an object or nothing, whichever reader reads them.
        check(r#"{"slug": "a", "annotations": "read-only"}"#, false);
        assert!(serde_json::from_str::<Manifest>(r#"{"slug": "a", "annotations": [true]}"#).is_err());
        check(r#"{"slug": "a", "annotations": null}"#, true);
        check(r#"["a"]"#, false);
        check(r#"{"slug": "a"} 5"#, false);
    }
}
