//! `catalogue eval --dataset DIR ...`: several datasets side by side. A dataset is a folder
//! holding a catalogue (`catalogue.json`) and its judged queries (`queries.jsonl`); each is
//! measured with both rankers, then one table gives every dataset and the mean, with the
//! hybrid ranker's margin over the lexical one, checked against floors when asked.

use std::fmt::Write as _;
use std::path::Path;
use std::sync::Arc;

use super::{Report, run};
use crate::catalogue::{Origin, Snapshot, load};
use crate::search::embedding::Settings;
use crate::search::{Meaning, Ranker};

/// One dataset's evaluation.
#[derive(Debug, Clone)]
pub struct Measured {
    /// Its name: the folder's (or the query file's) name.
    pub name: String,
    /// Tools in its catalogue.
    pub tools: usize,
    /// What the evaluation found.
    pub report: Report,
}

/// The least a run must reach on every dataset, else it fails (none by default).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Floors {
    /// Least nDCG@10 of the hybrid ranker.
    pub hybrid: Option<f64>,
    /// Least margin of the hybrid ranker's nDCG@10 over the lexical one's.
    pub margin: Option<f64>,
}

/// Evaluates the dataset in `dir` with the search `settings` (the embedding budget
/// applies: a catalogue over it is measured lexically only), every `every`-th query.
/// Also returns the catalogue's problems, one sentence each.
pub async fn measure(
    dir: &Path,
    settings: &Settings,
    every: usize,
    show_misses: usize,
    progress: impl FnMut(usize, usize),
) -> Result<(Measured, Vec<String>), String> {
    let catalogue = dir.join("catalogue.json");
    let queries = dir.join("queries.jsonl");
    let text = std::fs::read_to_string(&queries).map_err(|e| format!("cannot read {}: {e}", queries.display()))?;
    let loaded = load::file(&catalogue).map_err(|e| e.to_string())?;
    let mut problems = loaded.problems;
    let entries = loaded.entries;
    let (snapshot, built) = tokio::task::spawn_blocking(move || Snapshot::build(entries, Origin::Local))
        .await
        .map_err(|e| format!("the catalogue build failed: {e}"))?;
    problems.extend(built.iter().map(ToString::to_string));
    let snapshot = Arc::new(snapshot);
    let meaning = Arc::new(Meaning::new(settings.clone()));
    meaning.prepare(&snapshot);
    let hybrid = meaning.settled(&*snapshot).await == Ranker::Hybrid;
    let report = run(
        &snapshot,
        hybrid.then_some(&*meaning),
        &text,
        every,
        show_misses,
        progress,
    );
    let name = dir
        .file_name()
        .map_or_else(|| dir.display().to_string(), |n| n.to_string_lossy().into_owned());
    Ok((
        Measured {
            name,
            tools: snapshot.tools().len(),
            report,
        },
        problems,
    ))
}

/// The table of every dataset and the mean: queries, tools, each ranker's nDCG@10 and the
/// hybrid ranker's margin over the lexical one ("—" where the hybrid was not measured).
pub fn table(measured: &[Measured]) -> String {
    let mut out = String::new();
    let width = measured.iter().map(|m| m.name.len()).max().unwrap_or(0).max(7);
    let _ = writeln!(
        out,
        "{:<width$} {:>8} {:>6} {:>8} {:>8} {:>8}",
        "nDCG@10", "queries", "tools", "lexical", "hybrid", "margin"
    );
    let cell = |v: Option<f64>, signed: bool| match v {
        Some(v) if signed => format!("{v:>+8.3}"),
        Some(v) => format!("{v:>8.3}"),
        None => format!("{:>8}", "—"),
    };
    let mut sums = [0.0f64; 3];
    let mut complete = true;
    for m in measured {
        let (lexical, hybrid) = (m.report.ndcg(Ranker::Lexical), m.report.ndcg(Ranker::Hybrid));
        let margin = lexical.zip(hybrid).map(|(l, h)| h - l);
        let queries = m.report.summaries.first().map_or(0, |(_, s)| s.queries);
        let _ = writeln!(
            out,
            "{:<width$} {queries:>8} {:>6} {} {} {}",
            m.name,
            m.tools,
            cell(lexical, false),
            cell(hybrid, false),
            cell(margin, true)
        );
        for (sum, v) in sums.iter_mut().zip([lexical, hybrid, margin]) {
            match v {
                Some(v) => *sum += v,
                None => complete = false,
            }
        }
    }
    if measured.len() > 1 {
        let n = measured.len() as f64;
        let mean = |i: usize| (i == 0 || complete).then(|| sums[i] / n);
        let _ = writeln!(
            out,
            "{:<width$} {:>8} {:>6} {} {} {}",
            "mean",
            "",
            "",
            cell(mean(0), false),
            cell(mean(1), false),
            cell(mean(2), true)
        );
    }
    out
}

/// Every dataset that falls below `floors`, one sentence each; a dataset whose hybrid
/// ranker was not measured fails any floor.
pub fn below(measured: &[Measured], floors: Floors) -> Vec<String> {
    let mut out = Vec::new();
    for m in measured {
        let (lexical, hybrid) = (m.report.ndcg(Ranker::Lexical), m.report.ndcg(Ranker::Hybrid));
        if (floors.hybrid.is_some() || floors.margin.is_some()) && hybrid.is_none() {
            out.push(format!(
                "{}: the hybrid ranker was not measured (the model or the embedding budget)",
                m.name
            ));
            continue;
        }
        if let (Some(floor), Some(h)) = (floors.hybrid, hybrid)
            && h < floor
        {
            out.push(format!(
                "{}: hybrid nDCG@10 {h:.3} is below the floor {floor:.3}",
                m.name
            ));
        }
        if let (Some(floor), Some(l), Some(h)) = (floors.margin, lexical, hybrid)
            && h - l < floor
        {
            out.push(format!(
                "{}: the hybrid ranker's margin over the lexical one, {:+.3}, is below {floor:+.3}",
                m.name,
                h - l
            ));
        }
    }
    out
}
