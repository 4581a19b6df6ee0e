//! Manifests: after its outputs, a stage writes `<stage>.manifest.json` (atomically): what it read (path, size,
//! xxh3-128 hash), what it wrote (same), its config, seed, counts, rejects and timings. The next stage checks
//! its inputs against that manifest ([`check_input`]), so a stale or corrupt input is refused with a message
//! naming it, and `sword run` and the Makefile skip a stage whose manifest still matches ([`is_fresh`]).
//!
//! A manifest also says whether its outputs come from a whole dump (`"complete": true`). The extract stage
//! sets `false` when it kept what it could of a dump that ends early (`--allow-truncated`); every later stage
//! inherits `false` from the manifest of any input it read ([`Manifest::write`]), so a partial build can never
//! pass as a whole one.

use super::layout;
use super::rundir::RunDir;
use crate::core::error::{Error, IoContext, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fs::{self, File};
use std::io::Read;
use std::path::{Path, PathBuf};

/// Version of the crate that wrote an artifact.
pub const CRATE_VERSION: &str = env!("CARGO_PKG_VERSION");

/// Git commit the binary was built from (`unknown` outside a checkout).
pub const GIT_COMMIT: &str = match option_env!("SWORD_GIT_COMMIT") {
    Some(c) => c,
    None => "unknown",
};

/// Size and content hash of a file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileRef {
    /// Outputs: the file's name relative to the manifest's directory. Inputs: relative to the run folder when
    /// [`FileRef::in_run`] (an artifact, a dump generated into the folder), else the path as given on the
    /// command line (relative to the working directory of the command that wrote the manifest).
    pub path: String,
    /// Size in bytes.
    pub size: u64,
    /// xxh3-128 of the content, lower-case hex; `None` for streams that cannot be hashed (stdin).
    pub xxh3: Option<String>,
    /// An input inside the run folder, recorded relative to it: a moved folder's manifests still name its own
    /// files, and a copied folder's name the copy's, never the original's. Written only when true (manifests
    /// written before it existed recorded every input as given, and read as `false`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub in_run: bool,
}

/// The identity of an input as a manifest records it and freshness compares it: `(in_run, path)` (see
/// [`FileRef::in_run`]).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct InputName {
    /// Relative to the run folder (else as given).
    pub in_run: bool,
    /// The path, relative to the run folder or as given.
    pub path: String,
}

impl InputName {
    /// How a manifest of the run folder `dir` names the file `path` (as the command was given it or built it
    /// from `dir`): relative to `dir` when it lies inside (lexically, else once both are resolved), else as
    /// given.
    pub fn of(dir: &Path, path: &Path) -> InputName {
        let inside = path
            .strip_prefix(dir)
            .ok()
            .filter(|r| !r.as_os_str().is_empty())
            .map(Path::to_path_buf)
            .or_else(|| {
                let d = fs::canonicalize(if dir.as_os_str().is_empty() {
                    Path::new(".")
                } else {
                    dir
                })
                .ok()?;
                let p = fs::canonicalize(path).ok()?;
                p.strip_prefix(&d).ok().map(Path::to_path_buf)
            });
        match inside {
            Some(rel) => InputName {
                in_run: true,
                path: rel.to_string_lossy().into_owned(),
            },
            None => InputName {
                in_run: false,
                path: path.to_string_lossy().into_owned(),
            },
        }
    }

    /// The file this name stands for, for a command run in the run folder `dir`.
    pub fn resolve(&self, dir: &Path) -> PathBuf {
        if self.in_run {
            dir.join(&self.path)
        } else {
            PathBuf::from(&self.path)
        }
    }
}

impl FileRef {
    /// The name this input is recorded under.
    pub fn name(&self) -> InputName {
        InputName {
            in_run: self.in_run,
            path: self.path.clone(),
        }
    }

    /// Record this input (hashed under the path the command used) as a manifest of the run folder `dir` names
    /// it: relative to `dir` when inside it ([`InputName::of`]). Idempotent.
    pub fn relative_to(mut self, dir: &Path) -> FileRef {
        if !self.in_run && self.path != "-" {
            let n = InputName::of(dir, Path::new(&self.path));
            self.in_run = n.in_run;
            self.path = n.path;
        }
        self
    }

