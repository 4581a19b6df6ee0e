//! The comparison's measures, one tidy [`Row`] per value (paper 001, §4 and Figs. 2–5).
//!
//! Every fraction counts an unparsed (or missing) answer as wrong, as `eval score` does. `n` is always the
//! denominator behind the value: the statements (or, for pooled measures, the answers) it is a share of.
//!
//! **Bootstrap.** Intervals are 95 % percentile intervals over `B` replicates that resample a model's
//! **original triples** (an original with all its distortions, in every language, moves together), drawn
//! exactly as `eval score` draws them: the model's originals sorted by id, replicate `r` taking
//! [`stats::bootstrap_indices`]`(originals, seed, r)`. So `accuracy` and `gap` intervals equal `eval score`'s
//! for the same answers, and no value depends on the thread count. A replicate is a sum of small per-original
//! count vectors ([`UNIT_FEATURES`] counters: statements and correct answers per language × strategy, and
//! statements asked and answered right in every language per strategy) over the drawn originals; every
//! bootstrapped measure is derived from those sums ([`derive`]), so a replicate never rescans answers.
//! Agreement and Jaccard values are point values (the paper's Figs. 3–5 show no intervals).

use super::input::{Answered, Data, Group};
use crate::core::falsity::Tier;
use crate::eval::stats;
use crate::eval::suites::sword::{LANGUAGES, STRATEGIES};
use rayon::prelude::*;
use std::collections::HashMap;

/// Languages of the Western group of the paper's Fig. 2 (indices into [`LANGUAGES`]: en fr de es it pt).
pub const WESTERN: [usize; 6] = [0, 1, 2, 3, 4, 5];
/// East-Asian languages (ko ja).
pub const EAST_ASIAN: [usize; 2] = [6, 7];

/// The measures, in table order, each with its definition (the report prints these).
pub const MEASURES: &[(&str, &str)] = &[
    ("accuracy", "Share of a strategy's statements answered correctly in one language (ORG: judged true; SS, OS, PSS, POS: judged false). n = statements asked in that language."),
    ("accuracy_pooled", "Accuracy of a strategy over all languages' answers together. n = answers."),
    ("accuracy_distorted", "Accuracy of one language on the four distortions together (SS, OS, PSS, POS: the shuffled statements of Fig. 2). n = those statements asked in that language."),
    ("gap", "Cross-lingual gap of a strategy: the highest language's accuracy minus the lowest's. n = the strategy's statements."),
    ("gap_relative", "The gap divided by the highest language's accuracy (the paper's relative drop). n = the strategy's statements."),
    ("east_asian_gap", "Mean accuracy of en fr de es it pt minus mean accuracy of ko ja (unweighted means over the languages). Negative when the East-Asian languages do better. n = the strategy's statements."),
    ("all_languages_correct", "Share of a strategy's statements (asked in every language of the model) answered correctly in all of them. n = those statements."),
    ("effect_pss_ss", "Accuracy on PSS minus accuracy on SS (property-based minus random subject swap: Fig. 1b's claim that the plausible swap is the harder one predicts a negative value), per language and pooled (language empty). The effect holds when the whole interval is below 0. n = PSS and SS statements (pooled: answers)."),
    ("effect_pos_os", "Accuracy on POS minus accuracy on OS (the same for the object swap). n = POS and OS statements (pooled: answers)."),
    ("agreement_share", "Among a strategy's statements asked in every language of the model, the share that exactly k languages answered correctly (k = agreement). n = those statements."),
    ("accuracy_by_agreement", "Among a strategy's statements that exactly k languages answered correctly (k = agreement), the share this language answered correctly (k = 0 gives 0, k = all languages gives 1). n = statements at level k."),
    ("jaccard_languages", "Jaccard similarity |A ∩ B| / |A ∪ B| of the sets of a strategy's statements that two languages (language, language_b) answered correctly, over statements asked in both. Empty when neither answered any correctly. n = statements asked in both."),
    ("jaccard_models", "Jaccard similarity of the sets of statements two models (model, model_b) answered correctly in one language and strategy, over statements both were asked. n = those statements."),
    ("wrong_languages", "Failure signatures: among a strategy's statements asked in every language of the model, the share whose set of wrongly answered languages is exactly W (language = W's codes in the order en fr de es it pt ko ja joined by +, empty for none); one row per set that occurs, so a strategy's rows sum to 1. n = those statements."),
    ("split", "Share of a strategy's statements (asked in every language of the model) answered right in some languages and wrong in others. n = those statements."),
    ("unparsed", "Share of a language's answers with no verdict (including requests never answered); scored wrong everywhere. n = answers."),
    ("unanswered", "Share of a language's requests with no answer at all (null). n = requests."),
];

