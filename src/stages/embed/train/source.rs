//! Where training reads its walks from: memory, or `walks.bin` one piece at a time.

use crate::core::error::{Error, Result};
use std::path::{Path, PathBuf};

/// Where training reads its walks from: memory (`[u32]`), or `walks.bin` one chunk at a time ([`WalkFile`]),
/// so that the walks (40 bytes per walk of 10 nodes: 400 MB for a million nodes × 10 walks) never sit in memory
/// beside the two embedding matrices.
pub trait WalkSource: Sync {
    /// Number of ids (walks × walk length).
    fn len_ids(&self) -> usize;
    /// Fill `out` with the ids starting at id `from`.
    fn read_ids(&self, from: usize, out: &mut [u32]) -> Result<()>;
}

impl WalkSource for &[u32] {
    fn len_ids(&self) -> usize {
        self.len()
    }
    fn read_ids(&self, from: usize, out: &mut [u32]) -> Result<()> {
        out.copy_from_slice(&self[from..from + out.len()]);
        Ok(())
    }
}

/// `walks.bin` read chunk by chunk (header and size checked when opened).
pub struct WalkFile {
    file: std::sync::Mutex<std::fs::File>,
    path: PathBuf,
    /// Nodes per walk.
    pub length: usize,
    n_ids: usize,
}

impl WalkFile {
    /// Open `path` and check its header and that its size matches it.
    pub fn open(path: &Path) -> Result<WalkFile> {
        let mut file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
        let h = crate::stages::embed::walks::WalkHeader::read(&mut file, path)?;
        let size = file.metadata().map_err(|e| Error::io(path, e))?.len();
        let id_bytes = size.saturating_sub(crate::stages::embed::walks::WALKS_HEADER_LEN as u64);
        let n_ids = h.check_id_bytes(id_bytes, path)?;
        let n_ids = usize::try_from(n_ids).map_err(|_| Error::Corrupt {
            path: path.to_path_buf(),
            what: format!("{n_ids} ids do not fit in memory addresses"),
        })?;
        Ok(WalkFile {
            file: std::sync::Mutex::new(file),
            path: path.to_path_buf(),
            length: h.length as usize,
            n_ids,
        })
    }
}

impl WalkSource for WalkFile {
    fn len_ids(&self) -> usize {
        self.n_ids
    }
    fn read_ids(&self, from: usize, out: &mut [u32]) -> Result<()> {
        use std::io::{Read, Seek, SeekFrom};
        let mut bytes = vec![0u8; out.len() * 4];
        {
            let mut f = self.file.lock().unwrap_or_else(|p| p.into_inner());
            let at = (crate::stages::embed::walks::WALKS_HEADER_LEN + from * 4) as u64;
            f.seek(SeekFrom::Start(at))
                .and_then(|_| f.read_exact(&mut bytes))
                .map_err(|e| Error::io(&self.path, e))?;
        }
        for (o, c) in out.iter_mut().zip(bytes.chunks_exact(4)) {
            *o = u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
        }
        Ok(())
    }
}
