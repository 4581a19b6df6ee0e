//! Parquet tables: schemas and typed read/write for the artifacts stages exchange.
//!
//! Ids are written as strings ("Q42", "P31") so that any tool (DuckDB, pyarrow, polars, Spark) can join them
//! with other Wikidata data without knowing our encoding. Compression is ZSTD(3) (ZSTD(1) for statement GUIDs); files are written with a
//! fixed row-group size so that the same rows give the same bytes.

pub mod distortions;
pub mod falsity;
pub mod items;
pub mod lineage;
pub mod parallel;
pub mod revalidation;
pub mod sword;
#[cfg(test)]
mod testdata;
pub mod texts;

pub use self::parallel::{Budget, Columns, ParSink};

use crate::core::error::{Error, Result};
use crate::core::ids::{EntityId, Pid, Qid};
use crate::core::records::{EntityRecord, Label, PropertyRecord, Rank, Triple};
use arrow_array::{
    Array, ArrayRef, BooleanArray, RecordBatch, StringArray, UInt32Array, UInt64Array,
};
use arrow_schema::{DataType, Field, Schema};
use parquet::arrow::arrow_reader::{ParquetRecordBatchReader, ParquetRecordBatchReaderBuilder};
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::WriterProperties;
use parquet::file::reader::ChunkReader;
use parquet::schema::types::ColumnPath;
use std::borrow::Cow;
use std::io::Write;
use std::path::Path;
use std::sync::Arc;

/// Rows per record batch / row group written.
pub const ROW_GROUP: usize = 1 << 17;

/// Writer properties used for every artifact (ZSTD level 3 — level 1 for `statement_id` —, fixed row-group
/// size, no dictionary for the columns of unique values).
pub fn writer_props() -> WriterProperties {
    writer_props_marked(true)
}

/// Key of the Parquet key-value metadata that marks an artifact of an incomplete build (a dump that ended
/// early, read with `--allow-truncated`): `sword.complete = false`. A whole build writes no entry, so its
/// bytes are those it always wrote.
pub const COMPLETE_KEY: &str = "sword.complete";

/// [`writer_props`], with `sword.complete = false` in the file's key-value metadata when `complete` is false.
pub fn writer_props_marked(complete: bool) -> WriterProperties {
    let b = WriterProperties::builder()
        .set_compression(Compression::ZSTD(
            ZstdLevel::try_new(3).expect("valid level"),
        ))
        .set_max_row_group_row_count(Some(ROW_GROUP))
        // Unique in every row (statement GUIDs, entity ids): a dictionary would never repeat an entry, costs a
        // hash per value and is dropped for plain encoding once it fills a page.
        .set_column_dictionary_enabled(ColumnPath::from("statement_id"), false)
        .set_column_dictionary_enabled(ColumnPath::from("id"), false)
        // Statement GUIDs are random hex: ZSTD level 1 compresses them as well as level 3 (a little better,
        // 2.58 → 2.47 MB of `triples.parquet` on the 200 k-entity generated dump) at two thirds of the CPU.
        .set_column_compression(
            ColumnPath::from("statement_id"),
            Compression::ZSTD(ZstdLevel::try_new(1).expect("valid level")),
        );
    let b = if complete {
        b
    } else {
        b.set_key_value_metadata(Some(vec![parquet::file::metadata::KeyValue::new(
            COMPLETE_KEY.to_string(),
            "false".to_string(),
        )]))
    };
    b.build()
}

/// [`writer_props_marked`], and no dictionary for the label columns of `schema` (`label_<lang>`): labels are
/// nearly unique per column (a dictionary of them costs a hash per value, repeats almost nothing and made the
/// files larger: 2.67 → 2.45 MB of `entities.parquet` on the 200 k-entity generated dump, and 22 % less of the
/// writer's CPU; "Extract tail" in the benchmarks log, docs/benchmarks-log).
pub fn writer_props_for(schema: &Schema, complete: bool) -> WriterProperties {
    let mut b = writer_props_marked(complete).into_builder();
    for f in schema.fields() {
        if f.name().starts_with("label_") && f.data_type() == &DataType::Utf8 {
            b = b.set_column_dictionary_enabled(ColumnPath::from(f.name().as_str()), false);
        }
    }
    b.build()
}

/// Whether a Parquet file says it comes from a whole build: `false` when its key-value metadata holds
/// `sword.complete = false`.
pub fn file_is_complete(path: &Path) -> Result<bool> {
    use parquet::file::reader::{FileReader, SerializedFileReader};
    let f = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let r = SerializedFileReader::new(f).map_err(|e| Error::unreadable_parquet(path, e))?;
    let kv = r.metadata().file_metadata().key_value_metadata();
    Ok(!kv.is_some_and(|kv| {
        kv.iter()
            .any(|e| e.key == COMPLETE_KEY && e.value.as_deref() == Some("false"))
    }))
}

/// Schema of `triples.parquet`, `statements.parquet` and `transitive.parquet`:
/// `subject` (utf8, "Q42"), `property` (utf8, "P31"), `object` (utf8), `rank` (utf8: preferred / normal /
/// deprecated), `statement_id` (utf8, Wikidata statement GUID).
pub fn triple_schema() -> Arc<Schema> {
    Arc::new(Schema::new(vec![
        Field::new("subject", DataType::Utf8, false),
        Field::new("property", DataType::Utf8, false),
        Field::new("object", DataType::Utf8, false),
        Field::new("rank", DataType::Utf8, false),
        Field::new("statement_id", DataType::Utf8, false),
    ]))
}

