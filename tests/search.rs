//! The meta-tool's `search` through the real server, close-match advice, and
//! `catalogue eval` on a small hand-checked file.

use serde_json::json;

use crate::util::{Gate, command, expect_error, structured, text};

#[tokio::test]
async fn search_ranks_by_intent_over_the_embedded_catalogue() {
    let gate = Gate::start(&[]).await;
    let r = gate
        .meta(json!({"command": "search", "query": "validate env file"}))
        .await;
    assert_eq!(r.is_error, Some(false));
    let results = structured(&r)["results"].as_array().unwrap().clone();
    assert_eq!(results[0]["slug"], "env-validator");
    let first = &results[0];
    assert!(first["score"].as_f64().unwrap() > results[1]["score"].as_f64().unwrap());
    assert!(
        first["description"].as_str().unwrap().ends_with('.'),
        "the first sentence: {first}"
    );
    assert!(
        first["matched"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m.as_str().unwrap().starts_with("env"))
    );
    assert!(
        text(&r).lines().nth(1).unwrap().starts_with("env-validator "),
        "slug first: {}",
        text(&r)
    );

    let r = gate
        .meta(json!({"command": "search", "query": "environment", "limit": 3}))
        .await;
    let results = structured(&r)["results"].as_array().unwrap().clone();
    assert!(results.len() <= 3);
    assert!(results.iter().any(|h| h["slug"] == "env-validator"), "{results:?}");

    let again = gate
        .meta(json!({"command": "search", "query": "validate env file"}))
        .await;
    assert_eq!(
        structured(&again),
        structured(
            &gate
                .meta(json!({"command": "search", "query": "validate env file"}))
                .await
        )
    );
    gate.stop().await;
}

#[tokio::test]
async fn search_refuses_queries_it_cannot_run() {
    let gate = Gate::start(&[]).await;
    for query in ["", "   ", "the of and", "can you do it for me"] {
        let r = gate.meta(json!({"command": "search", "query": query})).await;
        let msg = expect_error(&r, "BAD_REQUEST")["error"].as_str().unwrap().to_owned();
        assert!(msg.contains("query"), "{msg}");
    }
    for limit in [json!(0), json!(51), json!("ten")] {
        let r = gate
            .meta(json!({"command": "search", "query": "json", "limit": limit}))
            .await;
        assert!(
            expect_error(&r, "BAD_REQUEST")["error"]
                .as_str()
                .unwrap()
                .contains("limit")
        );
    }
    expect_error(&gate.meta(json!({"command": "search"})).await, "BAD_REQUEST");
    gate.stop().await;
}

#[tokio::test]
async fn a_vague_slug_gets_advice_from_search() {
    let gate = Gate::start(&[]).await;
    let r = gate
        .meta(json!({"command": "run", "slug": "validate-env", "params": {}}))
        .await;
    let s = expect_error(&r, "TOOL_NOT_FOUND");
    assert_eq!(s["candidates"][0], "env-validator", "{s}");
    gate.stop().await;
}

const TINY_CATALOGUE: &str = r#"{"tools": [
  {"slug": "alpha", "name": "Alpha", "description": "Converts celsius to fahrenheit."},
  {"slug": "beta", "name": "Beta", "description": "Counts words in text."},
  {"slug": "gamma", "name": "Gamma", "description": "Resizes images."}
]}"#;

/// By hand: q1 finds alpha first (nDCG 1, recalls 1); q2 finds beta first but never gamma
/// (nDCG 1 / (1 + 1/log2 3) = 0.613, recalls 0.5); q3 finds nothing (0). Means: nDCG
/// 0.538, Recall@5 0.500, Recall@10 0.500.
const TINY_QUERIES: &str = r#"{"query": "convert celsius", "relevant": ["alpha"]}
{"query": "count words", "relevant": ["beta", "gamma"]}
{"query": "zebra", "relevant": ["gamma"]}
"#;

async fn eval(queries: &str, extra: &[&str]) -> (bool, String, String) {
    eval_with(&[("TOOLGATE_SEARCH", "lexical")], queries, extra).await
}

async fn eval_with(env: &[(&str, &str)], queries: &str, extra: &[&str]) -> (bool, String, String) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("tiny.json"), TINY_CATALOGUE).unwrap();
    std::fs::write(dir.path().join("q.jsonl"), queries).unwrap();
    let mut cmd = command(dir.path(), env);
    cmd.args(["catalogue", "eval", "--queries", "q.jsonl", "tiny.json"])
        .args(extra);
    let out = cmd.output().await.unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[tokio::test]
