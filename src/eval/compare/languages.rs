//! Where the languages disagree: every answer as tidy data (`answers.parquet`), the exact sets of languages a
//! statement is answered wrongly in (`wrong_languages`, drawn UpSet-style), the statements right in some
//! languages and wrong in others (`split`), and the sentences to blame (`suspects.parquet`).
//!
//! **Wrong sets.** For a (model, variant), a statement asked in every language of the model has a *wrong set*
//! W: the languages whose answer was wrong (no verdict counts as wrong, as everywhere). `wrong_languages` is,
//! per strategy, the share of those statements whose wrong set is exactly W, one row per W that occurs
//! (`language` = W's codes in the order en fr de es it pt ko ja joined by `+`, empty for W = ∅), so the rows
//! of a (model, variant, strategy) sum to 1. `split` is the share with W neither empty nor every language,
//! with the percentile bootstrap interval of the other measures (originals resampled as `eval score` does).
//!
//! **Suspects.** A pair (statement, language L) is suspect when m ≥ 3 (model, variant) groups were asked the
//! statement in all 8 languages, at least ⌈2m/3⌉ of them answered wrongly in L, and in every other language
//! at least ⌈2m/3⌉ answered correctly: a sentence most models fail in one language only points at the
//! translation before it points at the models. Since ⌈2m/3⌉ > m/2, a statement has at most one suspect
//! language. `suspects.parquet` lists them, most clearly failed first; `sword translate --only` asks those
//! pairs again (docs/evaluation-chain.md).
//!
//! Everything here is computed from [`Data`] (the bit masks of each answer) and, for the sentences, the run's
//! `statements_text.parquet` (with `--benchmark`): nothing depends on the thread count.

use super::draw::*;
use super::figures::Figure;
use super::input::{Data, Group};
use super::measures::{sum_units, units, Boot, Row};
use super::report::{esc, md_cell, pct};
use super::table::{variants_and_models, Key, Lookup};
use crate::core::error::{Error, IoContext, Result};
use crate::eval::stats;
use crate::eval::suites::sword::{LANGUAGES, STRATEGIES};
use arrow_array::builder::{BooleanBuilder, Int64Builder, StringBuilder};
use arrow_array::{Array, ArrayRef, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ProjectionMask;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, VPos};
use rayon::prelude::*;
use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

const NL: usize = 8;
const NS: usize = 5;
/// Every SWORD language (bit mask).
pub const ALL_LANGUAGES: u8 = 0xFF;
/// The fewest (model, variant) groups behind a suspect.
pub const MIN_MODELS: u32 = 3;
/// Suspects shown in the report (the rest are in suspects.parquet).
pub const REPORT_SUSPECTS: usize = 50;
/// Wrong sets drawn per model in the UpSet figure.
pub const UPSET_SETS: usize = 15;
/// Rows per record batch of answers.parquet (the writer's memory stays bounded at any size).
const BATCH_ROWS: usize = 1 << 17;

/// A wrong set's name: its languages' codes in SWORD's order joined by `+` (empty for none).
pub fn set_name(mask: u8) -> String {
    (0..NL)
        .filter(|l| mask >> l & 1 == 1)
        .map(|l| LANGUAGES[l])
        .collect::<Vec<_>>()
        .join("+")
}

/// The mask of a wrong set's name (None when a code is not SWORD's).
pub fn parse_set(name: &str) -> Option<u8> {
    if name.is_empty() {
        return Some(0);
    }
    name.split('+').try_fold(0u8, |m, c| {
        LANGUAGES.iter().position(|l| *l == c).map(|l| m | 1 << l)
    })
}

/// ⌈2m/3⌉: how many of m groups must agree.
pub fn threshold(m: u32) -> u32 {
    (2 * m).div_ceil(3)
}

/// The languages a group was asked in (bit mask).
fn languages_of(g: &Group) -> u8 {
    g.answered.iter().fold(0, |m, a| m | a.asked)
}

fn base(measure: &str, g: &Group) -> Row {
    Row {
        measure: measure.to_string(),
        model: Some(g.model.clone()),
        variant: Some(g.variant.clone()),
        ..Row::default()
    }
}

/// Per original: per strategy, the statements asked in every language of the group and those split.
type SplitUnit = [u32; 2 * NS];

fn split_units(g: &Group, data: &Data, n_units: usize, unit_of: &[u32]) -> Vec<SplitUnit> {
    let all = languages_of(g);
    let mut f = vec![[0u32; 2 * NS]; n_units];
    for (a, &u) in g.answered.iter().zip(unit_of) {
        if a.asked != all {
            continue;
        }
        let s = data.statements[a.statement as usize].strategy as usize;
        let wrong = all & !a.correct;
        f[u as usize][s] += 1;
        f[u as usize][NS + s] += u32::from(wrong != 0 && wrong != all);
    }
    f
}

fn split_shares(sums: &SplitUnit) -> [f64; NS] {
    std::array::from_fn(|s| {
        if sums[s] == 0 {
            f64::NAN
        } else {
            f64::from(sums[NS + s]) / f64::from(sums[s])
        }
    })
}

/// The `wrong_languages` rows (every group, in the groups' order; per strategy the sets by size, then by
/// mask) followed by the `split` rows (per group and strategy, with `b` bootstrap replicates drawn from
/// (`seed`, r) as every other interval).
pub fn rows(data: &Data, b: usize, seed: u64) -> Vec<Row> {
    let mut rows = Vec::new();
    for g in &data.groups {
        let all = languages_of(g);
        let mut by_set = vec![[0u32; 256]; NS];
        let mut total = [0u32; NS];
        for a in g.answered.iter().filter(|a| a.asked == all) {
            let s = data.statements[a.statement as usize].strategy as usize;
            total[s] += 1;
            by_set[s][usize::from(all & !a.correct)] += 1;
        }
        let mut masks: Vec<u8> = (0..=255u8).collect();
        masks.sort_by_key(|m| (m.count_ones(), *m));
        for s in 0..NS {
            for &m in &masks {
                let c = by_set[s][usize::from(m)];
                if c == 0 {
                    continue;
                }
                rows.push(Row {
                    language: Some(set_name(m)),
                    strategy: Some(STRATEGIES[s].to_string()),
                    value: Some(f64::from(c) / f64::from(total[s])),
                    n: Some(i64::from(total[s])),
                    ..base("wrong_languages", g)
                });
            }
        }
    }
    let prepared: Vec<Vec<SplitUnit>> = data
        .groups
        .par_iter()
        .map(|g| {
            let (n_units, unit_of) = units(g, data);
            split_units(g, data, n_units, &unit_of)
        })
        .collect();
    let tasks: Vec<(usize, usize)> = (0..data.groups.len())
        .flat_map(|g| (0..b).map(move |r| (g, r)))
        .collect();
    let reps: Vec<[f64; NS]> = tasks
        .par_iter()
        .map(|&(g, r)| {
            let f = &prepared[g];
            split_shares(&sum_units(
                f,
                stats::bootstrap_indices(f.len(), seed, r).into_iter(),
            ))
        })
        .collect();
    for (gi, (g, f)) in data.groups.iter().zip(&prepared).enumerate() {
        let boot = Boot::of(f, split_shares, reps[gi * b..(gi + 1) * b].iter());
        for (s, strategy) in STRATEGIES.iter().enumerate().take(NS) {
            rows.push(Row {
                strategy: Some(strategy.to_string()),
                ..boot.row("split", g, s, boot.sums[s])
            });
        }
    }
    rows
}

