//! The tidy table behind every figure: `figures.parquet` and the same rows as `figures.csv`.
//!
//! Columns (one row per value, null where a column does not apply): `measure, model, model_b, variant,
//! language, language_b, strategy, tier` (utf8; `tier` only on the `*_by_tier` rows of `--benchmark`),
//! `agreement` (int32), `value, lo, hi` (float64, fractions: shares
//! in [0, 1], differences in [−1, 1]), `n` (int64, the denominator behind the value). The Parquet file uses
//! the project's writer properties (ZSTD, fixed row groups), so the same rows are the same bytes; the CSV is
//! RFC 4180 (quoted only where needed), with empty fields for nulls and floats in Rust's shortest round-trip
//! form.

use super::measures::Row;
use crate::core::error::{Error, Result};
use arrow_array::{Array, ArrayRef, Float64Array, Int32Array, Int64Array, StringArray};
use arrow_schema::{DataType, Field, Schema};
use std::collections::{BTreeSet, HashMap};
use std::io::Write;
use std::path::Path;
use std::sync::Arc;

/// Text columns, in order.
pub const TEXT_COLUMNS: [&str; 8] = [
    "measure",
    "model",
    "model_b",
    "variant",
    "language",
    "language_b",
    "strategy",
    "tier",
];

/// Schema of `figures.parquet`.
pub fn schema() -> Arc<Schema> {
    let mut fields: Vec<Field> = TEXT_COLUMNS
        .iter()
        .map(|c| Field::new(*c, DataType::Utf8, *c != "measure"))
        .collect();
    fields.push(Field::new("agreement", DataType::Int32, true));
    for c in ["value", "lo", "hi"] {
        fields.push(Field::new(c, DataType::Float64, true));
    }
    fields.push(Field::new("n", DataType::Int64, true));
    Arc::new(Schema::new(fields))
}

fn texts(r: &Row) -> [Option<&str>; 8] {
    [
        Some(r.measure.as_str()),
        r.model.as_deref(),
        r.model_b.as_deref(),
        r.variant.as_deref(),
        r.language.as_deref(),
        r.language_b.as_deref(),
        r.strategy.as_deref(),
        r.tier.as_deref(),
    ]
}

/// `figures.parquet` bytes of `rows`.
pub fn parquet_bytes(rows: &[Row], path: &Path) -> Result<Vec<u8>> {
    let schema = schema();
    let mut cols: Vec<ArrayRef> = (0..TEXT_COLUMNS.len())
        .map(|i| -> ArrayRef {
            Arc::new(rows.iter().map(|r| texts(r)[i]).collect::<StringArray>())
        })
        .collect();
    cols.push(Arc::new(
        rows.iter().map(|r| r.agreement).collect::<Int32Array>(),
    ));
    cols.push(Arc::new(
        rows.iter().map(|r| r.value).collect::<Float64Array>(),
    ));
    cols.push(Arc::new(
        rows.iter().map(|r| r.lo).collect::<Float64Array>(),
    ));
    cols.push(Arc::new(
        rows.iter().map(|r| r.hi).collect::<Float64Array>(),
    ));
    cols.push(Arc::new(rows.iter().map(|r| r.n).collect::<Int64Array>()));
    crate::eval::output::parquet_bytes(schema, cols, path)
}