/// The measures by falsity tier (only with `--benchmark`), after [`MEASURES`] in table order.
pub const TIER_MEASURES: &[(&str, &str)] = &[
    ("accuracy_by_tier", "Accuracy on a distortion strategy's statements of one falsity tier (tier: open, likely or certain, how sure the statement's \"false\" is) in one language. n = those statements asked in that language."),
    ("accuracy_by_tier_pooled", "Accuracy on a distortion strategy's statements of one falsity tier over all languages' answers. n = answers."),
    ("effect_pss_ss_by_tier", "Accuracy on PSS minus accuracy on SS among the statements of one falsity tier, all languages' answers pooled: whether the plausible swap is harder on the certainly false statements too (interval below 0). n = answers."),
    ("effect_pos_os_by_tier", "Accuracy on POS minus accuracy on OS among the statements of one falsity tier, all languages' answers pooled. n = answers."),
];

/// One value of the tidy table: `figures.parquet` / `figures.csv` have these columns, null where a column
/// does not apply.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Row {
    pub measure: String,
    pub model: Option<String>,
    pub model_b: Option<String>,
    pub variant: Option<String>,
    pub language: Option<String>,
    pub language_b: Option<String>,
    pub strategy: Option<String>,
    pub agreement: Option<i32>,
    /// The falsity tier (`open`, `likely`, `certain`) of the `*_by_tier` measures.
    pub tier: Option<String>,
    pub value: Option<f64>,
    pub lo: Option<f64>,
    pub hi: Option<f64>,
    pub n: Option<i64>,
}

const NL: usize = 8;
const NS: usize = 5;
/// Per-original counters: statements asked (n) and answered right (c) per language × strategy, then per
/// strategy the statements asked in every language of the model (n) and answered right in all (c).
pub const UNIT_FEATURES: usize = 2 * NL * NS + 2 * NS;
const F_N: usize = 0;
const F_C: usize = NL * NS;
const F_ALL_N: usize = 2 * NL * NS;
const F_ALL_C: usize = 2 * NL * NS + NS;

/// Layout of the bootstrapped measures (see [`derive`]).
const M_ACC: usize = 0;
const M_POOLED: usize = M_ACC + NL * NS;
const M_DIST: usize = M_POOLED + NS;
const M_GAP: usize = M_DIST + NL;
const M_GAP_REL: usize = M_GAP + NS;
const M_EA: usize = M_GAP_REL + NS;
const M_ALL: usize = M_EA + NS;
/// Two effects (PSS − SS, POS − OS) × (8 languages + pooled).
const M_EFF: usize = M_ALL + NS;
/// Number of bootstrapped measures.
pub const BOOT_MEASURES: usize = M_EFF + 2 * (NL + 1);

/// Falsity tiers (weakest first, as [`Tier::ALL`]) and the distortion strategies (SS OS PSS POS) that have one.
const NT: usize = 3;
const ND: usize = NS - 1;
/// Per-original counters by tier (only with `--benchmark`): statements asked (n) and answered right (c) per
/// language × distortion strategy × tier.
pub const TIER_FEATURES: usize = 2 * NL * ND * NT;
const T_N: usize = 0;
const T_C: usize = NL * ND * NT;
/// Layout of the bootstrapped measures by tier (see [`derive_tiers`]).
const MT_ACC: usize = 0;
const MT_POOLED: usize = MT_ACC + NL * ND * NT;
/// Two effects (PSS − SS, POS − OS) × tiers, pooled over languages.
const MT_EFF: usize = MT_POOLED + ND * NT;
/// Number of bootstrapped measures by tier.
pub const TIER_BOOT_MEASURES: usize = MT_EFF + 2 * NT;

/// Index of (language, distortion strategy 1..=4, tier) among the tier counters of one kind.
fn tier_cell(l: usize, s: usize, t: usize) -> usize {
    (l * ND + s - 1) * NT + t
}

const SS: usize = 1;
const OS: usize = 2;
const PSS: usize = 3;
const POS: usize = 4;
/// (hard, easy) strategy of each effect.
const EFFECTS: [(usize, usize); 2] = [(PSS, SS), (POS, OS)];

fn frac(c: u32, n: u32) -> f64 {
    if n == 0 {
        f64::NAN
    } else {
        c as f64 / n as f64
    }
}

