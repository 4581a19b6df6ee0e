//! Scoring the fact-check files: F1@K per answer, means with bootstrap intervals per file and per cell
//! (domain × level × condition), and adversarial − non-adversarial.

use super::{median_k, AnswerCounts, Condition, Derived, FactFile, Ignored, Odd, Skip, K};
use crate::eval::stats::{bootstrap_indices, quantile_sorted, Interval};
use crate::eval::suites::adversariskqa::f1_at_k_paper;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// Mean F1@K and means of one set of scored answers, in percent for F1.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Means {
    /// Mean F1@K × 100 with its percentile bootstrap 95% interval (resampling answers).
    pub mean_f1_at_k: Interval,
    pub mean_facts: f64,
    pub mean_checked: f64,
    pub mean_supported: f64,
}

/// Scores of one file.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FileScore {
    pub path: PathBuf,
    #[serde(flatten)]
    pub derived: Derived,
    pub answers: usize,
    pub scored: usize,
    pub skipped: BTreeMap<Skip, usize>,
    pub odd: BTreeMap<Odd, usize>,
    /// Over the scored answers (the paper's rule); `None` when no answer is scored.
    pub scores: Option<Means>,
    /// Mean F1@K × 100 over every answer, skipped ones scoring 0 (how the authors' analysis notebook
    /// averages), and mean extracted facts over every answer.
    pub mean_f1_at_k_all_answers: f64,
    pub mean_facts_all_answers: f64,
}

/// One cell: model × domain × level × condition.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Cell {
    pub model: String,
    pub domain: &'static str,
    pub level: &'static str,
    pub condition: Condition,
    /// Indices into `files`.
    pub files: Vec<usize>,
    /// `single`; `identical` (several files with the same per-answer counts); `conflict` (several files
    /// that differ: no cell score, see each file).
    pub status: &'static str,
    pub scores: Option<Means>,
}

/// Adversarial − non-adversarial for one model × domain × level.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Difference {
    pub model: String,
    pub domain: &'static str,
    pub level: &'static str,
    /// Percentage points, with a 95% interval resampling each condition's answers independently.
    pub mean_f1_at_k: Interval,
    pub mean_facts: f64,
    pub mean_supported: f64,
}

/// Everything `score` reports.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LongformScores {
    pub k: usize,
    /// `fixed` or `auto: median of N extracted-fact counts (every answer)`.
    pub k_from: String,
    pub bootstrap: usize,
    pub seed: u64,
    pub files: Vec<FileScore>,
    pub cells: Vec<Cell>,
    pub differences: Vec<Difference>,
    /// Cells that have no difference: the other condition is missing, or a side is a conflict.
    pub unpaired: Vec<String>,
    pub ignored: Vec<Ignored>,
}

pub(super) fn f1(a: &AnswerCounts, k: usize) -> f64 {
    100.0 * f1_at_k_paper(a.supported, a.checked, k)
}

pub(super) fn mean_of(xs: impl Iterator<Item = f64>) -> f64 {
    let (mut sum, mut n) = (0.0, 0usize);
    for x in xs {
        sum += x;
        n += 1;
    }
    if n == 0 {
        return f64::NAN;
    }
    sum / n as f64
}

/// 2.5% and 97.5% type-7 quantiles of replicates (NaN when there are none).
pub(super) fn interval(estimate: f64, mut reps: Vec<f64>) -> Interval {
    reps.retain(|x| x.is_finite());
    reps.sort_by(f64::total_cmp);
    if reps.is_empty() {
        return Interval {
            estimate,
            lo: f64::NAN,
            hi: f64::NAN,
        };
    }
    Interval {
        estimate,
        lo: quantile_sorted(&reps, 0.025),
        hi: quantile_sorted(&reps, 0.975),
    }
}

/// Seed of a cell's bootstrap stream: the run's seed mixed with the cell's name, so every cell has its own
/// stream and the intervals do not depend on the order or number of cells.
pub(super) fn cell_seed(seed: u64, name: &str) -> u64 {
    seed ^ xxhash_rust::xxh3::xxh3_64(name.as_bytes())
}

pub(super) fn means(scored: &[&AnswerCounts], k: usize, b: usize, seed: u64) -> Option<Means> {
    if scored.is_empty() {
        return None;
    }
    let vals: Vec<f64> = scored.iter().map(|a| f1(a, k)).collect();
    let est = mean_of(vals.iter().copied());
    let reps = (0..b)
        .map(|r| {
            let idx = bootstrap_indices(vals.len(), seed, r);
            mean_of(idx.iter().filter_map(|&i| vals.get(i).copied()))
        })
        .collect();
    Some(Means {
        mean_f1_at_k: interval(est, reps),
        mean_facts: mean_of(scored.iter().map(|a| a.facts as f64)),
        mean_checked: mean_of(scored.iter().map(|a| a.checked as f64)),
        mean_supported: mean_of(scored.iter().map(|a| a.supported as f64)),
    })
}

