//! The one reader of a published benchmark: `sword.parquet` of format versions 1 to 3, read back as the
//! [`Distortion`] rows it was written from, with the label fingerprints of the entities it names. What
//! `sword revalidate`, `distort --carry-from` and `sword synth --later` read of an older benchmark.
//!
//! A row holds every distortion column the file has (the falsity tier is absent from format 1: `None`).
//! `original_id` is the original's position as the file gives it; a utf8 `original_id` (the original's id
//! itself) gives the originals' positions in order of first appearance instead. The original's *id* is the
//! statement id's stem ([`original_of`]; docs/versions.md), checked against `original_id` on every row.

use crate::core::error::{Error, IoContext, Result};
use crate::core::falsity::Tier;
use crate::core::ids::{EntityId, Pid, Qid};
use crate::core::records::{Distortion, Rank, Role, Strategy};
use crate::store::tables;
use arrow_array::{Array, Float32Array, RecordBatch, StringArray, UInt32Array};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};

/// The original's id in a statement id (`<original>-<STRATEGY>[.<tag>]`), if it has that shape:
/// `7f3a09c2-000042-PSS.b41e0d77` → `7f3a09c2-000042`; `000042-PSS` → `000042`.
pub fn original_of(statement_id: &str) -> Option<&str> {
    let stem = statement_id.split('.').next()?;
    let (orig, strategy) = stem.rsplit_once('-')?;
    Strategy::parse(strategy).map(|_| orig)
}

/// The id of a row's original: its statement id without `-<STRATEGY>` and any `.<tag>` of a redraw
/// (`7f3a09c2-000042-PSS.b41e0d77` → `7f3a09c2-000042`; `000042-PSS` → `000042`).
pub fn original_id_of(d: &Distortion) -> &str {
    original_of(&d.statement_id).unwrap_or(&d.statement_id)
}

/// The `sword.parquet` format versions this reader understands: 1 and 2 (positional ids, `000042-PSS`, whose
/// `original_id` is 42) and 3 (stable ids, `7f3a09c2-000042-PSS`, whose `original_id` is the original's
/// position in the file, not part of the id). A utf8 `original_id` (the original's id itself) is read too.
pub const READABLE_FORMATS: [u32; 3] = [1, 2, 3];

/// A fingerprint per language of an entity's label texts (0: no label): what "another label" compares, in
/// 8 bytes per language instead of the texts.
pub type LabelPrint = Vec<u64>;

pub(crate) fn print_of<'a>(texts: impl Iterator<Item = Option<&'a str>>) -> LabelPrint {
    texts
        .map(|t| t.map_or(0, |t| xxhash_rust::xxh3::xxh3_64(t.as_bytes()) | 1))
        .collect()
}

/// An old benchmark, read from its `sword.parquet`.
#[derive(Clone, Debug, Default)]
pub struct OldBenchmark {
    pub path: PathBuf,
    pub format_version: u32,
    /// The label languages (`sword.languages`), in column order.
    pub languages: Vec<String>,
    /// The tags of the builds its statements were drawn by (`sword.lineage`; empty for format 1).
    pub lineage: Vec<String>,
    /// The statements, in file order.
    pub rows: Vec<Distortion>,
    /// The label fingerprints of every entity it names, as the benchmark states them.
    pub labels: HashMap<EntityId, LabelPrint>,
}

/// Columns of `sword.parquet` read by [`OldBenchmark::read`] besides the labels.
const KEY_COLUMNS: [&str; 10] = [
    "statement_id",
    "original_id",
    "strategy",
    "subject",
    "property",
    "object",
    "replaced_role",
    "original_entity",
    "replacement_entity",
    "attempts",
];

/// The other distortion columns, read when present (format 1 has no `falsity`).
const OTHER_COLUMNS: [&str; 5] = [
    "cosine",
    "cosine_centred",
    "original_rank",
    "original_statement_id",
    "falsity",
];

const ROLES: [&str; 3] = ["subject", "property", "object"];