    /// The file this input names, for a manifest of the run folder `dir`.
    pub fn resolve(&self, dir: &Path) -> PathBuf {
        self.name().resolve(dir)
    }
}

impl FileRef {
    /// A file recorded by path and size only: read once as a stream (nothing to hash it again from), or a
    /// shard's dump, whose parts carry the hashes of their own ranges instead.
    pub fn unhashed(path: &Path, size: u64) -> FileRef {
        FileRef {
            path: path.to_string_lossy().into_owned(),
            size,
            xxh3: None,
            in_run: false,
        }
    }

    /// A file recorded with the xxh3-128 of all its `size` bytes, streamed into `h`.
    pub fn hashed(path: &Path, size: u64, h: &xxhash_rust::xxh3::Xxh3) -> FileRef {
        FileRef::with_digest(path, size, h.digest128())
    }

    /// A file recorded with `xxh3_128`, the xxh3-128 of all its `size` bytes (computed by whoever read them).
    pub fn with_digest(path: &Path, size: u64, xxh3_128: u128) -> FileRef {
        FileRef {
            xxh3: Some(digest_hex(xxh3_128)),
            ..FileRef::unhashed(path, size)
        }
    }

    /// Hash a file on disk (streams it; xxh3 runs at several GB/s, far faster than any stage).
    pub fn of(path: &Path) -> Result<FileRef> {
        let never = std::sync::atomic::AtomicBool::new(false);
        Ok(FileRef::of_unless(path, &never)?.expect("never stopped"))
    }

    /// [`FileRef::of`], giving up (`Ok(None)`) between two 1 MiB reads once `stop` is set: a stage that hashes
    /// its input beside its work (extract) sets it when the work fails, so that a library caller is not left
    /// with a thread reading the rest of a 140 GB dump for minutes.
    pub fn of_unless(path: &Path, stop: &std::sync::atomic::AtomicBool) -> Result<Option<FileRef>> {
        FileRef::of_behind(path, stop, &|_| None)
    }

    /// [`FileRef::of_unless`] that never reads past the offset `behind(at)` returns (`at`: the bytes hashed so
    /// far; `None`: no limit), waiting a millisecond at a time until it has moved a whole read (1 MiB) ahead. A stage that reads a file hashes it
    /// just behind its own reading (extract passes the bytes its reader has consumed): the pages come from the
    /// page cache the reader just filled instead of from a second read of the disk, which a hash running ahead
    /// makes for every file larger than the memory left to cache it (a full dump is 140 GB).
    pub fn of_behind(
        path: &Path,
        stop: &std::sync::atomic::AtomicBool,
        behind: &dyn Fn(u64) -> Option<u64>,
    ) -> Result<Option<FileRef>> {
        let mut f = File::open(path).at(path)?;
        let mut h = xxhash_rust::xxh3::Xxh3::new();
        let mut buf = vec![0u8; 1 << 20];
        let mut size = 0u64;
        loop {
            if stop.load(std::sync::atomic::Ordering::Relaxed) {
                return Ok(None);
            }
            // Whole reads only while limited (no trickle of small ones behind a reader that moves by bytes).
            if behind(size).is_some_and(|limit| limit < size.saturating_add(buf.len() as u64)) {
                std::thread::sleep(std::time::Duration::from_millis(1));
                continue;
            }
            let n = f.read(&mut buf).at(path)?;
            if n == 0 {
                break;
            }
            h.update(&buf[..n]);
            size += n as u64;
        }
        Ok(Some(FileRef::hashed(path, size, &h)))
    }
}

/// A streaming xxh3-128 as the 32 hex digits manifests record.
pub fn xxh3_hex(h: &xxhash_rust::xxh3::Xxh3) -> String {
    digest_hex(h.digest128())
}

/// An xxh3-128 digest as the 32 hex digits manifests record.
fn digest_hex(d: u128) -> String {
    format!("{d:032x}")
}

