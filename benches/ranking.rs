//! How the hybrid ranker's settings were chosen: the tables of
//! docs/decisions/search-ranking.md, and a check that the server ships the rule's choice.
//!
//! For every dataset under eval/ (MetaTool, BFCL, BFCL multi-turn) each query is cut and
//! embedded as the server does, each tool's text embedded by every candidate recipe, the
//! lexical scores taken from the index; then every candidate fusion ranks every query
//! through `Index::rank_fused`, the function the server ranks by. The rule of the decision
//! record picks the settings on all datasets and, leaving each dataset out in turn, on the
//! others. Takes a few minutes on 2 cores (every query of every set is embedded).
//!
//! `cargo bench --bench ranking`; `TOOLGATE_RANKING_EVERY=N` measures every N-th query only.

use std::collections::HashMap;
use std::time::Instant;

use toolgate::catalogue::{Origin, Snapshot, load};
use toolgate::search::eval::{ndcg_at, parse};
use toolgate::search::meaning::{self, DIM, Embedder, RECIPE, Recipe, Vector};
use toolgate::search::{self, Document, FUSION, Fusion, Index, Indexable, Norm};

/// The datasets, each a folder under eval/.
const DATASETS: [&str; 3] = ["metatool", "bfcl", "bfcl-multi-turn"];
/// Lexical weights on the grid: 0.00 to 1.00 in steps of 0.05.
const WEIGHTS: usize = 21;
/// Meaning floors: none, then 0.10 to 0.30.
const FLOORS: [Option<f32>; 6] = [None, Some(0.10), Some(0.15), Some(0.20), Some(0.25), Some(0.30)];
/// Today's floor, kept unless beaten by more than the plateau.
const TODAY_FLOOR: usize = 2;
/// Mean scores within this of the best are a plateau.
const PLATEAU: f64 = 0.002;
/// A discrete choice may cost no dataset more than this against today's option.
const NO_HARM: f64 = 0.005;
/// Today's option.
const TODAY: (Recipe, Norm) = (Recipe::Description, Norm::ZScore);

/// One dataset, measured once.
struct Set {
    name: &'static str,
    tools: usize,
    index: Index,
    slugs: Vec<String>,
    /// Per query: its relevant slugs, its lexical scores (`None`: refused) and, per recipe,
    /// every tool's cosine.
    queries: Vec<Query>,
    lexical: f64,
}

struct Query {
    relevant: Vec<String>,
    lexical: Option<Vec<f32>>,
    cosine: Vec<Vec<f32>>,
}