/// Every bootstrapped measure from the summed per-original counters (NaN where undefined: no statement in a
/// cell, fewer than two languages for a gap, ...). The arithmetic of `accuracy` and `gap` is `eval score`'s.
pub fn derive(sums: &[u32; UNIT_FEATURES]) -> [f64; BOOT_MEASURES] {
    let mut m = [f64::NAN; BOOT_MEASURES];
    let n = |l: usize, s: usize| sums[F_N + l * NS + s];
    let c = |l: usize, s: usize| sums[F_C + l * NS + s];
    let mut pooled = [f64::NAN; NS];
    for s in 0..NS {
        let (mut nn, mut cc) = (0u32, 0u32);
        let mut vals: Vec<f64> = Vec::with_capacity(NL);
        for l in 0..NL {
            let a = frac(c(l, s), n(l, s));
            m[M_ACC + l * NS + s] = a;
            if n(l, s) > 0 {
                vals.push(a);
            }
            nn += n(l, s);
            cc += c(l, s);
        }
        pooled[s] = frac(cc, nn);
        m[M_POOLED + s] = pooled[s];
        if vals.len() >= 2 {
            let max = vals.iter().cloned().fold(f64::MIN, f64::max);
            let min = vals.iter().cloned().fold(f64::MAX, f64::min);
            m[M_GAP + s] = max - min;
            if max > 0.0 {
                m[M_GAP_REL + s] = (max - min) / max;
            }
        }
        let mean = |ls: &[usize]| {
            let v: Vec<f64> = ls
                .iter()
                .filter(|&&l| n(l, s) > 0)
                .map(|&l| frac(c(l, s), n(l, s)))
                .collect();
            if v.is_empty() {
                f64::NAN
            } else {
                v.iter().sum::<f64>() / v.len() as f64
            }
        };
        m[M_EA + s] = mean(&WESTERN) - mean(&EAST_ASIAN);
        m[M_ALL + s] = frac(sums[F_ALL_C + s], sums[F_ALL_N + s]);
    }
    for l in 0..NL {
        let (nn, cc) = (SS..=POS).fold((0, 0), |(a, b), s| (a + n(l, s), b + c(l, s)));
        m[M_DIST + l] = frac(cc, nn);
    }
    for (e, &(hard, easy)) in EFFECTS.iter().enumerate() {
        for l in 0..NL {
            m[M_EFF + e * (NL + 1) + l] = m[M_ACC + l * NS + hard] - m[M_ACC + l * NS + easy];
        }
        m[M_EFF + e * (NL + 1) + NL] = pooled[hard] - pooled[easy];
    }
    m
}

/// Every bootstrapped measure by tier from the summed per-original tier counters (NaN where a cell has no
/// statement).
pub fn derive_tiers(sums: &[u32; TIER_FEATURES]) -> [f64; TIER_BOOT_MEASURES] {
    let mut m = [f64::NAN; TIER_BOOT_MEASURES];
    let n = |l: usize, s: usize, t: usize| sums[T_N + tier_cell(l, s, t)];
    let c = |l: usize, s: usize, t: usize| sums[T_C + tier_cell(l, s, t)];
    let mut pooled = [[f64::NAN; NT]; NS];
    for s in SS..=POS {
        for t in 0..NT {
            for l in 0..NL {
                m[MT_ACC + tier_cell(l, s, t)] = frac(c(l, s, t), n(l, s, t));
            }
            let nn = (0..NL).map(|l| n(l, s, t)).sum();
            let cc = (0..NL).map(|l| c(l, s, t)).sum();
            pooled[s][t] = frac(cc, nn);
            m[MT_POOLED + (s - 1) * NT + t] = pooled[s][t];
        }
    }
    for (e, &(hard, easy)) in EFFECTS.iter().enumerate() {
        for t in 0..NT {
            m[MT_EFF + e * NT + t] = pooled[hard][t] - pooled[easy][t];
        }
    }
    m
}

/// The languages a group was asked in (bit mask).
fn languages_of(g: &Group) -> u8 {
    g.answered.iter().fold(0, |m, a| m | a.asked)
}

/// A group's originals sorted by id (the resampling units, as `eval score` orders them) and each answered
/// statement's unit.
pub(super) fn units(g: &Group, data: &Data) -> (usize, Vec<u32>) {
    let mut originals: Vec<&str> = g
        .answered
        .iter()
        .map(|a| data.statements[a.statement as usize].original.as_str())
        .collect();
    originals.sort_unstable();
    originals.dedup();
    let index: HashMap<&str, u32> = originals
        .iter()
        .enumerate()
        .map(|(i, o)| (*o, i as u32))
        .collect();
    let of = g
        .answered
        .iter()
        .map(|a| index[data.statements[a.statement as usize].original.as_str()])
        .collect();
    (originals.len(), of)
}

/// Per-original counters of a group ([`UNIT_FEATURES`] each).
fn unit_features(
    g: &Group,
    data: &Data,
    n_units: usize,
    unit_of: &[u32],
) -> Vec<[u32; UNIT_FEATURES]> {
    let all = languages_of(g);
    let mut f = vec![[0u32; UNIT_FEATURES]; n_units];
    for (a, &u) in g.answered.iter().zip(unit_of) {
        let s = data.statements[a.statement as usize].strategy as usize;
        let v = &mut f[u as usize];
        for l in 0..NL {
            if a.asked & (1 << l) != 0 {
                v[F_N + l * NS + s] += 1;
                v[F_C + l * NS + s] += u32::from(a.correct & (1 << l) != 0);
            }
        }
        if a.asked == all {
            v[F_ALL_N + s] += 1;
            v[F_ALL_C + s] += u32::from(a.correct == all);
        }
    }
    f
}

