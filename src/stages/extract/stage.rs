//! The extract stage (`impl Stage for ExtractStage`): its flags, the passes over the dump and the artifacts
//! it writes (see the module above for what it keeps).

use super::write::ParquetOut;
use super::{
    config, falsity, shard, work_chunk, Acc, Config, Counts, Part, Rules, State,
    UnlabelledStatements,
};
use crate::core::error::{Error, Result};
use crate::core::ids::Pid;
use crate::core::progress::{self, Progress, Unit};
use crate::dump::{self, ChunkOut, ReadOpts};
use crate::stages::contract::{Context, Input, Stage};
use crate::store::layout::{self, Artifact, EXTRACT_OUTPUTS, ITEMS, TRANSITIVE};
use crate::store::tables;
use crate::store::{self, FileRef, Manifest};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// Flags of `sword extract` that are not settings: the dump, and the modes of the command.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct ExtractArgs {
    /// Dump to read: .json, .json.gz (single or multi-member), .json.bz2, .json.zst, or `-` for stdin. The
    /// format is detected from the first bytes, not the name.
    #[arg(long, required = true)]
    pub dump: PathBuf,
    /// Benchmark baseline: only decompress and chunk the dump with the same decoders and threads, discard the
    /// bytes, print the JSON MB/s; writes nothing.
    #[arg(long, hide = true)]
    pub decode_only: bool,
    /// Process only share `i` of `n` (`0 ≤ i < n`) of a plain JSON or multi-member gzip dump and write
    /// `OUT/parts/extract-part-<i>-of-<n>.*` instead of the artifacts (see `--join-shards`).
    #[arg(long, value_name = "I/N", conflicts_with = "join_shards")]
    pub shard: Option<String>,
    /// Join the `n` parts written by `--shard i/n` into the five artifacts (byte-identical to an unsharded run).
    #[arg(long, value_name = "N")]
    pub join_shards: Option<u32>,
}

/// The extract stage: the dump → the five Parquet artifacts.
#[derive(Clone, Copy, Debug, Default)]
pub struct ExtractStage;

impl Stage for ExtractStage {
    const NAME: &'static str = layout::EXTRACT;
    const FORCE: bool = false;
    type Settings = Config;
    type Args = ExtractArgs;
    type Outcome = ();

    /// None from the run folder: the dump (hashed beside the join, or not at all from stdin) and, with
    /// `--join-shards`, the parts are recorded by `run`. The dump is declared ([`Input::ReadByRun`]), so that
    /// a run naming another dump is never taken as fresh.
    fn inputs(&self, _: &Config, args: &ExtractArgs) -> Vec<Input> {
        match args.join_shards {
            Some(_) => Vec::new(),
            None => vec![Input::ReadByRun(args.dump.clone())],
        }
    }

    const WRITES: &'static [Artifact] = &EXTRACT_OUTPUTS;

    fn normalise(&self, cfg: &mut Config) {
        cfg.languages = split_list(std::mem::take(&mut cfg.languages));
        cfg.mul_fallback = split_list(std::mem::take(&mut cfg.mul_fallback));
    }

    /// The rules the config makes and the dump's path: before the run folder is locked (the memory limit and
    /// the spill budget were parsed with the flags and the file).
    fn validate(&self, cfg: &Config, args: &ExtractArgs) -> Result<()> {
        Rules::new(cfg)?;
        dump::start::check_path(&args.dump)
    }

    fn other_mode(&self, out: &Path, cfg: &Config, args: &ExtractArgs) -> Option<Result<()>> {
        if args.decode_only {
            return Some(decode_only(&args.dump, cfg).map(|(stats, secs)| {
                println!(
                    "decode-only {}: format {}, {} bytes of JSON in {secs:.3} s = {:.1} MB/s, gzip members {:?}, parallel inflate {}",
                    args.dump.display(),
                    stats.format.map(|f| f.as_str()).unwrap_or("?"),
                    stats.json_bytes,
                    stats.json_bytes as f64 / 1e6 / secs.max(1e-9),
                    stats.gzip_members,
                    stats.parallel_inflate
                );
            }));
        }
        let spec = args.shard.as_ref()?;
        Some(
            shard::parse_spec(spec)
                .and_then(|(i, n)| shard::run_shard(&args.dump, out, cfg, i, n).map(|_| ())),
        )
    }