/// Write triples as Parquet to any writer (a file, or a `Vec<u8>` in tests).
pub fn write_triples<W: Write + Send>(
    w: W,
    triples: &[Triple],
    path_for_errors: &Path,
) -> Result<W> {
    write_triples_chunked(
        w,
        triples.chunks(ROW_GROUP).map(Cow::Borrowed),
        true,
        path_for_errors,
    )
}

/// Write triples given as consecutive chunks (each becomes one record batch; chunks of `ROW_GROUP` rows give
/// the same bytes as [`write_triples`], and so do chunks of any multiple of [`STREAM_BATCH`] rows), so a caller
/// can convert rows lazily instead of holding them all. `complete == false` marks the file (see
/// [`writer_props_marked`]).
pub fn write_triples_chunked<'a, W: Write + Send>(
    w: W,
    chunks: impl IntoIterator<Item = Cow<'a, [Triple]>>,
    complete: bool,
    path_for_errors: &Path,
) -> Result<W> {
    let mut sink = Sink::new(w, triple_schema(), complete, path_for_errors)?;
    for chunk in chunks {
        sink.triples(&chunk)?;
    }
    sink.finish()
}

/// Rows per record batch for writers fed a stream (the extract stage's join): a divisor of [`ROW_GROUP`] and
/// a multiple of the Parquet writer's mini-batch (1024 rows), so the pages and row groups — the bytes — are
/// those of one batch per row group, while only this many rows are held.
pub const STREAM_BATCH: usize = 8192;

/// A Parquet artifact written batch by batch (the typed `write_*` functions are loops over one).
pub struct Sink<W: Write + Send> {
    writer: ArrowWriter<W>,
    schema: Arc<Schema>,
    path: std::path::PathBuf,
}

impl<W: Write + Send> Sink<W> {
    /// A writer of `schema` with the project's properties (`complete == false` marks the file).
    pub fn new(w: W, schema: Arc<Schema>, complete: bool, path_for_errors: &Path) -> Result<Self> {
        let props = writer_props_for(&schema, complete);
        let writer = ArrowWriter::try_new(w, schema.clone(), Some(props))
            .map_err(|e| Error::parquet(path_for_errors, e))?;
        Ok(Sink {
            writer,
            schema,
            path: path_for_errors.to_path_buf(),
        })
    }

    /// Append one record batch of `cols` (in schema order).
    pub fn batch(&mut self, cols: Vec<ArrayRef>) -> Result<()> {
        let batch = RecordBatch::try_new(self.schema.clone(), cols)
            .map_err(|e| Error::parquet(&self.path, e))?;
        self.writer
            .write(&batch)
            .map_err(|e| Error::parquet(&self.path, e))
    }

    /// Append triples (one record batch; the sink must have been made with [`triple_schema`]).
    pub fn triples(&mut self, chunk: &[Triple]) -> Result<()> {
        self.rows(&TripleColumns, chunk)
    }

    /// Append `rows` as one record batch of `columns` (the sink must have been made with its schema).
    pub fn rows<C: Columns>(&mut self, columns: &C, rows: &[C::Row]) -> Result<()> {
        columns
            .check(rows)
            .map_err(|m| Error::parquet(&self.path, m))?;
        self.batch(parallel::columns_of(columns, rows))
    }

    /// Finish the file; returns the writer.
    pub fn finish(self) -> Result<W> {
        self.writer
            .into_inner()
            .map_err(|e| Error::parquet(&self.path, e))
    }
}

/// Write `rows` as a Parquet file of `schema` (with [`writer_props_for`] it, `complete == false` marking the
/// file): one record batch (made by `batch`) per [`ROW_GROUP`] rows, so the same rows give the same bytes.
/// Returns the writer. Every table written from a slice of rows is written by this.
pub fn write_rows<W: Write + Send, T>(
    w: W,
    schema: Arc<Schema>,
    rows: &[T],
    complete: bool,
    path_for_errors: &Path,
    mut batch: impl FnMut(&mut Sink<W>, &[T]) -> Result<()>,
) -> Result<W> {
    let mut sink = Sink::new(w, schema, complete, path_for_errors)?;
    for chunk in rows.chunks(ROW_GROUP) {
        batch(&mut sink, chunk)?;
    }
    sink.finish()
}

/// A utf8 column of entity ids (`Q42`, `P31`: each `(prefix, number)` as the prefix then the number in
/// decimal), written without a `String` per value.
pub fn id_column(ids: impl ExactSizeIterator<Item = (u8, u64)>) -> ArrayRef {
    let n = ids.len();
    utf8_column(n, 8, ids, |(prefix, v), out| {
        out.push(prefix);
        crate::core::ids::push_u64(out, v);
    })
}