/// One suspect pair: `wrong` of `models` groups answered the statement wrongly in `language`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Suspect {
    /// Index into [`Data::statements`].
    pub statement: u32,
    /// Index into [`LANGUAGES`].
    pub language: u8,
    pub models: u32,
    pub wrong: u32,
}

/// Every suspect pair (see the module's rule), the most clearly failed first: by the share of groups wrong
/// (descending), then by the number of groups (descending), then by statement id and language.
pub fn suspects(data: &Data) -> Vec<Suspect> {
    let n = data.statements.len();
    let mut models = vec![0u32; n];
    let mut wrong = vec![[0u32; NL]; n];
    for g in &data.groups {
        for a in g.answered.iter().filter(|a| a.asked == ALL_LANGUAGES) {
            let s = a.statement as usize;
            models[s] += 1;
            for (l, w) in wrong[s].iter_mut().enumerate() {
                *w += u32::from(a.correct >> l & 1 == 0);
            }
        }
    }
    let mut out = Vec::new();
    for s in 0..n {
        let m = models[s];
        if m < MIN_MODELS {
            continue;
        }
        let t = threshold(m);
        for l in 0..NL {
            let others_right = (0..NL).filter(|&o| o != l).all(|o| m - wrong[s][o] >= t);
            if wrong[s][l] >= t && others_right {
                out.push(Suspect {
                    statement: s as u32,
                    language: l as u8,
                    models: m,
                    wrong: wrong[s][l],
                });
            }
        }
    }
    out.sort_by(|a, b| {
        (u64::from(b.wrong) * u64::from(a.models))
            .cmp(&(u64::from(a.wrong) * u64::from(b.models)))
            .then(b.models.cmp(&a.models))
            .then_with(|| {
                data.statements[a.statement as usize]
                    .id
                    .cmp(&data.statements[b.statement as usize].id)
            })
            .then(a.language.cmp(&b.language))
    });
    out
}

/// The sentences asked, from a run's `statements_text.parquet`: per answered statement, its text in each
/// language (None where the file has none).
#[derive(Clone, Debug, Default)]
pub struct Texts {
    pub path: PathBuf,
    by_statement: Vec<[Option<Box<str>>; NL]>,
}

impl Texts {
    pub fn get(&self, statement: u32, language: usize) -> Option<&str> {
        self.by_statement
            .get(statement as usize)
            .and_then(|t| t[language].as_deref())
    }
}

/// `statements_text.parquet` beside the benchmark given (`--benchmark RUN` or `RUN/sword.parquet`).
pub fn texts_path(benchmark: &Path) -> PathBuf {
    let dir = if benchmark.is_dir() {
        benchmark
    } else {
        benchmark.parent().unwrap_or(Path::new("."))
    };
    dir.join(crate::store::layout::TEXTS_GENERATED.file)
}

/// The texts of `data`'s statements from `statements_text.parquet` beside the benchmark, when it is there.
/// Only the `statement_id`, `language` and `text` columns are read, batch by batch, and only answered
/// statements are kept. Exit 2 naming the file and row: a missing column, or a (statement, language) given
/// twice.
pub fn read_texts(data: &Data, benchmark: &Path) -> Result<Option<Texts>> {
    let path = texts_path(benchmark);
    if !path.is_file() {
        return Ok(None);
    }
    let f = std::fs::File::open(&path).at(&path)?;
    let builder =
        ParquetRecordBatchReaderBuilder::try_new(f).map_err(|e| Error::parquet(&path, e))?;
    let columns = ["statement_id", "language", "text"];
    for c in columns {
        if builder.schema().field_with_name(c).is_err() {
            return Err(Error::bad_input(
                &path,
                format!("no `{c}` column: not a statements_text.parquet"),
            ));
        }
    }
    let mask = ProjectionMask::columns(builder.parquet_schema(), columns);
    let reader = builder
        .with_projection(mask)
        .build()
        .map_err(|e| Error::parquet(&path, e))?;
    let index: HashMap<&str, u32> = data
        .statements
        .iter()
        .enumerate()
        .map(|(i, s)| (s.id.as_str(), i as u32))
        .collect();
    let mut by_statement: Vec<[Option<Box<str>>; NL]> = vec![Default::default(); index.len()];
    let mut row = 0u64;
    for batch in reader {
        let batch = batch.map_err(|e| Error::parquet(&path, e))?;
        let col = |name: &str| crate::store::tables::string_column(&batch, name, &path);
        let (sid, lang, text): (&StringArray, &StringArray, &StringArray) =
            (col("statement_id")?, col("language")?, col("text")?);
        for i in 0..batch.num_rows() {
            let at = row + i as u64;
            if sid.is_null(i) || lang.is_null(i) || text.is_null(i) {
                continue;
            }
            let (Some(&s), Some(l)) = (
                index.get(sid.value(i)),
                LANGUAGES.iter().position(|x| *x == lang.value(i)),
            ) else {
                continue;
            };
            let slot = &mut by_statement[s as usize][l];
            if slot.is_some() {
                return Err(Error::bad_input(
                    &path,
                    format!(
                        "row {at}: a second text of statement `{}` in `{}`",
                        sid.value(i),
                        lang.value(i)
                    ),
                ));
            }
            *slot = Some(text.value(i).into());
        }
        row += batch.num_rows() as u64;
    }
    Ok(Some(Texts { path, by_statement }))
}

