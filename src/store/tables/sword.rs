//! `sword.parquet`: the benchmark, one row per statement (the distortion's columns, then each role's labels,
//! `mul` flags, descriptions and sitelink count in every language, then the dump date). The schema is pinned by
//! the golden file `data/golden/sword_schema.txt` and versioned by [`SWORD_FORMAT_VERSION`]. Written from
//! the distortions and an [`EntityLookup`]; read back by the translate stages (keys and labels).

use crate::core::error::{Error, IoContext, Result};
use crate::core::ids::{EntityId, Pid};
use crate::core::records::{Distortion, EntityRecord, Label, PropertyRecord};
use crate::store::tables;
use crate::store::tables::distortions::{distortion_columns, distortion_fields};
use arrow_array::{Array, ArrayRef, BooleanArray, RecordBatch, StringArray, UInt32Array};
use arrow_schema::{DataType, Field, Schema};
use std::collections::HashMap;
use std::io::Write;
use std::path::Path;
use std::sync::Arc;

/// Version of the `sword.parquet` layout. Bump on any change of column names, types, order or meaning.
/// 1: positional statement ids (`000042-PSS`); 2: the `falsity` column; 3: stable statement ids
/// (`<tag>-<n>-<STRATEGY>`, docs/versions.md) and the `sword.lineage` metadata; `original_id` stays the
/// original's position in this file (a group key), the original's stable id is the statement id's stem.
pub const SWORD_FORMAT_VERSION: u32 = 3;

/// The key-value metadata naming the builds a benchmark's statements were drawn by (comma-separated tags).
pub const LINEAGE_KEY: &str = "sword.lineage";

/// The paper's eight languages, in column order.
pub const DEFAULT_LANGUAGES: [&str; 8] = ["en", "fr", "de", "es", "it", "pt", "ko", "ja"];

/// The three roles of a statement, in column order.
pub const ROLES: [&str; 3] = ["subject", "property", "object"];

