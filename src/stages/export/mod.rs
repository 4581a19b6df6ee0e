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

pub mod report;

use crate::core::error::{Error, IoContext, Result};
use crate::core::ids::{EntityId, Pid};
use crate::core::records::{EntityRecord, Label, PropertyRecord};
use crate::stages::contract::{Context, Input, NoSettings, Stage};
use crate::stages::distort::{self, Distortion, Strategy};
use crate::store::layout::{
    self, Artifact, DISTORTIONS, ENTITIES, EXPORT_OUTPUTS, PROPERTIES, SWORD, TRANSLATION_REQUESTS,
};
use crate::store::tables;
use crate::store::{self, Manifest};
use arrow_array::{ArrayRef, BooleanArray, RecordBatch, StringArray, UInt32Array};
use arrow_schema::{DataType, Field, Schema};
use parquet::arrow::ArrowWriter;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Version of the `sword.parquet` layout. Bump on any change of column names, types, order or meaning.
pub const SWORD_FORMAT_VERSION: u32 = 1;

/// The paper's eight languages, in column order.
pub const DEFAULT_LANGUAGES: [&str; 8] = ["en", "fr", "de", "es", "it", "pt", "ko", "ja"];

/// The three roles of a statement, in column order.
pub const ROLES: [&str; 3] = ["subject", "property", "object"];

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

/// English name of a language code, as used in the generation prompt ("You are a French language ...").
pub fn language_name(code: &str) -> &str {
    match code {
        "en" => "English",
        "fr" => "French",
        "de" => "German",
        "es" => "Spanish",
        "it" => "Italian",
        "pt" => "Portuguese",
        "ko" => "Korean",
        "ja" => "Japanese",
        "zh" => "Chinese",
        "ru" => "Russian",
        "ar" => "Arabic",
        "nl" => "Dutch",
        other => other,
    }
}

/// Labels, descriptions and sitelinks of the entities a run exports.
#[derive(Clone, Debug, Default)]
pub struct EntityLookup {
    /// Language codes, in the order of `EntityRecord::labels`.
    pub languages: Vec<String>,
    entities: HashMap<EntityId, EntityRecord>,
    properties: HashMap<Pid, PropertyRecord>,
}

impl report::EnglishLabels for EntityLookup {
    fn english_label(&self, id: EntityId) -> Option<&str> {
        EntityLookup::english_label(self, id)
    }
}

impl EntityLookup {
    /// Index entity and property records. Property labels come from `entities` when the property is there,
    /// otherwise from `properties.parquet`'s labels.
    pub fn new(
        languages: Vec<String>,
        entities: Vec<EntityRecord>,
        properties: Vec<PropertyRecord>,
    ) -> EntityLookup {
        EntityLookup {
            languages,
            entities: entities.into_iter().map(|e| (e.id, e)).collect(),
            properties: properties.into_iter().map(|p| (p.id, p)).collect(),
        }
    }

    /// Label of `id` in language index `l`.
    pub fn label(&self, id: EntityId, l: usize) -> Option<&Label> {
        if let Some(e) = self.entities.get(&id) {
            return e.labels.get(l);
        }
        match id {
            EntityId::Property(p) => self
                .properties
                .get(&p)
                .and_then(|r| r.labels.get(l))
                .and_then(Option::as_ref),
            EntityId::Item(_) => None,
        }
    }

    /// English (`en`) label of `id`, if the run has English and `id` a label in it.
    pub fn english_label(&self, id: EntityId) -> Option<&str> {
        let l = self.languages.iter().position(|x| x == "en")?;
        self.label(id, l).map(|x| x.text.as_str())
    }

    /// Description of `id` in language index `l`.
    pub fn description(&self, id: EntityId, l: usize) -> Option<&str> {
        self.entities
            .get(&id)
            .and_then(|e| e.descriptions.get(l))
            .and_then(|d| d.as_deref())
    }

    /// Sitelink count of `id`.
    pub fn sitelinks(&self, id: EntityId) -> Option<u32> {
        self.entities.get(&id).map(|e| e.sitelinks)
    }
}

fn role_id(d: &Distortion, role: usize) -> EntityId {
    match role {
        0 => EntityId::Item(d.subject),
        1 => EntityId::Property(d.property),
        _ => EntityId::Item(d.object),
    }
}

