//! Unit tests of the index and its BM25F ranking.

use super::*;
use crate::testutil::doc;

fn catalogue() -> Vec<Document> {
    vec![
        doc(
            "env-validator",
            "Env file validator",
            "Checks a .env file for syntax errors and duplicate keys.",
            &["env", "dotenv"],
        ),
        doc(
            "json-formatter",
            "JSON formatter",
            "Pretty-prints, minifies and validates JSON documents.",
            &["json"],
        ),
        doc(
            "environment-report",
            "Environment report",
            "Summarises the process environment.",
            &[],
        ),
        doc(
            "base64-codec",
            "Base64 codec",
            "Encodes and decodes base64 text.",
            &["encoding"],
        ),
        doc("url-parser", "URL parser", "Splits a URL into its parts.", &["web"]),
    ]
}

fn slugs(index: &Index, docs: &[Document], query: &str) -> Vec<String> {
    index
        .search(query, 10)
        .unwrap()
        .into_iter()
        .map(|h| docs[h.doc].slug.clone())
        .collect()
}

#[test]
fn ranks_the_obvious_tool_first() {
    let docs = catalogue();
    let index = Index::build(&docs);
    assert_eq!(slugs(&index, &docs, "validate env file")[0], "env-validator");
    assert_eq!(slugs(&index, &docs, "decode base64")[0], "base64-codec");
}

#[test]
fn abbreviations_reach_both_ways() {
    let docs = catalogue();
    let index = Index::build(&docs);
    assert!(slugs(&index, &docs, "environment").contains(&"env-validator".to_owned()));
    assert!(slugs(&index, &docs, "env").contains(&"environment-report".to_owned()));
}

#[test]
fn a_typo_is_tolerated_but_never_beats_an_exact_match() {
    let docs = catalogue();
    let index = Index::build(&docs);
    assert_eq!(slugs(&index, &docs, "formater")[0], "json-formatter");
    let hits = index.search("parser", 10).unwrap();
    assert_eq!(docs[hits[0].doc].slug, "url-parser");
    assert_eq!(hits[0].matched, vec!["parser (slug, name)"]);
    // Short words are not corrected: too many words are one edit apart.
    assert!(index.search("jsno", 10).unwrap().is_empty());
}

#[test]
fn empty_and_stop_word_queries_are_refused() {
    let index = Index::build(&catalogue());
    assert_eq!(index.search("  ?! ", 10), Err(QueryError::Empty));
    assert_eq!(index.search("can you do it", 10), Err(QueryError::OnlyStopWords));
}

#[test]
fn identical_input_identical_output_and_ties_by_slug() {
    let docs = vec![
        doc("b-tool", "Same", "same words", &[]),
        doc("a-tool", "Same", "same words", &[]),
    ];
    let index = Index::build(&docs);
    let first = index.search("same words", 10).unwrap();
    assert_eq!(first, index.search("same words", 10).unwrap());
    assert_eq!(first[0].score, first[1].score);
    assert_eq!(docs[first[0].doc].slug, "a-tool");
}

#[test]
fn matched_names_the_fields() {
    let docs = catalogue();
    let index = Index::build(&docs);
    let hits = index.search("env", 10).unwrap();
    let top = &hits[0];
    assert_eq!(docs[top.doc].slug, "env-validator");
    assert!(top.matched[0].starts_with("env ("), "{:?}", top.matched);
    assert!(
        top.matched[0].contains("slug") && top.matched[0].contains("tags"),
        "{:?}",
        top.matched
    );
}

#[test]
fn a_word_found_only_where_it_weighs_nothing_does_not_answer_a_tool_twice() {
    // The slug weighs 0 beside a name: "zeta" adds nothing, "beta" something.
    let docs = vec![doc("zeta-tool", "Beta", "beta things", &[])];
    let index = Index::build(&docs);
    let hits = index.search("zeta beta", 10).unwrap();
    assert_eq!(hits.len(), 1, "{hits:?}");
}

#[test]
fn phrasings_are_searched_and_named_in_matched() {
    let mut d = doc("env-validator", "Env validator", "Checks a .env file.", &[]);
    d.phrasings = vec!["is my deployment config broken".into()];
    let docs = vec![d, doc("other", "Other", "Something else entirely.", &[])];
    let index = Index::build(&docs);
    let hits = index.search("deployment", 10).unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].matched, vec!["deployment (phrasings)".to_owned()]);
}
