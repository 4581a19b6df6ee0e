//! `--carry-from`: the next version of a benchmark, keeping what still holds (docs/versions.md, "Carrying a
//! benchmark to a new dump"). The pure core over revalidation's verdicts: keep every `valid` / `label_changed`
//! statement of a kept original with its id; drop an original that does not hold with its variants and draw a
//! new original with four new variants in its place; redraw, with the same strategy and guards, each dropped
//! variant of a kept original. Every new draw comes from a stream seeded by (seed, the build's tag, position),
//! so the result does not depend on the thread count.

use super::config::DistortConfig;
use super::draw::{distort_one, draw_variant, falsity_of, VariantOutcome};
use super::falsity::Rule;
use super::ids::{drawn_id, original_key, original_of, redrawn_id};
use super::sample::{item_rng, splitmix};
use super::similarity::Similarity;
use crate::core::ids::{Pid, Qid};
use crate::core::records::{Distortion, Rank, Strategy, Triple};
use crate::kb::index::Index;
use crate::kb::{OldBenchmark, Verdict};
use crate::store::tables::lineage::LineageRow;
use rayon::prelude::*;
use std::collections::{BTreeMap, HashMap};

/// The seed of a carrying build's new draws: the run's seed mixed with the build's tag, so that the draws
/// of two versions are independent streams.
pub fn carry_seed(seed: u64, tag: &str) -> u64 {
    splitmix(seed ^ u64::from_str_radix(tag, 16).unwrap_or(0).rotate_left(32))
}

/// The originals of an old benchmark, in its order: (the original's id, its rows' indices in `old.rows`).
pub fn groups(old: &OldBenchmark) -> Vec<(String, Vec<usize>)> {
    let mut order: Vec<(String, Vec<usize>)> = Vec::new();
    let mut at: HashMap<String, usize> = HashMap::new();
    for (i, r) in old.rows.iter().enumerate() {
        let key = original_of(&r.statement_id)
            .unwrap_or(&r.statement_id)
            .to_string();
        let g = *at.entry(key.clone()).or_insert_with(|| {
            order.push((key, Vec::new()));
            order.len() - 1
        });
        order[g].1.push(i);
    }
    order
}

/// Does the group keep its original: an ORG row whose status keeps it?
fn org_kept(old: &OldBenchmark, verdicts: &[Verdict], rows: &[usize]) -> bool {
    rows.iter()
        .any(|&i| old.rows[i].strategy == Strategy::ORG && verdicts[i].status.keeps())
}

/// The number of originals a carry drops (and draws anew).
pub fn dropped_originals(old: &OldBenchmark, verdicts: &[Verdict]) -> usize {
    groups(old)
        .iter()
        .filter(|(_, rows)| !org_kept(old, verdicts, rows))
        .count()
}

/// The carried benchmark: its rows (in order: carried originals in their old order, then the new ones), the
/// lineage rows, and the counts for the manifest (`extra.carry`).
#[derive(Clone, Debug, Default)]
pub struct Carried {
    pub rows: Vec<Distortion>,
    pub lineage: Vec<LineageRow>,
    /// `carried` / `dropped` → status → strategy → statements; `drawn` → strategy → statements.
    pub counts: serde_json::Value,
    /// Variants that could not be redrawn within `max_attempts` (by strategy).
    pub undrawn: BTreeMap<String, u64>,
}

/// Everything a carry reads besides the old benchmark and its verdicts.
pub struct CarryInputs<'a> {
    pub index: &'a Index,
    pub rule: Option<&'a Rule>,
    pub cfg: &'a DistortConfig,
    pub sim: &'a dyn Similarity,
    /// The build's tag ([`super::ids::build_tag`]).
    pub tag: &'a str,
    /// The kept originals' rank and statement GUID in the new dump (revalidation's `NewFacts::finals`).
    pub finals: &'a HashMap<(Qid, Pid, Qid), (Rank, String)>,
    /// The new originals, in draw order: at least one per dropped original when the dump has them.
    pub new_originals: &'a [Triple],
}