/// A string column without nulls, each row's text appended by `write` straight into the array's value buffer
/// (`rows` rows, ≈ `bytes_per_row` each): the same array as a `StringBuilder` fed row by row, without its
/// copy and UTF-8 check per row (the buffer is checked once, by [`StringArray::new`]). `write` must append
/// whole UTF-8 texts.
///
/// # Panics
/// When the texts are no UTF-8 or pass 2 GiB together (neither happens for a row group of ids or GUIDs).
pub fn utf8_column<T>(
    rows: usize,
    bytes_per_row: usize,
    items: impl Iterator<Item = T>,
    mut write: impl FnMut(T, &mut Vec<u8>),
) -> ArrayRef {
    let mut values: Vec<u8> = Vec::with_capacity(rows.saturating_mul(bytes_per_row));
    let mut offsets = arrow_array::builder::OffsetBufferBuilder::<i32>::new(rows);
    for item in items {
        let before = values.len();
        write(item, &mut values);
        offsets.push_length(values.len().saturating_sub(before));
    }
    Arc::new(StringArray::new(offsets.finish(), values.into(), None))
}

/// Read all record batches of a Parquet source.
pub fn read_batches<R: ChunkReader + 'static>(src: R, path: &Path) -> Result<Vec<RecordBatch>> {
    let reader = ParquetRecordBatchReaderBuilder::try_new(src)
        .map_err(|e| Error::unreadable_parquet(path, e))?
        .with_batch_size(ROW_GROUP)
        .build()
        .map_err(|e| Error::unreadable_parquet(path, e))?;
    reader
        .map(|b| b.map_err(|e| Error::unreadable_parquet(path, e)))
        .collect()
}

/// Get a utf8 column by name, or a `Corrupt` error naming the file and column.
pub fn string_column<'a>(
    batch: &'a RecordBatch,
    name: &str,
    path: &Path,
) -> Result<&'a StringArray> {
    batch
        .column_by_name(name)
        .and_then(|c| c.as_any().downcast_ref::<StringArray>())
        .ok_or_else(|| Error::Corrupt {
            path: path.to_path_buf(),
            what: format!("missing utf8 column `{name}`"),
        })
}

/// Read triples written by `write_triples` (or any Parquet with the same column names and types).
pub fn read_triples<R: ChunkReader + 'static>(src: R, path: &Path) -> Result<Vec<Triple>> {
    let mut out = Vec::new();
    for batch in read_batches(src, path)? {
        let s = string_column(&batch, "subject", path)?;
        let p = string_column(&batch, "property", path)?;
        let o = string_column(&batch, "object", path)?;
        let r = string_column(&batch, "rank", path)?;
        let id = batch
            .column_by_name("statement_id")
            .and_then(|c| c.as_any().downcast_ref::<StringArray>());
        for i in 0..batch.num_rows() {
            let bad = |what: &str, v: &str| Error::Corrupt {
                path: path.to_path_buf(),
                what: format!("row {i}: bad {what} `{v}`"),
            };
            out.push(Triple {
                subject: Qid::parse(s.value(i)).ok_or_else(|| bad("subject", s.value(i)))?,
                property: Pid::parse(p.value(i)).ok_or_else(|| bad("property", p.value(i)))?,
                object: Qid::parse(o.value(i)).ok_or_else(|| bad("object", o.value(i)))?,
                rank: Rank::parse(r.value(i)).ok_or_else(|| bad("rank", r.value(i)))?,
                statement_id: id
                    .filter(|c| c.is_valid(i))
                    .map(|c| c.value(i).to_string())
                    .unwrap_or_default(),
            });
        }
    }
    Ok(out)
}

/// Read triples from a Parquet file on disk.
pub fn read_triples_file(path: &Path) -> Result<Vec<Triple>> {
    let f = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    read_triples(f, path)
}

/// A reader of the named columns of a Parquet file, batch by batch (nothing but the batch in memory).
fn column_reader(
    path: &Path,
    columns: &[&str],
) -> Result<parquet::arrow::arrow_reader::ParquetRecordBatchReader> {
    let f = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let builder = ParquetRecordBatchReaderBuilder::try_new(f)
        .map_err(|e| Error::unreadable_parquet(path, e))?;
    let mask =
        parquet::arrow::ProjectionMask::columns(builder.parquet_schema(), columns.iter().copied());
    builder
        .with_projection(mask)
        .with_batch_size(ROW_GROUP)
        .build()
        .map_err(|e| Error::unreadable_parquet(path, e))
}

/// Stream the subject, property and object (and the rank, with `with_rank`) of every row of a triples file,
/// reading only those columns, one batch at a time: `f(row, subject, property, object, rank)` in file order
/// (`rank` is `Normal` without `with_rank`). Returns the number of rows. Errors name the file and the row.
pub fn for_each_triple(
    path: &Path,
    with_rank: bool,
    mut f: impl FnMut(u64, Qid, Pid, Qid, Rank),
) -> Result<u64> {
    let cols: &[&str] = if with_rank {
        &["subject", "property", "object", "rank"]
    } else {
        &["subject", "property", "object"]
    };
    let mut row = 0u64;
    for batch in column_reader(path, cols)? {
        let batch = batch.map_err(|e| Error::unreadable_parquet(path, e))?;
        let s = string_column(&batch, "subject", path)?;
        let p = string_column(&batch, "property", path)?;
        let o = string_column(&batch, "object", path)?;
        let r = if with_rank {
            Some(string_column(&batch, "rank", path)?)
        } else {
            None
        };
        for i in 0..batch.num_rows() {
            let bad = |what: &str, v: &str| Error::Corrupt {
                path: path.to_path_buf(),
                what: format!("row {}: bad {what} `{v}`", row + i as u64),
            };
            let rank = match r {
                Some(r) => Rank::parse(r.value(i)).ok_or_else(|| bad("rank", r.value(i)))?,
                None => Rank::Normal,
            };
            f(
                row + i as u64,
                Qid::parse(s.value(i)).ok_or_else(|| bad("subject", s.value(i)))?,
                Pid::parse(p.value(i)).ok_or_else(|| bad("property", p.value(i)))?,
                Qid::parse(o.value(i)).ok_or_else(|| bad("object", o.value(i)))?,
                rank,
            );
        }
        row += batch.num_rows() as u64;
    }
    Ok(row)
}