    fn run(&self, cx: &mut Context, cfg: &Config, args: &ExtractArgs) -> Result<()> {
        match args.join_shards {
            Some(n) => join_shards(cx, &args.dump, cfg, n),
            None => run(cx, &args.dump, cfg),
        }
    }

    fn summary(&self, out: &Path, m: &Manifest) -> String {
        format!(
            "extract: {} labelled entities, {} triples, {} statements, {} properties, {} transitive → {}",
            m.count("labelled_entities"),
            m.count("triples"),
            m.count("statements"),
            m.count("properties"),
            m.count("transitive"),
            out.display()
        )
    }
}

/// Read the dump through the same paths as [`run`] (decoders, threads, chunking) but discard the bytes: the
/// baseline that `scripts/bench-extract.sh` divides by. Returns the read statistics and the seconds taken.
pub fn decode_only(dump: &Path, cfg: &Config) -> Result<(dump::ReadStats, f64)> {
    let t0 = Instant::now();
    Rules::new(cfg)?;
    let total = (dump != Path::new("-"))
        .then(|| std::fs::metadata(dump).ok().map(|m| m.len()))
        .flatten();
    let progress = Progress::new("decode", total, Unit::Bytes);
    let opts = cfg.read_opts(crate::stages::contract::pool_threads());
    // Touch every byte (count newlines, at memory speed: a byte-by-byte count cost ≈ 4.7 instructions per byte,
    // 40% of inflate's, and flattered every ratio to this baseline) so a memory-mapped plain file is really read.
    let work = |bytes: &[u8], _: bool| ChunkOut {
        len: bytes.len() as u64,
        newlines: memchr::memchr_iter(b'\n', bytes).count() as u64,
        head: None,
        has_newline: false,
        tail: Vec::new(),
        data: (),
    };
    let mut json = 0u64;
    let mut sink = |c: ChunkOut<()>| {
        json = json.saturating_add(c.len);
        Ok(())
    };
    let mut stats = dump::read_dump(dump, &opts, &work, &mut sink, &progress)?;
    progress.finish();
    stats.json_bytes = stats.json_bytes.max(json);
    Ok((stats, t0.elapsed().as_secs_f64()))
}