/// Schema of `answers.parquet` (`text` only when the sentences are known).
pub fn answers_schema(with_text: bool) -> Arc<Schema> {
    let mut fields = vec![
        Field::new("model", DataType::Utf8, false),
        Field::new("variant", DataType::Utf8, false),
        Field::new("statement_id", DataType::Utf8, false),
        Field::new("original_id", DataType::Utf8, false),
        Field::new("strategy", DataType::Utf8, false),
        Field::new("label", DataType::Boolean, false),
        Field::new("language", DataType::Utf8, false),
        Field::new("verdict", DataType::Boolean, true),
        Field::new("correct", DataType::Boolean, false),
    ];
    if with_text {
        fields.push(Field::new("text", DataType::Utf8, true));
    }
    Arc::new(Schema::new(fields))
}

/// Column builders of one batch of answers.parquet.
struct AnswerBatch {
    text: [StringBuilder; 6],
    label: BooleanBuilder,
    verdict: BooleanBuilder,
    correct: BooleanBuilder,
    sentence: Option<StringBuilder>,
    len: usize,
}

impl AnswerBatch {
    fn new(with_text: bool) -> AnswerBatch {
        AnswerBatch {
            text: std::array::from_fn(|_| StringBuilder::new()),
            label: BooleanBuilder::new(),
            verdict: BooleanBuilder::new(),
            correct: BooleanBuilder::new(),
            sentence: with_text.then(StringBuilder::new),
            len: 0,
        }
    }

    fn finish(&mut self, schema: &Arc<Schema>, path: &Path) -> Result<RecordBatch> {
        let [model, variant, sid, orig, strategy, language] = &mut self.text;
        let mut cols: Vec<ArrayRef> = vec![
            Arc::new(model.finish()),
            Arc::new(variant.finish()),
            Arc::new(sid.finish()),
            Arc::new(orig.finish()),
            Arc::new(strategy.finish()),
            Arc::new(self.label.finish()),
            Arc::new(language.finish()),
            Arc::new(self.verdict.finish()),
            Arc::new(self.correct.finish()),
        ];
        if let Some(t) = &mut self.sentence {
            cols.push(Arc::new(t.finish()));
        }
        self.len = 0;
        RecordBatch::try_new(schema.clone(), cols).map_err(|e| Error::parquet(path, e))
    }
}

/// `answers.parquet` bytes: one row per (model, variant) × statement × language asked, groups in order
/// (model, variant), statements by id, languages in SWORD's order. `verdict` is the model's true/false (null
/// without one), `correct` whether it equals the label (an answer without a verdict is wrong).
pub fn answers_parquet(data: &Data, texts: Option<&Texts>, path: &Path) -> Result<Vec<u8>> {
    let schema = answers_schema(texts.is_some());
    let mut order: Vec<u32> = (0..data.statements.len() as u32).collect();
    order.sort_by(|a, b| {
        data.statements[*a as usize]
            .id
            .cmp(&data.statements[*b as usize].id)
    });
    let mut w = parquet::arrow::ArrowWriter::try_new(
        Vec::new(),
        schema.clone(),
        Some(crate::store::tables::writer_props()),
    )
    .map_err(|e| Error::parquet(path, e))?;
    let mut batch = AnswerBatch::new(texts.is_some());
    let mut at = vec![u32::MAX; data.statements.len()];
    for g in &data.groups {
        for (i, a) in g.answered.iter().enumerate() {
            at[a.statement as usize] = i as u32;
        }
        for &s in &order {
            let Some(a) = g.answered.get(at[s as usize] as usize) else {
                continue;
            };
            if a.statement != s {
                continue;
            }
            let st = &data.statements[s as usize];
            for l in (0..NL).filter(|l| a.asked >> l & 1 == 1) {
                let correct = a.correct >> l & 1 == 1;
                let [model, variant, sid, orig, strategy, language] = &mut batch.text;
                model.append_value(&g.model);
                variant.append_value(&g.variant);
                sid.append_value(&st.id);
                orig.append_value(&st.original);
                strategy.append_value(STRATEGIES[st.strategy as usize]);
                language.append_value(LANGUAGES[l]);
                batch.label.append_value(st.label);
                batch
                    .verdict
                    .append_option((a.unparsed >> l & 1 == 0).then_some(if correct {
                        st.label
                    } else {
                        !st.label
                    }));
                batch.correct.append_value(correct);
                if let (Some(t), Some(texts)) = (&mut batch.sentence, texts) {
                    t.append_option(texts.get(s, l));
                }
                batch.len += 1;
                if batch.len == BATCH_ROWS {
                    w.write(&batch.finish(&schema, path)?)
                        .map_err(|e| Error::parquet(path, e))?;
                }
            }
        }
        for a in &g.answered {
            at[a.statement as usize] = u32::MAX;
        }
    }
    if batch.len > 0 {
        w.write(&batch.finish(&schema, path)?)
            .map_err(|e| Error::parquet(path, e))?;
    }
    w.into_inner().map_err(|e| Error::parquet(path, e))
}

/// Schema of `suspects.parquet` (`text`, `text_en` only when the sentences are known).
pub fn suspects_schema(with_text: bool) -> Arc<Schema> {
    let mut fields = vec![
        Field::new("statement_id", DataType::Utf8, false),
        Field::new("strategy", DataType::Utf8, false),
        Field::new("language", DataType::Utf8, false),
        Field::new("models", DataType::Int64, false),
        Field::new("wrong", DataType::Int64, false),
    ];
    if with_text {
        fields.push(Field::new("text", DataType::Utf8, true));
        fields.push(Field::new("text_en", DataType::Utf8, true));
    }
    Arc::new(Schema::new(fields))
}

/// `suspects.parquet` bytes, in the order of [`suspects`].
pub fn suspects_parquet(
    data: &Data,
    suspects: &[Suspect],
    texts: Option<&Texts>,
    path: &Path,
) -> Result<Vec<u8>> {
    let schema = suspects_schema(texts.is_some());
    let st = |x: &Suspect| &data.statements[x.statement as usize];
    let mut cols: Vec<ArrayRef> = vec![
        Arc::new(
            suspects
                .iter()
                .map(|x| Some(st(x).id.as_str()))
                .collect::<StringArray>(),
        ),
        Arc::new(
            suspects
                .iter()
                .map(|x| Some(STRATEGIES[st(x).strategy as usize]))
                .collect::<StringArray>(),
        ),
        Arc::new(
            suspects
                .iter()
                .map(|x| Some(LANGUAGES[x.language as usize]))
                .collect::<StringArray>(),
        ),
    ];
    let counts: [fn(&Suspect) -> u32; 2] = [|x| x.models, |x| x.wrong];
    for f in counts {
        let mut b = Int64Builder::new();
        for x in suspects {
            b.append_value(i64::from(f(x)));
        }
        cols.push(Arc::new(b.finish()));
    }
    if let Some(t) = texts {
        cols.push(Arc::new(
            suspects
                .iter()
                .map(|x| t.get(x.statement, x.language as usize))
                .collect::<StringArray>(),
        ));
        cols.push(Arc::new(
            suspects
                .iter()
                .map(|x| t.get(x.statement, 0))
                .collect::<StringArray>(),
        ));
    }
    crate::eval::output::parquet_bytes(schema, cols, path)
}