/// The `statement_id` (empty when null or absent, as [`read_triples`] gives it) of the rows `rows` of a
/// triples file, in the order of `rows` (any order, repeats allowed), reading that one column.
pub fn statement_ids_at(path: &Path, rows: &[u64]) -> Result<Vec<String>> {
    let mut want: Vec<(u64, usize)> = rows.iter().copied().zip(0..).collect();
    want.sort_unstable();
    let mut out = vec![String::new(); rows.len()];
    let f = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let builder = ParquetRecordBatchReaderBuilder::try_new(f)
        .map_err(|e| Error::unreadable_parquet(path, e))?;
    if builder.schema().column_with_name("statement_id").is_none() {
        return Ok(out);
    }
    drop(builder);
    let mut next = 0;
    let mut row = 0u64;
    for batch in column_reader(path, &["statement_id"])? {
        if next == want.len() {
            break;
        }
        let batch = batch.map_err(|e| Error::unreadable_parquet(path, e))?;
        let id = string_column(&batch, "statement_id", path)?;
        let end = row + batch.num_rows() as u64;
        while next < want.len() && want[next].0 < end {
            let (r, slot) = want[next];
            let i = (r - row) as usize;
            if id.is_valid(i) {
                out[slot] = id.value(i).to_string();
            }
            next += 1;
        }
        row = end;
    }
    Ok(out)
}

/// Schema of `entities.parquet` for the given languages (in order): `id` utf8 ("Q42" / "P31"), `kind` utf8
/// (`item` | `property`), per language L: `label_L` utf8, `label_L_from_mul` bool (the label is the entity's
/// `mul` label), `description_L` utf8 nullable; then `sitelinks` uint32, `lastrevid` uint64 nullable,
/// `modified` utf8 nullable (ISO 8601 as in the dump).
pub fn entity_schema(langs: &[String]) -> Arc<Schema> {
    let mut fields = vec![
        Field::new("id", DataType::Utf8, false),
        Field::new("kind", DataType::Utf8, false),
    ];
    for l in langs {
        fields.extend(label_fields(l, false));
        fields.push(Field::new(format!("description_{l}"), DataType::Utf8, true));
    }
    fields.push(Field::new("sitelinks", DataType::UInt32, false));
    fields.push(Field::new("lastrevid", DataType::UInt64, true));
    fields.push(Field::new("modified", DataType::Utf8, true));
    Arc::new(Schema::new(fields))
}

/// `label_L` utf8 and `label_L_from_mul` bool of language `l` (nullable in `properties.parquet`, where a
/// property may have no label in a language).
fn label_fields(l: &str, nullable: bool) -> [Field; 2] {
    [
        Field::new(format!("label_{l}"), DataType::Utf8, nullable),
        Field::new(format!("label_{l}_from_mul"), DataType::Boolean, nullable),
    ]
}

fn entity_kind(id: &EntityId) -> &'static str {
    match id {
        EntityId::Item(_) => "item",
        EntityId::Property(_) => "property",
    }
}

/// Write labelled entities (`entities.parquet`). Every record must have one label and one description slot
/// per language. `complete == false` marks the file (see [`writer_props_marked`]).
pub fn write_entities<W: Write + Send>(
    w: W,
    langs: &[String],
    entities: &[EntityRecord],
    complete: bool,
    path_for_errors: &Path,
) -> Result<W> {
    write_rows(
        w,
        entity_schema(langs),
        entities,
        complete,
        path_for_errors,
        |s, c| s.entities(langs, c),
    )
}

impl<W: Write + Send> Sink<W> {
    /// Append labelled entities (one record batch; the sink must have been made with [`entity_schema`] of
    /// `langs`).
    pub fn entities(&mut self, langs: &[String], chunk: &[EntityRecord]) -> Result<()> {
        self.rows(&EntityColumns::new(langs), chunk)
    }
}

/// The columns of `triples.parquet`, `statements.parquet` and `transitive.parquet` ([`triple_schema`]) from
/// [`Triple`]s.
pub struct TripleColumns;

impl Columns for TripleColumns {
    type Row = Triple;
    fn schema(&self) -> Arc<Schema> {
        triple_schema()
    }
    fn column(&self, rows: &[Triple], c: usize) -> ArrayRef {
        // Built in place: no `String` per cell (the join streams hundreds of thousands of rows per second).
        match c {
            0 => id_column(rows.iter().map(|t| (b'Q', t.subject.0))),
            1 => id_column(rows.iter().map(|t| (b'P', t.property.0))),
            2 => id_column(rows.iter().map(|t| (b'Q', t.object.0))),
            3 => rank_column(rows.iter().map(|t| t.rank)),
            _ => Arc::new(StringArray::from_iter_values(
                rows.iter().map(|t| t.statement_id.as_str()),
            )),
        }
    }
    fn weigh(&self, rows: &[Triple]) -> usize {
        rows.iter()
            .map(|t| std::mem::size_of::<Triple>() + t.statement_id.capacity())
            .sum()
    }
}

