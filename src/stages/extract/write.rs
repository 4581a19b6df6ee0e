//! The extract stage's artifacts being written: the nine Parquet files, each encoded on the rayon pool
//! ([`tables::ParSink`]) from the rows the join streams, to temporary files renamed together at the end.

use super::cand::Cand;
use super::join::Out;
use super::spill::Record;
use crate::core::error::{Error, Result};
use crate::core::falsity::{Constraint, DistinctValue, SubjectValues, TypeStatement};
use crate::core::records::{EntityRecord, PropertyRecord};
use crate::store::layout::{
    CONSTRAINTS, DISTINCT, ENTITIES, PROPERTIES, STATEMENTS, TRANSITIVE, TRIPLES, TYPES, VALUES,
};
use crate::store::tables::falsity::{
    ConstraintColumns, DistinctColumns, TypesColumns, ValuesColumns,
};
use crate::store::tables::{self, Columns, EntityColumns, ParSink, PropertyColumns};
use crate::store::{AtomicFile, RunDir};
use std::sync::Arc;

/// Finish a file: footer written (flushed and fsynced by the caller before the files are renamed together:
/// [`ParquetOut::finish_each`]).
fn finish_sink<C: Columns>(sink: ParSink<C, AtomicFile>) -> Result<AtomicFile> {
    sink.finish()
}

/// One artifact being written: its encoder, then the finished temporary file (neither synced nor renamed
/// yet).
enum Table<C: Columns> {
    Open(ParSink<C, AtomicFile>),
    Closed(AtomicFile),
    /// Its writer failed while finishing (the error was returned; the temporary file is gone).
    Failed,
}

impl<C: Columns> Table<C> {
    fn send(&mut self, rows: Vec<C::Row>) -> Result<()> {
        match self {
            Table::Open(s) => s.send(rows),
            _ => Err(Error::internal("rows for an artifact already finished")),
        }
    }

    /// No more rows. With `wait`, the file is finished now, so that its row groups' buffers are freed before
    /// the next artifact streams; otherwise its last row group is encoded in the background while the join
    /// goes on.
    fn close(&mut self, wait: bool) -> Result<()> {
        match std::mem::replace(self, Table::Failed) {
            Table::Open(s) if wait => *self = Table::Closed(finish_sink(s)?),
            Table::Open(mut s) => {
                s.flush()?;
                *self = Table::Open(s);
            }
            other => *self = other,
        }
        Ok(())
    }

    fn into_file(self) -> Result<AtomicFile> {
        match self {
            Table::Open(s) => finish_sink(s),
            Table::Closed(f) => Ok(f),
            Table::Failed => Err(Error::internal("an artifact writer failed earlier")),
        }
    }
}

/// The nine artifacts being written (temporary files, not yet renamed: see [`store::commit_all`]), fed by
/// the join: the five of the triples and the four of the falsity tier (`extract::falsity`).
///
/// Each artifact is encoded on the rayon pool ([`tables::ParSink`]: the columns of every row group on any
/// worker, the row groups appended in order), with the bytes of the one-thread writer: once the dump is read,
/// the join and the encoding are the whole stage, and on one thread (or one writer thread per artifact) they
/// were the serial tail that bounded the speed-up on many cores (BENCHMARKS.md "Scaling"). The rows in flight
/// are bounded by one budget shared by the nine files. `entities` and `properties` are closed as soon as the
/// join has streamed them ([`Out::entities_done`], [`Out::properties_done`]), before the statements are
/// merged; after a join that spilled (`wait_on_close`: a tight memory limit) they are finished then, so that
/// the encoders of the three statement tables are the only ones holding row groups while those stream;
/// otherwise their last row groups are encoded while the statements are sorted and merged.
pub(super) struct ParquetOut {
    wait_on_close: bool,
    entities: Table<EntityColumns>,
    properties: Table<PropertyColumns>,
    triples: Table<CandColumns>,
    statements: Table<CandColumns>,
    transitive: Table<CandColumns>,
    constraints: Table<ConstraintColumns>,
    values: Table<ValuesColumns>,
    types: Table<TypesColumns>,
    distinct: Table<DistinctColumns>,
}