/// A group's wrong sets from the rows: per strategy, (mask, share) and the strategy's n.
fn wrong_sets(rows: &[Row], variant: &str, model: &str) -> Vec<[(f64, i64); NS]> {
    let mut by_mask = vec![[(0.0, 0i64); NS]; 256];
    for r in rows.iter().filter(|r| {
        r.measure == "wrong_languages"
            && r.variant.as_deref() == Some(variant)
            && r.model.as_deref() == Some(model)
    }) {
        let (Some(m), Some(s)) = (
            r.language.as_deref().and_then(parse_set),
            r.strategy
                .as_deref()
                .and_then(|s| STRATEGIES.iter().position(|x| *x == s)),
        ) else {
            continue;
        };
        by_mask[usize::from(m)][s] = (r.value.unwrap_or(0.0), r.n.unwrap_or(0));
    }
    by_mask
}

/// The non-empty sets to draw, most frequent first (share pooled over the strategies: Σ count / Σ n), at
/// most [`UPSET_SETS`]: (mask, pooled share, share per strategy).
fn top_sets(by_mask: &[[(f64, i64); NS]]) -> Vec<(u8, f64, [f64; NS])> {
    // The strategies' n (the same on every set's row of a strategy).
    let mut n = [0i64; NS];
    for cells in by_mask {
        for (s, &(_, k)) in cells.iter().enumerate() {
            n[s] = n[s].max(k);
        }
    }
    let total: i64 = n.iter().sum();
    let mut sets: Vec<(u8, f64, [f64; NS])> = (1..=255u8)
        .filter_map(|m| {
            let cells = &by_mask[usize::from(m)];
            let count: f64 = cells.iter().map(|&(v, k)| (v * k as f64).round()).sum();
            (count > 0.0 && total > 0).then(|| (m, count / total as f64, cells.map(|(v, _)| v)))
        })
        .collect();
    sets.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    sets.truncate(UPSET_SETS);
    sets
}

/// A step for the share axis up to `max`: at most 6 ticks.
fn tick_step(max: f64) -> f64 {
    [0.01, 0.02, 0.05, 0.1, 0.2, 0.25]
        .into_iter()
        .find(|s| max / s <= 5.0 + 1e-9)
        .unwrap_or(0.25)
}

const UPSET_CAPTION: &str = "UpSet view of the failure signatures: each column is one exact set of languages that a statement (asked in every language of the model) was answered wrongly in, the 15 most frequent non-empty sets pooled over the strategies, most frequent first. Bars: share of each strategy's statements with exactly that wrong set (colour per strategy), the pooled share above; dots below: the languages in the set. A set of one language that most models share points at that language's sentences (see the suspects).";

/// One UpSet-style figure per (variant, model), drawn from the `wrong_languages` rows:
/// `upset_<variant>_<model>.svg` (names made safe for a file; a clash gets the model's index appended).
pub fn upset_figures(rows: &[Row]) -> Result<Vec<Figure>> {
    let mut out = Vec::new();
    for (variant, models) in variants_and_models(rows) {
        let mut used = std::collections::HashSet::new();
        for (i, model) in models.iter().enumerate() {
            let safe = crate::eval::output::safe_name(model);
            let mut file = format!(
                "upset_{}_{safe}.svg",
                crate::eval::output::safe_name(&variant)
            );
            if !used.insert(file.clone()) {
                file = format!(
                    "upset_{}_{safe}_{i}.svg",
                    crate::eval::output::safe_name(&variant)
                );
                used.insert(file.clone());
            }
            let sets = top_sets(&wrong_sets(rows, &variant, model));
            let title = format!("Languages wrong together — {model} — {variant}");
            let svg = upset_svg(&title, &sets)?;
            out.push(Figure {
                file,
                variant: variant.clone(),
                kind: "upset",
                title,
                caption: UPSET_CAPTION.to_string(),
                svg,
            });
        }
    }
    Ok(out)
}