/// The `rank` column of a triples table.
pub fn rank_column(ranks: impl Iterator<Item = Rank>) -> ArrayRef {
    Arc::new(StringArray::from_iter_values(ranks.map(Rank::as_str)))
}

/// The columns of `entities.parquet` ([`entity_schema`] of its languages) from [`EntityRecord`]s, each with
/// one label and one description slot per language.
pub struct EntityColumns {
    langs: usize,
    schema: Arc<Schema>,
}

impl EntityColumns {
    pub fn new(langs: &[String]) -> EntityColumns {
        EntityColumns {
            langs: langs.len(),
            schema: entity_schema(langs),
        }
    }
}

impl Columns for EntityColumns {
    type Row = EntityRecord;
    fn schema(&self) -> Arc<Schema> {
        self.schema.clone()
    }
    fn check(&self, rows: &[EntityRecord]) -> std::result::Result<(), String> {
        match rows
            .iter()
            .find(|e| e.labels.len() != self.langs || e.descriptions.len() != self.langs)
        {
            Some(bad) => Err(format!(
                "entity {} does not have {} languages",
                bad.id, self.langs
            )),
            None => Ok(()),
        }
    }
    fn column(&self, chunk: &[EntityRecord], c: usize) -> ArrayRef {
        let per_lang = c.checked_sub(2).map(|k| (k / 3, k % 3));
        match (c, per_lang) {
            (0, _) => id_column(chunk.iter().map(|e| match e.id {
                EntityId::Item(q) => (b'Q', q.0),
                EntityId::Property(p) => (b'P', p.0),
            })),
            (1, _) => Arc::new(StringArray::from_iter_values(
                chunk.iter().map(|e| entity_kind(&e.id)),
            )),
            (_, Some((i, 0))) if i < self.langs => Arc::new(StringArray::from_iter_values(
                chunk.iter().map(|e| e.labels[i].text.as_str()),
            )),
            (_, Some((i, 1))) if i < self.langs => Arc::new(BooleanArray::from(
                chunk
                    .iter()
                    .map(|e| e.labels[i].from_mul)
                    .collect::<Vec<_>>(),
            )),
            (_, Some((i, 2))) if i < self.langs => Arc::new(StringArray::from(
                chunk
                    .iter()
                    .map(|e| e.descriptions[i].as_deref())
                    .collect::<Vec<_>>(),
            )),
            (_, Some((i, 0))) if i == self.langs => Arc::new(UInt32Array::from_iter_values(
                chunk.iter().map(|e| e.sitelinks),
            )),
            (_, Some((i, 1))) if i == self.langs => Arc::new(UInt64Array::from(
                chunk.iter().map(|e| e.lastrevid).collect::<Vec<_>>(),
            )),
            _ => Arc::new(StringArray::from(
                chunk
                    .iter()
                    .map(|e| e.modified.as_deref())
                    .collect::<Vec<_>>(),
            )),
        }
    }
    fn weigh(&self, rows: &[EntityRecord]) -> usize {
        rows.iter().map(entity_mem).sum()
    }
}

/// Bytes an entity record holds (its struct, its strings and vectors).
fn entity_mem(e: &EntityRecord) -> usize {
    let strings: usize = e.labels.iter().map(|l| l.text.capacity()).sum::<usize>()
        + e.descriptions
            .iter()
            .flatten()
            .map(String::capacity)
            .sum::<usize>()
        + e.modified.as_ref().map_or(0, String::capacity);
    std::mem::size_of::<EntityRecord>()
        + e.labels.capacity() * std::mem::size_of::<Label>()
        + e.descriptions.capacity() * std::mem::size_of::<Option<String>>()
        + strings
}

/// Column `name` of `batch` as an array of type `A` (an error naming the file when missing or of another type).
pub(crate) fn typed_column<'a, A: 'static>(
    batch: &'a RecordBatch,
    name: &str,
    path: &Path,
) -> Result<&'a A> {
    batch
        .column_by_name(name)
        .and_then(|c| c.as_any().downcast_ref::<A>())
        .ok_or_else(|| Error::Corrupt {
            path: path.to_path_buf(),
            what: format!("missing or mistyped column `{name}`"),
        })
}

/// Languages of an entities/properties schema: the `L` of every `label_L` column, in column order.
fn label_languages(schema: &Schema) -> Vec<String> {
    schema
        .fields()
        .iter()
        .filter_map(|f| f.name().strip_prefix("label_"))
        .filter(|l| !l.ends_with("_from_mul"))
        .map(str::to_string)
        .collect()
}

/// A reader of `entities.parquet` or `properties.parquet`, `batch` rows at a time, and the file's languages
/// (column order).
fn labelled_reader<R: ChunkReader + 'static>(
    src: R,
    path: &Path,
    batch: usize,
) -> Result<(Vec<String>, ParquetRecordBatchReader)> {
    let builder = ParquetRecordBatchReaderBuilder::try_new(src)
        .map_err(|e| Error::unreadable_parquet(path, e))?;
    let langs = label_languages(builder.schema());
    let reader = builder
        .with_batch_size(batch.max(1))
        .build()
        .map_err(|e| Error::unreadable_parquet(path, e))?;
    Ok((langs, reader))
}