/// Per-original counters by tier of a group ([`TIER_FEATURES`] each; `tiers` by statement index).
fn tier_features(
    g: &Group,
    data: &Data,
    tiers: &[Option<Tier>],
    n_units: usize,
    unit_of: &[u32],
) -> Vec<[u32; TIER_FEATURES]> {
    let mut f = vec![[0u32; TIER_FEATURES]; n_units];
    for (a, &u) in g.answered.iter().zip(unit_of) {
        let s = data.statements[a.statement as usize].strategy as usize;
        let Some(t) = tiers[a.statement as usize].filter(|_| s != 0) else {
            continue;
        };
        let t = t as usize; // weakest first, as Tier::ALL
        let v = &mut f[u as usize];
        for l in 0..NL {
            if a.asked & (1 << l) != 0 {
                v[T_N + tier_cell(l, s, t)] += 1;
                v[T_C + tier_cell(l, s, t)] += u32::from(a.correct & (1 << l) != 0);
            }
        }
    }
    f
}

pub(super) fn sum_units<const F: usize>(
    features: &[[u32; F]],
    draw: impl Iterator<Item = usize>,
) -> [u32; F] {
    let mut acc = [0u32; F];
    for u in draw {
        for (a, x) in acc.iter_mut().zip(&features[u]) {
            *a += x;
        }
    }
    acc
}

/// Estimate and bootstrap bounds of every bootstrapped measure of one group (`M` measures derived from `F`
/// per-original counters).
pub(super) struct Boot<const F: usize, const M: usize> {
    pub(super) estimate: [f64; M],
    pub(super) lo: [f64; M],
    pub(super) hi: [f64; M],
    pub(super) sums: [u32; F],
}

impl<const F: usize, const M: usize> Boot<F, M> {
    /// The estimate over every original and the 95 % percentile bounds over the replicates `reps` (the
    /// finite values among them; none where the estimate is undefined).
    pub(super) fn of<'r>(
        features: &[[u32; F]],
        derive: fn(&[u32; F]) -> [f64; M],
        reps: impl Iterator<Item = &'r [f64; M]> + Clone,
    ) -> Boot<F, M> {
        let sums = sum_units(features, 0..features.len());
        let estimate = derive(&sums);
        let mut lo = [f64::NAN; M];
        let mut hi = [f64::NAN; M];
        for m in 0..M {
            let mut v: Vec<f64> = reps
                .clone()
                .map(|r| r[m])
                .filter(|x| x.is_finite())
                .collect();
            if estimate[m].is_finite() && !v.is_empty() {
                v.sort_by(f64::total_cmp);
                lo[m] = stats::quantile_sorted(&v, 0.025);
                hi[m] = stats::quantile_sorted(&v, 0.975);
            }
        }
        Boot {
            estimate,
            lo,
            hi,
            sums,
        }
    }

    /// A row of measure `m` (index into the derived measures) with denominator `n`.
    pub(super) fn row(&self, measure: &str, g: &Group, m: usize, n: u32) -> Row {
        Row {
            value: finite(self.estimate[m]),
            lo: finite(self.lo[m]),
            hi: finite(self.hi[m]),
            n: Some(i64::from(n)),
            ..base(measure, g)
        }
    }
}

fn finite(x: f64) -> Option<f64> {
    x.is_finite().then_some(x)
}

/// One group's per-original counters: every measure's, and by tier with `--benchmark`.
type Prepared = (Vec<[u32; UNIT_FEATURES]>, Option<Vec<[u32; TIER_FEATURES]>>);

/// One bootstrap replicate of a group: every measure, and by tier with `--benchmark`.
type Replicate = ([f64; BOOT_MEASURES], Option<[f64; TIER_BOOT_MEASURES]>);

/// Every measure of the comparison, in table order ([`MEASURES`], then [`TIER_MEASURES`] when `data` has
/// the statements' tiers).
pub fn compute(data: &Data, b: usize, seed: u64) -> Vec<Row> {
    let prepared: Vec<Prepared> = data
        .groups
        .par_iter()
        .map(|g| {
            let (n_units, unit_of) = units(g, data);
            (
                unit_features(g, data, n_units, &unit_of),
                data.tiers
                    .as_ref()
                    .map(|t| tier_features(g, data, t, n_units, &unit_of)),
            )
        })
        .collect();
    // Replicates of every group, in parallel; each is determined by (seed, r) alone, and the measures by
    // tier resample the same originals as the others.
    let tasks: Vec<(usize, usize)> = (0..data.groups.len())
        .flat_map(|g| (0..b).map(move |r| (g, r)))
        .collect();
    let reps: Vec<Replicate> = tasks
        .par_iter()
        .map(|&(g, r)| {
            let (f, tf) = &prepared[g];
            let idx = stats::bootstrap_indices(f.len(), seed, r);
            (
                derive(&sum_units(f, idx.iter().copied())),
                tf.as_ref()
                    .map(|tf| derive_tiers(&sum_units(tf, idx.iter().copied()))),
            )
        })
        .collect();
    let mut rows = Vec::new();
    let mut by_tier = Vec::new();
    for (g, (group, (f, tf))) in data.groups.iter().zip(&prepared).enumerate() {
        let mine = &reps[g * b..(g + 1) * b];
        let boot = Boot::of(f, derive, mine.iter().map(|r| &r.0));
        group_rows(group, data, &boot, &mut rows);
        if let Some(tf) = tf {
            let boot = Boot::of(tf, derive_tiers, mine.iter().filter_map(|r| r.1.as_ref()));
            tier_rows(group, &boot, &mut by_tier);
        }
    }
    rows.extend(jaccard_models(data));
    let order = |measures: &[(&str, &str)], m: &str| {
        measures
            .iter()
            .position(|(n, _)| *n == m)
            .unwrap_or(usize::MAX)
    };
    rows.sort_by_key(|r| order(MEASURES, &r.measure));
    by_tier.sort_by_key(|r| order(TIER_MEASURES, &r.measure));
    rows.extend(by_tier);
    rows
}