fn lineage_row(
    id: &str,
    strategy: Strategy,
    action: &str,
    status: &str,
    detail: &str,
    replaces: &str,
) -> LineageRow {
    LineageRow {
        statement_id: id.to_string(),
        original_id: original_of(id).unwrap_or(id).to_string(),
        strategy: strategy.as_str().to_string(),
        action: action.to_string(),
        status: status.to_string(),
        detail: detail.to_string(),
        replaces: replaces.to_string(),
    }
}

/// An old statement as a row of the carried benchmark: its id and draw, the rest from the new run.
fn carried_row(r: &Distortion, original_id: u32, org: (Rank, &str), x: &CarryInputs) -> Distortion {
    let cos = |f: fn(&dyn Similarity, Qid, Qid) -> Option<f32>| match (
        r.original_entity,
        r.replacement_entity,
    ) {
        (Some(a), Some(b)) => f(x.sim, a, b),
        _ => None,
    };
    Distortion {
        statement_id: r.statement_id.clone(),
        original_id,
        strategy: r.strategy,
        subject: r.subject,
        property: r.property,
        object: r.object,
        replaced_role: r.replaced_role,
        original_entity: r.original_entity,
        replacement_entity: r.replacement_entity,
        cosine: cos(|s, a, b| s.cosine(a, b)),
        cosine_centred: cos(|s, a, b| s.cosine_centred(a, b)),
        attempts: r.attempts,
        original_rank: org.0,
        original_statement_id: org.1.to_string(),
        falsity: None,
    }
}