/// Provenance written next to a stage's outputs as `<stage>.manifest.json`.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Manifest {
    /// Stage name (`extract`, `graph`, ...).
    pub stage: String,
    /// Crate version that wrote it.
    pub crate_version: String,
    /// Git commit of the binary.
    pub git_commit: String,
    /// The stage's configuration, as JSON.
    pub config: serde_json::Value,
    /// Seed, for stages that draw random numbers.
    pub seed: Option<u64>,
    /// Input files with size and hash.
    pub inputs: Vec<FileRef>,
    /// Output files (names relative to the manifest's directory) with size and hash.
    pub outputs: Vec<FileRef>,
    /// Counts (records read, kept, ...).
    pub counts: BTreeMap<String, u64>,
    /// Rejected or skipped records by reason.
    pub rejects: BTreeMap<String, u64>,
    /// Wall-clock timings in seconds by phase.
    pub timings: BTreeMap<String, f64>,
    /// Anything stage-specific (examples of bad lines, throughput, ...).
    pub extra: serde_json::Value,
    /// Whether the outputs come from a whole dump. `false` when the extract stage kept what it could of a dump
    /// that ends early (`--allow-truncated`), and in every manifest downstream of such a run (inherited from the
    /// inputs' manifests when written). Manifests written before this field existed read as `true`.
    #[serde(default = "yes")]
    pub complete: bool,
    /// The stage's artifacts that an earlier run left in the folder and this run did not write (its flags or
    /// settings did not ask for them: `walks.txt` after a run without `--text`), removed when it finished so
    /// that they do not pass for its outputs. Left out of the file when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub removed: Vec<String>,
}

fn yes() -> bool {
    true
}

impl Manifest {
    /// A manifest for `stage` with version and commit filled in.
    pub fn new(stage: &str) -> Manifest {
        Manifest {
            stage: stage.to_string(),
            crate_version: CRATE_VERSION.to_string(),
            git_commit: GIT_COMMIT.to_string(),
            extra: serde_json::Value::Null,
            complete: true,
            ..Manifest::default()
        }
    }

