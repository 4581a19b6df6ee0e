//! SWORD measures (paper 001, §4): accuracy per language × strategy, acceptance of true vs rejection of
//! false statements, the cross-lingual gap, agreement buckets k/L per statement, Jaccard between languages,
//! and percentile bootstrap intervals resampling **original triples** (an original and all its distortions,
//! in every language, move together).
//!
//! An answer is correct when its parsed verdict equals the statement's truth label; an unparsed answer is
//! wrong (and counted separately), never dropped, so every language is scored on the same statements.

pub mod suite;

use crate::eval::parse::TrueFalse;
use crate::eval::stats::{self, Interval};
use std::collections::{BTreeMap, BTreeSet, HashMap};

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

/// Every named measure (fractions in [0, 1]) on a set of rows:
/// `acc.<lang>.<strategy>`, `acc.<lang>.all`, `accept_true.<lang>`, `reject_false.<lang>`,
/// `gap.<strategy|false>.abs` (max − min over languages) and `.rel` ((max − min)/max),
/// `agree.<strategy>.<k>` (share of statements answered correctly in exactly k of the languages they appear
/// in), `jaccard.<l1>.<l2>` (sets of correctly answered statements, over statements present in both).
pub fn measures(rows: &[&SwordRow]) -> BTreeMap<String, f64> {
    let tagged: Vec<(&SwordRow, u32)> = rows.iter().map(|r| (*r, 0)).collect();
    measures_tagged(&tagged)
}

/// [`measures`] over rows tagged with a copy number: a bootstrap replicate that draws an original triple
/// twice holds its statements twice, as distinct statements (copy 0, 1, …). One pass aggregates the counts.
fn measures_tagged(rows: &[(&SwordRow, u32)]) -> BTreeMap<String, f64> {
    let mut m = BTreeMap::new();
    // (n, correct) per (language, strategy), per language, per (language, label).
    let mut cell: BTreeMap<(&str, &str), (usize, usize)> = BTreeMap::new();
    let mut per_lang: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    let mut per_label: BTreeMap<(&str, bool), (usize, usize)> = BTreeMap::new();
    // Per statement copy: strategy and the set of (language, correct).
    type Answers<'a> = (&'a str, Vec<(&'a str, bool)>);
    let mut stmt: HashMap<(&str, u32), Answers> = HashMap::new();
    for &(r, copy) in rows {
        let ok = usize::from(r.correct());
        let l = r.language.as_str();
        let s = r.strategy.as_str();
        for e in [
            cell.entry((l, s)).or_default(),
            per_lang.entry(l).or_default(),
            per_label.entry((l, r.label)).or_default(),
        ] {
            e.0 += 1;
            e.1 += ok;
        }
        stmt.entry((r.statement.as_str(), copy))
            .or_insert_with(|| (s, Vec::new()))
            .1
            .push((l, r.correct()));
    }
    let frac = |(n, c): (usize, usize)| c as f64 / n as f64;
    let langs: Vec<&str> = per_lang.keys().copied().collect();
    let strategies: BTreeSet<&str> = cell.keys().map(|(_, s)| *s).collect();
    for (&(l, s), &v) in &cell {
        m.insert(format!("acc.{l}.{s}"), frac(v));
    }
    for (&l, &v) in &per_lang {
        m.insert(format!("acc.{l}.all"), frac(v));
    }
    for (&(l, label), &v) in &per_label {
        let name = if label { "accept_true" } else { "reject_false" };
        m.insert(format!("{name}.{l}"), frac(v));
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
            .filter_map(|l| cell.get(&(*l, *s)).map(|v| frac(*v)))
            .collect();
        gap(s, vals);
    }
    let vals: Vec<f64> = langs
        .iter()
        .filter_map(|l| per_label.get(&(*l, false)).map(|v| frac(*v)))
        .collect();
    gap("false", vals);
    // Agreement buckets k/L: per statement copy, the number of languages answered correctly.
    let n_lang = langs.len();
    let mut buckets: BTreeMap<(&str, usize), usize> = BTreeMap::new();
    let mut totals: BTreeMap<&str, usize> = BTreeMap::new();
    for (strat, answers) in stmt.values() {
        let k = answers.iter().filter(|(_, ok)| *ok).count();
        *buckets.entry((strat, k)).or_insert(0) += 1;
        *totals.entry(strat).or_insert(0) += 1;
    }
    for (strat, total) in &totals {
        for k in 0..=n_lang {
            let c = buckets.get(&(strat, k)).copied().unwrap_or(0);
            m.insert(format!("agree.{strat}.{k}"), c as f64 / *total as f64);
        }
    }
    // Jaccard between languages on the sets of correctly answered statements (statements in both).
    let li: HashMap<&str, usize> = langs.iter().enumerate().map(|(i, l)| (*l, i)).collect();
    let nl = langs.len();
    let mut inter = vec![0usize; nl * nl];
    let mut union = vec![0usize; nl * nl];
    for (_, answers) in stmt.values() {
        let mut present = vec![None::<bool>; nl];
        for (l, ok) in answers {
            present[li[l]] = Some(*ok);
        }
        for i in 0..nl {
            for j in i + 1..nl {
                if let (Some(a), Some(b)) = (present[i], present[j]) {
                    inter[i * nl + j] += usize::from(a && b);
                    union[i * nl + j] += usize::from(a || b);
                }
            }
        }
    }
    for i in 0..nl {
        for j in i + 1..nl {
            if union[i * nl + j] > 0 {
                m.insert(
                    format!("jaccard.{}.{}", langs[i], langs[j]),
                    inter[i * nl + j] as f64 / union[i * nl + j] as f64,
                );
            }
        }
    }
    m
}

/// Measures with percentile bootstrap intervals, resampling original triples (`b` replicates, seeded).
pub fn bootstrap_measures(rows: &[SwordRow], b: usize, seed: u64) -> BTreeMap<String, Interval> {
    let by_unit = stats::group_by_unit(rows, |r| r.original.as_str());
    let all: Vec<&SwordRow> = rows.iter().collect();
    stats::bootstrap_measures(by_unit.len(), b, seed, measures(&all), |idx| {
        let mut copies = vec![0u32; by_unit.len()];
        let mut sample: Vec<(&SwordRow, u32)> = Vec::with_capacity(rows.len());
        for &u in idx {
            let c = copies[u];
            copies[u] += 1;
            sample.extend(by_unit[u].iter().map(|r| (*r, c)));
        }
        measures_tagged(&sample)
    })
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
