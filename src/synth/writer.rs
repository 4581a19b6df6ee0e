//! Blocks in parallel, written in order, in the four output formats.

use super::*;

/// Write a plain JSON dump for `cfg` to `w` on `threads` worker threads; returns what was written.
///
/// Every writer here takes the caller's thread count (`-j`, or the stage context's) rather than asking the
/// global pool; no byte of the output depends on it.
pub fn generate<W: Write>(cfg: &Config, threads: usize, w: W) -> Result<Truth> {
    generate_as(cfg, threads, w, Format::Json, Path::new("-"))
}

/// Write a dump in `format` to `w` (`path` names the destination in errors); returns the whole oracle, whose
/// sets grow with the dump (tens of bytes per statement): for tests and `--truth`. [`generate_counts_as`]
/// writes the same bytes in memory that does not grow with the dump.
pub fn generate_as<W: Write>(
    cfg: &Config,
    threads: usize,
    w: W,
    format: Format,
    path: &Path,
) -> Result<Truth> {
    Ok(stream(cfg, threads, w, format, path, true)?.0)
}

/// Write a dump in `format` to `w`, keeping only the sizes of the oracle (the same bytes as [`generate_as`]).
pub fn generate_counts_as<W: Write>(
    cfg: &Config,
    threads: usize,
    w: W,
    format: Format,
    path: &Path,
) -> Result<Counts> {
    Ok(stream(cfg, threads, w, format, path, false)?.1)
}

/// What a worker hands the writer for one block: its bytes and its oracle, whole or as counts.
type Part = (Vec<u8>, Result<BlockTruth, Counts>);

fn stream<W: Write>(
    cfg: &Config,
    threads: usize,
    w: W,
    format: Format,
    path: &Path,
    full: bool,
) -> Result<(Truth, Counts)> {
    stream_with(cfg, threads, w, format, path, full, None)
}

/// [`stream`], writing the later version of the dump that `plan` describes when there is one (the oracle is
/// then the first version's, from which the later one is derived). The blocks are made on `threads` worker
/// threads (at least one) of a pool of synth's own.
pub(super) fn stream_with<W: Write>(
    cfg: &Config,
    threads: usize,
    w: W,
    format: Format,
    path: &Path,
    full: bool,
    plan: Option<&later::Plan>,
) -> Result<(Truth, Counts)> {
    check(cfg)?;
    let m = Model::new(cfg);
    let mut truth = Truth::default();
    if full {
        for (j, p) in m.props.iter().enumerate() {
            truth.properties.insert(
                p.id,
                PropertyTruth {
                    datatype: p.datatype.to_string(),
                    labelled: m.prop_profile(j).labelled,
                    transitive: p.transitive,
                    symmetric: p.symmetric_p31 || p.symmetric_constraint,
                    inverse: p.inverse.clone(),
                },
            );
            truth
                .falsity
                .constraints
                .insert(p.id, m.falsity.constraints[j].clone());
        }
        truth.falsity.p279_cycles = m.falsity.cycles;
    }
    let mut counts = Counts::default();
    let progress = Progress::new("synth", Some(cfg.entities), Unit::Items("entities"));
    let n = cfg.entities;
    let block = cfg.member_lines.max(1) as u64;
    let n_blocks = n.div_ceil(block);
    let threads = threads.max(1);
    let per_round = (threads as u64 * 2).max(2);
    let level = flate2::Compression::new(cfg.gzip_level.min(9));

    let mut sink = match format {
        Format::Json | Format::Gzip => Sink::Plain(w),
        Format::Bzip2 => Sink::Bz(bzip2::write::BzEncoder::new(w, bzip2::Compression::best())),
        Format::Zstd => Sink::Zst(zstd::stream::write::Encoder::new(w, cfg.zstd_level).at(path)?),
    };
    let head: &[u8] = b"[\n";
    let tail: &[u8] = if n == 0 { b"]\n" } else { b"\n]\n" };
    let write_part = |sink: &mut Sink<W>, bytes: &[u8]| -> Result<()> {
        if format == Format::Gzip {
            sink.write_all(&gz::compress_member(bytes, level)).at(path)
        } else {
            sink.write_all(bytes).at(path)
        }
    };
    write_part(&mut sink, head)?;
    // Rounds of blocks are made on the caller's thread count by a producer thread while this thread writes
    // the previous round (and merges its oracle), so the workers do not wait for a slow reader of the output.
    // The rendezvous channel holds nothing: at most the round being written, the one handed over and the one
    // being made are in memory (3 × per_round blocks).
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(|i| format!("synth-{i}"))
        .build()
        .map_err(|e| {
            Error::io(
                path,
                std::io::Error::other(format!("cannot start {threads} threads: {e}")),
            )
        })?;
    let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<Part>>(0);
    let m = &m;
    let written: Result<()> = std::thread::scope(|scope| {
        scope.spawn(move || {
            pool.install(|| {
                let mut b0 = 0;
                while b0 < n_blocks {
                    let b1 = (b0 + per_round).min(n_blocks);
                    let parts: Vec<Part> = (b0..b1)
                        .into_par_iter()
                        .map(|b| {
                            let end = ((b + 1) * block).min(n);
                            let (bytes, t) = match plan {
                                Some(plan) => later::block_bytes(m, plan, b * block, end),
                                None => block_bytes(m, b * block, end),
                            };
                            let bytes = if format == Format::Gzip {
                                gz::compress_member(&bytes, level)
                            } else {
                                bytes
                            };
                            (bytes, if full { Ok(t) } else { Err(t.counts()) })
                        })
                        .collect();
                    if tx.send(parts).is_err() {
                        // The writer stopped on an error: nothing more to make.
                        return;
                    }
                    b0 = b1;
                }
            })
        });
        for parts in rx {
            for (bytes, t) in parts {
                sink.write_all(&bytes).at(path)?;
                match t {
                    Ok(t) => {
                        progress.inc(t.entities);
                        truth.merge(t);
                    }
                    Err(c) => {
                        progress.inc(c.entities);
                        counts.add(&c);
                    }
                }
            }
        }
        Ok(())
    });
    written?;
    write_part(&mut sink, tail)?;
    sink.finish().at(path)?;
    progress.finish();
    if full {
        counts = truth.counts();
    }
    Ok((truth, counts))
}