    /// The inputs of this manifest (of the run folder `dir`) that an incomplete run produced: each input is
    /// looked up in the manifests beside it (`*.manifest.json` in its directory) that list it as an output
    /// with the same size and hash.
    pub fn incomplete_inputs(&self, dir: &Path) -> Vec<String> {
        let mut out = Vec::new();
        for input in &self.inputs {
            let resolved = input.resolve(dir);
            let path = resolved.as_path();
            let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
                continue;
            };
            let dir = if dir.as_os_str().is_empty() {
                Path::new(".")
            } else {
                dir
            };
            let name = name.to_string_lossy();
            let Ok(entries) = fs::read_dir(dir) else {
                continue;
            };
            for e in entries.flatten() {
                let file = e.file_name().to_string_lossy().into_owned();
                if !file.ends_with(".manifest.json") {
                    continue;
                }
                let Ok(m) = Manifest::read(&e.path()) else {
                    continue;
                };
                let produced = m.outputs.iter().any(|o| {
                    o.path == name
                        && o.size == input.size
                        && (o.xxh3 == input.xxh3 || input.xxh3.is_none())
                });
                if produced && !m.complete {
                    out.push(input.path.clone());
                    break;
                }
            }
        }
        out
    }

    /// A count (0 when the stage did not record it).
    pub fn count(&self, key: &str) -> u64 {
        self.counts.get(key).copied().unwrap_or(0)
    }

    /// Path of the manifest of `stage` in `dir`.
    pub fn path_in(dir: &Path, stage: &str) -> PathBuf {
        dir.join(layout::manifest_file(stage))
    }

    /// Record the outputs of the stage writing into `run` now (files in the folder, by name) with their
    /// hashes: those it renamed into place through the handle with the hash of the bytes it wrote
    /// ([`super::RunDir::written`]), any other read from disk and hashed, as [`Manifest::add_outputs`] does.
    pub fn add_outputs_of(&mut self, run: &super::RunDir, names: &[&str]) -> Result<()> {
        for name in names {
            let path = run.path(name);
            let mut r = match run.written(name) {
                Some(w) => FileRef::with_digest(&path, w.size, w.xxh3),
                None => FileRef::of(&path)?,
            };
            r.path = (*name).to_string();
            self.outputs.push(r);
        }
        Ok(())
    }

    /// Record the outputs (files in `dir`, by name) with their hashes.
    pub fn add_outputs(&mut self, dir: &Path, names: &[&str]) -> Result<()> {
        for name in names {
            let mut r = FileRef::of(&dir.join(name))?;
            r.path = (*name).to_string();
            self.outputs.push(r);
        }
        Ok(())
    }

    /// Write `<stage>.manifest.json` atomically into the run folder `run`, last (it finishes the stage writing
    /// there). A manifest any of whose inputs comes from an incomplete run is written with `"complete": false`
    /// (see [`Manifest::incomplete_inputs`]), whatever the stage set.
    pub fn write(&self, run: &RunDir) -> Result<PathBuf> {
        self.write_in(run, Path::new(""))
    }

    /// [`Manifest::write`] into the sub-folder `sub` of the run folder (the embedded dump's `input/`).
    pub fn write_in(&self, run: &RunDir, sub: &Path) -> Result<PathBuf> {
        let dir = run.path(sub);
        let mut m = std::borrow::Cow::Borrowed(self);
        if self.complete && !self.incomplete_inputs(&dir).is_empty() {
            m.to_mut().complete = false;
        }
        let mut json = serde_json::to_vec_pretty(&*m).expect("manifest serialises");
        json.push(b'\n');
        run.write_manifest(sub, &layout::manifest_file(&self.stage), &json)
    }

    /// Read a manifest.
    pub fn read(path: &Path) -> Result<Manifest> {
        let bytes = fs::read(path).at(path)?;
        serde_json::from_slice(&bytes).map_err(|e| Error::Corrupt {
            path: path.to_path_buf(),
            what: format!("manifest is not valid JSON: {e}"),
        })
    }
}

/// Check that `dir/name` is exactly the file that `dir/<stage>.manifest.json` says `stage` wrote.
///
/// Returns the file's `FileRef` (with its full path) for the consumer's own manifest. A missing manifest or a
/// file not listed is `Stale`, and so is a size or hash mismatch (the file changed since its manifest vouched for
/// it: exit code 3, as a stale input; a file that cannot be decoded is `Corrupt`, bad input, exit code 2). With `force`, mismatches are ignored and
/// the file is only hashed.
pub fn check_input(dir: &Path, stage: &str, name: &str, force: bool) -> Result<FileRef> {
    let path = dir.join(name);
    if !path.exists() {
        return Err(Error::Stale {
            path,
            what: format!("missing; run `sword {stage}` first"),
        });
    }
    let actual = FileRef::of(&path)?;
    if force {
        return Ok(actual);
    }
    let mpath = Manifest::path_in(dir, stage);
    if !mpath.exists() {
        return Err(Error::Stale {
            path: path.clone(),
            what: format!("no manifest {} vouches for it", mpath.display()),
        });
    }
    let manifest = Manifest::read(&mpath)?;
    let listed = manifest
        .outputs
        .iter()
        .find(|o| o.path == name)
        .ok_or_else(|| Error::Stale {
            path: path.clone(),
            what: format!("not listed in {}", mpath.display()),
        })?;
    if listed.size != actual.size || listed.xxh3 != actual.xxh3 {
        return Err(Error::Stale {
            path,
            what: format!(
                "changed since its manifest vouched for it: size/hash {} / {:?} differ from {} ({} / {:?})",
                actual.size,
                actual.xxh3,
                mpath.display(),
                listed.size,
                listed.xxh3
            ),
        });
    }
    Ok(actual)
}

/// What a stage run is about to read, as [`is_fresh`] compares it with its manifest's inputs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reads {
    /// Inputs the run will read and record: each must be among the manifest's.
    pub required: Vec<InputName>,
    /// Inputs it may record or not (an optional artifact it takes when there: distort's embeddings).
    pub optional: Vec<InputName>,
}

