//! Export: `sword.parquet` (the benchmark, one row per statement), translation requests in the OpenAI Batch
//! input format, an optional Hugging Face dataset layout, and the report.
//!
//! The `sword.parquet` schema is documented in the README ("Distortions and export") and pinned by the golden
//! file `data/golden/sword_schema.txt`; any change bumps `SWORD_FORMAT_VERSION`, which is also written into
//! the Parquet key-value metadata as `sword.format_version`.
//!
//! A SWORD built from a dump that ends early (extract `--allow-truncated`) says so: the export manifest has
//! `"complete": false` (inherited from its inputs' manifests), `sword.parquet` carries the key-value metadata
//! `sword.complete = false` (absent, so the bytes are unchanged, for a whole dump), the report starts with a
//! warning, and so does the Hugging Face dataset card.

use super::report;
use crate::core::error::{IoContext, Result};
use crate::core::ids::EntityId;
use crate::core::records::{Distortion, Strategy};
use crate::core::records::{Label, PropertyRecord};
pub use crate::kb::prompt::{
    custom_id, language_name, prompt, render, split_custom_id, DEFAULT_TEMPLATE,
};
use crate::stages::contract::{Context, Input, NoSettings, Stage};
use crate::store::layout::{
    self, Artifact, DISTORTIONS, ENTITIES, EXPORT_OUTPUTS, PROPERTIES, SWORD, TRANSLATION_REQUESTS,
};
use crate::store::tables;
use crate::store::tables::distortions::read_distortions_file;
pub use crate::store::tables::sword::{
    role_id, schema_text, sword_schema, write_sword, write_sword_marked, EntityLookup,
    DEFAULT_LANGUAGES, ROLES, SWORD_FORMAT_VERSION,
};
use crate::store::{self, Manifest, RunDir};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Settings of `sword export` (`pipeline/export.toml`; the same names as its flags).
#[derive(Clone, Debug, Serialize, Deserialize, clap::Args)]
#[serde(default, deny_unknown_fields)]
pub struct ExportConfig {
    /// Also lay the benchmark out as a Hugging Face dataset in this directory (`data/*.parquet` + README card).
    #[arg(long, required = false)]
    pub hf: Option<PathBuf>,
    /// Model named in every translation request body. The paper used Gemini 2.5 Flash; any endpoint that
    /// accepts the OpenAI Batch format works. Default `gemini-2.5-flash`.
    #[arg(long, required = false)]
    pub model: String,
}

impl Default for ExportConfig {
    fn default() -> Self {
        ExportConfig {
            hf: None,
            model: "gemini-2.5-flash".into(),
        }
    }
}

impl report::EnglishLabels for EntityLookup {
    fn english_label(&self, id: EntityId) -> Option<&str> {
        EntityLookup::english_label(self, id)
    }
}

/// Translation requests (one JSON line per statement × language, OpenAI Batch input format) and the number
/// of (statement, language) pairs skipped because a label is missing in that language.
pub fn translation_requests(
    rows: &[Distortion],
    lookup: &EntityLookup,
    model: &str,
) -> (Vec<String>, u64) {
    let mut out = Vec::with_capacity(rows.len() * lookup.languages.len());
    let mut skipped = 0;
    for d in rows {
        for (l, lang) in lookup.languages.iter().enumerate() {
            let labels: Vec<Option<&Label>> =
                (0..3).map(|r| lookup.label(role_id(d, r), l)).collect();
            let (Some(s), Some(p), Some(o)) = (labels[0], labels[1], labels[2]) else {
                skipped += 1;
                continue;
            };
            let req = serde_json::json!({
                "custom_id": custom_id(&d.statement_id, lang),
                "method": "POST",
                "url": "/v1/chat/completions",
                "body": {
                    "model": model,
                    "messages": [
                        {"role": "user", "content": prompt(language_name(lang), &s.text, &p.text, &o.text)}
                    ]
                }
            });
            out.push(req.to_string());
        }
    }
    (out, skipped)
}

