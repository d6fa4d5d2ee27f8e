//! Search by intent as every caller asks it — the meta-tool's `search` and a snippet's
//! `tools.search` — so both rank alike: the query cut to its bounded start, refused when
//! it says nothing searchable, its vector (hybrid ranking) computed off the async
//! workers, and the ranked hits as one list of results.

use std::sync::Arc;

use serde_json::{Value, json};
use tracing::Instrument;

use super::Gateway;
use crate::catalogue::{Snapshot, Tool};
use crate::error::Error;
use crate::search::{self, Cut, Hit, QueryError, Ranker};

/// What a search found.
#[derive(Debug)]
pub struct Found<'s, 'q> {
    /// The tools, best first, with their scores and what matched.
    pub hits: Vec<(&'s Arc<Tool>, Hit)>,
    /// How they were ranked.
    pub ranker: Ranker,
    /// The part of the query searched.
    pub cut: Cut<'q>,
}

impl Found<'_, '_> {
    /// Whether the scores rank the hits: a lone hit, or hits level with each other, have
    /// scores that say nothing (the hybrid ranker normalises over the catalogue).
    pub fn is_ranked(&self) -> bool {
        self.hits.iter().any(|(_, h)| h.score != self.hits[0].1.score)
    }

    /// The hits as the meta-tool's structured `results`: `slug`, `name`, `score`,
    /// `description`, `matched`.
    pub fn results(&self) -> Vec<Value> {
        self.hits
            .iter()
            .map(|(tool, hit)| {
                let m = &tool.manifest;
                json!({
                    "slug": m.slug,
                    "name": m.name,
                    "score": (f64::from(hit.score) * 1000.0).round() / 1000.0,
                    "description": m.summary(),
                    "matched": hit.matched,
                })
            })
            .collect()
    }
}

impl Gateway {
    /// The tools of `snapshot` that best match `query`, at most `limit` of them. A long
    /// query is searched by its start (nothing past the cut is read or embedded); a
    /// query with nothing searchable is a `BAD_REQUEST` saying why.
    pub async fn search<'s, 'q>(
        &self,
        snapshot: &'s Snapshot,
        query: &'q str,
        limit: usize,
    ) -> Result<Found<'s, 'q>, Error> {
        let cut = search::cut(query);
        let searched = cut.text;
        let refused = |e: QueryError| {
            Error::BadRequest(match e {
                QueryError::Empty => "the query is empty: say in words what the tool should do".to_owned(),
                QueryError::OnlyStopWords => format!(
                    "the query \"{searched}\" has only words too common to search by; name the task or the data, e.g. \"validate env file\""
                ),
            })
        };
        // The query's vector costs milliseconds of CPU: off the async workers, and only
        // for a query the lexical ranker does not refuse.
        let meaning = self.meaning();
        // Waiting for the snapshot's tools to be embedded (the index a hybrid search
        // needs) is a span of its own, as is embedding the query.
        let index = tracing::info_span!("search index", toolgate.ranker = tracing::field::Empty);
        let ranker = meaning.ranker(snapshot).instrument(index.clone()).await;
        index.record("toolgate.ranker", ranker.label());
        drop(index);
        let vector = match ranker {
            Ranker::Hybrid => {
                snapshot.check_query(searched).map_err(refused)?;
                let (meaning, q) = (meaning.clone(), searched.to_owned());
                tokio::task::spawn_blocking(move || meaning.query(&q))
                    .instrument(tracing::info_span!("embed query"))
                    .await
                    .ok()
                    .flatten()
            }
            Ranker::Lexical => None,
        };
        let (hits, ranker) = match &vector {
            Some(v) => (snapshot.search_by_meaning(searched, v, limit), Ranker::Hybrid),
            None => (snapshot.search(searched, limit), Ranker::Lexical),
        };
        Ok(Found {
            hits: hits.map_err(refused)?,
            ranker,
            cut,
        })
    }
}