fn main() {
    let every: usize = std::env::var("TOOLGATE_RANKING_EVERY")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1)
        .max(1);
    let embedder = Embedder::get().unwrap();
    let sets: Vec<Set> = DATASETS.iter().map(|name| measure(name, embedder, every)).collect();
    let mut grid = Grid {
        sets: &sets,
        memo: HashMap::new(),
    };
    let all: Vec<usize> = (0..sets.len()).collect();

    println!("\nDatasets ({every}: every query measured when 1):");
    for s in &sets {
        println!(
            "  {:<16} {:>5} tools {:>6} queries   lexical ranker nDCG@10 {:.3}",
            s.name,
            s.tools,
            s.queries.len(),
            s.lexical
        );
    }

    let chosen = choose(&mut grid, &all, true);

    println!(
        "\nThe weight curve of the choice ({}, {}):",
        chosen.recipe.label(),
        chosen.norm.label()
    );
    print!("{:>6}", "w");
    for s in &sets {
        print!(" {:>16}", s.name);
    }
    println!(" {:>8}", "mean");
    let floor = FLOORS.iter().position(|f| *f == chosen.floor).unwrap_or(TODAY_FLOOR);
    for w in 0..WEIGHTS {
        let scores: Vec<f64> = all
            .iter()
            .map(|&d| grid.score(d, chosen.recipe, chosen.norm, Weight::Grid(w), floor))
            .collect();
        print!("{:>6.2}", w as f32 / 20.0);
        for v in &scores {
            print!(" {v:>16.3}");
        }
        println!(" {:>8.4}", mean(&scores));
    }

    println!("\nLeave one dataset out: chosen on the others, scored on the one left out");
    println!(
        "{:<16} {:<34} {:>6} {:>6} {:>8} {:>8} {:>8}",
        "left out", "embedded text, normalisation", "w", "floor", "lexical", "hybrid", "margin"
    );
    for (d, set) in sets.iter().enumerate() {
        let others: Vec<usize> = all.iter().copied().filter(|&o| o != d).collect();
        let c = choose(&mut grid, &others, false);
        let h = grid.score(d, c.recipe, c.norm, Weight::Grid(c.w), c.floor_index());
        println!(
            "{:<16} {:<34} {:>6.2} {:>6} {:>8.3} {:>8.3} {:>+8.3}",
            set.name,
            format!("{}, {}", c.recipe.label(), c.norm.label()),
            c.weight(),
            floor_label(c.floor),
            set.lexical,
            h,
            h - set.lexical
        );
    }

    println!("\nToday's settings (description, z-score, w 0.18, floor 0.15) for reference:");
    for (d, s) in sets.iter().enumerate() {
        let h = grid.score(d, TODAY.0, TODAY.1, Weight::Today, TODAY_FLOOR);
        println!(
            "  {:<16} {h:.3} (lexical {:.3}, margin {:+.3})",
            s.name,
            s.lexical,
            h - s.lexical
        );
    }

    let shipped = RECIPE == chosen.recipe
        && FUSION.norm == chosen.norm
        && (FUSION.w_lexical - chosen.weight()).abs() < 1e-6
        && FUSION.floor == chosen.floor;
    println!(
        "\nThe rule chooses: {}, {}, w {:.2}, floor {}. The server ships: {}, {}, w {:.2}, floor {}: {}",
        chosen.recipe.label(),
        chosen.norm.label(),
        chosen.weight(),
        floor_label(chosen.floor),
        RECIPE.label(),
        FUSION.norm.label(),
        FUSION.w_lexical,
        floor_label(FUSION.floor),
        if shipped { "the same" } else { "DIFFERENT" }
    );
}

/// The settings a rule picked.
#[derive(Debug, Clone, Copy)]
struct Choice {
    recipe: Recipe,
    norm: Norm,
    w: usize,
    floor: Option<f32>,
}

impl Choice {
    fn weight(&self) -> f32 {
        self.w as f32 / 20.0
    }

    fn floor_index(&self) -> usize {
        FLOORS.iter().position(|f| *f == self.floor).unwrap_or(TODAY_FLOOR)
    }
}