/// Read `extra.dump_date` from `extract.manifest.json` (None when missing or null).
pub fn dump_date(dir: &Path) -> Result<Option<String>> {
    let p = Manifest::path_in(dir, layout::EXTRACT);
    if !p.exists() {
        return Ok(None);
    }
    let m = Manifest::read(&p)?;
    Ok(m.extra
        .get("dump_date")
        .and_then(|v| v.as_str())
        .map(str::to_string))
}

/// Read `properties.parquet` (the extract stage's reader).
fn load_properties(path: &Path) -> Result<Vec<PropertyRecord>> {
    tables::read_properties(path)
}

/// Counts per strategy of exported rows.
pub fn strategy_counts(rows: &[Distortion]) -> BTreeMap<&'static str, u64> {
    let mut c: BTreeMap<&'static str, u64> =
        Strategy::ALL.iter().map(|s| (s.as_str(), 0)).collect();
    for d in rows {
        *c.entry(d.strategy.as_str()).or_default() += 1;
    }
    c
}

/// The Hugging Face dataset card.
pub fn dataset_card(
    rows: &[Distortion],
    languages: &[String],
    dump_date: Option<&str>,
    requests: usize,
) -> String {
    let counts = strategy_counts(rows);
    let originals = counts.get("ORG").copied().unwrap_or(0);
    let mut s = String::new();
    s.push_str("---\nlicense: cc0-1.0\nlanguage:\n");
    for l in languages {
        s.push_str(&format!("- {l}\n"));
    }
    s.push_str("task_categories:\n- text-classification\npretty_name: SWORD (rebuilt)\nconfigs:\n- config_name: default\n  data_files:\n  - split: test\n    path: data/*.parquet\n---\n\n");
    s.push_str("# SWORD: systematic Wikidata object-relation distortions (rebuilt)\n\n");
    s.push_str("True Wikidata triples (ORG) and four false distortions of each: SS/OS replace the subject/object by a random graph entity, PSS/POS by another subject/object of the same property. Every distortion passed exact existence checks (any rank, symmetric, inverse, transitive, multi-valued) against the dump.\n\n");
    s.push_str(&format!(
        "- format version: {SWORD_FORMAT_VERSION}\n- dump date: {}\n- originals: {originals}\n- statements: {}\n- translation requests: {requests}\n- languages: {}\n\n",
        dump_date.unwrap_or("unknown"),
        rows.len(),
        languages.join(", ")
    ));
    s.push_str("| strategy | statements | label |\n|---|---:|---|\n");
    for st in Strategy::ALL {
        s.push_str(&format!(
            "| {} | {} | {} |\n",
            st.as_str(),
            counts.get(st.as_str()).copied().unwrap_or(0),
            st == Strategy::ORG
        ));
    }
    s.push_str("\nColumns: see the `sword` README, section \"Distortions and export\". Wikidata content is CC0.\n");
    s
}

/// The warning that heads the report (and the dataset card) of a SWORD built from a dump that ends early.
pub const INCOMPLETE_WARNING: &str = "> **Incomplete build.** This SWORD was built from a dump that ends early \
(extract `--allow-truncated`): entities and statements past the cut are missing. Do not publish or compare it \
as a whole benchmark; `sword.parquet` carries the key-value metadata `sword.complete = false`.";

/// Put [`INCOMPLETE_WARNING`] at the top of the report (`rel` in the run folder `run`).
fn mark_report_incomplete(run: &RunDir, rel: &str) -> Result<()> {
    let path = run.path(rel);
    let text = std::fs::read_to_string(&path).at(&path)?;
    run.write(rel, |w| {
        w.write_all(INCOMPLETE_WARNING.as_bytes())?;
        w.write_all(b"\n\n")?;
        w.write_all(text.as_bytes())
    })
}