fn split_list(v: Vec<String>) -> Vec<String> {
    v.iter()
        .flat_map(|s| s.split([',', ' ']))
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// `YYYY-MM-DD` from a `YYYYMMDD` in the file name (e.g. `wikidata-20151109-all.json.gz`).
pub fn date_from_name(path: &Path) -> Option<String> {
    let name = path.file_name()?.to_string_lossy().into_owned();
    let b = name.as_bytes();
    (0..b.len().saturating_sub(7)).find_map(|i| {
        let w = b.get(i..i.checked_add(8)?)?;
        let digit_at = |j: Option<usize>| j.and_then(|j| b.get(j)).is_some_and(u8::is_ascii_digit);
        let isolated = !digit_at(i.checked_sub(1)) && !digit_at(i.checked_add(8));
        if !isolated || !w.iter().all(u8::is_ascii_digit) {
            return None;
        }
        let s = std::str::from_utf8(w).ok()?;
        let (ys, ms, ds) = (s.get(..4)?, s.get(4..6)?, s.get(6..)?);
        let (y, m, d): (u32, u32, u32) = (ys.parse().ok()?, ms.parse().ok()?, ds.parse().ok()?);
        ((2000..2100).contains(&y) && (1..=12).contains(&m) && (1..=31).contains(&d))
            .then(|| format!("{ys}-{ms}-{ds}"))
    })
}

/// Read `dump` (or `-` for stdin) and write the five Parquet artifacts into the run folder. Output bytes depend
/// only on the dump's decompressed content and the config (not on the thread count or the compression).
fn run(cx: &mut Context, dump: &Path, cfg: &Config) -> Result<()> {
    run_with(
        cx,
        dump,
        cfg,
        None,
        |rules, acc, state, opts, progress| {
            let work = |bytes: &[u8], s: bool| work_chunk(rules, bytes, s);
            let mut sink = |c: ChunkOut<Part>| {
                acc.feed(c)?;
                state.drain(acc)
            };
            dump::read_dump(dump, opts, &work, &mut sink, progress)
        },
        |_| Ok(()),
    )
}

/// `sword extract --join-shards n`: join the parts that `--shard i/n` wrote into `out/parts/` into the five
/// artifacts (counts summed over the parts, parts listed as inputs), byte-identical to an unsharded run of the
/// same dump and config.
fn join_shards(cx: &mut Context, dump: &Path, cfg: &Config, n: u32) -> Result<()> {
    let out = cx.dir().to_path_buf();
    let (input, parts) = shard::prepare_join(dump, &out, cfg, n)?;
    // The dump was hashed to check the parts against it: that is the manifest's input too (not a second read of
    // the whole dump).
    run_with(
        cx,
        dump,
        cfg,
        Some(input.clone()),
        |_rules, acc, state, _opts, progress| {
            shard::replay_parts(&out, &input, &parts, acc, state, progress)
        },
        |m| shard::describe_join(m, &out, &parts),
    )
}

/// The input's hash for the manifest when the reader does not compute it (a dump that is not gzip: see
/// `dump::hashes_input`), computed on a thread of its own beside the reading, just behind it: the
/// thread never reads past the bytes the reader has consumed (`follow`, the reading's progress) until
/// [`Hasher::release`], so it reads the pages the reader just brought into the page cache instead of reading
/// the file from disk a second time (which a hash running ahead did for every dump larger than the memory left to
/// cache it). Dropped without [`Hasher::finish`] (the run failed), its [`StopOnDrop`] tells the thread to stop.
struct Hasher {
    #[allow(dead_code)] // held for its `Drop` (read only by a test)
    stop: StopOnDrop,
    go: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<Result<Option<FileRef>>>,
}

/// Sets its flag when dropped.
struct StopOnDrop(Arc<AtomicBool>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

impl Hasher {
    /// Hash `dump` behind `follow` (input bytes consumed; `None`: as fast as it can).
    fn spawn(dump: &Path, follow: Option<Arc<std::sync::atomic::AtomicU64>>) -> Hasher {
        let stop = Arc::new(AtomicBool::new(false));
        let go = Arc::new(AtomicBool::new(false));
        let (p, s, g) = (dump.to_path_buf(), Arc::clone(&stop), Arc::clone(&go));
        Hasher {
            stop: StopOnDrop(stop),
            go,
            thread: std::thread::spawn(move || {
                let behind = |_| match &follow {
                    Some(f) if !g.load(Ordering::Relaxed) => Some(f.load(Ordering::Relaxed)),
                    _ => None,
                };
                FileRef::of_behind(&p, &s, &behind)
            }),
        }
    }

    /// The reading is over: hash the rest at full speed.
    fn release(&self) {
        self.go.store(true, Ordering::Relaxed);
    }

    fn finish(self) -> Result<FileRef> {
        self.release();
        // Only `StopOnDrop` stops the thread, and it is dropped after the join: `None` cannot come back.
        let internal = |what: &str| Error::internal(format!("the thread hashing the dump {what}"));
        match self.thread.join() {
            Ok(r) => r?.ok_or_else(|| internal("stopped unasked")),
            Err(_) => Err(internal("panicked")),
        }
    }
}

/// [`run`] with the reading step supplied by the caller ([`join_shards`] replays shard parts through it): `read`
/// feeds the accumulator in input order and returns the read statistics; everything after (the end of the
/// stream, the checks that the input is a whole dump, the join, the writers, the manifest's counts) is the same
/// as an unsharded run. `amend` adds to the manifest before the contract writes it.
///
/// Nothing is written when the input is refused (not a dump, truncated, no entity, too many bad lines), and a
/// failure while writing (a full disk) leaves none of the five artifacts behind: they are written to temporary
/// files and renamed into place together; the stage contract removes them again if the manifest cannot be
/// written.
fn run_with(
    cx: &mut Context,
    dump: &Path,
    cfg: &Config,
    known_input: Option<FileRef>,
    read: impl for<'a> FnOnce(
        &'a Rules,
        &mut Acc<'a>,
        &mut State,
        &ReadOpts,
        &Progress,
    ) -> Result<dump::ReadStats>,
    amend: impl FnOnce(&mut Manifest) -> Result<()>,
) -> Result<()> {
    // The run folder is locked (another writer was refused, exit 6; an unwritable one failed, exit 4) and the
    // config and the dump's path checked ([`ExtractStage::validate`]) before the dump is read.
    let t0 = Instant::now();
    let (cpu0, stage0) = (progress::cpu_seconds(false), progress::cpu_seconds(true));
    let out = cx.dir().to_path_buf();
    let out = out.as_path();
    let rules = Rules::new(cfg)?;
    let limit = cfg.memory_limit.bytes();
    // stdin or a named pipe: read once, not hashed (see `dump::start::is_stream`).
    let is_stdin = dump::start::is_stream(dump);
    let total = if is_stdin {
        None
    } else {
        Some(
            std::fs::metadata(dump)
                .map_err(|e| Error::io(dump, e))?
                .len(),
        )
    };
    let skipped = cfg.unlabelled_statements == UnlabelledStatements::Skip;
    if skipped {
        progress::log(
            "extract: --skip-unlabelled-statements: the statements of items without all labels are jumped over \
             (those of transitive_seed are read); the manifest will have no dump-wide statement counts",
        );
    }
    let progress = Progress::new("extract", total, Unit::Bytes);
    let mut opts = cfg.read_opts(cx.threads());
    // The input's hash for the manifest. A gzip dump is hashed by its reader, from the bytes it reads
    // (`ReadOpts::hash_input`): no second read of the file. Any other file, with more than one thread, by a
    // thread that reads the file a second time (from the page cache: it follows the reader) beside the reading,
    // not beside the join: on many cores the join is shorter than a second read of the file, which would then be
    // the stage's tail. A failed run drops the `Hasher`, which stops the thread. A caller that has hashed the
    // dump already (the join of shards) gives it.
    opts.hash_input = known_input.is_none() && dump::hashes_input(dump);
    let hasher = (known_input.is_none() && cx.threads() > 1 && !is_stdin && !opts.hash_input)
        .then(|| Hasher::spawn(dump, Some(progress.position_handle())));
    let mut acc = Acc::new(&rules, cfg.max_bad_lines, dump);
    acc.progress = Some(&progress);
    let spill_budget = cfg.spill_budget.bytes(out);
    let mut state = State::new(out, limit)
        .with_threads(cx.threads())
        .with_spill_budget(spill_budget, &cfg.spill_budget.to_string());
    let stats = read(&rules, &mut acc, &mut state, &opts, &progress)?;
    if let Some(h) = &hasher {
        h.release();
    }
    acc.finish()?;
    state.drain(&mut acc)?;
    progress.finish();
    let t_read = t0.elapsed().as_secs_f64();
    let stage_read = progress::cpu_seconds(true) - stage0;
    let mut counts = acc.counts.clone();
    if stats.truncated_stream {
        counts.add("truncated_stream", 1);
    }
    // A dump that opens its array must close it (a stream of entity lines without `[` has nothing to close).
    if counts.get("open_bracket_lines") > 0 && counts.get("close_bracket_lines") == 0 {
        counts.add("missing_close_bracket", 1);
    }
    let incomplete = check_whole(dump, cfg, &stats, &counts, &acc)?;
    if let Some(why) = &incomplete {
        progress::log(format!(
            "extract: {}: {why}; kept what was decoded (--allow-truncated): this run is marked incomplete",
            dump.display()
        ));
    }

    let t1 = Instant::now();
    let Acc {
        distinct_known,
        unlabelled_by_prop,
        bad_by_kind,
        bad_examples,
        max_modified,
        items,
        ..
    } = acc;
    if let Some(dir) = state.spill_dir() {
        progress::log(format!(
            "extract: the join state passed --memory-limit {} MiB: sorted runs spilled to {}, merging",
            limit.unwrap_or(0) >> 20,
            dir.display()
        ));
    }
    // An incomplete build (--allow-truncated) marks every file: `sword.complete = false`.
    let complete = incomplete.is_none();
    // The five artifacts are written to temporary files while the join streams their rows (a full disk
    // fails here, before any artifact changes), encoded on the pool (see `ParquetOut`)...
    let threads = cx.threads();
    // A join that spilled runs under a tight memory limit: there each writer is waited for when its artifact
    // is done, so that at most the three statement tables' writers hold row groups at once (docs/extract.md).
    let wait_on_close = state.spill_dir().is_some();
    // The rows in flight to the encoders may take what the reader's parsed chunks could (it is done with them).
    let budget = tables::Budget::new(
        threads
            .saturating_mul(opts.chunks_per_thread)
            .saturating_mul(opts.chunk_size)
            .saturating_mul(2),
    );
    let run = cx.run_dir().clone();
    let mut sinks = ParquetOut::create(
        &run,
        &cfg.languages,
        complete,
        wait_on_close,
        &budget,
        cx.threads(),
    )?;
    let j = state.join(
        &unlabelled_by_prop.into_map(),
        &rules.seed,
        &distinct_known,
        &mut sinks,
    )?;
    let t_join = t1.elapsed().as_secs_f64();
    let left_out: Vec<String> = j.distinct_left_out.iter().map(Pid::to_string).collect();
    if !left_out.is_empty() {
        progress::log(format!(
            "extract: {} labelled propert{} with several lines in the dump that disagree on the distinct-values \
             constraint or on the labels ({}): that constraint is left out of {} (docs/extract.md)",
            left_out.len(),
            if left_out.len() == 1 { "y" } else { "ies" },
            left_out.join(" "),
            layout::CONSTRAINTS.file
        ));
    }
    let outside: Vec<String> = j
        .transitive_outside_seed
        .iter()
        .map(Pid::to_string)
        .collect();
    if j.transitive_missed > 0 && !skipped {
        progress::log(format!(
            "extract: {} statements of transitive properties outside `transitive_seed` ({}) had unlabelled \
             subjects and were not kept in {}",
            j.transitive_missed,
            outside.join(" "),
            TRANSITIVE.file
        ));
    } else if skipped && !outside.is_empty() {
        progress::log(format!(
            "extract: transitive properties outside `transitive_seed` ({}): their statements with unlabelled \
             subjects are not in {}, and with --skip-unlabelled-statements nobody counted them; add \
             them to transitive_seed to keep them",
            outside.join(" "),
            TRANSITIVE.file
        ));
    }
    let t2 = Instant::now();
    // ...each fsynced as soon as it is finished, on a thread of its own, while the others finish (a full disk
    // fails here, nothing renamed), then renamed into place together.
    let files = std::thread::scope(|s| -> Result<Vec<store::AtomicFile>> {
        let mut syncing = Vec::new();
        let mut done = |mut f: store::AtomicFile| {
            syncing.push(s.spawn(move || f.sync().map(|()| f)));
        };
        let finished = sinks
            .finish_each(&mut done)
            .and_then(|()| write_items(&run, &items, complete))
            .map(&mut done);
        let mut files = Vec::with_capacity(syncing.len());
        let mut failed = finished.err();
        for h in syncing {
            match h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)) {
                Ok(f) => files.push(f),
                Err(e) => {
                    failed.get_or_insert(e);
                }
            }
        }
        match failed {
            Some(e) => Err(e),
            None => Ok(files),
        }
    })?;
    store::commit_all(files)?;
    let t_write = t2.elapsed().as_secs_f64();

    let m = cx.manifest();
    m.complete = incomplete.is_none();
    m.inputs.push(if is_stdin {
        FileRef::unhashed(dump, stats.json_bytes)
    } else {
        match (known_input, stats.input_hash, hasher) {
            (Some(f), _, _) => f,
            (None, Some(h), _) => FileRef::with_digest(dump, h.size, h.xxh3_128),
            (None, None, Some(h)) => h.finish()?,
            (None, None, None) => FileRef::of(dump)?,
        }
    });
    let mut c: BTreeMap<String, u64> = counts
        .map
        .iter()
        .map(|(k, v)| (k.to_string(), *v))
        .collect();
    c.insert("labelled_entities".into(), j.entities);
    c.insert("labelled_items".into(), j.labelled_items);
    c.insert(
        "labelled_properties".into(),
        j.entities.saturating_sub(j.labelled_items),
    );
    c.insert(
        "labelled_entities_seen".into(),
        counts.get("labelled_entities"),
    );
    c.insert("candidate_statements".into(), j.candidates);
    c.insert("seed_transitive_unlabelled_statements".into(), j.seed_other);
    c.insert("statements".into(), j.statements);
    c.insert("triples".into(), j.triples);
    c.insert("properties".into(), j.properties);
    c.insert("transitive_properties".into(), j.transitive_properties);
    c.insert("transitive".into(), j.transitive);
    c.insert("transitive_statements_missed".into(), j.transitive_missed);
    c.insert("duplicate_entities".into(), j.duplicate_entities);
    // Every line of an entity seen before, labelled or not (the join keeps the first: docs/extract.md, "Two
    // lines of one property").
    c.insert(
        "duplicate_item_lines".into(),
        counts.get("entities_item").saturating_sub(items.len()),
    );
    c.insert(
        "duplicate_property_lines".into(),
        counts.get("entities_property").saturating_sub(j.properties),
    );
    for (key, n) in [
        ("falsity_constraint_rows", j.constraints),
        (
            "falsity_distinct_constraints_left_out",
            j.distinct_left_out.len() as u64,
        ),
        ("falsity_values_rows", j.values),
        ("falsity_types_rows", j.types),
        ("falsity_distinct_rows", j.distinct),
    ] {
        c.insert(key.into(), n);
    }
    c.insert("json_bytes".into(), stats.json_bytes);
    for (t, n) in &counts.other_types {
        c.insert(format!("entities_other_{t}"), *n);
    }
    if skipped {
        // Made from the statements that were not read: absent, not zero (`extra.unlabelled_statements`).
        for k in config::COUNTS_OF_ALL_STATEMENTS {
            c.remove(*k);
        }
    }
    m.counts = c;
    m.rejects = bad_by_kind
        .iter()
        .map(|(k, v)| (format!("bad_line_{k}"), *v))
        .collect();
    for k in [
        "truncated_last_line",
        "truncated_stream",
        "missing_close_bracket",
    ] {
        if counts.get(k) > 0 {
            m.rejects.insert(k.to_string(), counts.get(k));
        }
    }
    m.timings.insert("read_parse".into(), t_read);
    m.timings.insert("join".into(), t_join);
    m.timings.insert("write".into(), t_write);
    // CPU seconds: the whole process, and the stage's own thread while reading (the in-order hand-off of the
    // parsed chunks) and after (the merges feeding the join's workers and encoders): the work no `-j` spreads.
    m.timings
        .insert("cpu".into(), progress::cpu_seconds(false) - cpu0);
    m.timings.insert("stage_thread_read".into(), stage_read);
    m.timings.insert(
        "stage_thread_join".into(),
        progress::cpu_seconds(true) - stage0 - stage_read,
    );
    // `max_modified` is a validated timestamp (`counts::is_timestamp`): its first ten bytes are the date.
    let dump_date = date_from_name(dump).or_else(|| {
        max_modified
            .as_deref()
            .and_then(|s| s.get(..10))
            .map(str::to_string)
    });
    // What the constraint reader counted, as `scripts/falsity-oracle --summary` names it, without the P279
    // cycles (distort counts them on the graph it reads).
    let mut summary = serde_json::to_value(falsity::summary_of(&m.counts)).unwrap_or_default();
    if let Some(o) = summary.as_object_mut() {
        o.remove("p279_cycles");
    }
    m.extra = serde_json::json!({
        "input_path": dump.to_string_lossy(),
        "format": stats.format.map(|f| f.as_str()),
        "input_bytes": stats.input_bytes,
        "json_bytes": stats.json_bytes,
        "gzip_members": stats.gzip_members,
        "parallel_inflate": stats.parallel_inflate,
        "truncated_stream": stats.truncated_stream,
        "dump_date": dump_date,
        "max_modified": max_modified,
        "json_mb_per_s": stats.json_bytes as f64 / 1e6 / t_read.max(1e-9),
        "threads": threads,
        "bad_lines": bad_examples,
        "languages": cfg.languages,
        "incomplete": incomplete,
        "memory_limit": limit,
        // Spill runs written (intermediate merges included), bytes written, the most bytes on disk at once,
        // the same per kind, and the disk budget (`--spill-budget`, bytes; null for `none`).
        "spill": {
            "runs": j.spill_runs,
            "bytes": j.spilled_bytes,
            "peak_bytes": j.spill_peak,
            "budget": spill_budget,
            "kinds": j.spill_kinds,
        },
        // The distinct-value pairs while reading (docs/extract.md, "What extract keeps for the falsity tier").
        "pairs": j.pairs,
        // `skipped`: the counts of `config::COUNTS_OF_ALL_STATEMENTS` were not made.
        "unlabelled_statements": if skipped { "skipped" } else { "read" },
        "transitive_outside_seed": outside,
        // Labelled properties whose lines disagree on their distinct-value pairs: their distinct-values
        // constraint is not in constraints.parquet (docs/extract.md, "Two lines of one property").
        "distinct_left_out": left_out,
        // What the constraint reader counted, as `scripts/falsity-oracle --summary` names it (distort counts
        // the P279 cycles); with --skip-unlabelled-statements, "another item has o" saw labelled items only.
        "falsity": {
            "summary": summary,
            "distinct_subjects": if skipped { "labelled items only" } else { "every item" },
        },
    });
    amend(m)
}

