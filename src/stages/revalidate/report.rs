//! `revalidation.md`: counts per status × strategy and, per status, a few examples with their old and new
//! labels (first language), so that a reader sees what changed without opening the tables.

use crate::core::error::Result;
use crate::core::ids::EntityId;
use crate::core::records::Strategy;
use crate::kb::verdict::{tally, NewFacts, Status, Verdict};
use crate::kb::OldBenchmark;
use std::fmt::Write as _;
use std::path::Path;

/// The new label of `e` in language `l`, when the newer dump labels it there.
fn new_label(facts: &NewFacts, e: EntityId, l: usize) -> Option<String> {
    match e {
        EntityId::Item(q) => facts.labels.get(&q)?.get(l).map(|x| x.text.clone()),
        EntityId::Property(p) => facts
            .properties
            .get(&p)?
            .labels
            .get(l)?
            .as_ref()
            .map(|x| x.text.clone()),
    }
}

/// `| id (label) | … |` cells: an absent label shows as `—`.
fn cell(e: EntityId, label: Option<&str>) -> String {
    format!("{e} {}", label.unwrap_or("—")).replace('|', "\\|")
}

/// Render the report (pure: the same inputs give the same text).
pub fn render_report(
    old: &OldBenchmark,
    facts: &NewFacts,
    found: &[Verdict],
    examples: usize,
    old_run: &Path,
    new_run: &Path,
) -> Result<String> {
    let mut s = String::new();
    let t = tally(old, found);
    let _ = writeln!(s, "# Revalidation\n");
    let _ = writeln!(
        s,
        "The {} statements of `{}` (sword.parquet format {}) against the extract of `{}`.\n",
        old.rows.len(),
        old_run.display(),
        old.format_version,
        new_run.display()
    );
    let _ = write!(s, "| status |");
    for g in Strategy::ALL {
        let _ = write!(s, " {} |", g.as_str());
    }
    let _ = writeln!(s, " total |");
    let _ = write!(s, "|---|");
    for _ in Strategy::ALL {
        let _ = write!(s, "---:|");
    }
    let _ = writeln!(s, "---:|");
    for st in Status::ALL {
        let row = t.get(&st);
        let _ = write!(s, "| {} |", st.as_str());
        let mut total = 0u64;
        for g in Strategy::ALL {
            let n = row.and_then(|r| r.get(&g)).copied().unwrap_or(0);
            total += n;
            let _ = write!(s, " {n} |");
        }
        let _ = writeln!(s, " {total} |");
    }
    let lang = old.languages.first().map(String::as_str).unwrap_or("?");
    for st in Status::ALL {
        let rows: Vec<usize> = found
            .iter()
            .enumerate()
            .filter(|(_, v)| v.status == st)
            .map(|(i, _)| i)
            .take(examples)
            .collect();
        if rows.is_empty() || st == Status::Valid {
            continue;
        }
        let _ = writeln!(
            s,
            "\n## {}\n\n| statement | strategy | detail | old ({lang}) | new ({lang}) |\n|---|---|---|---|---|",
            st.as_str()
        );
        let texts = old.label_texts(&rows)?;
        for (&i, text) in rows.iter().zip(&texts) {
            let (Some(r), Some(v)) = (old.rows.get(i), found.get(i)) else {
                continue;
            };
            let ents = r.entities();
            let before: Vec<String> = ents
                .iter()
                .zip(text.iter())
                .map(|(e, t)| cell(*e, t.first().and_then(|x| x.as_deref())))
                .collect();
            let after: Vec<String> = ents
                .iter()
                .map(|e| cell(*e, new_label(facts, *e, 0).as_deref()))
                .collect();
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} | {} |",
                r.statement_id,
                r.strategy.as_str(),
                v.detail.replace('|', "\\|"),
                before.join(" · "),
                after.join(" · ")
            );
        }
    }
    Ok(s)
}