/// The `sword.parquet` schema for the given languages (the default eight give the golden schema).
pub fn sword_schema(languages: &[String]) -> Arc<Schema> {
    let mut fields = vec![
        Field::new("statement_id", DataType::Utf8, false),
        Field::new("original_id", DataType::UInt32, false),
        Field::new("strategy", DataType::Utf8, false),
        Field::new("label", DataType::Boolean, false),
        Field::new("subject", DataType::Utf8, false),
        Field::new("property", DataType::Utf8, false),
        Field::new("object", DataType::Utf8, false),
        Field::new("replaced_role", DataType::Utf8, true),
        Field::new("original_entity", DataType::Utf8, true),
        Field::new("replacement_entity", DataType::Utf8, true),
        Field::new("cosine", DataType::Float32, true),
        Field::new("cosine_centred", DataType::Float32, true),
        Field::new("attempts", DataType::UInt32, false),
        Field::new("original_rank", DataType::Utf8, false),
        Field::new("original_statement_id", DataType::Utf8, false),
    ];
    for r in ROLES {
        for l in languages {
            fields.push(Field::new(format!("{r}_label_{l}"), DataType::Utf8, true));
            fields.push(Field::new(
                format!("{r}_label_{l}_from_mul"),
                DataType::Boolean,
                true,
            ));
        }
        for l in languages {
            fields.push(Field::new(
                format!("{r}_description_{l}"),
                DataType::Utf8,
                true,
            ));
        }
        fields.push(Field::new(format!("{r}_sitelinks"), DataType::UInt32, true));
    }
    fields.push(Field::new("dump_date", DataType::Utf8, true));
    let mut md = HashMap::new();
    md.insert(
        "sword.format_version".to_string(),
        SWORD_FORMAT_VERSION.to_string(),
    );
    md.insert("sword.languages".to_string(), languages.join(","));
    Arc::new(Schema::new_with_metadata(fields, md))
}

/// One line per column: `name<TAB>type<TAB>nullable|required`, the format of the golden schema file.
pub fn schema_text(schema: &Schema) -> String {
    let mut s = format!("# sword.parquet format version {SWORD_FORMAT_VERSION}\n");
    for f in schema.fields() {
        s.push_str(&format!(
            "{}\t{}\t{}\n",
            f.name(),
            f.data_type(),
            if f.is_nullable() {
                "nullable"
            } else {
                "required"
            }
        ));
    }
    s
}

fn batch_for(
    chunk: &[Distortion],
    lookup: &EntityLookup,
    dump_date: Option<&str>,
    schema: &Arc<Schema>,
    path: &Path,
) -> Result<RecordBatch> {
    let mut cols: Vec<ArrayRef> = crate::stages::distort::distortion_columns(chunk);
    for r in 0..ROLES.len() {
        for l in 0..lookup.languages.len() {
            cols.push(Arc::new(
                chunk
                    .iter()
                    .map(|d| lookup.label(role_id(d, r), l).map(|x| x.text.as_str()))
                    .collect::<StringArray>(),
            ));
            cols.push(Arc::new(
                chunk
                    .iter()
                    .map(|d| lookup.label(role_id(d, r), l).map(|x| x.from_mul))
                    .collect::<BooleanArray>(),
            ));
        }
        for l in 0..lookup.languages.len() {
            cols.push(Arc::new(
                chunk
                    .iter()
                    .map(|d| lookup.description(role_id(d, r), l))
                    .collect::<StringArray>(),
            ));
        }
        cols.push(Arc::new(
            chunk
                .iter()
                .map(|d| lookup.sitelinks(role_id(d, r)))
                .collect::<UInt32Array>(),
        ));
    }
    cols.push(Arc::new(
        chunk.iter().map(|_| dump_date).collect::<StringArray>(),
    ));
    RecordBatch::try_new(schema.clone(), cols).map_err(|e| Error::parquet(path, e))
}

/// Write `sword.parquet` rows to any writer.
pub fn write_sword<W: Write + Send>(
    w: W,
    rows: &[Distortion],
    lookup: &EntityLookup,
    dump_date: Option<&str>,
    path: &Path,
) -> Result<W> {
    write_sword_marked(w, rows, lookup, dump_date, true, path)
}

/// [`write_sword`], marking an incomplete build (`complete == false`) with the key-value metadata
/// `sword.complete = false` (in the file's key-value metadata and in the Arrow schema's metadata).
pub fn write_sword_marked<W: Write + Send>(
    w: W,
    rows: &[Distortion],
    lookup: &EntityLookup,
    dump_date: Option<&str>,
    complete: bool,
    path: &Path,
) -> Result<W> {
    let mut schema = sword_schema(&lookup.languages);
    if !complete {
        let mut md = schema.metadata().clone();
        md.insert(tables::COMPLETE_KEY.to_string(), "false".to_string());
        schema = Arc::new(schema.as_ref().clone().with_metadata(md));
    }
    let mut writer = ArrowWriter::try_new(
        w,
        schema.clone(),
        Some(tables::writer_props_marked(complete)),
    )
    .map_err(|e| Error::parquet(path, e))?;
    for chunk in rows.chunks(tables::ROW_GROUP) {
        let batch = batch_for(chunk, lookup, dump_date, &schema, path)?;
        writer.write(&batch).map_err(|e| Error::parquet(path, e))?;
    }
    writer.into_inner().map_err(|e| Error::parquet(path, e))
}