/// The output stream of `generate_as`, finished explicitly so that compressor errors are not lost on drop.
pub(super) enum Sink<W: Write> {
    Plain(W),
    Bz(bzip2::write::BzEncoder<W>),
    Zst(zstd::stream::write::Encoder<'static, W>),
}

impl<W: Write> Sink<W> {
    pub(super) fn finish(self) -> std::io::Result<()> {
        let mut w = match self {
            Sink::Plain(w) => w,
            Sink::Bz(e) => e.finish()?,
            Sink::Zst(e) => e.finish()?,
        };
        w.flush()
    }
}

impl<W: Write> Write for Sink<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Sink::Plain(w) => w.write(buf),
            Sink::Bz(e) => e.write(buf),
            Sink::Zst(e) => e.write(buf),
        }
    }
    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        match self {
            Sink::Plain(w) => w.write_all(buf),
            Sink::Bz(e) => e.write_all(buf),
            Sink::Zst(e) => e.write_all(buf),
        }
    }
    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Sink::Plain(w) => w.flush(),
            Sink::Bz(e) => e.flush(),
            Sink::Zst(e) => e.flush(),
        }
    }
}

pub(super) fn check(cfg: &Config) -> Result<()> {
    let share = |name: &str, v: f64| {
        if (0.0..=1.0).contains(&v) {
            Ok(())
        } else {
            Err(Error::Config(format!(
                "synth.{name} must be in [0, 1], got {v}"
            )))
        }
    };
    share("lexeme_share", cfg.lexeme_share)?;
    share("labelled_share", cfg.labelled_share)?;
    share("mul_share", cfg.mul_share)?;
    share("legacy_share", cfg.legacy_share)?;
    if !(cfg.mean_claims >= 1.0 && cfg.mean_claims <= 1000.0) {
        return Err(Error::Config(format!(
            "synth.mean_claims must be in [1, 1000], got {}",
            cfg.mean_claims
        )));
    }
    if cfg.gzip_level > 9 {
        return Err(Error::Config(format!(
            "synth.gzip_level must be 0–9, got {}",
            cfg.gzip_level
        )));
    }
    Ok(())
}

/// Write `path` atomically in the format its extension names; returns what was written. Missing parent
/// folders are created (as every stage does for its `--out`), after the name is accepted.
pub fn write_file(cfg: &Config, threads: usize, path: &Path) -> Result<Truth> {
    Ok(write_file_as(cfg, threads, path, true)?.0)
}

/// As [`write_file`], keeping only the sizes of the oracle (memory that does not grow with the dump).
pub fn write_file_counts(cfg: &Config, threads: usize, path: &Path) -> Result<Counts> {
    Ok(write_file_as(cfg, threads, path, false)?.1)
}

fn write_file_as(cfg: &Config, threads: usize, path: &Path, full: bool) -> Result<(Truth, Counts)> {
    let format = Format::from_path(path)?;
    ensure_parent(path)?;
    let mut file = AtomicFile::create(path)?;
    let got = stream(cfg, threads, &mut file, format, path, full)?;
    file.commit()?;
    Ok(got)
}

/// [`write_file`] into the run folder `run`, as `rel` (the embedded default dump of `sword run`).
pub fn write_into(
    cfg: &Config,
    threads: usize,
    run: &crate::store::RunDir,
    rel: &str,
) -> Result<Truth> {
    let path = run.path(rel);
    let format = Format::from_path(&path)?;
    let mut file = run.create(rel)?;
    let got = stream(cfg, threads, &mut file, format, &path, true)?;
    file.commit()?;
    Ok(got.0)
}

/// Create the folders above `path` when they are missing.
pub(super) fn ensure_parent(path: &Path) -> Result<()> {
    match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => crate::store::ensure_dir(dir),
        _ => Ok(()),
    }
}