async fn catalogue_eval_computes_the_metrics_by_hand() {
    let (ok, stdout, stderr) = eval(TINY_QUERIES, &["--show-misses", "5"]).await;
    assert!(ok, "{stderr}");
    assert!(stdout.contains("3 queries over 3 tools"), "{stdout}");
    assert!(stdout.contains("\nnDCG@10      0.538\n"), "{stdout}");
    assert!(stdout.contains("\nRecall@5     0.500\n"), "{stdout}");
    assert!(stdout.contains("\nRecall@10    0.500\n"), "{stdout}");
    let misses = stdout.split("Worst").nth(1).expect("misses listed");
    assert!(
        misses.find("line 3:").unwrap() < misses.find("line 2:").unwrap(),
        "worst first: {misses}"
    );
    assert!(misses.contains("not in the top 10"));
    assert!(misses.contains("missed by lexical"), "{misses}");
}

#[tokio::test]
async fn catalogue_eval_measures_both_rankers_side_by_side_and_names_the_one_that_missed() {
    let (ok, stdout, stderr) = eval_with(&[], TINY_QUERIES, &["--show-misses", "5"]).await;
    assert!(ok, "{stderr}");
    let header = stdout.lines().nth(1).unwrap();
    assert_eq!(
        header.split_whitespace().collect::<Vec<_>>(),
        ["lexical", "hybrid"],
        "{stdout}"
    );
    let ndcg: Vec<&str> = stdout
        .lines()
        .find(|l| l.starts_with("nDCG@10"))
        .unwrap()
        .split_whitespace()
        .collect();
    assert_eq!(ndcg[1], "0.538", "the lexical column is the lexical ranker's: {stdout}");
    assert!(stdout.contains("embedding not included: lexical "), "{stdout}");
    let misses = stdout.split("Worst").nth(1).expect("misses listed");
    assert!(
        misses.contains("    lexical: ") && misses.contains("    hybrid:  "),
        "{misses}"
    );
}

#[tokio::test]
async fn catalogue_eval_takes_several_datasets_prints_one_table_and_fails_below_a_floor() {
    let dir = tempfile::tempdir().unwrap();
    for (name, queries) in [
        ("first", TINY_QUERIES),
        ("second", "{\"query\": \"count words\", \"relevant\": [\"beta\"]}\n"),
    ] {
        let folder = dir.path().join(name);
        std::fs::create_dir(&folder).unwrap();
        std::fs::write(folder.join("catalogue.json"), TINY_CATALOGUE).unwrap();
        std::fs::write(folder.join("queries.jsonl"), queries).unwrap();
    }
    let run = |floors: &'static [&'static str]| {
        let mut cmd = command(dir.path(), &[]);
        cmd.args(["catalogue", "eval", "--dataset", "first", "--dataset", "second"])
            .args(floors);
        async move {
            let out = cmd.output().await.unwrap();
            let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
            (out.status.success(), text(&out.stdout), text(&out.stderr))
        }
    };
    let (ok, stdout, stderr) = run(&[]).await;
    assert!(ok, "{stderr}");
    let table = stdout.rsplit("\nnDCG@10 ").next().expect("the table of all datasets");
    let rows: Vec<Vec<&str>> = table.lines().map(|l| l.split_whitespace().collect()).collect();
    assert_eq!(rows[0], ["queries", "tools", "lexical", "hybrid", "margin"], "{stdout}");
    assert_eq!(rows[1][..4], ["first", "3", "3", "0.538"], "{stdout}");
    assert_eq!(rows[2][..4], ["second", "1", "3", "1.000"], "{stdout}");
    assert_eq!(rows[3][..2], ["mean", "0.769"], "(0.538 + 1) / 2: {stdout}");
    // The margin is the hybrid column less the lexical one.
    for row in &rows[1..] {
        let n = row.len();
        let (l, h, m): (f64, f64, f64) = (
            row[n - 3].parse().unwrap(),
            row[n - 2].parse().unwrap(),
            row[n - 1].parse().unwrap(),
        );
        assert!((h - l - m).abs() < 0.0015, "{row:?}");
    }
    let (ok, _, stderr) = run(&["--min-margin", "0.5"]).await;
    assert!(!ok, "a margin of 0.5 is out of reach");
    assert!(
        stderr.contains("first: the hybrid ranker's margin") && stderr.contains("below +0.500"),
        "{stderr}"
    );
    let (ok, _, stderr) = run(&["--min-hybrid", "0.01", "--min-margin", "-1"]).await;
    assert!(ok, "{stderr}");
}