/// The rule of docs/decisions/search-ranking.md over the datasets `on`; `report` prints
/// the table of every option.
fn choose(grid: &mut Grid, on: &[usize], report: bool) -> Choice {
    let mut options: Vec<(Choice, Vec<f64>)> = Vec::new();
    for recipe in Recipe::ALL {
        for norm in Norm::ALL {
            // The weight: the middle of the plateau, at today's floor.
            let means: Vec<f64> = (0..WEIGHTS)
                .map(|w| mean(&scores(grid, on, recipe, norm, Weight::Grid(w), TODAY_FLOOR)))
                .collect();
            let best = means.iter().copied().fold(f64::MIN, f64::max);
            let plateau: Vec<usize> = (0..WEIGHTS).filter(|&w| means[w] >= best - PLATEAU).collect();
            let w = plateau[(plateau.len() - 1) / 2];
            // The floor: today's unless another beats it by more than the plateau.
            let floors: Vec<f64> = (0..FLOORS.len())
                .map(|f| mean(&scores(grid, on, recipe, norm, Weight::Grid(w), f)))
                .collect();
            let best_floor = (0..FLOORS.len())
                .max_by(|&a, &b| floors[a].total_cmp(&floors[b]).then(b.cmp(&a)))
                .unwrap_or(TODAY_FLOOR);
            let floor = if floors[TODAY_FLOOR] >= floors[best_floor] - PLATEAU {
                TODAY_FLOOR
            } else {
                best_floor
            };
            let choice = Choice {
                recipe,
                norm,
                w,
                floor: FLOORS[floor],
            };
            options.push((choice, scores(grid, on, recipe, norm, Weight::Grid(w), floor)));
        }
    }
    let today = options
        .iter()
        .find(|(c, _)| (c.recipe, c.norm) == TODAY)
        .map(|(_, s)| s.clone())
        .unwrap_or_default();
    let admissible = |s: &[f64]| s.iter().zip(&today).all(|(v, t)| *v >= t - NO_HARM);
    let mut ranked: Vec<&(Choice, Vec<f64>)> = options.iter().collect();
    ranked.sort_by(|a, b| mean(&b.1).total_cmp(&mean(&a.1)));
    let chosen = ranked
        .iter()
        .find(|(_, s)| admissible(s))
        .map_or(options[0].0, |(c, _)| *c);
    if report {
        let names: Vec<&str> = on.iter().map(|&d| grid.sets[d].name).collect();
        println!(
            "\nEvery option, its weight and floor chosen by the rule on {}:",
            names.join(", ")
        );
        print!("{:<34} {:>5} {:>6}", "embedded text, normalisation", "w", "floor");
        for n in &names {
            print!(" {n:>16}");
        }
        println!(" {:>8}  admissible", "mean");
        for (c, s) in &ranked {
            print!(
                "{:<34} {:>5.2} {:>6}",
                format!("{}, {}", c.recipe.label(), c.norm.label()),
                c.weight(),
                floor_label(c.floor)
            );
            for v in s {
                print!(" {v:>16.3}");
            }
            let mark = if (c.recipe, c.norm) == (chosen.recipe, chosen.norm) {
                "  yes, chosen"
            } else if admissible(s) {
                "  yes"
            } else {
                "  no"
            };
            println!(" {:>8.4}{mark}", mean(s));
        }
    }
    chosen
}

fn scores(grid: &mut Grid, on: &[usize], recipe: Recipe, norm: Norm, w: Weight, floor: usize) -> Vec<f64> {
    on.iter().map(|&d| grid.score(d, recipe, norm, w, floor)).collect()
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len().max(1) as f64
}

fn floor_label(f: Option<f32>) -> String {
    f.map_or("none".to_owned(), |f| format!("{f:.2}"))
}

/// A lexical weight: a grid point, or today's 0.18.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Weight {
    Grid(usize),
    Today,
}

/// Mean nDCG@10 per dataset and setting, each computed once.
struct Grid<'a> {
    sets: &'a [Set],
    memo: HashMap<(usize, usize, usize, Weight, usize), f64>,
}

impl Grid<'_> {
    fn score(&mut self, d: usize, recipe: Recipe, norm: Norm, w: Weight, floor: usize) -> f64 {
        let r = Recipe::ALL.iter().position(|x| *x == recipe).unwrap();
        let n = Norm::ALL.iter().position(|x| *x == norm).unwrap();
        let key = (d, r, n, w, floor);
        if let Some(v) = self.memo.get(&key) {
            return *v;
        }
        let fusion = Fusion {
            norm,
            w_lexical: match w {
                Weight::Grid(w) => w as f32 / 20.0,
                Weight::Today => 0.18,
            },
            floor: FLOORS[floor],
        };
        let set = &self.sets[d];
        let total: f64 = set
            .queries
            .iter()
            .map(|q| match &q.lexical {
                Some(lexical) => {
                    let ranked = set.index.rank_fused(lexical, &q.cosine[r], &fusion, 10);
                    let slugs: Vec<&str> = ranked.iter().map(|(_, d)| set.slugs[*d as usize].as_str()).collect();
                    ndcg_at(10, &slugs, &q.relevant)
                }
                None => 0.0,
            })
            .sum();
        let v = total / set.queries.len().max(1) as f64;
        self.memo.insert(key, v);
        v
    }
}

