//! What the stage counts (the manifest's counts) and the bad lines it keeps (the first few with their line
//! and byte offset, and the number per kind).

#![deny(clippy::indexing_slicing, clippy::arithmetic_side_effects)]

use serde::Serialize;
use std::collections::BTreeMap;

/// Named counters summed over the run (all end up in the manifest).
#[derive(Clone, Debug, Default)]
pub struct Counts {
    pub map: BTreeMap<&'static str, u64>,
    pub other_types: BTreeMap<String, u64>,
}

/// Entity types other than item and property listed by name in the manifest, at most.
pub const OTHER_TYPES_MAX: usize = 32;
/// Longest such type name listed, in bytes.
pub const OTHER_TYPE_NAME_MAX: usize = 32;

/// Whether `s` is a timestamp of the shape Wikidata writes in `modified`: `YYYY-MM-DDThh:mm:ssZ`, year 2000 to
/// 2099, month, day, hour, minute and second in range. What `dump_date` is read from when the file name has
/// no date, so a crafted `"9999…"` must not pass.
pub fn is_timestamp(s: &str) -> bool {
    let b = s.as_bytes();
    let Ok(b) = <&[u8; 20]>::try_from(b) else {
        return false;
    };
    let num = |i: usize, j: usize| -> Option<u32> {
        let d = b.get(i..j)?;
        d.iter().try_fold(0u32, |acc, &c| {
            c.is_ascii_digit().then(|| {
                acc.saturating_mul(10)
                    .saturating_add(u32::from(c.wrapping_sub(b'0')))
            })
        })
    };
    let seps = [
        (4, b'-'),
        (7, b'-'),
        (10, b'T'),
        (13, b':'),
        (16, b':'),
        (19, b'Z'),
    ];
    if !seps.iter().all(|&(i, c)| b.get(i) == Some(&c)) {
        return false;
    }
    let ok = |i, j, lo, hi| num(i, j).is_some_and(|v| (lo..=hi).contains(&v));
    ok(0, 4, 2000, 2099)
        && ok(5, 7, 1, 12)
        && ok(8, 10, 1, 31)
        && ok(11, 13, 0, 23)
        && ok(14, 16, 0, 59)
        && ok(17, 19, 0, 60)
}

impl Counts {
    pub(crate) fn add(&mut self, k: &'static str, n: u64) {
        if n > 0 {
            let v = self.map.entry(k).or_insert(0);
            *v = v.saturating_add(n);
        }
    }
    pub(crate) fn merge(&mut self, o: Counts) {
        for (k, v) in o.map {
            self.add(k, v);
        }
        for (k, v) in o.other_types {
            self.add_other_type(&k, v);
        }
    }

    /// Count `n` entities of the other type `t`. At most [`OTHER_TYPES_MAX`] types are listed by name, the
    /// smallest names (so the list does not depend on how the dump was chunked: a name that is not among the
    /// smallest of its chunk is not among the smallest of the dump); the others, and names that are no short
    /// ASCII word, are counted as `entities_other_unlisted`. A dump has a handful (lexeme, form, sense,
    /// mediainfo); a crafted one could otherwise list one per line.
    pub(crate) fn add_other_type(&mut self, t: &str, n: u64) {
        let listable = !t.is_empty()
            && t.len() <= OTHER_TYPE_NAME_MAX
            && t.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        if !listable {
            self.add("entities_other_unlisted", n);
            return;
        }
        if let Some(v) = self.other_types.get_mut(t) {
            *v = v.saturating_add(n);
            return;
        }
        self.other_types.insert(t.to_string(), n);
        if self.other_types.len() > OTHER_TYPES_MAX {
            if let Some((_, v)) = self.other_types.pop_last() {
                self.add("entities_other_unlisted", v);
            }
        }
    }
    pub(crate) fn get(&self, k: &str) -> u64 {
        self.map.get(k).copied().unwrap_or(0)
    }

    /// Entity lines of every type (items, properties, others).
    pub(crate) fn entity_lines(&self) -> u64 {
        self.get("entities_item")
            .saturating_add(self.get("entities_property"))
            .saturating_add(self.get("entities_other"))
    }
}

/// A malformed line (offsets relative to its chunk until the merger makes them absolute).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct BadLine {
    /// 1-based line number in the decompressed stream.
    pub line: u64,
    /// Byte offset of the line start in the decompressed stream.
    pub offset: u64,
    pub kind: &'static str,
    pub message: String,
}

/// Most malformed lines that one chunk (or one shard) keeps with position and message; the others are only
/// counted. The accumulator names the line that crosses `max_bad_lines`, so a chunk keeps up to
/// `max_bad_lines + 1` of them, at most this many: a chunk of junk lines (4 MiB of `x` lines is 2 M of them)
/// then holds ≈ 250 KiB of them whatever its length, not a record per line.
pub const BAD_KEEP: u64 = 1024;

/// Malformed lines that the manifest (`extra.bad_lines`) and the log show with their position and message.
pub const BAD_EXAMPLES: usize = 10;

/// Longest message kept for a malformed line, in bytes (cut at a character boundary, `…` appended): a message
/// may quote the input (an id, a type), and the input may be megabytes long.
pub const BAD_MESSAGE_MAX: usize = 240;

/// `message` cut to at most [`BAD_MESSAGE_MAX`] bytes at a character boundary.
pub fn short_message(mut message: String) -> String {
    if message.len() > BAD_MESSAGE_MAX {
        let mut end = BAD_MESSAGE_MAX.saturating_sub('…'.len_utf8());
        while !message.is_char_boundary(end) {
            end = end.saturating_sub(1);
        }
        message.truncate(end);
        message.push('…');
    }
    message
}

/// The malformed lines of a chunk or a shard: every one counted (in total and by kind), the first `keep` kept
/// with their position and message.
#[derive(Clone, Debug, Default)]
pub struct BadLines {
    /// Malformed lines seen, kept or not.
    pub total: u64,
    /// The same, by kind.
    pub by_kind: BTreeMap<&'static str, u64>,
    /// The first ones: (line, byte offset, kind, message), line and offset relative to the chunk or shard.
    pub first: Vec<(u64, u64, &'static str, String)>,
}

impl BadLines {
    /// Count one malformed line, keeping it when fewer than `keep` are kept.
    pub(crate) fn push(
        &mut self,
        keep: u64,
        line: u64,
        offset: u64,
        kind: &'static str,
        msg: String,
    ) {
        self.total = self.total.saturating_add(1);
        let n = self.by_kind.entry(kind).or_insert(0);
        *n = n.saturating_add(1);
        if (self.first.len() as u64) < keep {
            self.first.push((line, offset, kind, short_message(msg)));
        }
    }

    /// Append `other` (positions relative to `base_line`/`base_offset` of this one), keeping at most `keep`.
    pub(crate) fn append(&mut self, other: BadLines, base_line: u64, base_offset: u64, keep: u64) {
        self.total = self.total.saturating_add(other.total);
        for (k, v) in other.by_kind {
            let n = self.by_kind.entry(k).or_insert(0);
            *n = n.saturating_add(v);
        }
        let room =
            usize::try_from(keep.saturating_sub(self.first.len() as u64)).unwrap_or(usize::MAX);
        self.first
            .extend(other.first.into_iter().take(room).map(|(l, o, k, m)| {
                (
                    base_line.saturating_add(l),
                    base_offset.saturating_add(o),
                    k,
                    m,
                )
            }));
    }
}