fn upset_svg(title: &str, sets: &[(u8, f64, [f64; NS])]) -> Result<String> {
    let (left, col_w, bar_w) = (130, 66, 10);
    let cols = sets.len().max(1) as i32;
    let legend_w = 120;
    let w = (left + col_w * cols + 30 + legend_w).max(760);
    let (bar_top, bar_h) = (70, 260);
    let mat_top = bar_top + bar_h + 16;
    let row_h = 26;
    let h = mat_top + row_h * NL as i32 + 24;
    let max = sets
        .iter()
        .flat_map(|(_, p, s)| s.iter().copied().chain([*p]))
        .fold(0.0f64, f64::max);
    let step = tick_step(max.max(0.01));
    let top = ((max / step).ceil() * step).max(step);
    let y = |v: f64| bar_top + bar_h - (v / top * bar_h as f64).round() as i32;
    canvas(w, h, title, |root| {
        let small = text_style(15.0, BLACK, HPos::Right, VPos::Center);
        // Share axis.
        let x_axis = left - 8;
        root.draw(&PathElement::new(
            vec![(x_axis, bar_top), (x_axis, bar_top + bar_h)],
            BLACK.stroke_width(1),
        ))
        .map_err(plot_err)?;
        let mut t = 0.0;
        while t <= top + 1e-9 {
            let ty = y(t);
            root.draw(&PathElement::new(
                vec![(x_axis, ty), (left + col_w * cols, ty)],
                GRID.stroke_width(1),
            ))
            .map_err(plot_err)?;
            draw_text(
                root,
                &format!("{:.0}%", 100.0 * t),
                (x_axis - 6, ty),
                &small,
            )?;
            t += step;
        }
        let axis =
            text_style(16.0, BLACK, HPos::Center, VPos::Top).transform(FontTransform::Rotate270);
        draw_text(
            root,
            "share of statements",
            (20, bar_top + bar_h / 2),
            &axis,
        )?;
        if sets.is_empty() {
            draw_text(
                root,
                "No statement was answered wrongly in any language.",
                (left + 300, bar_top + bar_h / 2),
                &text_style(18.0, BLACK, HPos::Center, VPos::Center),
            )?;
        }
        // Matrix background and language labels.
        for l in 0..NL as i32 {
            let ry = mat_top + l * row_h;
            if l % 2 == 0 {
                root.draw(&Rectangle::new(
                    [(left, ry), (left + col_w * cols, ry + row_h)],
                    RGBColor(245, 245, 245).filled(),
                ))
                .map_err(plot_err)?;
            }
            draw_text(
                root,
                LANGUAGES[l as usize],
                (left - 12, ry + row_h / 2),
                &text_style(17.0, BLACK, HPos::Right, VPos::Center),
            )?;
        }
        for (c, (mask, pooled, shares)) in sets.iter().enumerate() {
            let x0 = left + c as i32 * col_w;
            let cx = x0 + col_w / 2;
            let bx = cx - (NS as i32 * bar_w) / 2;
            for (s, v) in shares.iter().enumerate() {
                if *v <= 0.0 {
                    continue;
                }
                let x = bx + s as i32 * bar_w;
                root.draw(&Rectangle::new(
                    [(x, y(*v)), (x + bar_w - 1, bar_top + bar_h)],
                    STRATEGY_COLOURS[s].filled(),
                ))
                .map_err(plot_err)?;
            }
            let tallest = shares.iter().copied().fold(0.0f64, f64::max);
            draw_text(
                root,
                &format!("{}%", fmt_share(*pooled)),
                (cx, y(tallest) - 4),
                &text_style(14.0, BLACK, HPos::Center, VPos::Bottom),
            )?;
            // Grey dots for the languages outside the set, the line joining the set's, then its dots on top.
            let dot = |l: i32, colour: RGBColor| {
                root.draw(&Circle::new(
                    (cx, mat_top + l * row_h + row_h / 2),
                    7,
                    colour.filled(),
                ))
                .map_err(plot_err)
            };
            for l in (0..NL as i32).filter(|l| mask >> l & 1 == 0) {
                dot(l, RGBColor(210, 210, 210))?;
            }
            let rows_in: Vec<i32> = (0..NL as i32).filter(|l| mask >> l & 1 == 1).collect();
            if let (Some(a), Some(b)) = (rows_in.first(), rows_in.last()) {
                root.draw(&PathElement::new(
                    vec![
                        (cx, mat_top + a * row_h + row_h / 2),
                        (cx, mat_top + b * row_h + row_h / 2),
                    ],
                    RGBColor(40, 40, 40).stroke_width(3),
                ))
                .map_err(plot_err)?;
            }
            for &l in &rows_in {
                dot(l, RGBColor(40, 40, 40))?;
            }
        }
        // Legend: the strategies' colours.
        let lx = left + col_w * cols + 30;
        for (s, name) in STRATEGIES.iter().enumerate() {
            let ly = bar_top + 6 + s as i32 * 26;
            root.draw(&Rectangle::new(
                [(lx, ly), (lx + 16, ly + 16)],
                STRATEGY_COLOURS[s].filled(),
            ))
            .map_err(plot_err)?;
            draw_text(
                root,
                name,
                (lx + 22, ly + 8),
                &text_style(16.0, BLACK, HPos::Left, VPos::Center),
            )?;
        }
        Ok(())
    })
}

/// A share in percent: one decimal below 10 %, none above.
fn fmt_share(v: f64) -> String {
    if v < 0.1 && v > 0.0 {
        format!("{:.1}", 100.0 * v)
    } else {
        format!("{:.0}", 100.0 * v)
    }
}

/// What the report's section needs besides the rows.
pub struct SectionInput<'a> {
    pub data: &'a Data,
    pub suspects: &'a [Suspect],
    pub texts: Option<&'a Texts>,
    pub figures: &'a [Figure],
}

/// `x` spans of escaped text as <code>x</code>.
fn code_spans(s: &str) -> String {
    let mut out = String::new();
    for (i, part) in s.split('`').enumerate() {
        if i % 2 == 1 {
            let _ = write!(out, "<code>{part}</code>");
        } else {
            out.push_str(part);
        }
    }
    out
}

/// A split cell: `12.3 [10.1, 14.6] (n 40)`.
fn split_cell(r: Option<&Row>) -> String {
    match r {
        Some(r) => match (r.value, r.lo, r.hi) {
            (Some(v), Some(lo), Some(hi)) => format!(
                "{} [{}, {}] (n {})",
                pct(v),
                pct(lo),
                pct(hi),
                r.n.unwrap_or(0)
            ),
            (Some(v), _, _) => format!("{} (n {})", pct(v), r.n.unwrap_or(0)),
            _ => format!("– (n {})", r.n.unwrap_or(0)),
        },
        None => "–".into(),
    }
}