/// True when `dir/<stage>.manifest.json` exists and everything this run of the stage would use matches it:
///
/// - it was made with `config`;
/// - its inputs are exactly the files this run reads (`reads`: every required one listed, nothing listed that
///   this run would not read) — so a run naming another dump, or carrying from another benchmark, is never
///   fresh, even when the files the manifest names are unchanged;
/// - every input it lists still has the recorded size and hash, an input inside the run folder looked up in
///   `dir` ([`FileRef::in_run`]: a copied folder is judged on its own files, never on the original's);
/// - every output it lists is present with its recorded size and hash.
///
/// A stage that is fresh need not run again (`sword run` relies on this after a crash, and to skip the stages
/// a rerun would not change). Manifests whose inputs were recorded as given (before `in_run`) are never fresh:
/// they rerun once.
pub fn is_fresh(dir: &Path, stage: &str, config: &serde_json::Value, reads: &Reads) -> bool {
    let Ok(m) = Manifest::read(&Manifest::path_in(dir, stage)) else {
        return false;
    };
    if &m.config != config || m.outputs.is_empty() {
        return false;
    }
    let recorded: Vec<InputName> = m.inputs.iter().map(FileRef::name).collect();
    if !reads.required.iter().all(|r| recorded.contains(r)) {
        return false;
    }
    if !recorded
        .iter()
        .all(|r| reads.required.contains(r) || reads.optional.contains(r))
    {
        return false;
    }
    // A stream (stdin, a named pipe) cannot be read again to check it, and opening a pipe could block or eat
    // the next writer's bytes: a stage that read one is never fresh.
    let same = |r: &FileRef, path: &Path| match std::fs::metadata(path) {
        Ok(meta) if !meta.is_file() => false,
        _ => match FileRef::of(path) {
            Ok(now) => now.size == r.size && (r.xxh3.is_none() || now.xxh3 == r.xxh3),
            Err(_) => false,
        },
    };
    m.inputs.iter().all(|i| same(i, &i.resolve(dir)))
        && m.outputs.iter().all(|o| same(o, &dir.join(&o.path)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::atomic::write_atomic;

    #[test]
    fn hashing_gives_up_once_told_to_and_otherwise_hashes_the_whole_file() {
        use std::sync::atomic::AtomicBool;
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        let bytes: Vec<u8> = (0..(3u32 << 20)).map(|i| (i * 7 % 251) as u8).collect();
        std::fs::write(&p, &bytes).unwrap();
        assert_eq!(
            FileRef::of_unless(&p, &AtomicBool::new(true)).unwrap(),
            None
        );
        let f = FileRef::of_unless(&p, &AtomicBool::new(false))
            .unwrap()
            .unwrap();
        assert_eq!(f.size, bytes.len() as u64);
        let want = format!("{:032x}", xxhash_rust::xxh3::xxh3_128(&bytes));
        assert_eq!(f.xxh3.as_deref(), Some(want.as_str()));
        assert_eq!(FileRef::of(&p).unwrap(), f);
    }

    #[test]
    fn hashing_behind_a_reader_never_passes_it_and_ends_with_the_whole_files_hash() {
        use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        // 3.5 MiB: the last read is a partial one.
        let bytes: Vec<u8> = (0..(7u32 << 19)).map(|i| (i * 13 % 253) as u8).collect();
        std::fs::write(&p, &bytes).unwrap();
        let (limit, seen, done) = (AtomicU64::new(0), AtomicU64::new(0), AtomicBool::new(false));
        let behind = |at: u64| {
            seen.fetch_max(at, Ordering::Relaxed);
            (!done.load(Ordering::Relaxed)).then(|| limit.load(Ordering::Relaxed))
        };
        let stop = AtomicBool::new(false);
        let f = std::thread::scope(|s| {
            let h = s.spawn(|| FileRef::of_behind(&p, &stop, &behind));
            // Held at 0, then at 1.5 MiB: it may hash the first whole MiB, not the second. (It gets there in its
            // own time on a loaded machine: wait for it, then give it time to overstep.)
            std::thread::sleep(std::time::Duration::from_millis(30));
            assert_eq!(seen.load(Ordering::Relaxed), 0);
            limit.store(3 << 19, Ordering::Relaxed);
            let t0 = std::time::Instant::now();
            while seen.load(Ordering::Relaxed) < 1 << 20 && t0.elapsed().as_secs() < 30 {
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            std::thread::sleep(std::time::Duration::from_millis(30));
            assert_eq!(seen.load(Ordering::Relaxed), 1 << 20);
            // The reader is done: the rest, partial last read included.
            done.store(true, Ordering::Relaxed);
            h.join().unwrap()
        })
        .unwrap()
        .unwrap();
        assert_eq!(f, FileRef::of(&p).unwrap());
        assert_eq!(f.size, bytes.len() as u64);
        // Stopped while waiting behind a reader that does not move: gives up.
        let (stop, limit) = (AtomicBool::new(false), AtomicU64::new(0));
        let r = std::thread::scope(|s| {
            let h =
                s.spawn(|| FileRef::of_behind(&p, &stop, &|_| Some(limit.load(Ordering::Relaxed))));
            std::thread::sleep(std::time::Duration::from_millis(10));
            stop.store(true, Ordering::Relaxed);
            h.join().unwrap()
        });
        assert_eq!(r.unwrap(), None);
    }
    /// Only `names` required, nothing optional.
    fn reads(names: &[InputName]) -> Reads {
        Reads {
            required: names.to_vec(),
            optional: Vec::new(),
        }
    }

    #[test]
    fn freshness_follows_inputs_outputs_and_config() {
        let top = tempfile::tempdir().unwrap();
        let d = &top.path().join("run");
        fs::create_dir(d).unwrap();
        let input = d.join("in.txt");
        let outside = top.path().join("dump.json");
        fs::write(&input, b"abc").unwrap();
        fs::write(&outside, b"dump").unwrap();
        write_atomic(d.join("out.bin"), |w| w.write_all(b"xyz")).unwrap();
        let cfg = serde_json::json!({"k": 1});
        let mut m = Manifest::new("s");
        m.config = cfg.clone();
        m.inputs.push(FileRef::of(&input).unwrap().relative_to(d));
        m.inputs.push(FileRef::of(&outside).unwrap().relative_to(d));
        m.add_outputs(d, &["out.bin"]).unwrap();
        m.write(&RunDir::open(d).unwrap()).unwrap();
        // Recorded relative to the folder inside it, as given outside it.
        let inside = InputName {
            in_run: true,
            path: "in.txt".into(),
        };
        let given = InputName {
            in_run: false,
            path: outside.to_string_lossy().into_owned(),
        };
        assert_eq!(InputName::of(d, &input), inside);
        assert_eq!(InputName::of(d, &outside), given);
        let raw = fs::read_to_string(Manifest::path_in(d, "s")).unwrap();
        assert!(raw.contains("\"path\": \"in.txt\""), "{raw}");
        assert_eq!(raw.matches("in_run").count(), 1, "{raw}");
        let both = reads(&[inside.clone(), given.clone()]);
        assert!(is_fresh(d, "s", &cfg, &both));
        assert!(!is_fresh(d, "s", &serde_json::json!({"k": 2}), &both));
        // The exact set of inputs: one more required (another dump), or one recorded and not read, is stale.
        let other = InputName {
            in_run: false,
            path: "v2.json".into(),
        };
        assert!(!is_fresh(
            d,
            "s",
            &cfg,
            &reads(&[inside.clone(), other.clone()])
        ));
        assert!(!is_fresh(
            d,
            "s",
            &cfg,
            &reads(std::slice::from_ref(&inside))
        ));
        let opt = Reads {
            required: vec![inside.clone()],
            optional: vec![given.clone()],
        };
        assert!(is_fresh(d, "s", &cfg, &opt));
        fs::write(&input, b"abd").unwrap();
        assert!(!is_fresh(d, "s", &cfg, &both));
        fs::write(&input, b"abc").unwrap();
        fs::write(&outside, b"dumP").unwrap();
        assert!(!is_fresh(d, "s", &cfg, &both));
        fs::write(&outside, b"dump").unwrap();
        assert!(is_fresh(d, "s", &cfg, &both));
        // A moved folder stays fresh; a copy is judged on its own files, not the original's.
        let moved = top.path().join("moved");
        fs::rename(d, &moved).unwrap();
        assert!(is_fresh(&moved, "s", &cfg, &both));
        let copy = top.path().join("copy");
        fs::create_dir(&copy).unwrap();
        for f in ["in.txt", "out.bin", "s.manifest.json"] {
            fs::copy(moved.join(f), copy.join(f)).unwrap();
        }
        assert!(is_fresh(&copy, "s", &cfg, &both));
        fs::write(copy.join("in.txt"), b"new").unwrap();
        assert!(!is_fresh(&copy, "s", &cfg, &both));
        assert!(is_fresh(&moved, "s", &cfg, &both));
        fs::remove_file(moved.join("out.bin")).unwrap();
        assert!(!is_fresh(&moved, "s", &cfg, &both));
    }
    #[test]
    fn check_input_detects_corruption_and_staleness() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        write_atomic(d.join("x.bin"), |w| w.write_all(b"hello")).unwrap();
        assert!(matches!(
            check_input(d, "s", "x.bin", false),
            Err(Error::Stale { .. })
        ));
        let mut m = Manifest::new("s");
        m.add_outputs(d, &["x.bin"]).unwrap();
        m.write(&RunDir::open(d).unwrap()).unwrap();
        assert_eq!(check_input(d, "s", "x.bin", false).unwrap().size, 5);
        fs::write(d.join("x.bin"), b"hellO").unwrap();
        assert!(matches!(
            check_input(d, "s", "x.bin", false),
            Err(Error::Stale { .. })
        ));
        assert!(check_input(d, "s", "x.bin", true).is_ok());
    }
    #[test]
    fn first_rename_of_a_stage_removes_its_old_manifest_and_a_panic_its_new_outputs() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let write_stage = |bytes: &[u8]| {
            let run = RunDir::open(d).unwrap();
            let _stage = run.begin_stage("s").unwrap();
            run.write("one.bin", |w| w.write_all(bytes)).unwrap();
            run.write("two.bin", |w| w.write_all(bytes)).unwrap();
            let mut m = Manifest::new("s");
            m.add_outputs(d, &["one.bin", "two.bin"]).unwrap();
            m.write(&run).unwrap();
        };
        write_stage(b"old");
        let cfg = serde_json::Value::Null;
        assert!(is_fresh(d, "s", &cfg, &reads(&[])));
        // A rerun that replaces one output and stops: its old manifest went with the first rename.
        {
            let run = RunDir::open(d).unwrap();
            let _stage = run.begin_stage("s").unwrap();
            run.write("one.bin", |w| w.write_all(b"new")).unwrap();
            assert!(!Manifest::path_in(d, "s").exists());
        }
        assert!(!is_fresh(d, "s", &cfg, &reads(&[])));
        assert!(matches!(
            check_input(d, "s", "two.bin", false),
            Err(Error::Stale { .. })
        ));
        write_stage(b"old");
        // A panic after one output: while it unwinds, the new output goes too (nothing vouches for it).
        let d2 = d.to_path_buf();
        let r = std::thread::spawn(move || {
            let run = RunDir::open(&d2).unwrap();
            let _stage = run.begin_stage("s").unwrap();
            run.write("one.bin", |w| w.write_all(b"new")).unwrap();
            panic!("a bug");
        })
        .join();
        assert!(r.is_err());
        assert!(!d.join("one.bin").exists());
        assert!(!Manifest::path_in(d, "s").exists());
        assert!(matches!(
            check_input(d, "s", "two.bin", false),
            Err(Error::Stale { .. })
        ));
        // The lock went with the panicking thread.
        drop(RunDir::open(d).unwrap());
    }
}