impl OldBenchmark {
    /// Check, from its footer only, that `path` is a `sword.parquet` this reader understands: bad input
    /// (exit code 2) naming the file when it is not.
    pub fn check_format(path: &Path) -> Result<u32> {
        Self::open(path).map(|(_, v)| v)
    }

    fn open(path: &Path) -> Result<(ParquetRecordBatchReaderBuilder<std::fs::File>, u32)> {
        let bad = |what: String| Error::bad_input(path, what);
        let f = std::fs::File::open(path).at(path)?;
        let builder = ParquetRecordBatchReaderBuilder::try_new(f)
            .map_err(|e| Error::unreadable_parquet(path, e))?;
        let format_version: u32 = builder
            .schema()
            .metadata()
            .get("sword.format_version")
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| {
                bad("not a SWORD benchmark: no `sword.format_version` metadata".into())
            })?;
        if !READABLE_FORMATS.contains(&format_version) {
            return Err(bad(format!(
                "sword.parquet format version {format_version}: this sword reads versions {READABLE_FORMATS:?}"
            )));
        }
        Ok((builder, format_version))
    }

    /// Read `path` (a `sword.parquet`). Not a SWORD benchmark (no `sword.format_version`, an unknown version, a
    /// missing column, an id that is not a Wikidata id, a statement id that does not name its original) is
    /// bad input (exit code 2) naming the file.
    pub fn read(path: &Path) -> Result<OldBenchmark> {
        let bad = |what: String| Error::bad_input(path, what);
        let (builder, format_version) = Self::open(path)?;
        let meta = builder.schema().metadata().clone();
        // A comma-separated list in the file's metadata (empty when absent).
        let list = |key: &str| -> Vec<String> {
            meta.get(key)
                .map(|v| {
                    v.split(',')
                        .filter(|l| !l.is_empty())
                        .map(String::from)
                        .collect()
                })
                .unwrap_or_default()
        };
        let languages = list("sword.languages");
        let lineage = list(tables::sword::LINEAGE_KEY);
        let mut columns: Vec<String> = KEY_COLUMNS.iter().map(|c| c.to_string()).collect();
        for r in ROLES {
            for l in &languages {
                columns.push(format!("{r}_label_{l}"));
            }
        }
        for c in &columns {
            if builder.schema().column_with_name(c).is_none() {
                return Err(bad(format!("not a SWORD benchmark: no column `{c}`")));
            }
        }
        // The rest of a distortion, read where the file has it.
        columns.extend(
            OTHER_COLUMNS
                .iter()
                .filter(|c| builder.schema().column_with_name(c).is_some())
                .map(|c| c.to_string()),
        );
        let mask = parquet::arrow::ProjectionMask::columns(
            builder.parquet_schema(),
            columns.iter().map(String::as_str),
        );
        let reader = builder
            .with_projection(mask)
            .with_batch_size(tables::STREAM_BATCH)
            .build()
            .map_err(|e| Error::unreadable_parquet(path, e))?;
        let mut out = OldBenchmark {
            path: path.to_path_buf(),
            format_version,
            languages,
            lineage,
            ..OldBenchmark::default()
        };
        let mut row = 0usize;
        // A utf8 `original_id`'s positions, in order of first appearance.
        let mut positions: HashMap<String, u32> = HashMap::new();
        for batch in reader {
            let batch = batch.map_err(|e| Error::unreadable_parquet(path, e))?;
            out.add_batch(&batch, row, &mut positions)?;
            row += batch.num_rows();
        }
        Ok(out)
    }

    fn add_batch(
        &mut self,
        b: &RecordBatch,
        first_row: usize,
        positions: &mut HashMap<String, u32>,
    ) -> Result<()> {
        let path = self.path.clone();
        let bad = |i: usize, what: String| {
            Error::bad_input(&path, format!("row {}: {what}", first_row + i))
        };
        let s = |n: &str| tables::string_column(b, n, &path);
        let (sid, strategy, subj, prop, obj) = (
            s("statement_id")?,
            s("strategy")?,
            s("subject")?,
            s("property")?,
            s("object")?,
        );
        let (role, orig_e, repl_e) = (
            s("replaced_role")?,
            s("original_entity")?,
            s("replacement_entity")?,
        );
        let orig = b.column_by_name("original_id").expect("projected");
        let orig_text = orig.as_any().downcast_ref::<StringArray>();
        let orig_num = orig.as_any().downcast_ref::<UInt32Array>();
        let attempts = b
            .column_by_name("attempts")
            .and_then(|c| c.as_any().downcast_ref::<UInt32Array>())
            .ok_or_else(|| bad(0, "`attempts` is not uint32".into()))?;
        let float = |n: &str| -> Result<Option<&Float32Array>> {
            b.column_by_name(n)
                .map(|c| {
                    c.as_any()
                        .downcast_ref::<Float32Array>()
                        .ok_or_else(|| bad(0, format!("`{n}` is not float")))
                })
                .transpose()
        };
        let text = |n: &str| -> Result<Option<&StringArray>> {
            b.column_by_name(n).map(|_| s(n)).transpose()
        };
        let (cosine, cosine_centred) = (float("cosine")?, float("cosine_centred")?);
        let (rank, guid, falsity) = (
            text("original_rank")?,
            text("original_statement_id")?,
            text("falsity")?,
        );
        let labels: Vec<Vec<&StringArray>> = ROLES
            .iter()
            .map(|r| {
                self.languages
                    .iter()
                    .map(|l| s(&format!("{r}_label_{l}")))
                    .collect::<Result<Vec<_>>>()
            })
            .collect::<Result<_>>()?;
        let qid = |c: &StringArray, i: usize, what: &str| -> Result<Option<Qid>> {
            if c.is_null(i) {
                return Ok(None);
            }
            Qid::parse(c.value(i))
                .map(Some)
                .ok_or_else(|| bad(i, format!("{what} `{}` is not an item id", c.value(i))))
        };
        for i in 0..b.num_rows() {
            let id = sid.value(i).to_string();
            let st = Strategy::parse(strategy.value(i))
                .ok_or_else(|| bad(i, format!("strategy `{}`", strategy.value(i))))?;
            let (orig_id, position) = match (orig_text, orig_num) {
                (Some(t), _) => {
                    let next = positions.len() as u32;
                    let p = *positions.entry(t.value(i).to_string()).or_insert(next);
                    (t.value(i).to_string(), p)
                }
                // Positional ids name their original's position; stable ids their original's id.
                (_, Some(n)) if self.format_version < 3 => {
                    (format!("{:06}", n.value(i)), n.value(i))
                }
                (_, Some(n)) => (original_of(&id).unwrap_or_default().to_string(), n.value(i)),
                _ => return Err(bad(i, "`original_id` is neither utf8 nor uint32".into())),
            };
            // The original id is the stem of the statement id (docs/versions.md), so it need not be held.
            if original_of(&id) != Some(orig_id.as_str()) {
                return Err(bad(
                    i,
                    format!("statement id `{id}` does not name its original `{orig_id}`"),
                ));
            }
            fn value(c: Option<&StringArray>, i: usize) -> Option<&str> {
                c.filter(|c| c.is_valid(i)).map(|c| c.value(i))
            }
            let cos = |c: Option<&Float32Array>| c.filter(|c| c.is_valid(i)).map(|c| c.value(i));
            let row = Distortion {
                statement_id: id,
                original_id: position,
                strategy: st,
                subject: qid(subj, i, "subject")?.ok_or_else(|| bad(i, "null subject".into()))?,
                property: Pid::parse(prop.value(i))
                    .ok_or_else(|| bad(i, format!("property `{}`", prop.value(i))))?,
                object: qid(obj, i, "object")?.ok_or_else(|| bad(i, "null object".into()))?,
                replaced_role: if role.is_null(i) {
                    None
                } else {
                    Some(
                        Role::parse(role.value(i))
                            .ok_or_else(|| bad(i, format!("replaced_role `{}`", role.value(i))))?,
                    )
                },
                original_entity: qid(orig_e, i, "original_entity")?,
                replacement_entity: qid(repl_e, i, "replacement_entity")?,
                cosine: cos(cosine),
                cosine_centred: cos(cosine_centred),
                attempts: attempts.value(i),
                original_rank: match value(rank, i) {
                    Some(r) => {
                        Rank::parse(r).ok_or_else(|| bad(i, format!("original_rank `{r}`")))?
                    }
                    None => Rank::Normal,
                },
                original_statement_id: value(guid, i).unwrap_or_default().to_string(),
                falsity: match value(falsity, i) {
                    Some(t) => {
                        Some(Tier::parse(t).ok_or_else(|| bad(i, format!("falsity `{t}`")))?)
                    }
                    None => None,
                },
            };
            for (r, e) in row.entities().into_iter().enumerate() {
                self.labels.entry(e).or_insert_with(|| {
                    print_of(labels[r].iter().map(|c| c.is_valid(i).then(|| c.value(i))))
                });
            }
            self.rows.push(row);
        }
        Ok(())
    }

    /// The properties the benchmark uses.
    pub fn properties(&self) -> HashSet<Pid> {
        self.rows.iter().map(|r| r.property).collect()
    }

    /// The items the benchmark names (subjects and objects).
    pub fn items(&self) -> HashSet<Qid> {
        self.rows
            .iter()
            .flat_map(|r| [r.subject, r.object])
            .collect()
    }

    /// The label texts of rows `rows` (in each role's columns, per language), for a report's examples.
    pub fn label_texts(&self, rows: &[usize]) -> Result<Vec<[Vec<Option<String>>; 3]>> {
        let want: HashSet<usize> = rows.iter().copied().collect();
        let mut got: HashMap<usize, [Vec<Option<String>>; 3]> = HashMap::new();
        let f = std::fs::File::open(&self.path).at(&self.path)?;
        let builder = ParquetRecordBatchReaderBuilder::try_new(f)
            .map_err(|e| Error::unreadable_parquet(&self.path, e))?;
        let names: Vec<String> = ROLES
            .iter()
            .flat_map(|r| self.languages.iter().map(move |l| format!("{r}_label_{l}")))
            .collect();
        let mask = parquet::arrow::ProjectionMask::columns(
            builder.parquet_schema(),
            names.iter().map(String::as_str),
        );
        let reader = builder
            .with_projection(mask)
            .with_batch_size(tables::STREAM_BATCH)
            .build()
            .map_err(|e| Error::unreadable_parquet(&self.path, e))?;
        let mut first = 0usize;
        for batch in reader {
            let batch = batch.map_err(|e| Error::unreadable_parquet(&self.path, e))?;
            for i in 0..batch.num_rows() {
                if !want.contains(&(first + i)) {
                    continue;
                }
                let texts = |r: &str| -> Result<Vec<Option<String>>> {
                    self.languages
                        .iter()
                        .map(|l| {
                            let c = tables::string_column(
                                &batch,
                                &format!("{r}_label_{l}"),
                                &self.path,
                            )?;
                            Ok(c.is_valid(i).then(|| c.value(i).to_string()))
                        })
                        .collect()
                };
                got.insert(
                    first + i,
                    [texts("subject")?, texts("property")?, texts("object")?],
                );
            }
            first += batch.num_rows();
        }
        Ok(rows
            .iter()
            .map(|r| got.remove(r).unwrap_or_default())
            .collect())
    }
}