/// The `label_L` and `label_L_from_mul` columns of `batch` for every language `L` of `langs`.
fn label_columns<'a>(
    batch: &'a RecordBatch,
    langs: &[String],
    path: &Path,
) -> Result<Vec<(&'a StringArray, &'a BooleanArray)>> {
    langs
        .iter()
        .map(|l| {
            Ok((
                string_column(batch, &format!("label_{l}"), path)?,
                typed_column::<BooleanArray>(batch, &format!("label_{l}_from_mul"), path)?,
            ))
        })
        .collect()
}

/// Read `entities.parquet` from any source: the languages (column order) and the records.
pub fn read_entities_from<R: ChunkReader + 'static>(
    src: R,
    path: &Path,
) -> Result<(Vec<String>, Vec<EntityRecord>)> {
    read_entities_where(src, path, ROW_GROUP, |_| true)
}

/// [`read_entities_from`] keeping only the records whose id `keep` accepts (the others are never copied out
/// of their batch), `batch` rows at a time: what a stage holds is the kept records and one batch.
pub fn read_entities_where<R: ChunkReader + 'static>(
    src: R,
    path: &Path,
    batch: usize,
    keep: impl Fn(EntityId) -> bool,
) -> Result<(Vec<String>, Vec<EntityRecord>)> {
    let (langs, reader) = labelled_reader(src, path, batch)?;
    let mut out = Vec::new();
    for batch in reader {
        let batch = batch.map_err(|e| Error::unreadable_parquet(path, e))?;
        let id = string_column(&batch, "id", path)?;
        let labels = label_columns(&batch, &langs, path)?;
        let descriptions: Vec<&StringArray> = langs
            .iter()
            .map(|l| string_column(&batch, &format!("description_{l}"), path))
            .collect::<Result<_>>()?;
        let sitelinks = typed_column::<UInt32Array>(&batch, "sitelinks", path)?;
        let lastrevid = typed_column::<UInt64Array>(&batch, "lastrevid", path)?;
        let modified = string_column(&batch, "modified", path)?;
        for i in 0..batch.num_rows() {
            let eid = EntityId::parse(id.value(i)).ok_or_else(|| Error::Corrupt {
                path: path.to_path_buf(),
                what: format!("row {i}: bad id `{}`", id.value(i)),
            })?;
            if !keep(eid) {
                continue;
            }
            out.push(EntityRecord {
                id: eid,
                labels: labels
                    .iter()
                    .map(|(t, m)| Label {
                        text: t.value(i).to_string(),
                        from_mul: m.value(i),
                    })
                    .collect(),
                descriptions: descriptions
                    .iter()
                    .map(|d| d.is_valid(i).then(|| d.value(i).to_string()))
                    .collect(),
                sitelinks: sitelinks.value(i),
                lastrevid: lastrevid.is_valid(i).then(|| lastrevid.value(i)),
                modified: modified.is_valid(i).then(|| modified.value(i).to_string()),
            });
        }
    }
    Ok((langs, out))
}

/// Read `entities.parquet` from disk: `(languages in column order, records)`.
pub fn read_entities(path: &Path) -> Result<(Vec<String>, Vec<EntityRecord>)> {
    let f = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    read_entities_from(f, path)
}

/// Schema of `properties.parquet`: `id` utf8 ("P31"), `datatype` utf8, per language L `label_L` utf8 nullable
/// and `label_L_from_mul` bool nullable, `transitive` bool, `symmetric` bool, `inverse` utf8 (comma-separated
/// P-ids, sorted, empty when none).
pub fn property_schema(langs: &[String]) -> Arc<Schema> {
    let mut fields = vec![
        Field::new("id", DataType::Utf8, false),
        Field::new("datatype", DataType::Utf8, false),
    ];
    for l in langs {
        fields.extend(label_fields(l, true));
    }
    fields.push(Field::new("transitive", DataType::Boolean, false));
    fields.push(Field::new("symmetric", DataType::Boolean, false));
    fields.push(Field::new("inverse", DataType::Utf8, false));
    Arc::new(Schema::new(fields))
}

/// Write property metadata (`properties.parquet`). `complete == false` marks the file (see
/// [`writer_props_marked`]).
pub fn write_properties<W: Write + Send>(
    w: W,
    langs: &[String],
    props: &[PropertyRecord],
    complete: bool,
    path_for_errors: &Path,
) -> Result<W> {
    write_rows(
        w,
        property_schema(langs),
        props,
        complete,
        path_for_errors,
        |s, c| s.properties(langs, c),
    )
}

impl<W: Write + Send> Sink<W> {
    /// Append property metadata (one record batch; the sink must have been made with [`property_schema`] of
    /// `langs`).
    pub fn properties(&mut self, langs: &[String], chunk: &[PropertyRecord]) -> Result<()> {
        self.rows(&PropertyColumns::new(langs), chunk)
    }
}

/// The columns of `properties.parquet` ([`property_schema`] of its languages) from [`PropertyRecord`]s, each
/// with one label slot per language.
pub struct PropertyColumns {
    langs: usize,
    schema: Arc<Schema>,
}

impl PropertyColumns {
    pub fn new(langs: &[String]) -> PropertyColumns {
        PropertyColumns {
            langs: langs.len(),
            schema: property_schema(langs),
        }
    }
}

