//! Search by meaning through the real server: a request that shares no word with its tool
//! is found by the hybrid ranker and not by the lexical one; tool vectors are cached on
//! disk and reused by the next run; a catalogue over the embedding budget stays lexical
//! and says so.

use serde_json::{Value, json};

use crate::util::{Gate, result_slugs as slugs, structured};

/// Asked the way a user asks, sharing no word but "an" (a stop word) with base64-codec's
/// slug, name, description, tags, phrasings or parameters.
const NO_SHARED_WORD: &str = "printable ascii version of an attachment";

async fn search(gate: &Gate, query: &str) -> Value {
    let r = gate.meta(json!({"command": "search", "query": query})).await;
    assert_eq!(r.is_error, Some(false), "{r:?}");
    structured(&r).clone()
}

#[tokio::test]
async fn a_request_sharing_no_word_with_its_tool_is_found_by_meaning_only() {
    let gate = Gate::start(&[]).await;
    let hybrid = search(&gate, NO_SHARED_WORD).await;
    assert_eq!(hybrid["ranker"], "hybrid", "{hybrid}");
    let found = slugs(&hybrid);
    assert!(
        found.iter().take(3).any(|s| s == "base64-codec"),
        "in the top 3 by meaning: {hybrid}"
    );
    let first = &hybrid["results"][0];
    assert!(
        first["matched"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m.as_str().unwrap().starts_with("meaning (")),
        "{first}"
    );
    // Same query, same answer: deterministic.
    assert_eq!(search(&gate, NO_SHARED_WORD).await, hybrid);
    // Exact words still lead: a slug finds its tool first.
    assert_eq!(slugs(&search(&gate, "base64-codec").await)[0], "base64-codec");
    gate.stop().await;

    let gate = Gate::start(&[("TOOLGATE_SEARCH", "lexical")]).await;
    let lexical = search(&gate, NO_SHARED_WORD).await;
    assert_eq!(lexical["ranker"], "lexical", "{lexical}");
    assert!(
        !slugs(&lexical).iter().any(|s| s == "base64-codec"),
        "no word to find it by: {lexical}"
    );
    gate.stop().await;
}

#[tokio::test]
async fn tool_vectors_are_cached_on_disk_and_a_restart_embeds_nothing() {
    let cache = tempfile::tempdir().unwrap();
    let dir = cache.path().to_str().unwrap();
    let line = ready_line(dir).await;
    assert!(line.contains(", 0 from the cache"), "{line}");
    let files: Vec<_> = std::fs::read_dir(cache.path()).unwrap().collect();
    assert_eq!(files.len(), 1, "one file per model");

    let line = ready_line(dir).await;
    assert!(line.contains(" 0 texts embedded"), "all from the cache: {line}");
}

/// Runs a server with the vector cache in `dir`, searches once by meaning and returns its
/// stderr line saying how the catalogue's vectors were made.
async fn ready_line(dir: &str) -> String {
    let gate = Gate::start(&[("TOOLGATE_EMBED_CACHE", dir), ("TOOLGATE_DEBUG", "1")]).await;
    assert_eq!(search(&gate, "encode text as base64").await["ranker"], "hybrid");
    let stderr = gate.stop().await;
    stderr
        .lines()
        .find(|l| l.contains("search by meaning ready"))
        .unwrap_or_else(|| panic!("{stderr}"))
        .to_owned()
}

#[tokio::test]
async fn a_catalogue_over_the_embedding_budget_is_searched_by_words_and_stderr_says_why() {
    let cache = tempfile::tempdir().unwrap();
    let gate = Gate::start(&[
        ("TOOLGATE_EMBED_CACHE", cache.path().to_str().unwrap()),
        ("TOOLGATE_EMBED_BUDGET_MS", "1"),
    ])
    .await;
    let answer = search(&gate, "encode text as base64").await;
    assert_eq!(answer["ranker"], "lexical", "{answer}");
    assert_eq!(slugs(&answer)[0], "base64-codec");
    let stderr = gate.stop().await;
    assert!(
        stderr.contains("over the budget") && stderr.contains("TOOLGATE_EMBED_BUDGET_MS"),
        "{stderr}"
    );
    assert_eq!(std::fs::read_dir(cache.path()).unwrap().count(), 0, "nothing embedded");
}