/// `custom_id` of the translation request for a statement and a language: `<statement_id>:<lang>`.
pub fn custom_id(statement_id: &str, lang: &str) -> String {
    format!("{statement_id}:{lang}")
}

/// Split a `custom_id` back into (statement id, language).
pub fn split_custom_id(id: &str) -> Option<(&str, &str)> {
    id.rsplit_once(':')
        .filter(|(s, l)| !s.is_empty() && !l.is_empty())
}

/// The paper's generation prompt, as a template.
pub const DEFAULT_TEMPLATE: &str = "You are a {language} language writing expert. Generate one sentence for this input triple: [{subject}, {property}, {object}]";

/// Render a template: `{language}` (the English name of `lang`), `{subject}`, `{property}`, `{object}`.
/// One pass, so a label that itself contains `{object}` is not substituted again; other braces stay.
pub fn render(template: &str, lang: &str, labels: [&str; 3]) -> String {
    let mut out = String::with_capacity(template.len() + 64);
    let mut rest = template;
    while let Some(i) = rest.find('{') {
        out.push_str(&rest[..i]);
        let tail = &rest[i..];
        let hit = [
            ("{language}", language_name(lang)),
            ("{subject}", labels[0]),
            ("{property}", labels[1]),
            ("{object}", labels[2]),
        ]
        .into_iter()
        .find(|(k, _)| tail.starts_with(k));
        match hit {
            Some((k, v)) => {
                out.push_str(v);
                rest = &tail[k.len()..];
            }
            None => {
                out.push('{');
                rest = &tail[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// The paper's generation prompt.
pub fn prompt(language: &str, s: &str, p: &str, o: &str) -> String {
    format!(
        "You are a {language} language writing expert. Generate one sentence for this input triple: [{s}, {p}, {o}]"
    )
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

/// Put [`INCOMPLETE_WARNING`] at the top of the report.
fn mark_report_incomplete(path: &Path) -> Result<()> {
    let text = std::fs::read_to_string(path).at(path)?;
    store::write_atomic(path, |w| {
        w.write_all(INCOMPLETE_WARNING.as_bytes())?;
        w.write_all(b"\n\n")?;
        w.write_all(text.as_bytes())
    })
}

/// Everything export writes, from typed values, to `dir`. An incomplete build (`manifest.complete == false`)
/// is marked in `sword.parquet`, the report and the dataset card.
pub fn write_all(
    dir: &Path,
    rows: &[Distortion],
    lookup: &EntityLookup,
    dump_date: Option<&str>,
    distort_manifest: Option<&Manifest>,
    cfg: &ExportConfig,
    manifest: &mut Manifest,
) -> Result<()> {
    let dest = dir.join(SWORD.file);
    let complete = manifest.complete;
    let mut f = store::AtomicFile::create(&dest)?;
    write_sword_marked(&mut f, rows, lookup, dump_date, complete, &dest)?;
    f.commit()?;
    let (requests, skipped) = translation_requests(rows, lookup, &cfg.model);
    store::write_atomic(dir.join(TRANSLATION_REQUESTS.file), |w| {
        for r in &requests {
            w.write_all(r.as_bytes())?;
            w.write_all(b"\n")?;
        }
        Ok(())
    })?;
    let report_dir = dir.join("report");
    store::ensure_dir(&report_dir)?;
    let summary = report::write_report(&report_dir, rows, distort_manifest, lookup)?;
    if !complete {
        mark_report_incomplete(&report_dir.join("report.md"))?;
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

    fn inputs(&self, _: &ExportConfig, _: &NoSettings) -> Vec<Input> {
        vec![
            Input::Vouched(ENTITIES),
            Input::Vouched(PROPERTIES),
            Input::Vouched(DISTORTIONS),
        ]
    }

    fn outputs(&self, _: &ExportConfig, _: &NoSettings) -> Vec<Artifact> {
        EXPORT_OUTPUTS.to_vec()
    }

    fn run(&self, cx: &mut Context, cfg: &ExportConfig, _: &NoSettings) -> Result<()> {
        let dir = cx.dir().to_path_buf();
        let rows = distort::read_distortions_file(&cx.path(&DISTORTIONS))?;
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
        write_all(
            &dir,
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
            m.counts.get("rows").copied().unwrap_or(0),
            m.counts.get("translation_requests").copied().unwrap_or(0)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        Distortion {
            statement_id: distort::statement_id(0, strategy),
            original_id: 0,
            strategy,
            subject: Qid(1),
            property: Pid(2),
            object: Qid(3),
            replaced_role: None,
            original_entity: None,
            replacement_entity: None,
            cosine: None,
            cosine_centred: None,
            attempts: 0,
            original_rank: Rank::Normal,
            original_statement_id: String::new(),
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
        // 15 fixed + per role (8 × 2 labels + 8 descriptions + sitelinks) + dump_date
        assert_eq!(schema.fields().len(), 15 + 3 * (16 + 8 + 1) + 1);
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