/// Per-original differences `cos(a) − cos(b)` (raw or centred) for originals that have both variants.
pub fn differences(rows: &[Distortion], a: Strategy, b: Strategy, centred: bool) -> Vec<f64> {
    let mut by: BTreeMap<u32, [Option<f32>; 2]> = BTreeMap::new();
    for d in rows {
        let c = if centred { d.cosine_centred } else { d.cosine };
        if d.strategy == a {
            by.entry(d.original_id).or_default()[0] = c;
        } else if d.strategy == b {
            by.entry(d.original_id).or_default()[1] = c;
        }
    }
    by.values()
        .filter_map(|[x, y]| Some(f64::from((*x)?) - f64::from((*y)?)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::records::{EntityRecord, Label, Triple};
    use crate::store::tables::sword::{write_sword_marked, EntityLookup};

    /// An original with a GUID and a preferred rank, and two variants with every optional field set or not.
    fn rows() -> Vec<Distortion> {
        let t = Triple {
            subject: Qid(1),
            property: Pid(31),
            object: Qid(2),
            rank: Rank::Preferred,
            statement_id: "Q1$0A1B".into(),
        };
        let org = Distortion {
            statement_id: "7f3a09c2-000000-ORG".into(),
            ..Distortion::original(0, &t)
        };
        let pss = Distortion {
            statement_id: "7f3a09c2-000000-PSS".into(),
            strategy: Strategy::PSS,
            subject: Qid(3),
            replaced_role: Some(Role::Subject),
            original_entity: Some(Qid(1)),
            replacement_entity: Some(Qid(3)),
            cosine: Some(0.25),
            cosine_centred: Some(-0.5),
            attempts: 2,
            falsity: Some(Tier::Certain),
            ..org.clone()
        };
        let os = Distortion {
            statement_id: "7f3a09c2-000000-OS.b41e0d77".into(),
            strategy: Strategy::OS,
            object: Qid(4),
            replaced_role: Some(Role::Object),
            original_entity: Some(Qid(2)),
            replacement_entity: Some(Qid(4)),
            attempts: 7,
            falsity: Some(Tier::Open),
            ..org.clone()
        };
        vec![org, pss, os]
    }

    /// Labels in two languages for items 1 to 4 (item 4 without a Korean one) and P31.
    fn lookup() -> EntityLookup {
        let label = |t: &str| Label {
            text: t.into(),
            from_mul: false,
        };
        let item = |q: u64| EntityRecord {
            id: EntityId::Item(Qid(q)),
            labels: vec![label(&format!("item {q}")), label(&format!("항목 {q}"))],
            descriptions: vec![None, None],
            sitelinks: 0,
            lastrevid: None,
            modified: None,
        };
        let mut entities: Vec<EntityRecord> = (1..=4).map(item).collect();
        entities[3].labels.truncate(1);
        entities.push(EntityRecord {
            id: EntityId::Property(Pid(31)),
            labels: vec![label("instance of"), label("인스턴스")],
            ..item(1)
        });
        EntityLookup::new(vec!["en".into(), "ko".into()], entities, vec![])
    }

    /// What export writes, the reader gives back: the same Distortion rows, the languages, the lineage, and
    /// one label fingerprint per entity (none for a missing label).
    #[test]
    fn a_written_benchmark_reads_back_as_its_distortion_rows() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sword.parquet");
        let f = std::fs::File::create(&path).unwrap();
        let lineage = vec!["7f3a09c2".to_string()];
        write_sword_marked(
            f,
            &rows(),
            &lookup(),
            Some("20240102"),
            true,
            &lineage,
            &path,
        )
        .unwrap();
        let b = OldBenchmark::read(&path).unwrap();
        assert_eq!(b.rows, rows());
        assert_eq!(b.format_version, 3);
        assert_eq!(b.languages, ["en", "ko"]);
        assert_eq!(b.lineage, lineage);
        assert_eq!(b.labels.len(), 5, "Q1..Q4 and P31");
        let q4 = &b.labels[&EntityId::Item(Qid(4))];
        assert_eq!(q4.len(), 2);
        assert!(q4[0] != 0 && q4[1] == 0, "{q4:?}");
        assert_eq!(
            b.rows.iter().map(original_id_of).collect::<Vec<_>>(),
            ["7f3a09c2-000000"; 3]
        );
    }

    #[test]
    fn original_ids_are_statement_id_stems() {
        assert_eq!(original_of("7f3a09c2-000042-PSS"), Some("7f3a09c2-000042"));
        assert_eq!(
            original_of("7f3a09c2-000042-PSS.b41e0d77"),
            Some("7f3a09c2-000042")
        );
        assert_eq!(original_of("000042-ORG"), Some("000042"));
        assert_eq!(original_of("000042-XX"), None);
        assert_eq!(original_of("nodash"), None);
    }
}