fn base(measure: &str, g: &Group) -> Row {
    Row {
        measure: measure.to_string(),
        model: Some(g.model.clone()),
        variant: Some(g.variant.clone()),
        ..Row::default()
    }
}

fn lang(l: usize) -> Option<String> {
    Some(LANGUAGES[l].to_string())
}

fn strat(s: usize) -> Option<String> {
    Some(STRATEGIES[s].to_string())
}

/// The rows of one group's measures (all but `jaccard_models`).
fn group_rows(
    g: &Group,
    data: &Data,
    boot: &Boot<UNIT_FEATURES, BOOT_MEASURES>,
    rows: &mut Vec<Row>,
) {
    let all = languages_of(g);
    let present: Vec<usize> = (0..NL).filter(|l| all & (1 << l) != 0).collect();
    let sums = &boot.sums;
    let bootstrapped = |measure: &str, m: usize, n: u32| boot.row(measure, g, m, n);
    // Statements per strategy (asked in any language).
    let mut per_strategy = [0u32; NS];
    for a in &g.answered {
        per_strategy[data.statements[a.statement as usize].strategy as usize] += 1;
    }
    let n_ls = |l: usize, s: usize| sums[F_N + l * NS + s];
    for s in 0..NS {
        for &l in &present {
            rows.push(Row {
                language: lang(l),
                strategy: strat(s),
                ..bootstrapped("accuracy", M_ACC + l * NS + s, n_ls(l, s))
            });
        }
        let answers: u32 = (0..NL).map(|l| n_ls(l, s)).sum();
        rows.push(Row {
            strategy: strat(s),
            ..bootstrapped("accuracy_pooled", M_POOLED + s, answers)
        });
        for (name, m) in [
            ("gap", M_GAP),
            ("gap_relative", M_GAP_REL),
            ("east_asian_gap", M_EA),
        ] {
            rows.push(Row {
                strategy: strat(s),
                ..bootstrapped(name, m + s, per_strategy[s])
            });
        }
        rows.push(Row {
            strategy: strat(s),
            ..bootstrapped("all_languages_correct", M_ALL + s, sums[F_ALL_N + s])
        });
    }
    for &l in &present {
        let n: u32 = (SS..=POS).map(|s| n_ls(l, s)).sum();
        rows.push(Row {
            language: lang(l),
            ..bootstrapped("accuracy_distorted", M_DIST + l, n)
        });
    }
    for (e, (name, (hard, easy))) in ["effect_pss_ss", "effect_pos_os"]
        .iter()
        .zip(EFFECTS)
        .enumerate()
    {
        for &l in &present {
            rows.push(Row {
                language: lang(l),
                ..bootstrapped(
                    name,
                    M_EFF + e * (NL + 1) + l,
                    n_ls(l, hard) + n_ls(l, easy),
                )
            });
        }
        let answers: u32 = (0..NL).map(|l| n_ls(l, hard) + n_ls(l, easy)).sum();
        rows.push(bootstrapped(name, M_EFF + e * (NL + 1) + NL, answers));
    }
    agreement_rows(g, data, all, &present, rows);
    jaccard_language_rows(g, data, &present, rows);
    for &l in &present {
        for (name, count) in [("unparsed", g.unparsed[l]), ("unanswered", g.unanswered[l])] {
            let n = g.answers[l];
            rows.push(Row {
                language: lang(l),
                value: (n > 0).then(|| count as f64 / n as f64),
                n: Some(n as i64),
                ..base(name, g)
            });
        }
    }
}