/// Carry `old` (with its `verdicts`, in its order) into the new run (see the module documentation).
pub fn carry(old: &OldBenchmark, verdicts: &[Verdict], x: &CarryInputs) -> Carried {
    let mut out = Carried::default();
    let mut tally: BTreeMap<(&str, &str, &str), u64> = BTreeMap::new();
    let seed = carry_seed(x.cfg.seed, x.tag);
    let draw_cfg = DistortConfig {
        seed,
        ..x.cfg.clone()
    };
    // Kept originals first (their new positions), the dropped ones queued for replacement.
    let mut replaced: Vec<&[usize]> = Vec::new();
    let mut drawn: Vec<LineageRow> = Vec::new();
    let all = groups(old);
    let mut kept: Vec<(&String, &Vec<usize>)> = Vec::new();
    for (key, rows) in &all {
        if org_kept(old, verdicts, rows) {
            kept.push((key, rows));
        } else {
            replaced.push(rows);
        }
    }
    for (k, (key, rows)) in kept.iter().enumerate() {
        let position = k as u32;
        let org = rows
            .iter()
            .map(|&i| &old.rows[i])
            .find(|r| r.strategy == Strategy::ORG)
            .expect("a kept original has its ORG row");
        let (rank, guid) = x
            .finals
            .get(&org.key())
            .map(|(r, g)| (*r, g.as_str()))
            .unwrap_or((Rank::Normal, ""));
        let t = Triple {
            subject: org.subject,
            property: org.property,
            object: org.object,
            rank,
            statement_id: guid.to_string(),
        };
        let mut rng = item_rng(seed, 4, k as u64);
        for strategy in Strategy::ALL {
            for &i in rows.iter().filter(|&&i| old.rows[i].strategy == strategy) {
                let r = &old.rows[i];
                let v = &verdicts[i];
                let mut row = carried_row(r, position, (rank, guid), x);
                let mut keep = v.status.keeps();
                let mut detail = v.detail.clone();
                if keep && strategy != Strategy::ORG {
                    match falsity_of(x.rule, r.subject, r.property, r.object, x.cfg.min_falsity) {
                        Ok(tier) => row.falsity = tier,
                        Err(reason) => {
                            keep = false;
                            detail = format!("below --min-falsity ({})", reason.as_str());
                        }
                    }
                }
                let status = v.status.as_str();
                let action = if keep { "carried" } else { "dropped" };
                *tally
                    .entry((action, status, strategy.as_str()))
                    .or_default() += 1;
                out.lineage.push(lineage_row(
                    &r.statement_id,
                    strategy,
                    action,
                    status,
                    &detail,
                    "",
                ));
                if keep {
                    out.rows.push(row);
                    continue;
                }
                let (outcome, _) = draw_variant(
                    x.index, x.rule, position, &t, strategy, &mut rng, x.cfg, x.sim,
                );
                match outcome {
                    VariantOutcome::Emitted(mut d) => {
                        d.statement_id = redrawn_id(key, strategy, x.tag);
                        *tally.entry(("drawn", "", strategy.as_str())).or_default() += 1;
                        drawn.push(lineage_row(
                            &d.statement_id,
                            strategy,
                            "drawn",
                            "",
                            &format!("redrawn for a kept original ({status})"),
                            &r.statement_id,
                        ));
                        out.rows.push(d);
                    }
                    VariantOutcome::Dropped { strategy, .. } => {
                        *out.undrawn.entry(strategy.as_str().into()).or_default() += 1;
                    }
                }
            }
        }
    }
    // The dropped originals: their statements leave, a new original with four variants takes each place.
    for rows in &replaced {
        let org_status = rows
            .iter()
            .find(|&&i| old.rows[i].strategy == Strategy::ORG)
            .map(|&i| verdicts[i].status);
        for &i in rows.iter() {
            let (r, v) = (&old.rows[i], &verdicts[i]);
            let detail = match org_status {
                Some(s) if v.status.keeps() => format!("its original was dropped ({})", s.as_str()),
                None if v.status.keeps() => "its original is not in the benchmark".to_string(),
                _ => v.detail.clone(),
            };
            let status = v.status.as_str();
            *tally
                .entry(("dropped", status, r.strategy.as_str()))
                .or_default() += 1;
            out.lineage.push(lineage_row(
                &r.statement_id,
                r.strategy,
                "dropped",
                status,
                &detail,
                "",
            ));
        }
    }
    let base = kept.len();
    let news: Vec<_> = x
        .new_originals
        .iter()
        .take(replaced.len())
        .enumerate()
        .collect::<Vec<_>>()
        .into_par_iter()
        .map(|(j, t)| distort_one(x.index, x.rule, j as u32, t, &draw_cfg, x.sim))
        .collect();
    for (j, r) in news.into_iter().enumerate() {
        let key = original_key(x.tag, j);
        let old_rows = replaced[j];
        let stands_for = |s: Strategy| -> String {
            old_rows
                .iter()
                .map(|&i| &old.rows[i])
                .find(|o| o.strategy == s)
                .map(|o| o.statement_id.clone())
                .unwrap_or_default()
        };
        let emitted =
            std::iter::once(r.org).chain(r.variants.into_iter().filter_map(|v| match v {
                VariantOutcome::Emitted(d) => Some(d),
                VariantOutcome::Dropped { strategy, .. } => {
                    *out.undrawn.entry(strategy.as_str().into()).or_default() += 1;
                    None
                }
            }));
        for mut d in emitted {
            d.statement_id = drawn_id(&key, d.strategy);
            d.original_id = (base + j) as u32;
            *tally.entry(("drawn", "", d.strategy.as_str())).or_default() += 1;
            drawn.push(lineage_row(
                &d.statement_id,
                d.strategy,
                "drawn",
                "",
                "drawn with a new original",
                &stands_for(d.strategy),
            ));
            out.rows.push(d);
        }
    }
    out.lineage.extend(drawn);
    out.counts = counts_json(&tally, base, replaced.len(), x.new_originals.len());
    out
}

fn counts_json(
    tally: &BTreeMap<(&str, &str, &str), u64>,
    kept: usize,
    dropped: usize,
    new: usize,
) -> serde_json::Value {
    let mut by: BTreeMap<&str, serde_json::Map<String, serde_json::Value>> = BTreeMap::new();
    let mut totals: BTreeMap<&str, u64> = BTreeMap::new();
    for ((action, status, strategy), n) in tally {
        *totals.entry(action).or_default() += n;
        let m = by.entry(action).or_default();
        if status.is_empty() {
            m.insert((*strategy).into(), (*n).into());
        } else {
            let s = m
                .entry(status.to_string())
                .or_insert_with(|| serde_json::json!({}));
            s[*strategy] = (*n).into();
        }
    }
    serde_json::json!({
        "originals_kept": kept,
        "originals_dropped": dropped,
        "originals_drawn": new.min(dropped),
        "statements": totals,
        "by_status": by,
    })
}
