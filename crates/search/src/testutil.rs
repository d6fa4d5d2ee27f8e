//! Fixtures shared by the search module's unit tests.

use super::document::Document;

/// A document with the given text fields and no parameters.
pub(super) fn doc(slug: &str, name: &str, description: &str, tags: &[&str]) -> Document {
    Document {
        slug: slug.into(),
        name: name.into(),
        description: description.into(),
        tags: tags.iter().map(|t| (*t).into()).collect(),
        ..Document::default()
    }
}