/// The rows of one group's measures by tier: per distortion strategy and tier, the accuracy in each
/// language the group was asked in and pooled, then the two swap effects per tier.
fn tier_rows(g: &Group, boot: &Boot<TIER_FEATURES, TIER_BOOT_MEASURES>, rows: &mut Vec<Row>) {
    let all = languages_of(g);
    let n = |l: usize, s: usize, t: usize| boot.sums[T_N + tier_cell(l, s, t)];
    let tier = |t: usize| Some(Tier::ALL[t].as_str().to_string());
    for s in SS..=POS {
        for t in 0..NT {
            for l in (0..NL).filter(|l| all & (1 << l) != 0) {
                rows.push(Row {
                    language: lang(l),
                    strategy: strat(s),
                    tier: tier(t),
                    ..boot.row(
                        "accuracy_by_tier",
                        g,
                        MT_ACC + tier_cell(l, s, t),
                        n(l, s, t),
                    )
                });
            }
            let answers: u32 = (0..NL).map(|l| n(l, s, t)).sum();
            rows.push(Row {
                strategy: strat(s),
                tier: tier(t),
                ..boot.row(
                    "accuracy_by_tier_pooled",
                    g,
                    MT_POOLED + (s - 1) * NT + t,
                    answers,
                )
            });
        }
    }
    for (e, (name, (hard, easy))) in ["effect_pss_ss_by_tier", "effect_pos_os_by_tier"]
        .iter()
        .zip(EFFECTS)
        .enumerate()
    {
        for t in 0..NT {
            let answers: u32 = (0..NL).map(|l| n(l, hard, t) + n(l, easy, t)).sum();
            rows.push(Row {
                tier: tier(t),
                ..boot.row(name, g, MT_EFF + e * NT + t, answers)
            });
        }
    }
}

/// `agreement_share` and `accuracy_by_agreement`: over the statements asked in every language of the group.
fn agreement_rows(g: &Group, data: &Data, all: u8, present: &[usize], rows: &mut Vec<Row>) {
    let nl = present.len();
    // [strategy][k]: statements; [strategy][k][language]: answered right.
    let mut at_k = [[0u32; NL + 1]; NS];
    let mut right = [[[0u32; NL]; NL + 1]; NS];
    let mut total = [0u32; NS];
    for a in g.answered.iter().filter(|a| a.asked == all) {
        let s = data.statements[a.statement as usize].strategy as usize;
        let k = a.correct.count_ones() as usize;
        total[s] += 1;
        at_k[s][k] += 1;
        for &l in present {
            right[s][k][l] += u32::from(a.correct & (1 << l) != 0);
        }
    }
    for s in 0..NS {
        for (k, &count) in at_k[s].iter().enumerate().take(nl + 1) {
            rows.push(Row {
                strategy: strat(s),
                agreement: Some(k as i32),
                value: (total[s] > 0).then(|| count as f64 / total[s] as f64),
                n: Some(i64::from(total[s])),
                ..base("agreement_share", g)
            });
        }
        for &l in present {
            for k in 0..=nl {
                let n = at_k[s][k];
                rows.push(Row {
                    language: lang(l),
                    strategy: strat(s),
                    agreement: Some(k as i32),
                    value: (n > 0).then(|| right[s][k][l] as f64 / n as f64),
                    n: Some(i64::from(n)),
                    ..base("accuracy_by_agreement", g)
                });
            }
        }
    }
}

/// Correctness of `a` in language `l` as a bool.
fn ok(a: &Answered, l: usize) -> bool {
    a.correct & (1 << l) != 0
}

fn jaccard_language_rows(g: &Group, data: &Data, present: &[usize], rows: &mut Vec<Row>) {
    for s in 0..NS {
        let of_s: Vec<&Answered> = g
            .answered
            .iter()
            .filter(|a| data.statements[a.statement as usize].strategy as usize == s)
            .collect();
        for (i, &l1) in present.iter().enumerate() {
            for &l2 in &present[i + 1..] {
                let both = (1u8 << l1) | (1u8 << l2);
                let (x, y): (Vec<bool>, Vec<bool>) = of_s
                    .iter()
                    .filter(|a| a.asked & both == both)
                    .map(|a| (ok(a, l1), ok(a, l2)))
                    .unzip();
                rows.push(Row {
                    language: lang(l1),
                    language_b: lang(l2),
                    strategy: strat(s),
                    value: stats::jaccard(&x, &y),
                    n: Some(x.len() as i64),
                    ..base("jaccard_languages", g)
                });
            }
        }
    }
}