impl ParquetOut {
    pub(super) fn create(
        out: &RunDir,
        langs: &[String],
        complete: bool,
        wait_on_close: bool,
        budget: &Arc<tables::Budget>,
        threads: usize,
    ) -> Result<ParquetOut> {
        fn sink<C: Columns>(
            out: &RunDir,
            name: &str,
            columns: C,
            complete: bool,
            budget: &Arc<tables::Budget>,
            threads: usize,
        ) -> Result<Table<C>> {
            let path = out.path(name);
            let file = out.create(name)?;
            Ok(Table::Open(ParSink::new(
                file,
                columns,
                complete,
                &path,
                Arc::clone(budget),
                threads,
            )?))
        }
        Ok(ParquetOut {
            wait_on_close,
            entities: sink(
                out,
                ENTITIES.file,
                EntityColumns::new(langs),
                complete,
                budget,
                threads,
            )?,
            properties: sink(
                out,
                PROPERTIES.file,
                PropertyColumns::new(langs),
                complete,
                budget,
                threads,
            )?,
            triples: sink(out, TRIPLES.file, CandColumns, complete, budget, threads)?,
            statements: sink(out, STATEMENTS.file, CandColumns, complete, budget, threads)?,
            transitive: sink(out, TRANSITIVE.file, CandColumns, complete, budget, threads)?,
            constraints: sink(
                out,
                CONSTRAINTS.file,
                ConstraintColumns,
                complete,
                budget,
                threads,
            )?,
            values: sink(out, VALUES.file, ValuesColumns, complete, budget, threads)?,
            types: sink(out, TYPES.file, TypesColumns, complete, budget, threads)?,
            distinct: sink(
                out,
                DISTINCT.file,
                DistinctColumns,
                complete,
                budget,
                threads,
            )?,
        })
    }

    /// Finish every file, handing each to `done` as soon as its footer is written (the caller fsyncs it then,
    /// while the next ones finish), in the order they are renamed. The last rows of every file are handed to
    /// the pool first, so that their row groups are encoded at once instead of one file's after the other's.
    pub(super) fn finish_each(mut self, done: &mut dyn FnMut(AtomicFile)) -> Result<()> {
        self.entities.close(false)?;
        self.properties.close(false)?;
        self.triples.close(false)?;
        self.statements.close(false)?;
        self.transitive.close(false)?;
        self.constraints.close(false)?;
        self.values.close(false)?;
        self.types.close(false)?;
        self.distinct.close(false)?;
        done(self.entities.into_file()?);
        done(self.properties.into_file()?);
        done(self.triples.into_file()?);
        done(self.statements.into_file()?);
        done(self.transitive.into_file()?);
        done(self.constraints.into_file()?);
        done(self.values.into_file()?);
        done(self.types.into_file()?);
        done(self.distinct.into_file()?);
        Ok(())
    }
}

impl Out for ParquetOut {
    fn entities(&mut self, rows: Vec<EntityRecord>) -> Result<()> {
        self.entities.send(rows)
    }
    fn entities_done(&mut self) -> Result<()> {
        self.entities.close(self.wait_on_close)
    }
    fn properties(&mut self, rows: Vec<PropertyRecord>) -> Result<()> {
        self.properties.send(rows)
    }
    fn properties_done(&mut self) -> Result<()> {
        self.properties.close(self.wait_on_close)
    }
    fn statements(&mut self, rows: Vec<Cand>) -> Result<()> {
        self.statements.send(rows)
    }
    fn triples(&mut self, rows: Vec<Cand>) -> Result<()> {
        self.triples.send(rows)
    }
    fn transitive(&mut self, rows: Vec<Cand>) -> Result<()> {
        self.transitive.send(rows)
    }
    fn constraints(&mut self, rows: Vec<Constraint>) -> Result<()> {
        self.constraints.send(rows)
    }
    fn values(&mut self, rows: Vec<SubjectValues>) -> Result<()> {
        self.values.send(rows)
    }
    fn types(&mut self, rows: Vec<TypeStatement>) -> Result<()> {
        self.types.send(rows)
    }
    fn distinct(&mut self, rows: Vec<DistinctValue>) -> Result<()> {
        self.distinct.send(rows)
    }
}

/// The columns of the three statement tables ([`tables::triple_schema`]) straight from candidates: the same
/// arrays as from their [`Triple`]s, without a `String` per statement id.
pub struct CandColumns;

impl Columns for CandColumns {
    type Row = Cand;
    fn schema(&self) -> arrow_schema::SchemaRef {
        tables::triple_schema()
    }
    fn column(&self, rows: &[Cand], c: usize) -> arrow_array::ArrayRef {
        match c {
            0 => tables::id_column(rows.iter().map(|t| (b'Q', t.s))),
            1 => tables::id_column(rows.iter().map(|t| (b'P', u64::from(t.p)))),
            2 => tables::id_column(rows.iter().map(|t| (b'Q', t.o))),
            3 => tables::rank_column(rows.iter().map(|t| t.rank)),
            // Written straight into the array's buffers (no check per row that the text is UTF-8: each id is
            // ASCII or the text of a `str`; the array checks the whole buffer once).
            _ => tables::utf8_column(rows.len(), 58, rows.iter(), |t, out| t.id.write(t.s, out)),
        }
    }
    fn weigh(&self, rows: &[Cand]) -> usize {
        rows.iter().map(Record::mem).fold(0, usize::saturating_add)
    }
}