/// Read `figures.parquet` back (for checks and for anyone replotting from Rust; a file written before the
/// `tier` column reads with it null).
pub fn read_parquet(path: &Path) -> Result<Vec<Row>> {
    let f = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let mut rows = Vec::new();
    for batch in crate::store::tables::read_batches(f, path)? {
        let text: Vec<Option<&StringArray>> = TEXT_COLUMNS
            .iter()
            .map(|c| match (*c, batch.column_by_name(c)) {
                ("tier", None) => Ok(None),
                _ => crate::store::tables::string_column(&batch, c, path).map(Some),
            })
            .collect::<Result<_>>()?;
        let col = |name: &str| {
            batch.column_by_name(name).ok_or_else(|| Error::Corrupt {
                path: path.to_path_buf(),
                what: format!("missing column `{name}`"),
            })
        };
        let typed = |name: &str| -> Result<ArrayRef> { Ok(col(name)?.clone()) };
        let agreement = typed("agreement")?;
        let agreement = agreement.as_any().downcast_ref::<Int32Array>();
        let floats: Vec<ArrayRef> = ["value", "lo", "hi"]
            .iter()
            .map(|c| typed(c))
            .collect::<Result<_>>()?;
        let floats: Vec<Option<&Float64Array>> = floats
            .iter()
            .map(|a| a.as_any().downcast_ref::<Float64Array>())
            .collect();
        let n = typed("n")?;
        let n = n.as_any().downcast_ref::<Int64Array>();
        let (Some(agreement), Some(value), Some(lo), Some(hi), Some(n)) =
            (agreement, floats[0], floats[1], floats[2], n)
        else {
            return Err(Error::Corrupt {
                path: path.to_path_buf(),
                what: "a column of figures.parquet has the wrong type".into(),
            });
        };
        let s = |a: Option<&StringArray>, i: usize| {
            a.filter(|a| a.is_valid(i)).map(|a| a.value(i).to_string())
        };
        let f = |a: &Float64Array, i: usize| a.is_valid(i).then(|| a.value(i));
        for i in 0..batch.num_rows() {
            rows.push(Row {
                measure: s(text[0], i).unwrap_or_default(),
                model: s(text[1], i),
                model_b: s(text[2], i),
                variant: s(text[3], i),
                language: s(text[4], i),
                language_b: s(text[5], i),
                strategy: s(text[6], i),
                tier: s(text[7], i),
                agreement: agreement.is_valid(i).then(|| agreement.value(i)),
                value: f(value, i),
                lo: f(lo, i),
                hi: f(hi, i),
                n: n.is_valid(i).then(|| n.value(i)),
            });
        }
    }
    Ok(rows)
}

/// A CSV field: quoted when it holds a comma, quote, CR or LF (quotes doubled).
fn csv_field(out: &mut String, s: &str) {
    if s.contains([',', '"', '\n', '\r']) {
        out.push('"');
        out.push_str(&s.replace('"', "\"\""));
        out.push('"');
    } else {
        out.push_str(s);
    }
}

/// `figures.csv` of `rows`: a header line, then one line per row (`\n` line ends).
pub fn write_csv(rows: &[Row], w: &mut dyn Write) -> std::io::Result<()> {
    let mut line = String::new();
    let header: Vec<&str> = TEXT_COLUMNS
        .iter()
        .copied()
        .chain(["agreement", "value", "lo", "hi", "n"])
        .collect();
    w.write_all(header.join(",").as_bytes())?;
    w.write_all(b"\n")?;
    for r in rows {
        line.clear();
        for (i, t) in texts(r).iter().enumerate() {
            if i > 0 {
                line.push(',');
            }
            csv_field(&mut line, t.unwrap_or(""));
        }
        let num = |line: &mut String, v: Option<String>| {
            line.push(',');
            line.push_str(&v.unwrap_or_default());
        };
        num(&mut line, r.agreement.map(|v| v.to_string()));
        for v in [r.value, r.lo, r.hi] {
            num(&mut line, v.map(|v| v.to_string()));
        }
        num(&mut line, r.n.map(|v| v.to_string()));
        line.push('\n');
        w.write_all(line.as_bytes())?;
    }
    Ok(())
}

/// The rows by their key columns.
pub struct Lookup<'a> {
    map: HashMap<Key<'a>, &'a Row>,
}

/// The key columns of a row (every column but value, lo, hi and n).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Key<'a> {
    pub measure: &'a str,
    pub model: Option<&'a str>,
    pub model_b: Option<&'a str>,
    pub variant: Option<&'a str>,
    pub language: Option<&'a str>,
    pub language_b: Option<&'a str>,
    pub strategy: Option<&'a str>,
    pub tier: Option<&'a str>,
    pub agreement: Option<i32>,
}