/// `jaccard_models`: every pair of groups of the same variant, per language × strategy, over the statements
/// both were asked in that language.
fn jaccard_models(data: &Data) -> Vec<Row> {
    let gs = &data.groups;
    let pairs: Vec<(usize, usize)> = (0..gs.len())
        .flat_map(|i| (i + 1..gs.len()).map(move |j| (i, j)))
        .filter(|&(i, j)| gs[i].variant == gs[j].variant)
        .collect();
    let per_pair: Vec<Vec<Row>> = pairs
        .par_iter()
        .map(|&(i, j)| {
            let (a, b) = (&gs[i], &gs[j]);
            // [language][strategy] → (model a right, model b right) per common statement.
            let mut cells: Vec<(Vec<bool>, Vec<bool>)> = vec![(Vec::new(), Vec::new()); NL * NS];
            let (mut x, mut y) = (0, 0);
            while x < a.answered.len() && y < b.answered.len() {
                let (p, q) = (&a.answered[x], &b.answered[y]);
                match p.statement.cmp(&q.statement) {
                    std::cmp::Ordering::Less => x += 1,
                    std::cmp::Ordering::Greater => y += 1,
                    std::cmp::Ordering::Equal => {
                        let s = data.statements[p.statement as usize].strategy as usize;
                        for l in 0..NL {
                            if p.asked & q.asked & (1 << l) != 0 {
                                let c = &mut cells[l * NS + s];
                                c.0.push(ok(p, l));
                                c.1.push(ok(q, l));
                            }
                        }
                        x += 1;
                        y += 1;
                    }
                }
            }
            let mut rows = Vec::new();
            for s in 0..NS {
                for l in 0..NL {
                    let (u, v) = &cells[l * NS + s];
                    if u.is_empty() {
                        continue;
                    }
                    rows.push(Row {
                        model_b: Some(b.model.clone()),
                        language: lang(l),
                        strategy: strat(s),
                        value: stats::jaccard(u, v),
                        n: Some(u.len() as i64),
                        ..base("jaccard_models", a)
                    });
                }
            }
            rows
        })
        .collect();
    per_pair.into_iter().flatten().collect()
}

#[cfg(test)]
mod tests {
    use super::super::input::{Answered, Data, Group, Statement};
    use super::*;
    use proptest::prelude::*;

    /// Data of `answers[g][statement]` = (asked, correct) masks; statement i belongs to original i / 5 and
    /// has strategy i % 5.
    fn data(names: &[&str], answers: &[Vec<(u8, u8)>]) -> Data {
        let n = answers.iter().map(Vec::len).max().unwrap_or(0);
        let statements = (0..n)
            .map(|i| Statement {
                id: format!("s{i}"),
                original: format!("o{}", i / 5),
                strategy: (i % 5) as u8,
                label: i % 5 == 0,
            })
            .collect();
        let groups = names
            .iter()
            .zip(answers)
            .map(|(name, a)| {
                let mut g = Group {
                    model: name.to_string(),
                    variant: "plain".into(),
                    ..Group::default()
                };
                for (i, &(asked, correct)) in a.iter().enumerate() {
                    if asked == 0 {
                        continue;
                    }
                    g.answered.push(Answered {
                        statement: i as u32,
                        asked,
                        correct: correct & asked,
                        unparsed: 0,
                    });
                    for l in 0..8 {
                        g.answers[l] += u64::from(asked >> l & 1);
                    }
                }
                g
            })
            .collect();
        Data {
            groups,
            statements,
            ..Data::default()
        }
    }