impl Columns for PropertyColumns {
    type Row = PropertyRecord;
    fn schema(&self) -> Arc<Schema> {
        self.schema.clone()
    }
    fn check(&self, rows: &[PropertyRecord]) -> std::result::Result<(), String> {
        match rows.iter().find(|p| p.labels.len() != self.langs) {
            Some(bad) => Err(format!(
                "property {} does not have {} languages",
                bad.id, self.langs
            )),
            None => Ok(()),
        }
    }
    fn column(&self, chunk: &[PropertyRecord], c: usize) -> ArrayRef {
        let per_lang = c.checked_sub(2).map(|k| (k / 2, k % 2));
        match (c, per_lang) {
            (0, _) => Arc::new(StringArray::from_iter_values(
                chunk.iter().map(|p| p.id.to_string()),
            )),
            (1, _) => Arc::new(StringArray::from_iter_values(
                chunk.iter().map(|p| p.datatype.as_str()),
            )),
            (_, Some((i, 0))) if i < self.langs => Arc::new(StringArray::from(
                chunk
                    .iter()
                    .map(|p| p.labels[i].as_ref().map(|l| l.text.as_str()))
                    .collect::<Vec<_>>(),
            )),
            (_, Some((i, 1))) if i < self.langs => Arc::new(BooleanArray::from(
                chunk
                    .iter()
                    .map(|p| p.labels[i].as_ref().map(|l| l.from_mul))
                    .collect::<Vec<_>>(),
            )),
            (_, Some((i, 0))) if i == self.langs => Arc::new(BooleanArray::from(
                chunk.iter().map(|p| p.transitive).collect::<Vec<_>>(),
            )),
            (_, Some((i, 1))) if i == self.langs => Arc::new(BooleanArray::from(
                chunk.iter().map(|p| p.symmetric).collect::<Vec<_>>(),
            )),
            _ => Arc::new(StringArray::from_iter_values(chunk.iter().map(|p| {
                p.inverse
                    .iter()
                    .map(|q| q.to_string())
                    .collect::<Vec<_>>()
                    .join(",")
            }))),
        }
    }
    fn weigh(&self, rows: &[PropertyRecord]) -> usize {
        rows.iter()
            .map(|p| {
                std::mem::size_of::<PropertyRecord>()
                    + p.datatype.capacity()
                    + p.inverse.capacity() * 8
                    + p.labels.capacity() * std::mem::size_of::<Option<Label>>()
                    + p.labels
                        .iter()
                        .flatten()
                        .map(|l| l.text.capacity())
                        .sum::<usize>()
            })
            .sum()
    }
}

/// Read `properties.parquet` from any source.
pub fn read_properties_from<R: ChunkReader + 'static>(
    src: R,
    path: &Path,
) -> Result<Vec<PropertyRecord>> {
    let (langs, reader) = labelled_reader(src, path, ROW_GROUP)?;
    let mut out = Vec::new();
    for batch in reader {
        let batch = batch.map_err(|e| Error::unreadable_parquet(path, e))?;
        let id = string_column(&batch, "id", path)?;
        let datatype = string_column(&batch, "datatype", path)?;
        let labels = label_columns(&batch, &langs, path)?;
        let transitive = typed_column::<BooleanArray>(&batch, "transitive", path)?;
        let symmetric = typed_column::<BooleanArray>(&batch, "symmetric", path)?;
        let inverse = string_column(&batch, "inverse", path)?;
        for i in 0..batch.num_rows() {
            let bad = |what: &str, v: &str| Error::Corrupt {
                path: path.to_path_buf(),
                what: format!("row {i}: bad {what} `{v}`"),
            };
            let inv = inverse.value(i);
            out.push(PropertyRecord {
                id: Pid::parse(id.value(i)).ok_or_else(|| bad("id", id.value(i)))?,
                datatype: datatype.value(i).to_string(),
                labels: labels
                    .iter()
                    .map(|(t, m)| {
                        t.is_valid(i).then(|| Label {
                            text: t.value(i).to_string(),
                            from_mul: m.is_valid(i) && m.value(i),
                        })
                    })
                    .collect(),
                transitive: transitive.value(i),
                symmetric: symmetric.value(i),
                inverse: if inv.is_empty() {
                    Vec::new()
                } else {
                    inv.split(',')
                        .map(|p| Pid::parse(p).ok_or_else(|| bad("inverse", inv)))
                        .collect::<Result<_>>()?
                },
            });
        }
    }
    Ok(out)
}

