//! SWORD measures (paper 001, §4): accuracy per language × strategy, acceptance of true vs rejection of
//! false statements, the cross-lingual gap, agreement buckets k/L per statement, Jaccard between languages,
//! and percentile bootstrap intervals resampling **original triples** (an original and all its distortions,
//! in every language, move together).
//!
//! An answer is correct when its parsed verdict equals the statement's truth label; an unparsed answer is
//! wrong (and counted separately), never dropped, so every language is scored on the same statements.

use super::parse::TrueFalse;
use super::stats::{self, Interval};
use std::collections::{BTreeMap, BTreeSet};

/// The eight languages, in the paper's order.
pub const LANGUAGES: [&str; 8] = ["en", "fr", "de", "es", "it", "pt", "ko", "ja"];
/// The five strategies.
pub const STRATEGIES: [&str; 5] = ["ORG", "SS", "OS", "PSS", "POS"];

/// One scored SWORD answer.
#[derive(Clone, Debug, PartialEq)]
pub struct SwordRow {
    /// The original triple this statement derives from (the resampling unit).
    pub original: String,
    /// The statement (original or distortion), shared across its languages.
    pub statement: String,
    pub strategy: String,
    pub label: bool,
    pub language: String,
    pub answer: TrueFalse,
}

impl SwordRow {
    /// Verdict equals the label.
    pub fn correct(&self) -> bool {
        match self.answer {
            TrueFalse::True => self.label,
            TrueFalse::False => !self.label,
            TrueFalse::Unparsed => false,
        }
    }
}

fn acc<'a>(rows: impl Iterator<Item = &'a SwordRow>) -> Option<f64> {
    let (mut n, mut c) = (0usize, 0usize);
    for r in rows {
        n += 1;
        c += usize::from(r.correct());
    }
    (n > 0).then(|| c as f64 / n as f64)
}

