//! Search by meaning through the real server: a request that shares no word with its tool
//! is found by the hybrid ranker and not by the lexical one; tool vectors are cached on
//! disk and reused by the next run; the embedded catalogue's are compiled in; a catalogue
//! over the embedding budget stays lexical and says so.

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
    // The test fixtures: tools whose vectors are not compiled in.
    let cache = tempfile::tempdir().unwrap();
    let dir = cache.path().to_str().unwrap();
    let line = ready_line(&fixtures_env(dir), "echo a message").await;
    assert!(
        line.contains(", 0 from the cache, 0 compiled in") && !line.contains(" 0 texts embedded"),
        "{line}"
    );
    let files: Vec<_> = std::fs::read_dir(cache.path()).unwrap().collect();
    assert_eq!(files.len(), 1, "one file per model");

    let line = ready_line(&fixtures_env(dir), "echo a message").await;
    assert!(
        line.contains(" 0 texts embedded") && line.contains(", 0 compiled in"),
        "all from the cache: {line}"
    );
}

#[tokio::test]
async fn the_embedded_catalogue_is_ranked_by_meaning_with_vectors_compiled_in() {
    // A fresh cache: every text of the embedded catalogue comes from the binary, none is
    // embedded. Fails when a catalogue tool's texts changed: run scripts/catalogue-vectors.
    let cache = tempfile::tempdir().unwrap();
    let dir = cache.path().to_str().unwrap();
    let line = ready_line(&[("TOOLGATE_EMBED_CACHE", dir)], "encode text as base64").await;
    assert!(
        line.contains(" 0 texts embedded") && line.contains(", 0 from the cache"),
        "texts of the embedded catalogue are not compiled in (run scripts/catalogue-vectors): {line}"
    );
    // They join the cache like embedded ones.
    let line = ready_line(&[("TOOLGATE_EMBED_CACHE", dir)], "encode text as base64").await;
    assert!(line.contains(", 0 compiled in"), "{line}");
}

/// The test fixtures as the catalogue, with the vector cache in `dir`.
fn fixtures_env(dir: &str) -> [(&'static str, String); 2] {
    [
        ("TOOLGATE_CATALOGUE", crate::util::fixtures().display().to_string()),
        ("TOOLGATE_EMBED_CACHE", dir.to_owned()),
    ]
}

/// Runs a server with `env` (and the debug log), searches `query` by meaning and returns
/// its stderr line saying how the catalogue's vectors were made.
async fn ready_line<K: AsRef<str>, V: AsRef<str>>(env: &[(K, V)], query: &str) -> String {
    let mut env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_ref(), v.as_ref())).collect();
    env.push(("TOOLGATE_DEBUG", "1"));
    let gate = Gate::start(&env).await;
    assert_eq!(search(&gate, query).await["ranker"], "hybrid");
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
    let [catalogue, cache_dir] = fixtures_env(cache.path().to_str().unwrap());
    let gate = Gate::start(&[
        (catalogue.0, catalogue.1.as_str()),
        (cache_dir.0, cache_dir.1.as_str()),
        ("TOOLGATE_EMBED_BUDGET_MS", "1"),
    ])
    .await;
    let answer = search(&gate, "echo a message").await;
    assert_eq!(answer["ranker"], "lexical", "{answer}");
    assert_eq!(slugs(&answer)[0], "echo");
    let stderr = gate.stop().await;
    assert!(
        stderr.contains("over the budget") && stderr.contains("TOOLGATE_EMBED_BUDGET_MS"),
        "{stderr}"
    );
    assert_eq!(std::fs::read_dir(cache.path()).unwrap().count(), 0, "nothing embedded");
}

/// The words of [`pasted_task`] before its image.
const TASK_WORDS: &str = "Encode this text as base64 for the e-mail attachment, then send it:";

/// A task an agent pasted: words, then an image as base64 (thousands of characters, one
/// word).
fn pasted_task() -> String {
    let image: String = (0..6_000u32)
        .map(|i| b"iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9Qw"[(i * 7 % 64) as usize] as char)
        .collect();
    format!("{TASK_WORDS} data:image/png;base64,{image}")
}

#[tokio::test]
async fn a_pasted_task_is_searched_by_its_start_and_the_answer_says_it_was_cut() {
    let task = pasted_task();
    let total = task.chars().count();
    for env in [vec![], vec![("TOOLGATE_SEARCH", "lexical")]] {
        let gate = Gate::start(&env).await;
        let r = gate.meta(json!({"command": "search", "query": task})).await;
        assert_eq!(r.is_error, Some(false), "long queries are used, not refused: {r:?}");
        let answer = structured(&r).clone();
        let cut = &answer["cut"];
        assert_eq!(cut["query_chars"], total, "{answer}");
        // The image is one word the limit splits: left out whole, not searched in part.
        let kept = cut["searched_chars"].as_u64().unwrap();
        assert_eq!(kept as usize, TASK_WORDS.chars().count(), "{answer}");
        assert!(
            slugs(&answer).iter().take(3).any(|s| s == "base64-codec"),
            "the words before the image find the tool: {answer}"
        );
        let text = crate::util::text(&r);
        assert!(
            text.contains(&format!("its first {kept} of {total} were searched")),
            "{text}"
        );
        gate.stop().await;
    }
}

#[tokio::test]
async fn a_long_query_of_stop_words_is_refused_as_before() {
    let gate = Gate::start(&[]).await;
    let r = gate
        .meta(json!({"command": "search", "query": "can you please do it for me ".repeat(100)}))
        .await;
    let err = crate::util::expect_error(&r, "BAD_REQUEST");
    assert!(
        err["error"].as_str().unwrap().contains("only words too common"),
        "{err}"
    );
    gate.stop().await;
}