/// Read `properties.parquet` from disk.
pub fn read_properties(path: &Path) -> Result<Vec<PropertyRecord>> {
    let f = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    read_properties_from(f, path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn id_column_is_the_display_of_the_ids(v in proptest::collection::vec(any::<u64>(), 0..50), small in 0u64..1000) {
            let ids: Vec<(u8, u64)> = v.iter().map(|&v| (b'Q', v)).chain([(b'P', small)]).collect();
            let col = id_column(ids.into_iter());
            let col = col.as_any().downcast_ref::<StringArray>().unwrap();
            let want: Vec<String> = v.iter().map(|&v| Qid(v).to_string()).chain([Pid(small).to_string()]).collect();
            prop_assert_eq!(col.null_count(), 0);
            prop_assert_eq!(col.iter().map(|x| x.unwrap().to_string()).collect::<Vec<_>>(), want.clone());
            // The same array as a builder fed row by row (what the writer encodes).
            prop_assert_eq!(col, &StringArray::from_iter_values(want));
        }
    }

    #[test]
    fn id_column_by_hand() {
        let col = id_column([(b'Q', 0u64), (b'Q', 5), (b'P', 42), (b'Q', u64::MAX)].into_iter());
        let col = col.as_any().downcast_ref::<StringArray>().unwrap();
        let got: Vec<&str> = col.iter().map(Option::unwrap).collect();
        assert_eq!(got, ["Q0", "Q5", "P42", "Q18446744073709551615"]);
    }

    #[test]
    fn triples_round_trip_in_memory() {
        let triples = vec![
            Triple {
                subject: Qid(42),
                property: Pid(31),
                object: Qid(5),
                rank: Rank::Normal,
                statement_id: "Q42$abc".into(),
            },
            Triple {
                subject: Qid(90),
                property: Pid(17),
                object: Qid(142),
                rank: Rank::Preferred,
                statement_id: String::new(),
            },
        ];
        let bytes = write_triples(Vec::new(), &triples, Path::new("mem")).unwrap();
        let back = read_triples(bytes::Bytes::from(bytes), Path::new("mem")).unwrap();
        assert_eq!(back, triples);
    }

    #[test]
    fn an_incomplete_build_is_marked_and_a_whole_one_keeps_its_bytes() {
        let triples: Vec<Triple> = (1..=3u64)
            .map(|i| Triple {
                subject: Qid(i),
                property: Pid(31),
                object: Qid(5),
                rank: Rank::Normal,
                statement_id: String::new(),
            })
            .collect();
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, complete: bool| {
            let path = dir.path().join(name);
            let f = std::fs::File::create(&path).unwrap();
            let chunks = triples.chunks(ROW_GROUP).map(Cow::Borrowed);
            write_triples_chunked(f, chunks, complete, &path).unwrap();
            path
        };
        let (whole, cut) = (write("whole.parquet", true), write("cut.parquet", false));
        assert!(file_is_complete(&whole).unwrap());
        assert!(!file_is_complete(&cut).unwrap());
        // The whole build's bytes are those of the unmarked writer; the rows are the same either way.
        let plain = write_triples(Vec::new(), &triples, Path::new("mem")).unwrap();
        assert_eq!(std::fs::read(&whole).unwrap(), plain);
        assert_eq!(read_triples_file(&cut).unwrap(), triples);
    }

    /// Batches of [`STREAM_BATCH`] rows give the bytes of one batch per row group (across a row-group
    /// boundary for triples; entities with varied strings and nulls).
    #[test]
    fn stream_batches_give_the_bytes_of_whole_row_groups() {
        let triples = testdata::triples(ROW_GROUP as u64 + 20_000);
        let whole = write_triples(Vec::new(), &triples, Path::new("mem")).unwrap();
        let streamed = write_triples_chunked(
            Vec::new(),
            triples.chunks(STREAM_BATCH).map(Cow::Borrowed),
            true,
            Path::new("mem"),
        )
        .unwrap();
        assert!(whole == streamed, "triples: bytes differ");
        let langs = vec!["en".to_string(), "ko".to_string()];
        let ents = testdata::entities(20_000, langs.len() as u64);
        let whole = write_entities(Vec::new(), &langs, &ents, true, Path::new("mem")).unwrap();
        let mut sink =
            Sink::new(Vec::new(), entity_schema(&langs), true, Path::new("mem")).unwrap();
        for c in ents.chunks(STREAM_BATCH) {
            sink.entities(&langs, c).unwrap();
        }
        assert!(whole == sink.finish().unwrap(), "entities: bytes differ");
    }

    #[test]
    fn entities_and_properties_round_trip_in_memory() {
        let langs = vec!["en".to_string(), "ko".to_string()];
        let ents = vec![
            EntityRecord {
                id: EntityId::Item(Qid(42)),
                labels: vec![
                    Label {
                        text: "Douglas Adams".into(),
                        from_mul: true,
                    },
                    Label {
                        text: "더글러스 애덤스".into(),
                        from_mul: false,
                    },
                ],
                descriptions: vec![Some("writer".into()), None],
                sitelinks: 150,
                lastrevid: Some(7),
                modified: None,
            },
            EntityRecord {
                id: EntityId::Property(Pid(31)),
                labels: vec![
                    Label {
                        text: "instance of".into(),
                        from_mul: false,
                    },
                    Label {
                        text: "인스턴스".into(),
                        from_mul: false,
                    },
                ],
                descriptions: vec![None, None],
                sitelinks: 0,
                lastrevid: None,
                modified: Some("2015-11-01T00:00:00Z".into()),
            },
        ];
        let bytes = write_entities(Vec::new(), &langs, &ents, true, Path::new("mem")).unwrap();
        let (l2, back) = read_entities_from(bytes::Bytes::from(bytes), Path::new("mem")).unwrap();
        assert_eq!(l2, langs);
        assert_eq!(back, ents);
        let props = vec![PropertyRecord {
            id: Pid(1696),
            datatype: "wikibase-property".into(),
            labels: vec![
                Some(Label {
                    text: "inverse property".into(),
                    from_mul: false,
                }),
                None,
            ],
            transitive: false,
            symmetric: true,
            inverse: vec![Pid(1), Pid(22)],
        }];
        let bytes = write_properties(Vec::new(), &langs, &props, true, Path::new("mem")).unwrap();
        let back = read_properties_from(bytes::Bytes::from(bytes), Path::new("mem")).unwrap();
        assert_eq!(back, props);
    }
}