/// Labels, descriptions and sitelinks of the entities a run exports.
#[derive(Clone, Debug, Default)]
pub struct EntityLookup {
    /// Language codes, in the order of `EntityRecord::labels`.
    pub languages: Vec<String>,
    entities: HashMap<EntityId, EntityRecord>,
    properties: HashMap<Pid, PropertyRecord>,
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

pub fn role_id(d: &Distortion, role: usize) -> EntityId {
    match role {
        0 => EntityId::Item(d.subject),
        1 => EntityId::Property(d.property),
        _ => EntityId::Item(d.object),
    }
}

/// The `sword.parquet` schema for the given languages (the default eight give the golden schema).
pub fn sword_schema(languages: &[String]) -> Arc<Schema> {
    let mut fields = distortion_fields();
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

/// The columns of one chunk of `sword.parquet` rows, in schema order.
fn columns_for(
    chunk: &[Distortion],
    lookup: &EntityLookup,
    dump_date: Option<&str>,
) -> Vec<ArrayRef> {
    let mut cols: Vec<ArrayRef> = distortion_columns(chunk);
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
    cols
}

/// Write `sword.parquet` rows to any writer.
pub fn write_sword<W: Write + Send>(
    w: W,
    rows: &[Distortion],
    lookup: &EntityLookup,
    dump_date: Option<&str>,
    path: &Path,
) -> Result<W> {
    write_sword_marked(w, rows, lookup, dump_date, true, &[], path)
}

/// [`write_sword`], marking an incomplete build (`complete == false`) with the key-value metadata
/// `sword.complete = false` (in the file's key-value metadata and in the Arrow schema's metadata), and
/// recording the build tags of its `lineage` as [`LINEAGE_KEY`] (absent when empty).
pub fn write_sword_marked<W: Write + Send>(
    w: W,
    rows: &[Distortion],
    lookup: &EntityLookup,
    dump_date: Option<&str>,
    complete: bool,
    lineage: &[String],
    path: &Path,
) -> Result<W> {
    let mut schema = sword_schema(&lookup.languages);
    let mut md = schema.metadata().clone();
    if !complete {
        md.insert(tables::COMPLETE_KEY.to_string(), "false".to_string());
    }
    if !lineage.is_empty() {
        md.insert(LINEAGE_KEY.to_string(), lineage.join(","));
    }
    schema = Arc::new(schema.as_ref().clone().with_metadata(md));
    tables::write_rows(w, schema, rows, complete, path, |s, chunk| {
        s.batch(columns_for(chunk, lookup, dump_date))
    })
}

/// The key columns of a `sword.parquet` batch: statement_id, strategy, original_id and label.
pub struct KeyColumns<'a> {
    pub statement_id: &'a StringArray,
    pub strategy: &'a StringArray,
    pub original_id: &'a arrow_array::UInt32Array,
    pub label: &'a arrow_array::BooleanArray,
}

impl<'a> KeyColumns<'a> {
    /// The key columns of `b`, or `Corrupt` naming `path` when one is missing or of the wrong type.
    pub fn of(b: &'a RecordBatch, path: &Path) -> Result<KeyColumns<'a>> {
        let oid = b
            .column_by_name("original_id")
            .and_then(|c| c.as_any().downcast_ref::<arrow_array::UInt32Array>());
        let lab = b
            .column_by_name("label")
            .and_then(|c| c.as_any().downcast_ref::<arrow_array::BooleanArray>());
        let (Some(original_id), Some(label)) = (oid, lab) else {
            return Err(Error::Corrupt {
                path: path.to_path_buf(),
                what: "missing original_id (uint32) or label (bool)".into(),
            });
        };
        Ok(KeyColumns {
            statement_id: tables::string_column(b, "statement_id", path)?,
            strategy: tables::string_column(b, "strategy", path)?,
            original_id,
            label,
        })
    }

    /// Is any key of row `i` null?
    pub(crate) fn has_null(&self, i: usize) -> bool {
        use arrow_array::Array;
        self.statement_id.is_null(i)
            || self.strategy.is_null(i)
            || self.original_id.is_null(i)
            || self.label.is_null(i)
    }
}

/// statement_id → (original_id, strategy, label) from a `sword.parquet`.
pub fn statement_meta(path: &Path) -> Result<HashMap<String, (String, String, bool)>> {
    let f = std::fs::File::open(path).at(path)?;
    let mut out = HashMap::new();
    for b in tables::read_batches(f, path)? {
        let k = KeyColumns::of(&b, path)?;
        for i in 0..b.num_rows() {
            if k.has_null(i) {
                continue;
            }
            out.insert(
                k.statement_id.value(i).to_string(),
                (
                    k.original_id.value(i).to_string(),
                    k.strategy.value(i).to_string(),
                    k.label.value(i),
                ),
            );
        }
    }
    Ok(out)
}

/// One statement of `sword.parquet` with its labels.
#[derive(Clone, Debug, PartialEq)]
pub struct Source {
    pub statement_id: String,
    pub original_id: u32,
    pub strategy: String,
    pub label: bool,
    /// Per language (in [`Sources::languages`] order): subject, property, object labels.
    pub labels: Vec<[Option<String>; 3]>,
}

impl Source {
    /// The three labels in `lang`, when all exist.
    pub fn labels_in<'a>(&'a self, languages: &[String], lang: &str) -> Option<[&'a str; 3]> {
        let l = languages.iter().position(|x| x == lang)?;
        let [s, p, o] = self.labels.get(l)?;
        Some([s.as_deref()?, p.as_deref()?, o.as_deref()?])
    }
}

/// The statements of a `sword.parquet`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Sources {
    /// Languages with label columns (`subject_label_<lang>`), in column order.
    pub languages: Vec<String>,
    pub rows: Vec<Source>,
}

/// Read the statements and their labels from `sword.parquet`.
pub fn read_sources(path: &Path) -> Result<Sources> {
    use arrow_array::Array;
    let f = std::fs::File::open(path).at(path)?;
    let mut out = Sources::default();
    for b in tables::read_batches(f, path)? {
        if out.languages.is_empty() {
            out.languages = b
                .schema()
                .fields()
                .iter()
                .filter(|f| f.data_type() == &arrow_schema::DataType::Utf8)
                .filter_map(|f| f.name().strip_prefix("subject_label_").map(str::to_string))
                .collect();
        }
        let k = KeyColumns::of(&b, path)?;
        let mut cols = Vec::new();
        for l in &out.languages {
            let c = |r: &str| tables::string_column(&b, &format!("{r}_label_{l}"), path);
            cols.push([c("subject")?, c("property")?, c("object")?]);
        }
        for i in 0..b.num_rows() {
            if k.has_null(i) {
                return Err(Error::Corrupt {
                    path: path.to_path_buf(),
                    what: format!("row {i}: null statement_id, original_id, strategy or label"),
                });
            }
            let get = |c: &arrow_array::StringArray| c.is_valid(i).then(|| c.value(i).to_string());
            out.rows.push(Source {
                statement_id: k.statement_id.value(i).to_string(),
                original_id: k.original_id.value(i),
                strategy: k.strategy.value(i).to_string(),
                label: k.label.value(i),
                labels: cols
                    .iter()
                    .map(|[s, p, o]| [get(s), get(p), get(o)])
                    .collect(),
            });
        }
    }
    Ok(out)
}
