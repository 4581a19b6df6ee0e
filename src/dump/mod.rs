//! Reading Wikidata dumps: format sniffing, decoders, line framing, parallel chunks, the entity parser.
//!
//! # Chunk model
//! Every input path produces *chunks* of the decompressed stream. A worker (`frame`) handles the complete lines
//! inside one chunk and returns the fragments at its edges: the bytes before the first newline (`head`, when the
//! chunk may start inside a line) and after the last one (`tail`). The sequential [`Joiner`] glues the tail of
//! one chunk to the head of the next, so a line that straddles chunks (or gzip members) is parsed once, and it
//! turns chunk-relative line numbers and byte offsets into absolute ones. Results are consumed in input order,
//! so nothing downstream depends on the number of threads.
//!
//! # Paths
//! - plain file: memory-mapped, cut into ranges that end at newlines, ranges parsed in parallel (rayon), in
//!   batches of a few chunks per thread (bounded memory);
//! - bzip2 file: blocks found at bit offsets and decoded in parallel by `bz2::read_parallel`;
//! - bzip2 on stdin: the same, by `bz2::read_parallel_stream`, over a bounded window of the stream (each piece
//!   copied out to its worker);
//! - bzip2 with `parallel_bzip2 = false`, zstd, single-member gzip, other stdin: one thread decodes into chunks
//!   cut at the last newline (the partial line moves into the next chunk), sent through a bounded
//!   `sync_channel`; the rayon threads parse them;
//! - multi-member gzip (the Wikimedia layout of `latest-all.json.gz`): members are inflated in parallel by
//!   `gz::par_members` when available; otherwise decoded member after member on one thread as above.
//!
//! Why parallel inflate matters: one core inflates only ≈270 MB/s of JSON with GNU-zlib-class decoders (≈630 MB/s
//! with zlib-rs), so the ≈1.5 TB of JSON in a full dump needs 40–90 minutes of inflate on one core alone, and
//! with one decoding thread the parsers can never run faster than that one core.

pub mod bz2;
pub mod chunk;
pub mod entity;
pub mod gz;
pub(crate) mod inorder;
pub mod line;
pub mod read;
pub mod start;

pub use self::chunk::{frame, Base, ChunkOut, Held, JoinedLine, Joiner};
pub use self::read::{
    display_path, hashes_input, read_dump, FileHash, GzRead, LineChunker, MultiGz, ReadOpts,
    ReadStats, Work,
};
pub(crate) use self::read::{gz_parallel, read_mapped};

/// Compression format of a dump, detected from its first bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    Plain,
    Gzip,
    Bzip2,
    Zstd,
}

impl Format {
    /// Detect the format from magic bytes: gzip `1f 8b`, bzip2 `BZh`, zstd `28 b5 2f fd` or a zstd skippable
    /// frame `5? 2a 4d 18` (RFC 8878 §3.1.2: `pzstd` and other multi-threaded writers start with one); anything
    /// else is plain JSON.
    pub fn sniff(first: &[u8]) -> Format {
        if first.starts_with(&[0x1f, 0x8b]) {
            Format::Gzip
        } else if first.starts_with(b"BZh") {
            Format::Bzip2
        } else if first.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) || is_zstd_skippable(first) {
            Format::Zstd
        } else {
            Format::Plain
        }
    }

    /// Lower-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Format::Plain => "plain",
            Format::Gzip => "gzip",
            Format::Bzip2 => "bzip2",
            Format::Zstd => "zstd",
        }
    }
}

/// `b` starts with the magic of a zstd skippable frame: `0x184D2A5?` little-endian.
pub fn is_zstd_skippable(b: &[u8]) -> bool {
    matches!(b, [m, 0x2a, 0x4d, 0x18, ..] if m & 0xf0 == 0x50)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sniffs_formats() {
        assert_eq!(Format::sniff(&[0x1f, 0x8b, 8]), Format::Gzip);
        assert_eq!(Format::sniff(b"BZh9"), Format::Bzip2);
        assert_eq!(Format::sniff(&[0x28, 0xb5, 0x2f, 0xfd]), Format::Zstd);
        // What pzstd writes first: a skippable frame (magic 0x184D2A50, little-endian).
        assert_eq!(Format::sniff(&[0x50, 0x2a, 0x4d, 0x18, 4, 0]), Format::Zstd);
        assert_eq!(Format::sniff(&[0x5f, 0x2a, 0x4d, 0x18]), Format::Zstd);
        assert_eq!(Format::sniff(&[0x60, 0x2a, 0x4d, 0x18]), Format::Plain);
        assert_eq!(Format::sniff(&[0x50, 0x2a, 0x4d]), Format::Plain);
        assert_eq!(Format::sniff(b"[\n"), Format::Plain);
        assert_eq!(Format::sniff(b""), Format::Plain);
    }
}
