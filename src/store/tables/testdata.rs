//! Generated rows for the writers' tests (the whole-table, streamed and parallel writers must give the same
//! bytes on them): varied ids, ranks and strings, empty statement ids, missing descriptions and dates, labels
//! from `mul` and multi-byte text.

use crate::core::ids::{EntityId, Pid, Qid};
use crate::core::records::{EntityRecord, Label, Rank, Triple};

/// `n` triples; every fifth has no statement id.
pub(crate) fn triples(n: u64) -> Vec<Triple> {
    (0..n)
        .map(|i| Triple {
            subject: Qid(i * 7 % 100_003),
            property: Pid(i % 13),
            object: Qid(i / 3),
            rank: [Rank::Normal, Rank::Preferred, Rank::Deprecated][(i % 3) as usize],
            statement_id: if i % 5 == 0 {
                String::new()
            } else {
                format!(
                    "Q{}${:08X}-{i}",
                    i * 7 % 100_003,
                    i.wrapping_mul(2654435761)
                )
            },
        })
        .collect()
}

/// `n` entities (every eleventh a property) with a label and a description slot for each of `langs`
/// languages; the labels of the odd languages are Korean of varied length.
pub(crate) fn entities(n: u64, langs: u64) -> Vec<EntityRecord> {
    (0..n)
        .map(|i| EntityRecord {
            id: if i % 11 == 0 {
                EntityId::Property(Pid(i))
            } else {
                EntityId::Item(Qid(i))
            },
            labels: (0..langs)
                .map(|l| Label {
                    text: if l % 2 == 1 {
                        "라벨".repeat(((i + l) % 7) as usize + 1)
                    } else {
                        format!("label {i} {l}")
                    },
                    from_mul: (i + l) % 4 == 0,
                })
                .collect(),
            descriptions: (0..langs)
                .map(|l| (i % (l + 2) == 0).then(|| format!("d{}", i % 97)))
                .collect(),
            sitelinks: (i % 300) as u32,
            lastrevid: (i % 3 != 0).then_some(i * 17),
            modified: (i % 5 != 0).then(|| format!("2024-01-{:02}T00:00:00Z", i % 28 + 1)),
        })
        .collect()
}
