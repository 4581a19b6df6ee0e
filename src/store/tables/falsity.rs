//! The four tables extract writes for the falsity tier (docs/falsity.md), and their readers:
//!
//! - `constraints.parquet`: `property`, `constraint` (`single_value` | `distinct_values` | `subject_type` |
//!   `value_type`), `statement_id`, `separator` bool, `exceptions` and `classes` (comma-separated item ids,
//!   sorted), `relation` (`instance` | `subclass` | `instance_or_subclass`, null for the other types);
//! - `values.parquet`: `subject`, `property`, `values` uint32, `somevalue` bool, `novalue` bool;
//! - `types.parquet`: `subject`, `property` (`P31` | `P279`), `object`;
//! - `distinct.parquet`: `property`, `object`.
//!
//! Every table is sorted by its columns in order, so the same dump gives the same bytes.

use super::{column_reader, id_column, string_column, typed_column, Columns};
use crate::core::error::{Error, Result};
use crate::core::falsity::{
    join_ids, split_ids, Constraint, DistinctValue, Kind, Relation, SubjectValues, TypeStatement,
};
use crate::core::ids::{Pid, Qid};
use arrow_array::{Array, ArrayRef, BooleanArray, RecordBatch, StringArray, UInt32Array};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use std::path::Path;
use std::sync::Arc;

fn utf8(name: &str) -> Field {
    Field::new(name, DataType::Utf8, false)
}

/// Schema of `constraints.parquet`.
pub fn constraint_schema() -> Arc<Schema> {
    Arc::new(Schema::new(vec![
        utf8("property"),
        utf8("constraint"),
        utf8("statement_id"),
        Field::new("separator", DataType::Boolean, false),
        utf8("exceptions"),
        utf8("classes"),
        Field::new("relation", DataType::Utf8, true),
    ]))
}

/// Schema of `values.parquet`.
pub fn values_schema() -> Arc<Schema> {
    Arc::new(Schema::new(vec![
        utf8("subject"),
        utf8("property"),
        Field::new("values", DataType::UInt32, false),
        Field::new("somevalue", DataType::Boolean, false),
        Field::new("novalue", DataType::Boolean, false),
    ]))
}

/// Schema of `types.parquet`.
pub fn types_schema() -> Arc<Schema> {
    Arc::new(Schema::new(vec![
        utf8("subject"),
        utf8("property"),
        utf8("object"),
    ]))
}

/// Schema of `distinct.parquet`.
pub fn distinct_schema() -> Arc<Schema> {
    Arc::new(Schema::new(vec![utf8("property"), utf8("object")]))
}

fn bools(v: impl Iterator<Item = bool>) -> ArrayRef {
    Arc::new(BooleanArray::from_iter(v.map(Some)))
}

/// The columns of `constraints.parquet` ([`constraint_schema`]).
pub struct ConstraintColumns;

impl Columns for ConstraintColumns {
    type Row = Constraint;
    fn schema(&self) -> SchemaRef {
        constraint_schema()
    }
    fn column(&self, rows: &[Constraint], c: usize) -> ArrayRef {
        let text = |f: &dyn Fn(&Constraint) -> String| -> ArrayRef {
            Arc::new(StringArray::from_iter_values(rows.iter().map(f)))
        };
        match c {
            0 => id_column(rows.iter().map(|c| (b'P', c.property.0))),
            1 => text(&|c| c.kind.as_str().to_string()),
            2 => text(&|c| c.statement_id.clone()),
            3 => bools(rows.iter().map(|c| c.separator)),
            4 => text(&|c| join_ids(&c.exceptions)),
            5 => text(&|c| join_ids(&c.classes)),
            _ => Arc::new(StringArray::from_iter(
                rows.iter().map(|c| c.relation.map(Relation::as_str)),
            )),
        }
    }
    fn weigh(&self, rows: &[Constraint]) -> usize {
        rows.iter()
            .map(|c| {
                std::mem::size_of::<Constraint>()
                    + c.statement_id.capacity()
                    + (c.exceptions.capacity() + c.classes.capacity()) * 8
            })
            .sum()
    }
}

/// The columns of `values.parquet` ([`values_schema`]).
pub struct ValuesColumns;

impl Columns for ValuesColumns {
    type Row = SubjectValues;
    fn schema(&self) -> SchemaRef {
        values_schema()
    }
    fn column(&self, rows: &[SubjectValues], c: usize) -> ArrayRef {
        match c {
            0 => id_column(rows.iter().map(|r| (b'Q', r.subject.0))),
            1 => id_column(rows.iter().map(|r| (b'P', r.property.0))),
            2 => Arc::new(UInt32Array::from_iter_values(rows.iter().map(|r| r.values))),
            3 => bools(rows.iter().map(|r| r.somevalue)),
            _ => bools(rows.iter().map(|r| r.novalue)),
        }
    }
    fn weigh(&self, rows: &[SubjectValues]) -> usize {
        std::mem::size_of_val(rows)
    }
}

/// The columns of `types.parquet` ([`types_schema`]).
pub struct TypesColumns;

impl Columns for TypesColumns {
    type Row = TypeStatement;
    fn schema(&self) -> SchemaRef {
        types_schema()
    }
    fn column(&self, rows: &[TypeStatement], c: usize) -> ArrayRef {
        match c {
            0 => id_column(rows.iter().map(|r| (b'Q', r.subject.0))),
            1 => id_column(rows.iter().map(|r| (b'P', r.property.0))),
            _ => id_column(rows.iter().map(|r| (b'Q', r.object.0))),
        }
    }
    fn weigh(&self, rows: &[TypeStatement]) -> usize {
        std::mem::size_of_val(rows)
    }
}