    fn answers(models: usize) -> impl Strategy<Value = Vec<Vec<(u8, u8)>>> {
        (1usize..25, any::<u8>()).prop_flat_map(move |(n, langs)| {
            let langs = langs | 1;
            proptest::collection::vec(
                proptest::collection::vec((any::<u8>(), any::<u8>()), n..=n).prop_map(move |v| {
                    v.into_iter()
                        .map(|(a, c)| (if a & 0x80 == 0 { langs } else { a & langs }, c))
                        .collect()
                }),
                models..=models,
            )
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn shares_bounded_agreement_extremes_and_intervals_hold(a in answers(3), seed in 0u64..1000) {
            let d = data(&["a", "b", "c"], &a);
            let rows = compute(&d, 60, seed);
            for r in &rows {
                let diff = matches!(r.measure.as_str(), "east_asian_gap" | "effect_pss_ss" | "effect_pos_os");
                let (lo, hi) = if diff { (-1.0, 1.0) } else { (0.0, 1.0) };
                for v in [r.value, r.lo, r.hi].into_iter().flatten() {
                    prop_assert!(v >= lo && v <= hi, "{r:?}");
                }
                if r.measure == "accuracy_by_agreement" {
                    let g = d.groups.iter().find(|g| Some(&g.model) == r.model.as_ref()).unwrap();
                    let l = languages_of(g).count_ones() as i32;
                    match (r.agreement, r.value) {
                        (Some(0), Some(v)) => prop_assert_eq!(v, 0.0),
                        (Some(k), Some(v)) if k == l => prop_assert_eq!(v, 1.0),
                        _ => {}
                    }
                }
                // Percentile intervals of a share bracket its estimate.
                if matches!(r.measure.as_str(), "accuracy" | "accuracy_pooled" | "accuracy_distorted" | "all_languages_correct") {
                    if let (Some(v), Some(lo), Some(hi)) = (r.value, r.lo, r.hi) {
                        prop_assert!(lo <= v && v <= hi, "{r:?}");
                    }
                }
            }
            // Agreement shares of a model × strategy sum to 1.
            let mut sums: HashMap<(String, String), f64> = HashMap::new();
            for r in rows.iter().filter(|r| r.measure == "agreement_share") {
                if let Some(v) = r.value {
                    *sums.entry((r.model.clone().unwrap(), r.strategy.clone().unwrap())).or_default() += v;
                }
            }
            for s in sums.values() {
                prop_assert!((s - 1.0).abs() < 1e-9);
            }
        }

        #[test]
        fn tiers_add_rows_that_split_accuracy_and_change_nothing_else(a in answers(2), seed in 0u64..1000) {
            // Statement i (a distortion when i % 5 != 0) gets tier (i / 5 + i) % 3.
            let mut d = data(&["a", "b"], &a);
            let plain = compute(&d, 40, seed);
            d.tiers = Some(
                (0..d.statements.len())
                    .map(|i| (i % 5 != 0).then(|| Tier::ALL[(i / 5 + i) % 3]))
                    .collect(),
            );
            let tiered = compute(&d, 40, seed);
            let (other, by_tier): (Vec<Row>, Vec<Row>) =
                tiered.into_iter().partition(|r| r.tier.is_none());
            prop_assert_eq!(&other, &plain);
            // Per model, language and distortion strategy: the tiers' n add up to accuracy's n, and their
            // n-weighted accuracies to accuracy's right answers.
            for acc in plain.iter().filter(|r| r.measure == "accuracy" && r.strategy.as_deref() != Some("ORG")) {
                let parts: Vec<&Row> = by_tier
                    .iter()
                    .filter(|r| r.measure == "accuracy_by_tier" && r.model == acc.model
                        && r.language == acc.language && r.strategy == acc.strategy)
                    .collect();
                prop_assert_eq!(parts.len(), 3);
                let n: i64 = parts.iter().map(|r| r.n.unwrap()).sum();
                prop_assert_eq!(n, acc.n.unwrap());
                let right: f64 = parts.iter().filter_map(|r| r.value.map(|v| v * r.n.unwrap() as f64)).sum();
                let expected = acc.value.map_or(0.0, |v| v * n as f64);
                prop_assert!((right - expected).abs() < 1e-9, "{acc:?}");
            }
        }

        #[test]
        fn jaccard_is_symmetric_in_models(a in answers(2)) {
            // The same two answer sets under swapped names: (x, y) and (y, x) give one value per cell.
            let one = compute(&data(&["x", "y"], &a), 0, 0);
            let two = compute(&data(&["y", "x"], &a), 0, 0);
            let pick = |rows: &[Row]| -> Vec<Row> {
                rows.iter()
                    .filter(|r| r.measure == "jaccard_models")
                    .map(|r| Row { model: None, model_b: None, ..r.clone() })
                    .collect()
            };
            prop_assert_eq!(pick(&one), pick(&two));
            // A row exists exactly when the two models were asked one statement in one language (the generator
            // can leave a model with no answers at all).
            let shared = a[0].iter().zip(&a[1]).any(|(p, q)| p.0 & q.0 != 0);
            prop_assert_eq!(!pick(&one).is_empty(), shared);
            // Within a model, swapping two languages' answers swaps nothing in their pair's Jaccard.
            let swap = |m: u8| (m & !3) | ((m & 1) << 1) | ((m >> 1) & 1);
            let b: Vec<Vec<(u8, u8)>> = a.iter().map(|g| g.iter().map(|&(x, c)| (swap(x), swap(c))).collect()).collect();
            let three = compute(&data(&["x", "y"], &b), 0, 0);
            let en_fr = |rows: &[Row]| -> Vec<(Option<String>, Option<f64>, Option<i64>)> {
                rows.iter()
                    .filter(|r| r.measure == "jaccard_languages" && r.language.as_deref() == Some("en") && r.language_b.as_deref() == Some("fr"))
                    .map(|r| (r.strategy.clone(), r.value, r.n))
                    .collect()
            };
            prop_assert_eq!(en_fr(&one), en_fr(&three));
        }
    }

    #[test]
    fn replicate_sums_derive_eval_scores_gap() {
        // Two languages on SS: en 3 of 4, ko 1 of 4 → gap 0.5, relative 0.5 / 0.75; East-Asian gap 0.5.
        let mut sums = [0u32; UNIT_FEATURES];
        sums[F_N + SS] = 4;
        sums[F_C + SS] = 3;
        sums[F_N + 6 * NS + SS] = 4;
        sums[F_C + 6 * NS + SS] = 1;
        let m = derive(&sums);
        assert_eq!(m[M_ACC + SS], 0.75);
        assert_eq!(m[M_GAP + SS], 0.5);
        assert_eq!(m[M_GAP_REL + SS], 0.5 / 0.75);
        assert_eq!(m[M_EA + SS], 0.5);
        assert_eq!(m[M_DIST], 0.75);
        // No ORG statement (strategy 0) and no PSS: their gap and the PSS − SS effect are undefined.
        assert!(m[M_GAP].is_nan() && m[M_EFF].is_nan());
    }
}