/// Loads eval/`name`, embeds its queries and its tools by every recipe, scores its queries
/// lexically.
fn measure(name: &'static str, embedder: Embedder, every: usize) -> Set {
    let started = Instant::now();
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("eval").join(name);
    let loaded = load::file(&dir.join("catalogue.json")).unwrap();
    let (snapshot, _) = Snapshot::build(loaded.entries, Origin::Local);
    let docs: Vec<Document> = snapshot.tools().iter().map(|t| document(&**t)).collect();
    let index = Index::build(&docs);
    let slugs: Vec<String> = docs.iter().map(|d| d.slug.clone()).collect();
    let text = std::fs::read_to_string(dir.join("queries.jsonl")).unwrap();
    let (judged, bad) = parse(&text);
    assert!(bad.is_empty(), "{name}: {bad:?}");
    let judged: Vec<_> = judged.into_iter().step_by(every).map(|(_, j)| j).collect();
    let cut: Vec<&str> = judged.iter().map(|j| search::cut(&j.query).text).collect();
    let query_vectors = embed(embedder, &cut);
    // Per recipe, per tool, its vectors (quantised, as the server keeps them).
    let tool_vectors: Vec<Vec<Vec<Vector>>> = Recipe::ALL
        .iter()
        .map(|&recipe| {
            let texts: Vec<Vec<String>> = docs
                .iter()
                .map(|d| {
                    meaning::texts_by(d, recipe)
                        .into_iter()
                        .map(|t| t.into_owned())
                        .collect()
                })
                .collect();
            let flat: Vec<&str> = texts.iter().flatten().map(String::as_str).collect();
            let mut vectors = embed(embedder, &flat).into_iter().map(|v| Vector::quantise(&v));
            texts.iter().map(|t| vectors.by_ref().take(t.len()).collect()).collect()
        })
        .collect();
    let mut lexical_total = 0.0;
    let queries: Vec<Query> = judged
        .iter()
        .zip(&cut)
        .zip(&query_vectors)
        .map(|((j, cut), qv)| {
            let ranked: Vec<&str> = index
                .search(cut, 10)
                .map(|hits| hits.iter().map(|h| slugs[h.doc].as_str()).collect())
                .unwrap_or_default();
            lexical_total += ndcg_at(10, &ranked, &j.relevant);
            Query {
                relevant: j.relevant.clone(),
                lexical: index.lexical_scores(cut).ok(),
                cosine: tool_vectors
                    .iter()
                    .map(|per_tool| per_tool.iter().map(|v| meaning::closeness(v, qv)).collect())
                    .collect(),
            }
        })
        .collect();
    eprintln!(
        "{name}: {} tools, {} queries measured in {:.0} s",
        docs.len(),
        queries.len(),
        started.elapsed().as_secs_f64()
    );
    Set {
        name,
        tools: docs.len(),
        lexical: lexical_total / queries.len().max(1) as f64,
        index,
        slugs,
        queries,
    }
}

/// A tool as a plain document (the index the snapshot builds reads the same fields).
fn document(t: &dyn Indexable) -> Document {
    let mut params = Vec::new();
    t.params(&mut |n, d| params.push((n.to_owned(), d.to_owned())));
    Document {
        slug: t.slug().to_owned(),
        name: t.name().to_owned(),
        description: t.description().to_owned(),
        category: t.category().to_owned(),
        tags: t.tags().to_vec(),
        params,
        phrasings: t.phrasings().to_vec(),
    }
}

/// The vectors of `texts` on two threads, each what the server computes for it.
fn embed(embedder: Embedder, texts: &[&str]) -> Vec<[f32; DIM]> {
    let chunk = texts.len().div_ceil(2).max(1);
    std::thread::scope(|scope| {
        let parts: Vec<_> = texts
            .chunks(chunk)
            .map(|part| {
                scope.spawn(move || {
                    part.chunks(64)
                        .flat_map(|batch| embedder.embed_all(batch).unwrap())
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        parts.into_iter().flat_map(|p| p.join().unwrap()).collect()
    })
}