/// Is what was read a whole Wikidata dump? `Err` (exit code 2, nothing written) when it is empty, ends early
/// (unless `allow_truncated`), holds no entity line (unless `allow_empty` and no line is malformed) or has
/// more than `max_bad_share` malformed lines; `Ok(Some(why))` when it ends early and that is allowed (the run
/// is then incomplete); `Ok(None)` for a whole dump.
fn check_whole(
    dump: &Path,
    cfg: &Config,
    stats: &dump::ReadStats,
    counts: &Counts,
    acc: &Acc<'_>,
) -> Result<Option<String>> {
    if stats.json_bytes == 0 {
        return Err(dump::start::empty_stream(dump, stats.format));
    }
    let mut cut = Vec::new();
    if counts.get("truncated_stream") > 0 {
        let format = stats.format.map_or("compressed", |f| f.as_str());
        cut.push(match stats.input_bytes {
            Some(size) => format!(
                "the {format} stream ends early: the file stops at byte {size} in the middle of compressed \
                 data, after {} bytes of JSON were decoded",
                stats.json_bytes
            ),
            None => format!(
                "the {format} stream ends early, after {} bytes of JSON were decoded",
                stats.json_bytes
            ),
        });
    }
    if let Some((line, offset, len)) = acc.cut_line {
        cut.push(format!(
            "its last line (line {}, at byte offset {offset} of the JSON) is cut after {len} bytes",
            line.saturating_add(1)
        ));
    }
    if counts.get("missing_close_bracket") > 0 {
        cut.push(format!(
            "the closing `]` is missing (the JSON stops at byte offset {})",
            stats.json_bytes
        ));
    }
    let incomplete = (!cut.is_empty()).then(|| format!("the dump ends early: {}", cut.join("; ")));
    if let (Some(why), false) = (&incomplete, cfg.allow_truncated) {
        return Err(Error::bad_input(
            dump,
            format!(
                "{why}. The file is incomplete (an interrupted download or copy): download it again, or pass \
                 --allow-truncated to keep what was decoded (the run is then marked incomplete)"
            ),
        ));
    }
    let entity_lines = counts.entity_lines();
    let lines = counts.get("lines");
    let first_bad = || {
        acc.bad_examples.first().map_or(String::new(), |b| {
            format!(
                " (line {}, byte offset {}: {}: {})",
                b.line, b.offset, b.kind, b.message
            )
        })
    };
    if entity_lines == 0 && acc.bad_total > 0 {
        return Err(Error::bad_input(
            dump,
            format!(
                "not a Wikidata JSON dump: none of its {lines} lines is a Wikidata entity; {} are malformed{}. \
                 Check that --dump names the Wikidata JSON dump",
                acc.bad_total,
                first_bad()
            ),
        ));
    }
    if entity_lines == 0 && !cfg.allow_empty {
        return Err(Error::bad_input(
            dump,
            format!(
                "the dump holds no entity ({lines} lines, only `[`, `]` or blank lines): nothing to extract. \
                 Pass --allow-empty to accept an empty dump"
            ),
        ));
    }
    let judged = lines.saturating_sub(counts.get("blank_lines")).max(1);
    if acc.bad_total as f64 > cfg.max_bad_share * judged as f64 {
        return Err(Error::bad_input(
            dump,
            format!(
                "{} of its {judged} lines ({:.2}%) are malformed, more than the {}% a whole Wikidata dump may \
                 have (extract.max_bad_share, whatever --max-bad-lines says); the first{}. The file is damaged \
                 or not a Wikidata dump: download it again, or pass --max-bad-share to accept more",
                acc.bad_total,
                100.0 * acc.bad_total as f64 / judged as f64,
                100.0 * cfg.max_bad_share,
                first_bad()
            ),
        ));
    }
    Ok(incomplete)
}