/// Score files: each on its own, then per cell, then adversarial − non-adversarial. `k`: see [`K`]
/// (`auto` = the median extracted-fact count over every answer of every file, as the authors' analysis
/// computes K = 8).
pub fn score(
    files: &[FactFile],
    ignored: Vec<Ignored>,
    k: K,
    bootstrap: usize,
    seed: u64,
) -> LongformScores {
    let all_facts: Vec<usize> = files
        .iter()
        .flat_map(|f| f.answers.iter().map(|a| a.facts))
        .collect();
    let (k, k_from) = match k {
        K::Fixed(k) => (k, "fixed".to_string()),
        K::Auto => (
            median_k(&all_facts).unwrap_or(1),
            format!(
                "auto: median of {} extracted-fact counts (every answer)",
                all_facts.len()
            ),
        ),
    };
    let name_of = |d: &Derived| {
        format!(
            "{}/{}_{}/{}",
            d.model,
            d.domain,
            d.level,
            d.condition.as_str()
        )
    };
    let mut out_files = Vec::new();
    for f in files {
        let scored: Vec<&AnswerCounts> = f.answers.iter().filter(|a| a.skip.is_none()).collect();
        let mut skipped = BTreeMap::new();
        let mut odd = BTreeMap::new();
        for a in &f.answers {
            if let Some(s) = a.skip {
                *skipped.entry(s).or_insert(0) += 1;
            }
            for o in &a.odd {
                *odd.entry(*o).or_insert(0) += 1;
            }
        }
        let seed_f = cell_seed(
            seed,
            &format!("{}|{}", name_of(&f.derived), f.path.display()),
        );
        out_files.push(FileScore {
            path: f.path.clone(),
            derived: f.derived.clone(),
            answers: f.answers.len(),
            scored: scored.len(),
            skipped,
            odd,
            scores: means(&scored, k, bootstrap, seed_f),
            mean_f1_at_k_all_answers: mean_of(f.answers.iter().map(|a| {
                if a.skip.is_none() {
                    f1(a, k)
                } else {
                    0.0
                }
            })),
            mean_facts_all_answers: mean_of(f.answers.iter().map(|a| a.facts as f64)),
        });
    }
    // Cells.
    let mut by_cell: BTreeMap<(String, &'static str, &'static str, Condition), Vec<usize>> =
        BTreeMap::new();
    for (i, f) in files.iter().enumerate() {
        let d = &f.derived;
        by_cell
            .entry((d.model.clone(), d.domain, d.level, d.condition))
            .or_default()
            .push(i);
    }
    let counts = |f: &FactFile| -> Vec<(usize, usize, usize, Option<Skip>)> {
        f.answers
            .iter()
            .map(|a| (a.facts, a.checked, a.supported, a.skip))
            .collect()
    };
    let mut cells = Vec::new();
    for ((model, domain, level, condition), idx) in by_cell {
        let first = idx.first().and_then(|&i| files.get(i));
        let same = first.is_some_and(|f0| {
            idx.iter()
                .filter_map(|&i| files.get(i))
                .all(|f| counts(f) == counts(f0))
        });
        let status = match (idx.len(), same) {
            (1, _) => "single",
            (_, true) => "identical",
            _ => "conflict",
        };
        let scores = if status == "conflict" {
            None
        } else {
            idx.first()
                .and_then(|&i| out_files.get(i))
                .and_then(|f| f.scores.clone())
        };
        cells.push(Cell {
            model,
            domain,
            level,
            condition,
            files: idx,
            status,
            scores,
        });
    }
    // Differences: adversarial − non-adversarial, same model, domain and level.
    let mut differences = Vec::new();
    let mut unpaired = Vec::new();
    for c in cells
        .iter()
        .filter(|c| c.condition == Condition::Adversarial)
    {
        let other = cells.iter().find(|o| {
            o.condition == Condition::NonAdversarial
                && (o.model.as_str(), o.domain, o.level) == (c.model.as_str(), c.domain, c.level)
        });
        let label = format!("{}/{}_{}", c.model, c.domain, c.level);
        let Some(o) = other else {
            unpaired.push(format!("{label}: no non-adversarial file"));
            continue;
        };
        let (Some(ma), Some(mo)) = (&c.scores, &o.scores) else {
            unpaired.push(format!(
                "{label}: {}",
                if c.status == "conflict" || o.status == "conflict" {
                    "two differing files for one condition (see files): pass the one to use"
                } else {
                    "no scored answer on one side"
                }
            ));
            continue;
        };
        let vals = |cell: &Cell| -> Vec<f64> {
            cell.files
                .first()
                .and_then(|&i| files.get(i))
                .map(|f| {
                    f.answers
                        .iter()
                        .filter(|a| a.skip.is_none())
                        .map(|a| f1(a, k))
                        .collect()
                })
                .unwrap_or_default()
        };
        let (va, vo) = (vals(c), vals(o));
        let (sa, so) = (
            cell_seed(seed, &format!("diff|{label}|adv")),
            cell_seed(seed, &format!("diff|{label}|non_adv")),
        );
        let reps = (0..bootstrap)
            .map(|r| {
                let m = |v: &[f64], s: u64| {
                    let idx = bootstrap_indices(v.len(), s, r);
                    mean_of(idx.iter().filter_map(|&i| v.get(i).copied()))
                };
                m(&va, sa) - m(&vo, so)
            })
            .collect();
        differences.push(Difference {
            model: c.model.clone(),
            domain: c.domain,
            level: c.level,
            mean_f1_at_k: interval(ma.mean_f1_at_k.estimate - mo.mean_f1_at_k.estimate, reps),
            mean_facts: ma.mean_facts - mo.mean_facts,
            mean_supported: ma.mean_supported - mo.mean_supported,
        });
    }
    for o in cells
        .iter()
        .filter(|c| c.condition == Condition::NonAdversarial)
    {
        if !cells.iter().any(|c| {
            c.condition == Condition::Adversarial
                && (c.model.as_str(), c.domain, c.level) == (o.model.as_str(), o.domain, o.level)
        }) {
            unpaired.push(format!(
                "{}/{}_{}: no adversarial file",
                o.model, o.domain, o.level
            ));
        }
    }
    LongformScores {
        k,
        k_from,
        bootstrap,
        seed,
        files: out_files,
        cells,
        differences,
        unpaired,
        ignored,
    }
}