/// Every named measure (fractions in [0, 1]) on a set of rows:
/// `acc.<lang>.<strategy>`, `acc.<lang>.all`, `accept_true.<lang>`, `reject_false.<lang>`,
/// `gap.<strategy|false>.abs` (max − min over languages) and `.rel` ((max − min)/max),
/// `agree.<strategy>.<k>` (share of statements answered correctly in exactly k of the languages they appear
/// in), `jaccard.<l1>.<l2>` (sets of correctly answered statements, over statements present in both).
pub fn measures(rows: &[&SwordRow]) -> BTreeMap<String, f64> {
    let mut m = BTreeMap::new();
    let langs: BTreeSet<&str> = rows.iter().map(|r| r.language.as_str()).collect();
    let strategies: BTreeSet<&str> = rows.iter().map(|r| r.strategy.as_str()).collect();
    for l in &langs {
        for s in &strategies {
            if let Some(a) = acc(rows
                .iter()
                .copied()
                .filter(|r| r.language == *l && r.strategy == *s))
            {
                m.insert(format!("acc.{l}.{s}"), a);
            }
        }
        if let Some(a) = acc(rows.iter().copied().filter(|r| r.language == *l)) {
            m.insert(format!("acc.{l}.all"), a);
        }
        if let Some(a) = acc(rows.iter().copied().filter(|r| r.language == *l && r.label)) {
            m.insert(format!("accept_true.{l}"), a);
        }
        if let Some(a) = acc(rows
            .iter()
            .copied()
            .filter(|r| r.language == *l && !r.label))
        {
            m.insert(format!("reject_false.{l}"), a);
        }
    }
    let mut gap = |name: &str, vals: Vec<f64>| {
        if vals.len() >= 2 {
            let max = vals.iter().cloned().fold(f64::MIN, f64::max);
            let min = vals.iter().cloned().fold(f64::MAX, f64::min);
            m.insert(format!("gap.{name}.abs"), max - min);
            if max > 0.0 {
                m.insert(format!("gap.{name}.rel"), (max - min) / max);
            }
        }
    };
    for s in &strategies {
        let vals: Vec<f64> = langs
            .iter()
            .filter_map(|l| {
                acc(rows
                    .iter()
                    .copied()
                    .filter(|r| r.language == *l && r.strategy == *s))
            })
            .collect();
        gap(s, vals);
    }
    let vals: Vec<f64> = langs
        .iter()
        .filter_map(|l| {
            acc(rows
                .iter()
                .copied()
                .filter(|r| r.language == *l && !r.label))
        })
        .collect();
    gap("false", vals);
    // Agreement buckets: per (statement occurrence) count languages answered correctly. A bootstrap
    // replicate can hold the same statement several times; each copy counts.
    let mut per_stmt: BTreeMap<(&str, &str), (usize, usize, &str)> = BTreeMap::new();
    for r in rows {
        let e = per_stmt
            .entry((r.statement.as_str(), r.language.as_str()))
            .or_insert((0, 0, r.strategy.as_str()));
        e.0 += 1;
        e.1 += usize::from(r.correct());
    }
    // Collapse languages: per statement, copies = rows per language (equal across languages by construction).
    let mut stmt: BTreeMap<&str, (usize, usize, &str)> = BTreeMap::new(); // (copies, correct-language count·copies, strategy)
    for ((s, _), (n, c, strat)) in &per_stmt {
        let e = stmt.entry(s).or_insert((*n, 0, strat));
        e.1 += c;
    }
    let mut buckets: BTreeMap<(&str, usize), usize> = BTreeMap::new();
    let mut totals: BTreeMap<&str, usize> = BTreeMap::new();
    for (copies, correct_sum, strat) in stmt.values() {
        let k = correct_sum / copies.max(&1);
        *buckets.entry((strat, k)).or_insert(0) += copies;
        *totals.entry(strat).or_insert(0) += copies;
    }
    let n_lang = langs.len();
    for (strat, total) in &totals {
        for k in 0..=n_lang {
            let c = buckets.get(&(strat, k)).copied().unwrap_or(0);
            m.insert(format!("agree.{strat}.{k}"), c as f64 / *total as f64);
        }
    }
    // Jaccard between languages on the sets of correctly answered statements.
    let correct_of = |l: &str| -> BTreeMap<&str, bool> {
        rows.iter()
            .filter(|r| r.language == l)
            .map(|r| (r.statement.as_str(), r.correct()))
            .collect()
    };
    let per_lang: Vec<(&str, BTreeMap<&str, bool>)> =
        langs.iter().map(|l| (*l, correct_of(l))).collect();
    for i in 0..per_lang.len() {
        for j in i + 1..per_lang.len() {
            let (la, a) = &per_lang[i];
            let (lb, b) = &per_lang[j];
            let common: Vec<&&str> = a.keys().filter(|k| b.contains_key(*k)).collect();
            let va: Vec<bool> = common.iter().map(|k| a[**k]).collect();
            let vb: Vec<bool> = common.iter().map(|k| b[**k]).collect();
            if let Some(jv) = stats::jaccard(&va, &vb) {
                m.insert(format!("jaccard.{la}.{lb}"), jv);
            }
        }
    }
    m
}