/// `items.parquet` (every item of the dump, labelled or not) as a temporary file, synced and renamed with the
/// others.
fn write_items(
    out: &store::RunDir,
    items: &tables::items::ItemSet,
    complete: bool,
) -> Result<store::AtomicFile> {
    let path = out.path(ITEMS.file);
    let f = out.create(ITEMS.file)?;
    tables::items::write_items(f, items, complete, &path)
}
#[cfg(test)]
#[allow(clippy::indexing_slicing, clippy::arithmetic_side_effects)]
mod tests {
    use super::*;

    #[test]
    fn a_hasher_dropped_unfinished_tells_its_thread_to_stop_and_a_finished_one_hashes() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("d.json");
        std::fs::write(&p, vec![b'x'; 3 << 20]).unwrap();
        let h = Hasher::spawn(&p, None);
        let stop = Arc::clone(&h.stop.0);
        assert!(!stop.load(Ordering::Relaxed));
        drop(h);
        assert!(stop.load(Ordering::Relaxed));
        let h = Hasher::spawn(&p, None);
        assert_eq!(h.finish().unwrap(), FileRef::of(&p).unwrap());
        // Behind a reader that has not moved, `finish` lets it go to the end.
        let h = Hasher::spawn(&p, Some(Arc::new(std::sync::atomic::AtomicU64::new(0))));
        assert_eq!(h.finish().unwrap(), FileRef::of(&p).unwrap());
    }

    #[test]
    fn dump_date_from_file_name() {
        assert_eq!(
            date_from_name(Path::new("/x/wikidata-20151109-all.json.gz")).as_deref(),
            Some("2015-11-09")
        );
        assert_eq!(
            date_from_name(Path::new("jsondumpdata_20151109_1000-entities.json.gz")).as_deref(),
            Some("2015-11-09")
        );
        assert_eq!(date_from_name(Path::new("latest-all.json.gz")), None);
        assert_eq!(date_from_name(Path::new("x123456789.json")), None);
    }
}