/// The columns of `distinct.parquet` ([`distinct_schema`]).
pub struct DistinctColumns;

impl Columns for DistinctColumns {
    type Row = DistinctValue;
    fn schema(&self) -> SchemaRef {
        distinct_schema()
    }
    fn column(&self, rows: &[DistinctValue], c: usize) -> ArrayRef {
        match c {
            0 => id_column(rows.iter().map(|r| (b'P', r.property.0))),
            _ => id_column(rows.iter().map(|r| (b'Q', r.object.0))),
        }
    }
    fn weigh(&self, rows: &[DistinctValue]) -> usize {
        std::mem::size_of_val(rows)
    }
}

/// Read every batch of `columns`, calling `f(batch, first row)`.
fn batches(
    path: &Path,
    columns: &[&str],
    mut f: impl FnMut(&RecordBatch, u64) -> Result<()>,
) -> Result<u64> {
    let mut row = 0u64;
    for batch in column_reader(path, columns)? {
        let batch = batch.map_err(|e| Error::unreadable_parquet(path, e))?;
        f(&batch, row)?;
        row += batch.num_rows() as u64;
    }
    Ok(row)
}

fn bad(path: &Path, row: u64, what: &str, v: &str) -> Error {
    Error::Corrupt {
        path: path.to_path_buf(),
        what: format!("row {row}: bad {what} `{v}`"),
    }
}

fn qid(path: &Path, row: u64, what: &str, v: &str) -> Result<Qid> {
    Qid::parse(v).ok_or_else(|| bad(path, row, what, v))
}

fn pid(path: &Path, row: u64, what: &str, v: &str) -> Result<Pid> {
    Pid::parse(v).ok_or_else(|| bad(path, row, what, v))
}

/// Read `constraints.parquet` (small: one row per constraint of the dump).
pub fn read_constraints(path: &Path) -> Result<Vec<Constraint>> {
    let mut out = Vec::new();
    let cols = [
        "property",
        "constraint",
        "statement_id",
        "separator",
        "exceptions",
        "classes",
        "relation",
    ];
    batches(path, &cols, |b, row0| {
        let p = string_column(b, "property", path)?;
        let k = string_column(b, "constraint", path)?;
        let id = string_column(b, "statement_id", path)?;
        let sep = typed_column::<BooleanArray>(b, "separator", path)?;
        let ex = string_column(b, "exceptions", path)?;
        let cl = string_column(b, "classes", path)?;
        let rel = string_column(b, "relation", path)?;
        for i in 0..b.num_rows() {
            let row = row0 + i as u64;
            let ids = |c: &StringArray, what| {
                split_ids(c.value(i)).ok_or_else(|| bad(path, row, what, c.value(i)))
            };
            let relation = if rel.is_valid(i) {
                Some(
                    Relation::parse(rel.value(i))
                        .ok_or_else(|| bad(path, row, "relation", rel.value(i)))?,
                )
            } else {
                None
            };
            out.push(Constraint {
                property: pid(path, row, "property", p.value(i))?,
                kind: Kind::parse(k.value(i))
                    .ok_or_else(|| bad(path, row, "constraint", k.value(i)))?,
                statement_id: id.value(i).to_string(),
                separator: sep.value(i),
                exceptions: ids(ex, "exceptions")?,
                classes: ids(cl, "classes")?,
                relation,
            });
        }
        Ok(())
    })?;
    Ok(out)
}

/// Stream `values.parquet`, one row at a time.
pub fn for_each_subject_values(path: &Path, mut f: impl FnMut(SubjectValues)) -> Result<u64> {
    let cols = ["subject", "property", "values", "somevalue", "novalue"];
    batches(path, &cols, |b, row0| {
        let s = string_column(b, "subject", path)?;
        let p = string_column(b, "property", path)?;
        let v = typed_column::<UInt32Array>(b, "values", path)?;
        let some = typed_column::<BooleanArray>(b, "somevalue", path)?;
        let no = typed_column::<BooleanArray>(b, "novalue", path)?;
        for i in 0..b.num_rows() {
            let row = row0 + i as u64;
            f(SubjectValues {
                subject: qid(path, row, "subject", s.value(i))?,
                property: pid(path, row, "property", p.value(i))?,
                values: v.value(i),
                somevalue: some.value(i),
                novalue: no.value(i),
            });
        }
        Ok(())
    })
}

/// Stream `types.parquet`, one row at a time.
pub fn for_each_type_statement(path: &Path, mut f: impl FnMut(TypeStatement)) -> Result<u64> {
    batches(path, &["subject", "property", "object"], |b, row0| {
        let s = string_column(b, "subject", path)?;
        let p = string_column(b, "property", path)?;
        let o = string_column(b, "object", path)?;
        for i in 0..b.num_rows() {
            let row = row0 + i as u64;
            f(TypeStatement {
                subject: qid(path, row, "subject", s.value(i))?,
                property: pid(path, row, "property", p.value(i))?,
                object: qid(path, row, "object", o.value(i))?,
            });
        }
        Ok(())
    })
}

/// Stream `distinct.parquet`, one row at a time.
pub fn for_each_distinct_value(path: &Path, mut f: impl FnMut(DistinctValue)) -> Result<u64> {
    batches(path, &["property", "object"], |b, row0| {
        let p = string_column(b, "property", path)?;
        let o = string_column(b, "object", path)?;
        for i in 0..b.num_rows() {
            let row = row0 + i as u64;
            f(DistinctValue {
                property: pid(path, row, "property", p.value(i))?,
                object: qid(path, row, "object", o.value(i))?,
            });
        }
        Ok(())
    })
}