#[tokio::test]
async fn catalogue_eval_reports_bad_lines_by_number() {
    let queries =
        format!("{TINY_QUERIES}{{\"query\": \"x\"}}\nnot json\n{{\"query\": \"q\", \"relevant\": [\"nosuch\"]}}\n");
    let (ok, stdout, stderr) = eval(&queries, &[]).await;
    assert!(!ok, "unusable lines fail the run");
    assert!(stderr.contains("line 4:") && stderr.contains("line 5:"), "{stderr}");
    assert!(stderr.contains("line 6: relevant tool \"nosuch\""), "{stderr}");
    assert!(
        stdout.contains("4 queries"),
        "the good lines are still measured: {stdout}"
    );
}

#[tokio::test]
async fn the_documented_search_figures_reproduce_from_the_repository_copy_of_metatool() {
    // The search-quality command of docs/performance.md, run from a fresh folder on the
    // copy in eval/metatool/: the data must be in the repository and give those figures.
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("eval/metatool");
    let dir = tempfile::tempdir().unwrap();
    // The lexical figures: the hybrid ones take minutes to embed 20,614 queries.
    let out = command(dir.path(), &[("TOOLGATE_SEARCH", "lexical")])
        .args(["catalogue", "eval", "--queries"])
        .arg(root.join("queries.jsonl"))
        .arg(root.join("catalogue.json"))
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("20614 queries over 199 tools"), "{stdout}");
    for line in [
        "\nnDCG@10      0.587\n",
        "\nRecall@5     0.661\n",
        "\nRecall@10    0.717\n",
    ] {
        assert!(
            stdout.contains(line),
            "{line}: change the MetaTool table of docs/performance.md with the ranker: {stdout}"
        );
    }
    assert!(root.join("LICENSE").is_file(), "the data's licence travels with it");
}

/// The regression guard CI runs: both rankers on a fixed tenth of every dataset in eval/
/// (every 10th query), the hybrid ranker above its floor on MetaTool and above the lexical
/// ranker on each. The full sets' figures are in docs/decisions/search-ranking.md.
#[tokio::test]
async fn the_hybrid_ranker_holds_its_floor_and_its_margin_on_every_dataset() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("eval");
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = command(dir.path(), &[("TOOLGATE_EMBED_CACHE", "off")]);
    cmd.args(["catalogue", "eval", "--every", "10", "--min-margin", "0.02"]);
    for set in ["metatool", "bfcl", "bfcl-multi-turn"] {
        cmd.arg("--dataset").arg(root.join(set));
    }
    let out = cmd.output().await.unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let metatool: Vec<&str> = stdout
        .lines()
        .find(|l| l.starts_with("metatool "))
        .expect("a MetaTool row")
        .split_whitespace()
        .collect();
    let hybrid: f64 = metatool[4].parse().unwrap();
    assert!(
        hybrid >= 0.70,
        "MetaTool hybrid nDCG@10 {hybrid} is below its floor of 0.70: {stdout}"
    );
}

#[tokio::test]
async fn a_one_tool_catalogue_shows_no_meaningless_score_and_counts_in_the_singular() {
    let dir = tempfile::tempdir().unwrap();
    let tool = dir.path().join("only");
    std::fs::create_dir(&tool).unwrap();
    let manifest = json!({
        "slug": "only", "name": "Only", "description": "Counts the words of a text.", "tags": ["words"],
        "input_schema": {"type": "object", "properties": {"text": {"type": "string"}}},
        "runtime": "javascript", "source": "index.js"
    });
    std::fs::write(tool.join("tool.json"), manifest.to_string()).unwrap();
    std::fs::write(tool.join("index.js"), "function run(p) { return 1; }").unwrap();
    let catalogue = dir.path().display().to_string();
    let gate = Gate::start(&[("TOOLGATE_CATALOGUE", catalogue.as_str())]).await;
    let r = gate.meta(json!({"command": "search", "query": "count words"})).await;
    let said = text(&r);
    // Normalised over one tool, every score was 0.00: the text leaves it out.
    assert!(said.starts_with("1 tool for \"count words\""), "{said}");
    assert!(said.contains("\nonly — Counts the words"), "{said}");
    assert!(!said.contains("(0.00)"), "{said}");
    assert!(structured(&r)["results"][0]["score"].is_number());
    let list = gate.meta(json!({"command": "list"})).await;
    assert!(text(&list).starts_with("1 tool:\n"), "{}", text(&list));
    gate.stop().await;

    // Where hits differ, each line shows its score.
    let gate = Gate::start(&[]).await;
    let r = gate
        .meta(json!({"command": "search", "query": "validate env file"}))
        .await;
    assert!(text(&r).contains("\nenv-validator ("), "{}", text(&r));
    gate.stop().await;
}