impl<'a> Lookup<'a> {
    pub fn new(rows: &'a [Row]) -> Lookup<'a> {
        let map = rows
            .iter()
            .map(|r| {
                (
                    Key {
                        measure: &r.measure,
                        model: r.model.as_deref(),
                        model_b: r.model_b.as_deref(),
                        variant: r.variant.as_deref(),
                        language: r.language.as_deref(),
                        language_b: r.language_b.as_deref(),
                        strategy: r.strategy.as_deref(),
                        tier: r.tier.as_deref(),
                        agreement: r.agreement,
                    },
                    r,
                )
            })
            .collect();
        Lookup { map }
    }

    pub fn get<'k>(&'k self, k: Key<'k>) -> Option<&'a Row> {
        // Keys are covariant in their lifetime: the map is looked up as one of shorter-lived keys.
        let map: &HashMap<Key<'k>, &'a Row> = &self.map;
        map.get(&k).copied()
    }

    pub fn value<'k>(&'k self, k: Key<'k>) -> Option<f64> {
        self.get(k).and_then(|r| r.value)
    }

    /// Every row with this measure, variant and strategy.
    pub fn values_of<'k>(
        &'k self,
        measure: &'k str,
        variant: &'k str,
        strategy: &'k str,
    ) -> impl Iterator<Item = f64> + 'k {
        self.map
            .iter()
            .filter(move |(k, _)| {
                k.measure == measure && k.variant == Some(variant) && k.strategy == Some(strategy)
            })
            .filter_map(|(_, r)| r.value)
    }
}

/// The variants of the rows (`plain` first, then by name) and each one's models (sorted).
pub fn variants_and_models(rows: &[Row]) -> Vec<(String, Vec<String>)> {
    let mut set: BTreeSet<(String, String)> = BTreeSet::new();
    for r in rows.iter().filter(|r| r.measure == "accuracy") {
        if let (Some(v), Some(m)) = (&r.variant, &r.model) {
            set.insert((v.clone(), m.clone()));
        }
    }
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    for (v, m) in set {
        match out.last_mut() {
            Some((lv, ms)) if *lv == v => ms.push(m),
            _ => out.push((v, vec![m])),
        }
    }
    out.sort_by_key(|(v, _)| (v != "plain", v.clone()));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Vec<Row> {
        vec![
            Row {
                measure: "accuracy".into(),
                model: Some("m, \"quoted\"".into()),
                variant: Some("plain".into()),
                language: Some("en".into()),
                strategy: Some("SS".into()),
                value: Some(0.1),
                lo: Some(0.0),
                hi: Some(1.0 / 3.0),
                n: Some(3),
                ..Row::default()
            },
            Row {
                measure: "accuracy_by_agreement".into(),
                agreement: Some(0),
                n: Some(0),
                ..Row::default()
            },
            Row {
                measure: "accuracy_by_tier".into(),
                strategy: Some("PSS".into()),
                tier: Some("certain".into()),
                value: Some(0.25),
                n: Some(4),
                ..Row::default()
            },
        ]
    }

    #[test]
    fn parquet_round_trip_and_stable_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("figures.parquet");
        let rows = sample();
        let bytes = parquet_bytes(&rows, &p).unwrap();
        assert_eq!(bytes, parquet_bytes(&rows, &p).unwrap());
        std::fs::write(&p, &bytes).unwrap();
        assert_eq!(read_parquet(&p).unwrap(), rows);
        // no rows: still a readable file with the schema
        std::fs::write(&p, parquet_bytes(&[], &p).unwrap()).unwrap();
        assert!(read_parquet(&p).unwrap().is_empty());
    }

    #[test]
    fn csv_quotes_and_nulls() {
        let mut out = Vec::new();
        write_csv(&sample(), &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "measure,model,model_b,variant,language,language_b,strategy,tier,agreement,value,lo,hi,n"
        );
        assert_eq!(
            lines[1],
            "accuracy,\"m, \"\"quoted\"\"\",,plain,en,,SS,,,0.1,0,0.3333333333333333,3"
        );
        assert_eq!(lines[2], "accuracy_by_agreement,,,,,,,,0,,,,0");
        assert_eq!(lines[3], "accuracy_by_tier,,,,,,PSS,certain,,0.25,,,4");
    }
}
