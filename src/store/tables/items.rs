//! `items.parquet`: the Q-number of every item line of the dump, labelled or not, sorted (column `item`,
//! uint64). `entities.parquet` holds only the labelled entities, so this is what tells an item that was
//! deleted or merged away from one that lost a label (`sword revalidate`, docs/versions.md). Delta encoding
//! makes it ≈ 1 byte per item: ≈ 100 MB for the ≈ 112 M items of a full dump.

use super::{writer_props_marked, ROW_GROUP};
use crate::core::error::{Error, IoContext, Result};
use crate::core::ids::Qid;
use arrow_array::{Array, ArrayRef, RecordBatch, UInt64Array};
use arrow_schema::{DataType, Field, Schema};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ArrowWriter;
use parquet::basic::Encoding;
use parquet::schema::types::ColumnPath;
use std::collections::{BTreeMap, HashSet};
use std::io::Write;
use std::path::Path;
use std::sync::Arc;

/// Bits per block of an [`ItemSet`].
const BLOCK_BITS: u64 = 1024;
const WORDS: usize = (BLOCK_BITS / 64) as usize;

/// A set of Q-numbers: blocks of 1 024 bits keyed by `q / 1024`. Dense ids (Wikidata's) cost ≈ 1 bit each
/// (≈ 20 MB for a full dump), and a hostile id far from the others costs one block (≈ 150 bytes), so memory
/// grows with the input, never with the largest id.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ItemSet {
    blocks: BTreeMap<u64, [u64; WORDS]>,
    len: u64,
}

impl ItemSet {
    pub fn insert(&mut self, q: u64) {
        let block = self.blocks.entry(q / BLOCK_BITS).or_insert([0; WORDS]);
        let bit = q % BLOCK_BITS;
        if let Some(w) = block.get_mut((bit / 64) as usize) {
            let mask = 1u64 << (bit % 64);
            if *w & mask == 0 {
                *w |= mask;
                self.len = self.len.saturating_add(1);
            }
        }
    }

    pub fn extend(&mut self, qs: impl IntoIterator<Item = u64>) {
        for q in qs {
            self.insert(q);
        }
    }

    /// How many items (each counted once).
    pub fn len(&self) -> u64 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The items in increasing order.
    pub fn iter(&self) -> impl Iterator<Item = u64> + '_ {
        self.blocks.iter().flat_map(|(b, words)| {
            words.iter().enumerate().flat_map(move |(i, w)| {
                let base = b * BLOCK_BITS + i as u64 * 64;
                let mut w = *w;
                std::iter::from_fn(move || {
                    (w != 0).then(|| {
                        let t = u64::from(w.trailing_zeros());
                        w &= w - 1;
                        base + t
                    })
                })
            })
        })
    }
}

fn schema() -> Arc<Schema> {
    Arc::new(Schema::new(vec![Field::new(
        "item",
        DataType::UInt64,
        false,
    )]))
}

/// Write `items` (sorted, one row each) as `items.parquet` into `w`; `complete == false` marks the file as
/// from an incomplete build. The same set gives the same bytes.
pub fn write_items<W: Write + Send>(
    w: W,
    items: &ItemSet,
    complete: bool,
    path: &Path,
) -> Result<W> {
    let props = writer_props_marked(complete)
        .into_builder()
        .set_column_dictionary_enabled(ColumnPath::from("item"), false)
        .set_column_encoding(ColumnPath::from("item"), Encoding::DELTA_BINARY_PACKED)
        .build();
    let schema = schema();
    let mut writer = ArrowWriter::try_new(w, schema.clone(), Some(props))
        .map_err(|e| Error::parquet(path, e))?;
    let mut it = items.iter().peekable();
    while it.peek().is_some() {
        let chunk: Vec<u64> = it.by_ref().take(ROW_GROUP).collect();
        let col: ArrayRef = Arc::new(UInt64Array::from(chunk));
        let batch =
            RecordBatch::try_new(schema.clone(), vec![col]).map_err(|e| Error::parquet(path, e))?;
        writer.write(&batch).map_err(|e| Error::parquet(path, e))?;
    }
    writer.into_inner().map_err(|e| Error::parquet(path, e))
}

/// The items of `wanted` that the `items.parquet` at `path` lists, streamed one batch at a time (memory: the
/// answer, not the file).
pub fn items_among(path: &Path, wanted: &HashSet<Qid>) -> Result<HashSet<Qid>> {
    let f = std::fs::File::open(path).at(path)?;
    let reader = ParquetRecordBatchReaderBuilder::try_new(f)
        .map_err(|e| Error::unreadable_parquet(path, e))?
        .with_batch_size(1 << 16)
        .build()
        .map_err(|e| Error::unreadable_parquet(path, e))?;
    let mut out = HashSet::new();
    for batch in reader {
        let batch = batch.map_err(|e| Error::unreadable_parquet(path, e))?;
        let col = batch
            .column_by_name("item")
            .and_then(|c| c.as_any().downcast_ref::<UInt64Array>())
            .ok_or_else(|| Error::Corrupt {
                path: path.to_path_buf(),
                what: "missing uint64 column `item`".into(),
            })?;
        if col.null_count() > 0 {
            return Err(Error::Corrupt {
                path: path.to_path_buf(),
                what: "null in column `item`".into(),
            });
        }
        out.extend(
            col.values()
                .iter()
                .map(|q| Qid(*q))
                .filter(|q| wanted.contains(q)),
        );
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn an_item_set_lists_each_inserted_number_once_in_order(qs in proptest::collection::vec(
            prop_oneof![0u64..5000, any::<u64>()], 0..300)) {
            let mut s = ItemSet::default();
            s.extend(qs.iter().copied());
            let want: std::collections::BTreeSet<u64> = qs.iter().copied().collect();
            prop_assert_eq!(s.iter().collect::<Vec<_>>(), want.iter().copied().collect::<Vec<_>>());
            prop_assert_eq!(s.len(), want.len() as u64);
        }
    }

    #[test]
    fn items_parquet_round_trips_and_filters() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("items.parquet");
        let mut s = ItemSet::default();
        s.extend([42, 1, 1 << 40, 7, 42, 200_000]);
        let bytes = write_items(Vec::new(), &s, true, &path).unwrap();
        std::fs::write(&path, &bytes).unwrap();
        let wanted: HashSet<Qid> = [1, 2, 42, 1 << 40].into_iter().map(Qid).collect();
        let got = items_among(&path, &wanted).unwrap();
        let want: HashSet<Qid> = [1, 42, 1 << 40].into_iter().map(Qid).collect();
        assert_eq!(got, want);
        // The same set, the same bytes.
        assert!(bytes == write_items(Vec::new(), &s, true, &path).unwrap());
    }
}