/// A plain table: header and rows of cells, the first cell of a row its label; `wide` columns wrap.
fn table_html(
    out: &mut String,
    caption: &str,
    header: &[String],
    rows: &[Vec<String>],
    wide: &[usize],
) {
    let _ = write!(
        out,
        "<table>\n<caption>{}</caption>\n<thead><tr>",
        esc(caption)
    );
    for h in header {
        let _ = write!(out, "<th>{}</th>", esc(h));
    }
    out.push_str("</tr></thead>\n<tbody>\n");
    for r in rows {
        out.push_str("<tr>");
        for (i, c) in r.iter().enumerate() {
            if i == 0 {
                let _ = write!(out, "<th>{}</th>", esc(c));
            } else if wide.contains(&i) {
                let _ = write!(
                    out,
                    "<td style=\"white-space:normal;text-align:left;min-width:16rem;max-width:32rem\">{}</td>",
                    esc(c)
                );
            } else {
                let _ = write!(out, "<td>{}</td>", esc(c));
            }
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody>\n</table>\n");
}

fn table_md(out: &mut String, caption: &str, header: &[String], rows: &[Vec<String>]) {
    let _ = writeln!(out, "{}\n", md_cell(caption));
    let cells = |r: &[String]| r.iter().map(|c| md_cell(c)).collect::<Vec<_>>().join(" | ");
    let _ = writeln!(out, "| {} |", cells(header));
    let _ = writeln!(out, "|{}", "---|".repeat(header.len()));
    for r in rows {
        let _ = writeln!(out, "| {} |", cells(r));
    }
    out.push('\n');
}

/// The report's section "Where the languages disagree" as (HTML, Markdown): per variant the `split` shares
/// per model × strategy and the UpSet figures, then the first [`REPORT_SUSPECTS`] suspects with the English
/// sentence beside the suspect one.
pub fn section(rows: &[Row], input: &SectionInput) -> (String, String) {
    let look = Lookup::new(rows);
    let (mut html, mut md) = (String::new(), String::new());
    let title = "Where the languages disagree";
    let lead = "Which statements split the languages, which languages fail together, and which sentences are to blame. Every answer is in answers.parquet (one row per model × variant × statement × language, with its verdict and whether it is correct).";
    let _ = writeln!(
        html,
        "<h2 id=\"disagree\">{title}</h2>\n<p>{}</p>",
        esc(lead)
    );
    let _ = writeln!(md, "## {title}\n\n{lead}\n");
    for (variant, models) in variants_and_models(rows) {
        let header: Vec<String> = std::iter::once("model".to_string())
            .chain(STRATEGIES.iter().map(|s| s.to_string()))
            .collect();
        let table: Vec<Vec<String>> = models
            .iter()
            .map(|m| {
                std::iter::once(m.clone())
                    .chain(STRATEGIES.iter().map(|s| {
                        split_cell(look.get(Key {
                            measure: "split",
                            model: Some(m.as_str()),
                            variant: Some(variant.as_str()),
                            strategy: Some(s),
                            ..Key::default()
                        }))
                    }))
                    .collect()
            })
            .collect();
        let caption = format!(
            "Variant {variant}: statements answered right in some languages and wrong in others (%, split) [95 % interval] (n statements asked in every language of the model)"
        );
        html.push_str("<div class=\"scroll\">\n");
        table_html(&mut html, &caption, &header, &table, &[]);
        html.push_str("</div>\n");
        table_md(&mut md, &caption, &header, &table);
        // The figures' caption once, then each model's figure.
        let figs: Vec<&Figure> = input
            .figures
            .iter()
            .filter(|f| f.variant == variant)
            .collect();
        if let Some(f) = figs.first() {
            let _ = writeln!(html, "<p>{}</p>", esc(&f.caption));
            let _ = writeln!(md, "{}\n", f.caption);
        }
        for f in figs {
            let _ = writeln!(
                html,
                "<h3>{}</h3>\n<figure>\n{}\n</figure>",
                esc(&f.title),
                f.svg.trim(),
            );
            let _ = writeln!(md, "### {}\n\n![{}](figures/{})\n", f.title, f.kind, f.file);
        }
    }
    let n = input.suspects.len();
    let rule = format!(
        "A pair (statement, language L) is suspect when m ≥ {MIN_MODELS} model × variant groups were asked the statement in all 8 languages, at least ⌈2m/3⌉ of them answered wrongly in L, and in every other language at least ⌈2m/3⌉ answered correctly: the sentence in L, not the models, is the first thing to check. {n} suspect pair(s){}; all are in suspects.parquet, and `sword translate --only suspects.parquet` asks them again (docs/evaluation-chain.md).",
        if n > REPORT_SUSPECTS {
            format!(", the first {REPORT_SUSPECTS} below (most clearly failed first)")
        } else {
            String::new()
        }
    );
    let _ = writeln!(
        html,
        "<h3 id=\"suspects\">Suspect sentences</h3>\n<p>{}</p>",
        code_spans(&esc(&rule))
    );
    let _ = writeln!(md, "### Suspect sentences\n\n{rule}\n");
    if n == 0 {
        return (html, md);
    }
    if input.texts.is_none() {
        let note = "The sentences are shown when --benchmark names a run folder that holds statements_text.parquet.";
        let _ = writeln!(html, "<p>{}</p>", esc(note));
        let _ = writeln!(md, "{note}\n");
    }
    let header: Vec<String> = [
        "statement",
        "strategy",
        "language",
        "wrong / models",
        "English sentence",
        "suspect sentence",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let table: Vec<Vec<String>> = input
        .suspects
        .iter()
        .take(REPORT_SUSPECTS)
        .map(|x| {
            let st = &input.data.statements[x.statement as usize];
            let text = |l: usize| {
                input
                    .texts
                    .and_then(|t| t.get(x.statement, l))
                    .unwrap_or("–")
                    .to_string()
            };
            vec![
                st.id.clone(),
                STRATEGIES[st.strategy as usize].to_string(),
                LANGUAGES[x.language as usize].to_string(),
                format!("{} / {}", x.wrong, x.models),
                text(0),
                text(x.language as usize),
            ]
        })
        .collect();
    let caption = "Suspect sentences: the statement, how many of the groups asked it in every language answered it wrongly in the suspect language, and the sentence in English beside the suspect one";
    html.push_str("<div class=\"scroll\">\n");
    table_html(&mut html, caption, &header, &table, &[4, 5]);
    html.push_str("</div>\n");
    table_md(&mut md, caption, &header, &table);
    (html, md)
}

#[cfg(test)]
mod tests {
    use super::super::input::{Answered, Data, Group, Statement};
    use super::*;
    use proptest::prelude::*;

    /// (model, variant, [(statement, asked, correct)]) groups over `statements` = (id, original, strategy).
    /// A group's answers: (statement, asked, correct) masks.
    type Answers = Vec<(u32, u8, u8)>;

    fn data(statements: &[(&str, &str, u8)], groups: &[(&str, Answers)]) -> Data {
        Data {
            statements: statements
                .iter()
                .map(|&(id, original, strategy)| Statement {
                    id: id.into(),
                    original: original.into(),
                    strategy,
                    label: strategy == 0,
                })
                .collect(),
            groups: groups
                .iter()
                .map(|(name, answers)| {
                    let (model, variant) = name.split_once('/').unwrap_or((*name, "plain"));
                    let mut g = Group {
                        model: model.into(),
                        variant: variant.into(),
                        ..Group::default()
                    };
                    let mut answers = answers.clone();
                    answers.sort_by_key(|a| a.0);
                    for (statement, asked, correct) in answers {
                        g.answered.push(Answered {
                            statement,
                            asked,
                            correct: correct & asked,
                            unparsed: 0,
                        });
                    }
                    g
                })
                .collect(),
            ..Data::default()
        }
    }

    /// The mask of some languages by code.
    fn m(codes: &str) -> u8 {
        parse_set(codes).unwrap()
    }

    const ALL: u8 = ALL_LANGUAGES;

    #[test]
    fn set_names_follow_swords_order_and_parse_back() {
        assert_eq!(set_name(0), "");
        assert_eq!(set_name(0b1100_0001), "en+ko+ja");
        assert_eq!(set_name(ALL), "en+fr+de+es+it+pt+ko+ja");
        for mask in 0..=255u8 {
            assert_eq!(parse_set(&set_name(mask)), Some(mask));
        }
        assert_eq!(parse_set("en+xx"), None);
        assert_eq!(
            [2, 3, 4, 5, 6, 7].map(threshold),
            [2, 2, 3, 4, 4, 5],
            "⌈2m/3⌉"
        );
    }

    #[test]
    fn wrong_sets_and_split_by_hand() {
        // Model A, every language: SS s0 all right, s1 wrong in ko, s2 wrong in ko and ja, s3 wrong in ko,
        // s4 wrong everywhere, s5 asked in en only (left out: not asked in every language of A); ORG s6 all
        // right. So SS: ∅ 1/5, ko 2/5, ko+ja 1/5, all 1/5; split 3/5 (s1, s2, s3); ORG: ∅ 1/1, split 0.
        let st = [
            ("s0", "o0", 1),
            ("s1", "o1", 1),
            ("s2", "o2", 1),
            ("s3", "o3", 1),
            ("s4", "o4", 1),
            ("s5", "o5", 1),
            ("s6", "o6", 0),
        ];
        let a = vec![
            (0, ALL, ALL),
            (1, ALL, !m("ko")),
            (2, ALL, !m("ko+ja")),
            (3, ALL, !m("ko")),
            (4, ALL, 0),
            (5, m("en"), 0),
            (6, ALL, ALL),
        ];
        let d = data(&st, &[("A", a)]);
        let rows = rows(&d, 0, 0);
        let got: Vec<(&str, &str, f64, i64)> = rows
            .iter()
            .filter(|r| r.measure == "wrong_languages")
            .map(|r| {
                (
                    r.strategy.as_deref().unwrap(),
                    r.language.as_deref().unwrap(),
                    r.value.unwrap(),
                    r.n.unwrap(),
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                ("ORG", "", 1.0, 1),
                ("SS", "", 0.2, 5),
                ("SS", "ko", 0.4, 5),
                ("SS", "ko+ja", 0.2, 5),
                ("SS", "en+fr+de+es+it+pt+ko+ja", 0.2, 5),
            ]
        );
        let split: Vec<(&str, Option<f64>, i64)> = rows
            .iter()
            .filter(|r| r.measure == "split")
            .map(|r| (r.strategy.as_deref().unwrap(), r.value, r.n.unwrap()))
            .collect();
        assert_eq!(
            split,
            [
                ("ORG", Some(0.0), 1),
                ("SS", Some(0.6), 5),
                ("OS", None, 0),
                ("PSS", None, 0),
                ("POS", None, 0),
            ]
        );
        // With replicates: an interval around the estimate, within [0, 1]; none where there is no statement.
        let rows = super::rows(&d, 200, 3);
        for r in rows.iter().filter(|r| r.measure == "split") {
            match r.value {
                Some(v) => {
                    let (lo, hi) = (r.lo.unwrap(), r.hi.unwrap());
                    assert!(0.0 <= lo && lo <= v && v <= hi && hi <= 1.0, "{r:?}");
                }
                None => assert!(r.lo.is_none() && r.hi.is_none()),
            }
        }
        let ss = rows
            .iter()
            .find(|r| r.measure == "split" && r.strategy.as_deref() == Some("SS"))
            .unwrap();
        assert!(ss.lo.unwrap() < 0.6 && ss.hi.unwrap() > 0.6, "{ss:?}");
    }

    #[test]
    fn suspect_rule_by_hand_with_its_edges() {
        // A, B, C, D; statements asked in all 8 languages unless said otherwise.
        let st = [
            ("X", "o1", 1),
            ("Y", "o2", 1),
            ("Z", "o3", 2),
            ("W", "o4", 3),
            ("V", "o5", 4),
            ("U", "o6", 0),
        ];
        let groups = vec![
            (
                "A",
                vec![
                    // X: wrong in de (and en): with B, exactly ⌈2·3/3⌉ = 2 of 3 wrong in de, 2 of 3 right in en.
                    (0, ALL, !m("de+en")),
                    // Y: wrong in de and en; with B wrong in en too, only 1 of 3 right in en: not suspect.
                    (1, ALL, !m("de+en")),
                    // Z: m = 2 (C asked 7 languages): both wrong in ko, not suspect.
                    (2, ALL, !m("ko")),
                    // W: only A wrong in ja (1 < 2).
                    (3, ALL, !m("ja")),
                    // V: m = 4 (with D), wrong in it by A, B, C = 3 = ⌈8/3⌉: suspect.
                    (4, ALL, !m("it")),
                    // U: m = 4, wrong in it by A, B = 2 < 3.
                    (5, ALL, !m("it")),
                ],
            ),
            (
                "B",
                vec![
                    (0, ALL, !m("de")),
                    (1, ALL, !m("de+en")),
                    (2, ALL, !m("ko")),
                    (3, ALL, ALL),
                    (4, ALL, !m("it")),
                    (5, ALL, !m("it")),
                ],
            ),
            (
                "C",
                vec![
                    (0, ALL, ALL),
                    (1, ALL, ALL),
                    (2, ALL & !m("ja"), 0),
                    (3, ALL, ALL),
                    (4, ALL, !m("it")),
                    (5, ALL, ALL),
                ],
            ),
            ("D/premise", vec![(4, ALL, ALL), (5, ALL, ALL)]),
        ];
        let d = data(&st, &groups);
        let got: Vec<(&str, &str, u32, u32)> = suspects(&d)
            .iter()
            .map(|x| {
                (
                    d.statements[x.statement as usize].id.as_str(),
                    LANGUAGES[x.language as usize],
                    x.models,
                    x.wrong,
                )
            })
            .collect();
        // V (3/4 wrong) before X (2/3 wrong).
        assert_eq!(got, [("V", "it", 4, 3), ("X", "de", 3, 2)]);
        // Without C, X has m = 2: no longer suspect. V and U have m = 3 (A, B, D), both wrong in it by A and B:
        // 2 = ⌈2·3/3⌉, so both are suspect now (U, which 2 of 4 did not make, too), by id.
        let d2 = data(
            &st,
            &[groups[0].clone(), groups[1].clone(), groups[3].clone()],
        );
        let got: Vec<&str> = suspects(&d2)
            .iter()
            .map(|x| d2.statements[x.statement as usize].id.as_str())
            .collect();
        assert_eq!(got, ["U", "V"]);
    }

    /// Random groups: every language or a random subset asked, random right answers.
    fn random_groups() -> impl Strategy<Value = Vec<Vec<(u8, u8)>>> {
        (1usize..30, 1usize..4).prop_flat_map(|(n, g)| {
            proptest::collection::vec(
                proptest::collection::vec(
                    (any::<bool>(), any::<u8>(), any::<u8>())
                        .prop_map(|(all, a, c)| (if all { ALL } else { a | 1 }, c)),
                    n..=n,
                ),
                g..=g,
            )
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn shares_of_the_wrong_sets_sum_to_one_and_split_is_the_rest(groups in random_groups(), b in 0usize..30) {
            let n = groups[0].len();
            let st: Vec<(String, String, u8)> =
                (0..n).map(|i| (format!("s{i}"), format!("o{}", i / 5), (i % 5) as u8)).collect();
            let st_ref: Vec<(&str, &str, u8)> = st.iter().map(|(a, b, c)| (a.as_str(), b.as_str(), *c)).collect();
            let names: Vec<String> = (0..groups.len()).map(|g| format!("m{g}")).collect();
            let gs: Vec<(&str, Answers)> = groups
                .iter()
                .zip(&names)
                .map(|(g, name)| (name.as_str(), g.iter().enumerate().map(|(i, &(a, c))| (i as u32, a, c)).collect()))
                .collect();
            let d = data(&st_ref, &gs);
            let rows = rows(&d, b, 1);
            let mut sums: HashMap<(String, String), (f64, i64, f64)> = HashMap::new();
            for r in rows.iter().filter(|r| r.measure == "wrong_languages") {
                let e = sums.entry((r.model.clone().unwrap(), r.strategy.clone().unwrap())).or_insert((0.0, r.n.unwrap(), 0.0));
                e.0 += r.value.unwrap();
                prop_assert_eq!(e.1, r.n.unwrap());
                let g = d.groups.iter().find(|g| Some(&g.model) == r.model.as_ref()).unwrap();
                let all = languages_of(g);
                let mask = parse_set(r.language.as_deref().unwrap()).unwrap();
                prop_assert_eq!(mask & !all, 0, "a wrong set within the model's languages");
                if mask != 0 && mask != all {
                    e.2 += r.value.unwrap();
                }
            }
            for (key, (sum, n, split)) in &sums {
                prop_assert!((sum - 1.0).abs() < 1e-9, "{key:?} sums to {sum}");
                let r = rows.iter().find(|r| r.measure == "split" && r.model.as_ref() == Some(&key.0) && r.strategy.as_ref() == Some(&key.1)).unwrap();
                prop_assert_eq!(r.n, Some(*n));
                prop_assert!((r.value.unwrap() - split).abs() < 1e-9);
            }
            // A split row without wrong-set rows has no statement.
            for r in rows.iter().filter(|r| r.measure == "split") {
                let key = (r.model.clone().unwrap(), r.strategy.clone().unwrap());
                prop_assert_eq!(sums.contains_key(&key), r.n.unwrap() > 0);
            }
        }
    }

    /// The rule, written from the answers as a table (model × statement × language → right), independently of
    /// the bit masks: for each statement, the models asked in all 8 languages; per language, how many were
    /// wrong.
    fn rule(right: &[Vec<Option<[bool; 8]>>]) -> Vec<(usize, usize)> {
        let n = right[0].len();
        let mut out = Vec::new();
        for s in 0..n {
            let asked: Vec<&[bool; 8]> = right.iter().filter_map(|m| m[s].as_ref()).collect();
            let m = asked.len();
            if m < 3 {
                continue;
            }
            let need = (2 * m).div_ceil(3);
            for l in 0..8 {
                let wrong_l = asked.iter().filter(|a| !a[l]).count();
                let others = (0..8)
                    .filter(|&o| o != l)
                    .all(|o| asked.iter().filter(|a| a[o]).count() >= need);
                if wrong_l >= need && others {
                    out.push((s, l));
                }
            }
        }
        out.sort();
        out
    }

    #[test]
    fn planted_bad_sentences_are_found_and_nothing_else_than_the_rules_pairs() {
        use rand::{RngExt, SeedableRng};
        let mut rng = rand::rngs::ChaCha8Rng::seed_from_u64(52);
        let (models, statements) = (9usize, 400usize);
        // 20 (statement, language) pairs every model gets wrong (their statements right in every other
        // language); elsewhere 3 % random errors, and some statements not asked in every language by some
        // models.
        let mut planted: Vec<(usize, usize)> = Vec::new();
        while planted.len() < 20 {
            let p = (rng.random_range(0..statements), rng.random_range(0..8));
            if !planted.iter().any(|q| q.0 == p.0) {
                planted.push(p);
            }
        }
        planted.sort();
        let right: Vec<Vec<Option<[bool; 8]>>> = (0..models)
            .map(|_| {
                (0..statements)
                    .map(|s| {
                        if rng.random_range(0..50) == 0 && !planted.iter().any(|p| p.0 == s) {
                            return None;
                        }
                        Some(std::array::from_fn(|l| {
                            let noise = rng.random_range(0..100) < 3;
                            let is_planted = planted.iter().any(|p| p.0 == s);
                            !planted.contains(&(s, l)) && (is_planted || !noise)
                        }))
                    })
                    .collect()
            })
            .collect();
        let st: Vec<(String, String, u8)> = (0..statements)
            .map(|i| (format!("s{i:04}"), format!("o{}", i / 5), (i % 5) as u8))
            .collect();
        let st_ref: Vec<(&str, &str, u8)> = st
            .iter()
            .map(|(a, b, c)| (a.as_str(), b.as_str(), *c))
            .collect();
        let names: Vec<String> = (0..models).map(|g| format!("m{g}")).collect();
        let gs: Vec<(&str, Answers)> = right
            .iter()
            .zip(&names)
            .map(|(r, name)| {
                let answers = r
                    .iter()
                    .enumerate()
                    .map(|(s, a)| match a {
                        // Not asked in every language: ja left out.
                        None => (s as u32, ALL & !m("ja"), ALL),
                        Some(a) => (
                            s as u32,
                            ALL,
                            (0..8).filter(|&l| a[l]).fold(0u8, |x, l| x | 1 << l),
                        ),
                    })
                    .collect();
                (name.as_str(), answers)
            })
            .collect();
        let d = data(&st_ref, &gs);
        let mut got: Vec<(usize, usize)> = suspects(&d)
            .iter()
            .map(|x| (x.statement as usize, x.language as usize))
            .collect();
        got.sort();
        assert_eq!(got, rule(&right));
        for p in &planted {
            assert!(got.contains(p), "planted {p:?} not reported");
        }
        // The planted pairs are wrong for all 9 models: they come first, 9 of 9.
        let first: Vec<(u32, u32)> = suspects(&d)[..20]
            .iter()
            .map(|x| (x.wrong, x.models))
            .collect();
        assert!(first.iter().all(|&(w, m)| w == m), "{first:?}");
    }
}