/// Everything export writes, from typed values, into the run folder `run` (and the `--hf` folder, outside
/// it). An incomplete build (`manifest.complete == false`) is marked in `sword.parquet`, the report and the
/// dataset card.
pub fn write_all(
    run: &RunDir,
    rows: &[Distortion],
    lookup: &EntityLookup,
    dump_date: Option<&str>,
    distort_manifest: Option<&Manifest>,
    cfg: &ExportConfig,
    manifest: &mut Manifest,
) -> Result<()> {
    let dest = run.path(SWORD.file);
    let complete = manifest.complete;
    // The tags of the builds the statements come from (distort's manifest), kept with the benchmark so that a
    // later carry never draws ids of its lineage again.
    let lineage: Vec<String> = distort_manifest
        .and_then(|m| m.extra.get("lineage"))
        .and_then(|v| v.as_array())
        .map(|v| {
            v.iter()
                .filter_map(|t| t.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default();
    let mut f = run.create(SWORD.file)?;
    write_sword_marked(&mut f, rows, lookup, dump_date, complete, &lineage, &dest)?;
    f.commit()?;
    let (requests, skipped) = translation_requests(rows, lookup, &cfg.model);
    run.write(TRANSLATION_REQUESTS.file, |w| {
        for r in &requests {
            w.write_all(r.as_bytes())?;
            w.write_all(b"\n")?;
        }
        Ok(())
    })?;
    let summary = report::write_report(run, "report", rows, distort_manifest, lookup)?;
    if !complete {
        mark_report_incomplete(run, layout::REPORT_MD.file)?;
    }
    for (k, v) in strategy_counts(rows) {
        manifest.counts.insert(format!("rows_{k}"), v);
    }
    manifest.counts.insert("rows".into(), rows.len() as u64);
    manifest
        .counts
        .insert("translation_requests".into(), requests.len() as u64);
    manifest
        .rejects
        .insert("translation_request_missing_label".into(), skipped);
    let mut missing_labels = 0u64;
    for d in rows {
        for r in 0..3 {
            for l in 0..lookup.languages.len() {
                if lookup.label(role_id(d, r), l).is_none() {
                    missing_labels += 1;
                }
            }
        }
    }
    manifest
        .counts
        .insert("null_label_cells".into(), missing_labels);
    if let Some(hf) = &cfg.hf {
        let data = hf.join("data");
        store::ensure_dir(&data)?;
        store::write_atomic(data.join("test-00000-of-00001.parquet"), |w| {
            std::io::copy(&mut std::fs::File::open(&dest)?, w).map(|_| ())
        })?;
        let mut card = dataset_card(rows, &lookup.languages, dump_date, requests.len());
        if !complete {
            card = card.replacen("# SWORD", &format!("{INCOMPLETE_WARNING}\n\n# SWORD"), 1);
        }
        store::write_atomic(hf.join("README.md"), |w| w.write_all(card.as_bytes()))?;
        manifest.counts.insert("hf_files".into(), 2);
    }
    manifest.extra = serde_json::json!({
        "format_version": SWORD_FORMAT_VERSION,
        "languages": lookup.languages,
        "dump_date": dump_date,
        "model": cfg.model,
        "property_based_more_similar": summary.property_based_more_similar,
        "mean_diff_pss_ss": summary.mean_diff_pss_ss,
        "mean_diff_pos_os": summary.mean_diff_pos_os,
    });
    Ok(())
}

/// The export stage: entities, properties and distortions → `sword.parquet`, the translation requests, the
/// report (and the Hugging Face layout with `--hf`).
#[derive(Clone, Copy, Debug, Default)]
pub struct ExportStage;

impl Stage for ExportStage {
    const NAME: &'static str = layout::EXPORT;
    type Settings = ExportConfig;
    type Args = NoSettings;
    type Outcome = ();

    const READS: &'static [Input] = &[
        Input::Vouched(ENTITIES),
        Input::Vouched(PROPERTIES),
        Input::Vouched(DISTORTIONS),
    ];

    const WRITES: &'static [Artifact] = &EXPORT_OUTPUTS;

    fn run(&self, cx: &mut Context, cfg: &ExportConfig, _: &NoSettings) -> Result<()> {
        let dir = cx.dir().to_path_buf();
        let rows = read_distortions_file(&cx.path(&DISTORTIONS))?;
        // Only the entities the rows name (and every property, for the report's tables) are kept: the lookup
        // grows with the benchmark, not with the dump.
        let wanted: std::collections::HashSet<EntityId> = rows
            .iter()
            .flat_map(|d| {
                let replaced = [d.original_entity, d.replacement_entity];
                (0..3)
                    .map(move |r| role_id(d, r))
                    .chain(replaced.into_iter().flatten().map(EntityId::Item))
            })
            .collect();
        let entities_path = cx.path(&ENTITIES);
        let f = std::fs::File::open(&entities_path).at(&entities_path)?;
        let (languages, entities) = tables::read_entities_where(f, &entities_path, 8192, |id| {
            matches!(id, EntityId::Property(_)) || wanted.contains(&id)
        })?;
        drop(wanted);
        let properties = load_properties(&cx.path(&PROPERTIES))?;
        let dm_path = Manifest::path_in(&dir, layout::DISTORT);
        let dm = if dm_path.exists() {
            Some(Manifest::read(&dm_path)?)
        } else {
            None
        };
        let date = dump_date(&dir)?;
        let incomplete = cx.inputs_incomplete();
        if !incomplete.is_empty() {
            cx.manifest().complete = false;
            crate::core::progress::log(format!(
                "export: {} come(s) from an incomplete run (a dump that ends early): sword.parquet and the \
                 report are marked incomplete",
                incomplete.join(", ")
            ));
        }
        let lookup = EntityLookup::new(languages, entities, properties);
        let run = cx.run_dir().clone();
        write_all(
            &run,
            &rows,
            &lookup,
            date.as_deref(),
            dm.as_ref(),
            cfg,
            cx.manifest(),
        )
    }

    fn summary(&self, _: &Path, m: &Manifest) -> String {
        format!(
            "export: {} statements, {} translation requests",
            m.count("rows"),
            m.count("translation_requests")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::ids::Pid;
    use crate::core::records::{statement_id, EntityRecord};

    fn lab(text: &str) -> crate::core::records::Label {
        crate::core::records::Label {
            text: text.to_string(),
            from_mul: false,
        }
    }

    /// A run in French and English: P36 and Q142 are entities with labels, P17 is labelled only through
    /// `properties.parquet`, P999 has a French label only, Q7 has no record at all.
    fn lookup() -> EntityLookup {
        use crate::core::ids::{Pid, Qid};
        use crate::core::records::{EntityRecord, PropertyRecord};
        let ent = |id: EntityId, fr: &str, en: &str| EntityRecord {
            id,
            labels: vec![lab(fr), lab(en)],
            descriptions: vec![None, None],
            sitelinks: 0,
            lastrevid: None,
            modified: None,
        };
        let prop = |id: u64, labels: Vec<Option<crate::core::records::Label>>| PropertyRecord {
            id: Pid(id),
            datatype: "wikibase-item".into(),
            labels,
            transitive: false,
            symmetric: false,
            inverse: vec![],
        };
        EntityLookup::new(
            vec!["fr".into(), "en".into()],
            vec![
                ent(EntityId::Property(Pid(36)), "capitale", "capital"),
                ent(EntityId::Item(Qid(142)), "France", "France"),
            ],
            vec![
                prop(17, vec![Some(lab("pays")), Some(lab("country"))]),
                prop(999, vec![Some(lab("seulement en français")), None]),
                prop(5, vec![None, Some(lab("a|b"))]),
            ],
        )
    }

    #[test]
    fn english_labels_come_from_entities_then_properties_and_need_english_in_the_run() {
        use crate::core::ids::{Pid, Qid};
        let l = lookup();
        assert_eq!(
            l.english_label(EntityId::Property(Pid(36))),
            Some("capital")
        );
        assert_eq!(l.english_label(EntityId::Item(Qid(142))), Some("France"));
        // Labelled only through properties.parquet.
        assert_eq!(
            l.english_label(EntityId::Property(Pid(17))),
            Some("country")
        );
        // A French label only, or no record at all.
        assert_eq!(l.english_label(EntityId::Property(Pid(999))), None);
        assert_eq!(l.english_label(EntityId::Item(Qid(7))), None);
        // A run without English.
        let no_en = EntityLookup::new(vec!["fr".into()], vec![], vec![]);
        assert_eq!(no_en.english_label(EntityId::Property(Pid(36))), None);
    }

    use crate::core::ids::Qid;
    use crate::core::records::Rank;

    fn rec(id: EntityId, name: &str, langs: usize) -> EntityRecord {
        EntityRecord {
            id,
            labels: (0..langs)
                .map(|l| Label {
                    text: format!("{name}-{l}"),
                    from_mul: l == 1,
                })
                .collect(),
            descriptions: (0..langs)
                .map(|l| (l == 0).then(|| format!("d {name}")))
                .collect(),
            sitelinks: 3,
            lastrevid: None,
            modified: None,
        }
    }

    fn row(strategy: Strategy) -> Distortion {
        let t = crate::core::records::Triple {
            subject: Qid(1),
            property: Pid(2),
            object: Qid(3),
            rank: Rank::Normal,
            statement_id: String::new(),
        };
        Distortion {
            statement_id: statement_id(0, strategy),
            strategy,
            ..Distortion::original(0, &t)
        }
    }

    #[test]
    fn requests_use_labels_in_each_language() {
        let langs: Vec<String> = vec!["en".into(), "ko".into()];
        let lookup = EntityLookup::new(
            langs,
            vec![
                rec(EntityId::Item(Qid(1)), "S", 2),
                rec(EntityId::Property(Pid(2)), "P", 2),
                rec(EntityId::Item(Qid(3)), "O", 2),
            ],
            vec![],
        );
        let (reqs, skipped) = translation_requests(&[row(Strategy::ORG)], &lookup, "m");
        assert_eq!(skipped, 0);
        assert_eq!(reqs.len(), 2);
        let v: serde_json::Value = serde_json::from_str(&reqs[1]).unwrap();
        assert_eq!(v["custom_id"], "000000-ORG:ko");
        assert_eq!(v["url"], "/v1/chat/completions");
        assert_eq!(
            v["body"]["messages"][0]["content"],
            "You are a Korean language writing expert. Generate one sentence for this input triple: [S-1, P-1, O-1]"
        );
        assert_eq!(split_custom_id("000000-ORG:ko"), Some(("000000-ORG", "ko")));
    }

    #[test]
    fn sword_parquet_has_the_schema_columns() {
        let langs: Vec<String> = DEFAULT_LANGUAGES.iter().map(|s| s.to_string()).collect();
        let schema = sword_schema(&langs);
        // 16 fixed (falsity the last) + per role (8 × 2 labels + 8 descriptions + sitelinks) + dump_date
        assert_eq!(schema.fields().len(), 16 + 3 * (16 + 8 + 1) + 1);
        let lookup = EntityLookup::new(langs, vec![rec(EntityId::Item(Qid(1)), "S", 8)], vec![]);
        let bytes = write_sword(
            Vec::new(),
            &[row(Strategy::ORG), row(Strategy::SS)],
            &lookup,
            Some("2015-11-09"),
            Path::new("mem"),
        )
        .unwrap();
        let batches = tables::read_batches(bytes::Bytes::from(bytes), Path::new("mem")).unwrap();
        assert_eq!(batches[0].num_rows(), 2);
        let l = tables::string_column(&batches[0], "subject_label_fr", Path::new("m")).unwrap();
        assert_eq!(l.value(0), "S-1");
        let o = tables::string_column(&batches[0], "object_label_fr", Path::new("m")).unwrap();
        assert!(arrow_array::Array::is_null(o, 0));
    }
}
