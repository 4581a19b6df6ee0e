//! The long-form report: Markdown (the table the paper prints, with intervals and why answers were left
//! out) and the paired bar chart.

use super::score::{Cell, LongformScores, Means};
use super::Condition;
use crate::core::error::Result;
use crate::eval::stats::Interval;
use crate::stages::folder::{Folder, FolderCommand};
use serde::Serialize;
use std::collections::BTreeMap;

pub(super) fn pct(iv: &Interval) -> String {
    if iv.lo.is_finite() && iv.hi.is_finite() {
        format!("{:.1} [{:.1}, {:.1}]", iv.estimate, iv.lo, iv.hi)
    } else {
        format!("{:.1}", iv.estimate)
    }
}

/// The Markdown report.
pub fn markdown(s: &LongformScores) -> String {
    let mut md = format!(
        "# AdversaRiskQA long-form factuality\n\nMean F1@{k} (percent; K {}) per cell, with percentile bootstrap 95% intervals \
         resampling answers ({} replicates, seed {}). An answer with no verdict (no fact checked) is not scored; \
         the files' own counts of skipped and odd answers are below.\n\n![F1@{k}](f1_paired_bars.svg)\n\n",
        s.k_from,
        s.bootstrap,
        s.seed,
        k = s.k
    );
    md.push_str("| model | domain | level | adversarial | non-adversarial | difference (pp) | facts adv / non | supported adv / non |\n|---|---|---|---|---|---|---|---|\n");
    let cell = |model: &str, d: &str, l: &str, c: Condition| {
        s.cells
            .iter()
            .find(|x| x.model == model && x.domain == d && x.level == l && x.condition == c)
    };
    let mut groups: Vec<(String, &str, &str)> = s
        .cells
        .iter()
        .map(|c| (c.model.clone(), c.domain, c.level))
        .collect();
    groups.dedup();
    for (m, d, l) in &groups {
        let a = cell(m, d, l, Condition::Adversarial);
        let n = cell(m, d, l, Condition::NonAdversarial);
        let f = |c: Option<&Cell>| match c {
            None => "–".to_string(),
            Some(c) if c.status == "conflict" => "conflict (2 files)".to_string(),
            Some(c) => c
                .scores
                .as_ref()
                .map_or("no scored answer".into(), |m| pct(&m.mean_f1_at_k)),
        };
        let g = |c: Option<&Cell>, get: &dyn Fn(&Means) -> f64| {
            c.and_then(|c| c.scores.as_ref())
                .map_or("–".into(), |m| format!("{:.2}", get(m)))
        };
        let diff = s
            .differences
            .iter()
            .find(|x| (x.model.as_str(), x.domain, x.level) == (m.as_str(), *d, *l))
            .map_or("–".into(), |x| pct(&x.mean_f1_at_k));
        md.push_str(&format!(
            "| {m} | {d} | {l} | {} | {} | {diff} | {} / {} | {} / {} |\n",
            f(a),
            f(n),
            g(a, &|m| m.mean_facts),
            g(n, &|m| m.mean_facts),
            g(a, &|m| m.mean_supported),
            g(n, &|m| m.mean_supported),
        ));
    }
    md.push_str("\n## Files\n\n| file | model | cell | answers | scored | skipped | odd | F1@K | all answers (skipped = 0) |\n|---|---|---|---|---|---|---|---|---|\n");
    for f in &s.files {
        let skipped = reason_counts(&f.skipped);
        let odd = reason_counts(&f.odd);
        let d = &f.derived;
        md.push_str(&format!(
            "| `{}` | {} | {}_{} {} | {} | {} | {skipped} | {odd} | {} | {:.1} |\n",
            f.path.display(),
            d.model,
            d.domain,
            d.level,
            d.condition.as_str(),
            f.answers,
            f.scored,
            f.scores
                .as_ref()
                .map_or("–".into(), |m| pct(&m.mean_f1_at_k)),
            f.mean_f1_at_k_all_answers,
        ));
        for n in &d.notes {
            md.push_str(&format!("|  | note: {n} | | | | | | | |\n"));
        }
    }
    if !s.unpaired.is_empty() {
        md.push_str("\n## Not compared\n\n");
        for u in &s.unpaired {
            md.push_str(&format!("- {u}\n"));
        }
    }
    if !s.ignored.is_empty() {
        md.push_str("\n## JSON files left out\n\n");
        for i in &s.ignored {
            md.push_str(&format!("- `{}`: {}\n", i.path.display(), i.reason));
        }
    }
    md
}

/// What `sword eval score --suite longform --out DIR` writes into `DIR` (the manifest last).
pub const COMMAND: FolderCommand = FolderCommand {
    name: "longform-report",
    writes: &["f1_paired_bars.svg", "report.md", "longform.scores.json"],
};

/// Write `longform.scores.json`, `report.md` and `f1_paired_bars.svg` into the report's folder.
pub fn write_report(f: &Folder, s: &LongformScores, json: &str) -> Result<()> {
    let mut groups: Vec<(String, [Option<Interval>; 2])> = Vec::new();
    for c in &s.cells {
        let label = format!("{} {}_{}", c.model, c.domain, c.level);
        let slot = usize::from(c.condition == Condition::NonAdversarial);
        let iv = c.scores.as_ref().map(|m| m.mean_f1_at_k);
        match groups.iter_mut().find(|(l, _)| *l == label) {
            Some((_, v)) => v[slot] = iv,
            None => {
                let mut v = [None, None];
                v[slot] = iv;
                groups.push((label, v));
            }
        }
    }
    let svg = crate::eval::report::paired_bars_svg(
        &format!("Mean F1@{} (%)", s.k),
        &groups,
        ["adversarial", "non-adversarial"],
        100.0,
    )?;
    let write = |name: &str, text: &str| f.write(name, |w| w.write_all(text.as_bytes()));
    write("f1_paired_bars.svg", &svg)?;
    write("report.md", &markdown(s))?;
    write("longform.scores.json", json)
}

/// `reason n, reason n` for a report cell (the reason as its serialised name), or `–` when nothing was counted.
pub(super) fn reason_counts<K: Serialize>(m: &BTreeMap<K, usize>) -> String {
    if m.is_empty() {
        return "–".into();
    }
    m.iter()
        .map(|(k, v)| {
            let name = serde_json::to_value(k)
                .ok()
                .and_then(|x| x.as_str().map(str::to_string))
                .unwrap_or_default();
            format!("{name} {v}")
        })
        .collect::<Vec<_>>()
        .join(", ")
}
