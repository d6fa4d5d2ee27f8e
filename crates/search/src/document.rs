//! What the index reads of one tool: the [`Indexable`] trait, and [`Document`], the plain
//! form of it that tests, benchmarks and `catalogue eval` build.

use std::sync::Arc;

/// One tool as the index sees it.
#[derive(Debug, Clone, Default)]
pub struct Document {
    /// Its slug (also the final tie-break).
    pub slug: String,
    /// Its title.
    pub name: String,
    /// Its description.
    pub description: String,
    /// Its category.
    pub category: String,
    /// Its tags.
    pub tags: Vec<String>,
    /// Its parameters: `(name, description)`.
    pub params: Vec<(String, String)>,
    /// Requests a user would type for it.
    pub phrasings: Vec<String>,
}

/// The text of one tool the index reads, borrowed from wherever the tool keeps it. The
/// catalogue's tools implement it, so a build reads their text in place, on every build
/// thread, instead of copying it into [`Document`]s first (at 100,000 tools making those
/// copies, schemas parsed to `Value`s, took 0.54–0.74 s on one thread).
pub trait Indexable: Sync {
    /// Its slug (also the final tie-break).
    fn slug(&self) -> &str;
    /// Its title.
    fn name(&self) -> &str;
    /// Its description.
    fn description(&self) -> &str;
    /// Its category.
    fn category(&self) -> &str;
    /// Its tags.
    fn tags(&self) -> &[String];
    /// Calls `f` with each parameter's name and description, in order.
    fn params(&self, f: &mut dyn FnMut(&str, &str));
    /// Requests a user would type for it (none by default).
    fn phrasings(&self) -> &[String] {
        &[]
    }
}

impl Indexable for Document {
    fn slug(&self) -> &str {
        &self.slug
    }
    fn name(&self) -> &str {
        &self.name
    }
    fn description(&self) -> &str {
        &self.description
    }
    fn category(&self) -> &str {
        &self.category
    }
    fn tags(&self) -> &[String] {
        &self.tags
    }
    fn params(&self, f: &mut dyn FnMut(&str, &str)) {
        for (name, text) in &self.params {
            f(name, text);
        }
    }
    fn phrasings(&self) -> &[String] {
        &self.phrasings
    }
}

impl<T: Indexable + Send> Indexable for Arc<T> {
    fn slug(&self) -> &str {
        (**self).slug()
    }
    fn name(&self) -> &str {
        (**self).name()
    }
    fn description(&self) -> &str {
        (**self).description()
    }
    fn category(&self) -> &str {
        (**self).category()
    }
    fn tags(&self) -> &[String] {
        (**self).tags()
    }
    fn params(&self, f: &mut dyn FnMut(&str, &str)) {
        (**self).params(f);
    }
    fn phrasings(&self) -> &[String] {
        (**self).phrasings()
    }
}