/// Measures with percentile bootstrap intervals, resampling original triples (`b` replicates, seeded).
pub fn bootstrap_measures(rows: &[SwordRow], b: usize, seed: u64) -> BTreeMap<String, Interval> {
    let mut originals: Vec<&str> = rows.iter().map(|r| r.original.as_str()).collect();
    originals.sort_unstable();
    originals.dedup();
    let by_unit: Vec<Vec<&SwordRow>> = originals
        .iter()
        .map(|o| rows.iter().filter(|r| r.original == *o).collect())
        .collect();
    let all: Vec<&SwordRow> = rows.iter().collect();
    let est = measures(&all);
    let reps: Vec<BTreeMap<String, f64>> = (0..b)
        .map(|i| {
            let idx = stats::bootstrap_indices(by_unit.len(), seed, i);
            // Copies of a unit get distinct statement keys so agreement counts each copy.
            let sample: Vec<SwordRow> = idx
                .iter()
                .enumerate()
                .flat_map(|(copy, &u)| {
                    by_unit[u].iter().map(move |r| SwordRow {
                        statement: format!("{}#{copy}", r.statement),
                        ..(*r).clone()
                    })
                })
                .collect();
            let refs: Vec<&SwordRow> = sample.iter().collect();
            measures(&refs)
        })
        .collect();
    est.into_iter()
        .map(|(name, estimate)| {
            let mut v: Vec<f64> = reps.iter().filter_map(|r| r.get(&name).copied()).collect();
            v.sort_by(f64::total_cmp);
            let (lo, hi) = if v.is_empty() {
                (f64::NAN, f64::NAN)
            } else {
                (
                    stats::quantile_sorted(&v, 0.025),
                    stats::quantile_sorted(&v, 0.975),
                )
            };
            (name, Interval { estimate, lo, hi })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use TrueFalse::*;

    fn row(
        orig: &str,
        stmt: &str,
        strat: &str,
        label: bool,
        lang: &str,
        answer: TrueFalse,
    ) -> SwordRow {
        SwordRow {
            original: orig.into(),
            statement: stmt.into(),
            strategy: strat.into(),
            label,
            language: lang.into(),
            answer,
        }
    }

    /// Two originals o1, o2, each with ORG (true) and SS (false), in en and ko.
    fn fixture() -> Vec<SwordRow> {
        vec![
            // en: all correct
            row("o1", "o1", "ORG", true, "en", True),
            row("o1", "o1-ss", "SS", false, "en", False),
            row("o2", "o2", "ORG", true, "en", True),
            row("o2", "o2-ss", "SS", false, "en", False),
            // ko: ORG o1 correct, o2 unparsed; SS o1 accepted (wrong), o2 rejected
            row("o1", "o1", "ORG", true, "ko", True),
            row("o1", "o1-ss", "SS", false, "ko", True),
            row("o2", "o2", "ORG", true, "ko", Unparsed),
            row("o2", "o2-ss", "SS", false, "ko", False),
        ]
    }

    #[test]
    fn hand_computed_measures() {
        let rows = fixture();
        let r: Vec<&SwordRow> = rows.iter().collect();
        let m = measures(&r);
        assert_eq!(m["acc.en.ORG"], 1.0);
        assert_eq!(m["acc.ko.ORG"], 0.5);
        assert_eq!(m["acc.ko.SS"], 0.5);
        assert_eq!(m["acc.ko.all"], 0.5);
        assert_eq!(m["accept_true.ko"], 0.5);
        assert_eq!(m["reject_false.ko"], 0.5);
        assert_eq!(m["reject_false.en"], 1.0);
        // gap on SS: en 1.0, ko 0.5 -> 0.5 absolute, 50% relative
        assert_eq!(m["gap.SS.abs"], 0.5);
        assert_eq!(m["gap.SS.rel"], 0.5);
        assert_eq!(m["gap.false.abs"], 0.5);
        // agreement, ORG: o1 correct in 2/2, o2 in 1/2 -> bucket 2: 0.5, bucket 1: 0.5, bucket 0: 0
        assert_eq!(m["agree.ORG.2"], 0.5);
        assert_eq!(m["agree.ORG.1"], 0.5);
        assert_eq!(m["agree.ORG.0"], 0.0);
        assert_eq!(m["agree.SS.1"], 0.5);
        // Jaccard en/ko: en correct {o1, o1-ss, o2, o2-ss}, ko correct {o1, o2-ss} -> 2/4
        assert_eq!(m["jaccard.en.ko"], 0.5);
    }

    #[test]
    fn bootstrap_resamples_originals() {
        let rows = fixture();
        let a = bootstrap_measures(&rows, 200, 3);
        assert_eq!(a, bootstrap_measures(&rows, 200, 3));
        // en is always perfect, so its interval is degenerate
        let e = a["acc.en.all"];
        assert_eq!((e.estimate, e.lo, e.hi), (1.0, 1.0, 1.0));
        // ko.ORG is 1 when only o1 is drawn, 0 when only o2, 0.5 otherwise: interval within [0, 1] and wide
        let k = a["acc.ko.ORG"];
        assert_eq!(k.estimate, 0.5);
        assert!(k.lo == 0.0 && k.hi == 1.0, "{k:?}");
        // agreement buckets in every replicate sum to 1
        let sum: f64 = (0..=2).map(|k| a[&format!("agree.ORG.{k}")].estimate).sum();
        assert!((sum - 1.0).abs() < 1e-12);
    }
}
