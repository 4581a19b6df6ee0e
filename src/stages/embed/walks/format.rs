//! Walks in memory and the binary format `walks.bin` (and the text form `walks.txt`); see the module
//! documentation of [`super`] for the layout.

use crate::core::error::{Error, IoContext, Result};
use std::io::{Read, Write};
use std::path::Path;

/// Magic bytes of `walks.bin`.
pub const WALKS_MAGIC: &[u8; 8] = b"SWORDWLK";
/// Format version of `walks.bin`.
pub const WALKS_VERSION: u32 = 1;
/// Header length of `walks.bin` in bytes.
pub const WALKS_HEADER_LEN: usize = 24;
/// Padding id for the rest of a walk that cannot continue.
pub const PAD: u32 = u32::MAX;

/// Walks in memory: `data` holds `num_walks × length` node ids, walk after walk.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Walks {
    /// Nodes per walk.
    pub length: usize,
    /// Node ids (`PAD` after a walk's end).
    pub data: Vec<u32>,
}

impl Walks {
    /// Number of walks.
    pub fn num_walks(&self) -> usize {
        self.data.len().checked_div(self.length).unwrap_or(0)
    }

    /// Iterate over the walks as slices of `length` ids (padding included).
    pub fn iter(&self) -> std::slice::ChunksExact<'_, u32> {
        self.data.chunks_exact(self.length.max(1))
    }

    /// Write the binary format (header + ids).
    pub fn write<W: Write>(&self, mut w: W) -> std::io::Result<()> {
        write_header(&mut w, self.length, self.num_walks() as u64)?;
        write_ids(&mut w, &self.data)
    }

    /// Read `walks.bin` from disk; `Error::Corrupt` naming the file if the header or length is wrong.
    pub fn read(path: &Path) -> Result<Walks> {
        let f = std::fs::File::open(path).at(path)?;
        Self::from_reader(f, path)
    }

    /// Read the binary format from any reader (`path` is only used in errors).
    pub fn from_reader<R: Read>(mut r: R, path: &Path) -> Result<Walks> {
        let h = WalkHeader::read(&mut r, path)?;
        let mut bytes = Vec::new();
        r.read_to_end(&mut bytes).at(path)?;
        h.check_id_bytes(bytes.len() as u64, path)?;
        let data = bytes
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes(c.try_into().expect("4 bytes")))
            .collect();
        Ok(Walks {
            length: h.length as usize,
            data,
        })
    }
}

/// The header of `walks.bin`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WalkHeader {
    /// Nodes per walk.
    pub length: u32,
    /// Number of walks.
    pub num_walks: u64,
}

impl WalkHeader {
    /// Parse and check the 24-byte header.
    pub fn parse(head: &[u8], path: &Path) -> Result<WalkHeader> {
        let corrupt = |what: String| Error::Corrupt {
            path: path.to_path_buf(),
            what,
        };
        if head.len() < WALKS_HEADER_LEN {
            return Err(corrupt("shorter than the walks header".into()));
        }
        if &head[..8] != WALKS_MAGIC {
            return Err(corrupt("not a sword walks file (bad magic)".into()));
        }
        let version = u32::from_le_bytes(head[8..12].try_into().expect("4 bytes"));
        if version != WALKS_VERSION {
            return Err(corrupt(format!(
                "format version {version}, this build reads version {WALKS_VERSION}"
            )));
        }
        let length = u32::from_le_bytes(head[12..16].try_into().expect("4 bytes"));
        let num_walks = u64::from_le_bytes(head[16..24].try_into().expect("8 bytes"));
        if length == 0 && num_walks > 0 {
            return Err(corrupt("walk length 0".into()));
        }
        Ok(WalkHeader { length, num_walks })
    }

    /// Read and check the header at the start of `r` (`path` names the file in errors).
    pub fn read<R: Read>(r: &mut R, path: &Path) -> Result<WalkHeader> {
        let mut head = [0u8; WALKS_HEADER_LEN];
        r.read_exact(&mut head).map_err(|e| match e.kind() {
            std::io::ErrorKind::UnexpectedEof => Error::Corrupt {
                path: path.to_path_buf(),
                what: "shorter than the walks header".into(),
            },
            _ => Error::io(path, e),
        })?;
        WalkHeader::parse(&head, path)
    }

    /// Check that `id_bytes` bytes of ids follow the header, as it implies; returns the number of ids.
    pub fn check_id_bytes(&self, id_bytes: u64, path: &Path) -> Result<u64> {
        let total = self.total_ids(path)?;
        if id_bytes != total * 4 {
            return Err(Error::Corrupt {
                path: path.to_path_buf(),
                what: format!(
                    "{id_bytes} bytes of ids, but the header ({} walks × {}) implies {}",
                    self.num_walks,
                    self.length,
                    total * 4
                ),
            });
        }
        Ok(total)
    }

    pub(super) fn total_ids(&self, path: &Path) -> Result<u64> {
        self.num_walks
            .checked_mul(u64::from(self.length))
            .filter(|t| t.checked_mul(4).is_some())
            .ok_or_else(|| Error::Corrupt {
                path: path.to_path_buf(),
                what: "header size overflows".into(),
            })
    }
}

/// Write the `walks.bin` header.
pub fn write_header<W: Write>(mut w: W, length: usize, num_walks: u64) -> std::io::Result<()> {
    w.write_all(WALKS_MAGIC)?;
    w.write_all(&WALKS_VERSION.to_le_bytes())?;
    w.write_all(&(length as u32).to_le_bytes())?;
    w.write_all(&num_walks.to_le_bytes())
}

/// Write node ids as u32 LE.
pub fn write_ids<W: Write>(mut w: W, ids: &[u32]) -> std::io::Result<()> {
    if cfg!(target_endian = "little") {
        // SAFETY: u32 has no padding; on a little-endian target its bytes are the LE encoding.
        let bytes = unsafe {
            std::slice::from_raw_parts(ids.as_ptr().cast::<u8>(), std::mem::size_of_val(ids))
        };
        return w.write_all(bytes);
    }
    let mut buf = Vec::with_capacity(1 << 16);
    for chunk in ids.chunks(16384) {
        buf.clear();
        for x in chunk {
            buf.extend_from_slice(&x.to_le_bytes());
        }
        w.write_all(&buf)?;
    }
    Ok(())
}

/// Write walks as text: one walk per line, keys separated by one space, padding omitted.
pub fn write_text<W: Write>(
    mut w: W,
    ids: &[u32],
    length: usize,
    keys: &[String],
) -> std::io::Result<()> {
    let mut line = Vec::with_capacity(256);
    for walk in ids.chunks_exact(length) {
        line.clear();
        for (i, &v) in walk.iter().take_while(|&&v| v != PAD).enumerate() {
            if i > 0 {
                line.push(b' ');
            }
            let key = keys.get(v as usize).ok_or_else(|| {
                std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    format!("node id {v} has no key ({} keys)", keys.len()),
                )
            })?;
            line.extend_from_slice(key.as_bytes());
        }
        line.push(b'\n');
        w.write_all(&line)?;
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------------------
// Sampling
// ---------------------------------------------------------------------------------------------------------
