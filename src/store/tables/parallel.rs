//! Parquet artifacts encoded on all threads, with the bytes of the one-thread writer.
//!
//! # Why
//! A stage that streams rows into a Parquet file ([`super::Sink`]) encodes and compresses every column on one
//! thread: for extract, the join's writers were the serial tail that bounded `-j 16` to ≈ 5× (BENCHMARKS.md
//! "Scaling"). Each column chunk of each row group is independent of the others until it is written out, so
//! they can be encoded on any thread as long as the chunks are appended to the file in order.
//!
//! # How
//! [`ParSink::send`] takes rows in any amounts and cuts them into pieces of [`STREAM_BATCH`] rows, the pieces a
//! [`super::Sink`] is given, never across a [`ROW_GROUP`] boundary. Each column of the row group being filled is
//! a *lane*: the column's writer and the pieces it has still to write, drained in order by one task on the rayon
//! pool at a time, which builds the column's array from the rows ([`Columns::column`]) and writes it. Lanes of
//! the same row group, and of row groups after it, run at once. When every lane of a row group has closed its
//! column chunk, the row group is appended to the file, in row-group order. A column writer sees exactly the
//! arrays, in exactly the calls, that the one-thread writer gives it, so the file's bytes are the same at any
//! thread count (tested against [`super::Sink`]).
//!
//! # Memory
//! The pieces sent and not yet written by every lane are counted against a [`Budget`] (bytes as
//! [`Columns::weigh`] counts them), which a stage shares between the artifacts it writes at once: `send` waits
//! while it is spent. Besides, every row group being encoded holds its columns' encoded pages and dictionaries
//! (a few MB), as the one-thread writer's one row group does.

use super::{writer_props_for, ROW_GROUP, STREAM_BATCH};
use crate::core::error::{Error, Result};
use arrow_array::ArrayRef;
use arrow_schema::SchemaRef;
use parquet::arrow::arrow_writer::{compute_leaves, ArrowColumnChunk, ArrowColumnWriter};
use parquet::arrow::arrow_writer::{ArrowRowGroupWriterFactory, ArrowWriter};
use parquet::file::writer::SerializedFileWriter;
use std::collections::{BTreeMap, VecDeque};
use std::io::Write;
use std::panic::{self, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

/// How the rows of one artifact become its Arrow columns. A new artifact implements this (its schema, and each
/// column of a slice of rows) and is written by [`ParSink`] on all threads, or by [`super::Sink`] on one.
pub trait Columns: Send + Sync + 'static {
    type Row: Send + Sync + 'static;
    /// The artifact's schema (flat: one Parquet column per field).
    fn schema(&self) -> SchemaRef;
    /// Column `c` (in schema order) of `rows`.
    fn column(&self, rows: &[Self::Row], c: usize) -> ArrayRef;
    /// Why `rows` cannot be written (checked when they are sent), if they cannot.
    fn check(&self, _rows: &[Self::Row]) -> std::result::Result<(), String> {
        Ok(())
    }
    /// Bytes `rows` hold in memory (for the [`Budget`]).
    fn weigh(&self, rows: &[Self::Row]) -> usize;
}

/// Every column of `rows`, in schema order: a record batch's columns.
pub fn columns_of<C: Columns>(c: &C, rows: &[C::Row]) -> Vec<ArrayRef> {
    (0..c.schema().fields().len())
        .map(|i| c.column(rows, i))
        .collect()
}

/// Bytes of rows sent to [`ParSink`]s and not yet encoded, shared by the sinks a stage writes at once.
pub struct Budget {
    limit: usize,
    used: Mutex<usize>,
    freed: Condvar,
}

impl Budget {
    /// A budget of `limit` bytes (a piece larger than the whole budget is let through when nothing else is in
    /// flight).
    pub fn new(limit: usize) -> Arc<Budget> {
        Arc::new(Budget {
            limit: limit.max(1),
            used: Mutex::new(0),
            freed: Condvar::new(),
        })
    }

    fn lock(&self) -> MutexGuard<'_, usize> {
        self.used.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Take `n` bytes, waiting while they do not fit. On a rayon worker the wait runs other tasks of the pool
    /// (the lanes that free the budget may be queued behind this one).
    fn acquire(&self, n: usize) {
        loop {
            let mut used = self.lock();
            if *used == 0 || used.saturating_add(n) <= self.limit {
                *used = used.saturating_add(n);
                return;
            }
            wait_a_little(used, &self.freed);
        }
    }

    fn release(&self, n: usize) {
        let mut used = self.lock();
        *used = used.saturating_sub(n);
        drop(used);
        self.freed.notify_all();
    }
}

/// A piece of rows on its way through the lanes of a row group.
struct Piece<R> {
    rows: Vec<R>,
    /// Lanes that have still to write it.
    left: AtomicUsize,
    bytes: usize,
}

/// One column of one row group: its writer and the pieces it has still to write.
struct Lane<R> {
    writer: Option<ArrowColumnWriter>,
    queue: VecDeque<Arc<Piece<R>>>,
    /// A task is draining the lane.
    busy: bool,
    /// No more pieces: close the column chunk once the queue is written.
    closing: bool,
}

struct Group<R> {
    index: usize,
    lanes: Vec<Mutex<Lane<R>>>,
    chunks: Mutex<Vec<Option<ArrowColumnChunk>>>,
    closed: AtomicUsize,
}

/// The file and the row groups encoded and waiting for their turn.
struct FileState<W: Write + Send> {
    writer: Option<SerializedFileWriter<W>>,
    /// Row groups appended.
    next: usize,
    ready: BTreeMap<usize, Vec<ArrowColumnChunk>>,
}

struct Shared<C: Columns, W: Write + Send> {
    columns: C,
    schema: SchemaRef,
    factory: ArrowRowGroupWriterFactory,
    path: PathBuf,
    budget: Arc<Budget>,
    file: Mutex<FileState<W>>,
    changed: Condvar,
    failed: AtomicBool,
    error: Mutex<Option<Error>>,
    /// Lane tasks spawned and not finished.
    active: AtomicUsize,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// One step of a wait for what `changed` signals, `guard` held: on a rayon worker the lock is let go and another
/// task of the pool runs meanwhile (the tasks that would end the wait may be queued behind this one), or the
/// thread sleeps 200 µs when there is none; elsewhere the thread waits on `changed` (50 ms at most, so that a
/// change made without the lock is seen soon all the same).
fn wait_a_little<T>(guard: MutexGuard<'_, T>, changed: &Condvar) {
    if rayon::current_thread_index().is_some() {
        drop(guard);
        if rayon::yield_now() != Some(rayon::Yield::Executed) {
            std::thread::sleep(Duration::from_micros(200));
        }
    } else {
        let _ = changed.wait_timeout(guard, Duration::from_millis(50));
    }
}

impl<C: Columns, W: Write + Send + 'static> Shared<C, W> {
    fn fail(&self, e: Error) {
        let mut slot = lock(&self.error);
        if slot.is_none() {
            *slot = Some(e);
        }
        drop(slot);
        self.failed.store(true, Ordering::Relaxed);
        let _f = lock(&self.file);
        self.changed.notify_all();
    }

    fn error(&self) -> Error {
        lock(&self.error)
            .take()
            .unwrap_or_else(|| Error::internal(format!("{}: a writer failed", self.path.display())))
    }

    /// Write one piece into column `c`'s writer.
    fn write(&self, w: &mut ArrowColumnWriter, rows: &[C::Row], c: usize) -> Result<()> {
        let field = self
            .schema
            .fields()
            .get(c)
            .ok_or_else(|| Error::internal("a lane past the schema's columns"))?;
        let array = self.columns.column(rows, c);
        for leaf in compute_leaves(field, &array).map_err(|e| Error::parquet(&self.path, e))? {
            w.write(&leaf).map_err(|e| Error::parquet(&self.path, e))?;
        }
        Ok(())
    }

    /// Row group `index` is encoded: append it and every encoded one after it whose turn it is.
    fn ready(&self, index: usize, chunks: Vec<ArrowColumnChunk>) {
        let mut f = lock(&self.file);
        f.ready.insert(index, chunks);
        loop {
            let next = f.next;
            let Some(chunks) = f.ready.remove(&next) else {
                break;
            };
            if !self.failed.load(Ordering::Relaxed) {
                let r = f.writer.as_mut().map(|w| -> Result<()> {
                    let mut rg = w
                        .next_row_group()
                        .map_err(|e| Error::parquet(&self.path, e))?;
                    for ch in chunks {
                        ch.append_to_row_group(&mut rg)
                            .map_err(|e| Error::parquet(&self.path, e))?;
                    }
                    rg.close().map_err(|e| Error::parquet(&self.path, e))?;
                    Ok(())
                });
                if let Some(Err(e)) = r {
                    drop(f);
                    self.fail(e);
                    f = lock(&self.file);
                }
            }
            f.next = next.saturating_add(1);
        }
        drop(f);
        self.changed.notify_all();
    }

    /// Run one step of a column writer (a piece, or the close), catching a panic: its value, or `None` once
    /// the failure is recorded (a panic as an internal error).
    fn guarded<T>(&self, step: impl FnOnce() -> Result<T>) -> Option<T> {
        match panic::catch_unwind(AssertUnwindSafe(step)) {
            Ok(Ok(v)) => Some(v),
            Ok(Err(e)) => {
                self.fail(e);
                None
            }
            Err(_) => {
                self.fail(Error::internal(format!(
                    "{}: a column writer panicked",
                    self.path.display()
                )));
                None
            }
        }
    }

    /// Drain lane `c` of `group`: write its pieces in order, and close its column chunk when asked to.
    fn drain(self: &Arc<Self>, group: &Arc<Group<C::Row>>, c: usize) {
        let Some(lane) = group.lanes.get(c) else {
            return;
        };
        loop {
            let mut l = lock(lane);
            if let Some(piece) = l.queue.pop_front() {
                let writer = l.writer.take();
                drop(l);
                let writer = match writer {
                    Some(mut w) if !self.failed.load(Ordering::Relaxed) => self
                        .guarded(|| self.write(&mut w, &piece.rows, c))
                        .map(|()| w),
                    other => other,
                };
                lock(lane).writer = writer;
                if piece.left.fetch_sub(1, Ordering::AcqRel) == 1 {
                    self.budget.release(piece.bytes);
                }
                continue;
            }
            if !l.closing {
                l.busy = false;
                return;
            }
            let writer = l.writer.take();
            l.busy = false;
            drop(l);
            let chunk = match writer {
                Some(w) if !self.failed.load(Ordering::Relaxed) => {
                    self.guarded(|| w.close().map_err(|e| Error::parquet(&self.path, e)))
                }
                _ => None,
            };
            if let Some(slot) = lock(&group.chunks).get_mut(c) {
                *slot = chunk;
            }
            if group
                .closed
                .fetch_add(1, Ordering::AcqRel)
                .saturating_add(1)
                == group.lanes.len()
            {
                let chunks: Vec<ArrowColumnChunk> = std::mem::take(&mut *lock(&group.chunks))
                    .into_iter()
                    .flatten()
                    .collect();
                self.ready(group.index, chunks);
            }
            return;
        }
    }

    /// Make sure lane `c` of `group` has a task draining it.
    fn wake(self: &Arc<Self>, group: &Arc<Group<C::Row>>, c: usize, l: &mut Lane<C::Row>) {
        if l.busy {
            return;
        }
        l.busy = true;
        self.active.fetch_add(1, Ordering::AcqRel);
        let (sh, g) = (Arc::clone(self), Arc::clone(group));
        rayon::spawn(move || {
            sh.drain(&g, c);
            sh.active.fetch_sub(1, Ordering::AcqRel);
            let _f = lock(&sh.file);
            sh.changed.notify_all();
        });
    }
}

/// Where a file's encoding stands, for [`ParSink::wait_until`].
struct Progress {
    /// Row groups appended.
    next: usize,
    failed: bool,
}

/// A Parquet artifact encoded on the rayon pool (see the module docs): the same bytes as [`super::Sink`] fed
/// the same rows.
pub struct ParSink<C: Columns, W: Write + Send + 'static> {
    shared: Arc<Shared<C, W>>,
    /// Rows not yet a whole piece.
    pending: Vec<C::Row>,
    group: Option<Arc<Group<C::Row>>>,
    rows_in_group: usize,
    groups: usize,
    /// Row groups being encoded at once, at most (see [`ParSink::new`]).
    max_groups: usize,
    finished: bool,
}

impl<C: Columns, W: Write + Send + 'static> ParSink<C, W> {
    /// A file of `columns`' schema written to `w` with the project's properties (`complete == false` marks it),
    /// its rows in flight counted against `budget`, on a pool of `threads` workers (the caller's; a stage's
    /// context has it: it bounds the row groups encoded at once, never the bytes).
    pub fn new(
        w: W,
        columns: C,
        complete: bool,
        path_for_errors: &Path,
        budget: Arc<Budget>,
        threads: usize,
    ) -> Result<Self> {
        let schema = columns.schema();
        let props = writer_props_for(&schema, complete);
        let perr = |e| Error::parquet(path_for_errors, e);
        // The file writer and column writers of an `ArrowWriter`, so the file's metadata (the Arrow schema
        // among it) is the one it writes.
        let (file, factory) = ArrowWriter::try_new(w, schema.clone(), Some(props))
            .and_then(ArrowWriter::into_serialized_writer)
            .map_err(perr)?;
        let leaves = factory.create_column_writers(0).map_err(perr)?.len();
        if leaves != schema.fields().len() {
            return Err(Error::internal(format!(
                "{}: a nested schema ({leaves} Parquet columns for {} fields)",
                path_for_errors.display(),
                schema.fields().len()
            )));
        }
        Ok(ParSink {
            shared: Arc::new(Shared {
                columns,
                schema,
                factory,
                path: path_for_errors.to_path_buf(),
                budget,
                file: Mutex::new(FileState {
                    writer: Some(file),
                    next: 0,
                    ready: BTreeMap::new(),
                }),
                changed: Condvar::new(),
                failed: AtomicBool::new(false),
                error: Mutex::new(None),
                active: AtomicUsize::new(0),
            }),
            pending: Vec::new(),
            group: None,
            rows_in_group: 0,
            groups: 0,
            max_groups: threads.div_ceil(8).max(2),
            finished: false,
        })
    }

    /// Append rows (any number; they are written in the order sent).
    pub fn send(&mut self, mut rows: Vec<C::Row>) -> Result<()> {
        if self.shared.failed.load(Ordering::Relaxed) {
            return Err(self.shared.error());
        }
        self.shared
            .columns
            .check(&rows)
            .map_err(|m| Error::parquet(&self.shared.path, m))?;
        if self.pending.is_empty() && rows.len() == STREAM_BATCH {
            return self.piece(rows);
        }
        while !rows.is_empty() {
            let want = STREAM_BATCH.saturating_sub(self.pending.len());
            if self.pending.is_empty() && rows.len() >= STREAM_BATCH {
                let rest = rows.split_off(STREAM_BATCH);
                let piece = std::mem::replace(&mut rows, rest);
                self.piece(piece)?;
                continue;
            }
            let take = want.min(rows.len());
            self.pending.extend(rows.drain(..take));
            if self.pending.len() == STREAM_BATCH {
                let piece = std::mem::take(&mut self.pending);
                self.piece(piece)?;
            }
        }
        Ok(())
    }

    /// Hand one piece (≤ [`STREAM_BATCH`] rows, never across a row group) to the lanes of the row group.
    fn piece(&mut self, rows: Vec<C::Row>) -> Result<()> {
        let n = rows.len();
        if n == 0 {
            return Ok(());
        }
        let sh = &self.shared;
        let bytes = sh.columns.weigh(&rows);
        sh.budget.acquire(bytes);
        let group = match &self.group {
            Some(g) => Arc::clone(g),
            None => {
                self.wait_for_groups(self.max_groups.saturating_sub(1));
                if sh.failed.load(Ordering::Relaxed) {
                    return Err(sh.error());
                }
                let writers = sh
                    .factory
                    .create_column_writers(self.groups)
                    .map_err(|e| Error::parquet(&sh.path, e))?;
                let lanes = writers.len();
                let g = Arc::new(Group {
                    index: self.groups,
                    lanes: writers
                        .into_iter()
                        .map(|w| {
                            Mutex::new(Lane {
                                writer: Some(w),
                                queue: VecDeque::new(),
                                busy: false,
                                closing: false,
                            })
                        })
                        .collect(),
                    chunks: Mutex::new((0..lanes).map(|_| None).collect()),
                    closed: AtomicUsize::new(0),
                });
                self.groups = self.groups.saturating_add(1);
                self.group = Some(Arc::clone(&g));
                g
            }
        };
        let piece = Arc::new(Piece {
            rows,
            left: AtomicUsize::new(group.lanes.len()),
            bytes,
        });
        for (c, lane) in group.lanes.iter().enumerate() {
            let mut l = lock(lane);
            l.queue.push_back(Arc::clone(&piece));
            sh.wake(&group, c, &mut l);
        }
        self.rows_in_group = self.rows_in_group.saturating_add(n);
        if self.rows_in_group >= ROW_GROUP {
            self.close_group();
        }
        Ok(())
    }

    /// No more pieces for the row group being filled: its lanes close their chunks once written.
    fn close_group(&mut self) {
        let Some(group) = self.group.take() else {
            return;
        };
        self.rows_in_group = 0;
        for (c, lane) in group.lanes.iter().enumerate() {
            let mut l = lock(lane);
            l.closing = true;
            self.shared.wake(&group, c, &mut l);
        }
    }

    /// Wait until every row group is appended and no lane runs (or a lane failed and none runs).
    fn wait(&self) {
        self.wait_until(|f, active| (f.next >= self.groups || f.failed) && active == 0);
    }

    /// Wait until at most `n` row groups are being encoded (or a lane failed): each holds its columns' pages and
    /// dictionaries (a few MB for a statement table, tens of MB for entities), so the number at once is bounded:
    /// `max(2, ⌈threads / 8⌉)` per file, enough lanes for every thread when several files are written at once.
    fn wait_for_groups(&self, n: usize) {
        self.wait_until(|f, _| f.failed || self.groups.saturating_sub(f.next) <= n);
    }

    fn wait_until(&self, done: impl Fn(&Progress, usize) -> bool) {
        let sh = &self.shared;
        loop {
            let f = lock(&sh.file);
            let p = Progress {
                next: f.next,
                failed: sh.failed.load(Ordering::Relaxed),
            };
            if done(&p, sh.active.load(Ordering::Acquire)) {
                return;
            }
            wait_a_little(f, &sh.changed);
        }
    }

    /// No more rows for now: the rows not yet a whole piece go out, and the row group being filled is closed
    /// (its lanes finish it in the background). Rows sent after this start a new row group, so call it only
    /// after the last rows.
    pub fn flush(&mut self) -> Result<()> {
        let rest = std::mem::take(&mut self.pending);
        if !rest.is_empty() {
            self.piece(rest)?;
        }
        self.close_group();
        Ok(())
    }

    /// Write what is left, wait for every lane, and finish the file (footer written); returns the writer.
    pub fn finish(mut self) -> Result<W> {
        self.flush()?;
        self.wait();
        self.finished = true;
        let sh = &self.shared;
        if sh.failed.load(Ordering::Relaxed) {
            return Err(sh.error());
        }
        let writer = lock(&sh.file).writer.take();
        writer
            .ok_or_else(|| Error::internal("a Parquet file finished twice"))?
            .into_inner()
            .map_err(|e| Error::parquet(&sh.path, e))
    }
}

impl<C: Columns, W: Write + Send + 'static> Drop for ParSink<C, W> {
    /// Not finished (the stage failed): the lanes skip what is left, and are waited for, so no task writes
    /// into the file after its sink is gone.
    fn drop(&mut self) {
        if !self.finished {
            self.shared.failed.store(true, Ordering::Relaxed);
            self.close_group();
            self.wait();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testdata::{entities, triples};
    use super::super::{
        write_entities, write_triples_chunked, EntityColumns, TripleColumns, ROW_GROUP,
    };
    use super::*;
    use crate::core::ids::{EntityId, Qid};
    use crate::core::records::{EntityRecord, Triple};
    use std::borrow::Cow;

    /// A complete file of `columns` written to `w` (`path` names it in errors), `budget` bytes in flight.
    fn sink<C: Columns, W: Write + Send + 'static>(
        w: W,
        columns: C,
        path: &str,
        budget: usize,
    ) -> ParSink<C, W> {
        ParSink::new(
            w,
            columns,
            true,
            Path::new(path),
            Budget::new(budget),
            rayon::current_num_threads(),
        )
        .unwrap()
    }

    /// The one-thread writer's bytes: batches of `STREAM_BATCH` rows, as the stage gave them.
    fn one_thread(rows: &[Triple]) -> Vec<u8> {
        let chunks = rows.chunks(STREAM_BATCH).map(Cow::Borrowed);
        write_triples_chunked(Vec::new(), chunks, true, Path::new("mem")).unwrap()
    }

    /// `rows` through a `ParSink` on a pool of `threads`, sent in pieces of the sizes in `sends` (cycled).
    fn parallel(rows: &[Triple], threads: usize, sends: &[usize], budget: usize) -> Vec<u8> {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        pool.install(|| {
            let mut s = sink(Vec::new(), TripleColumns, "mem", budget);
            let mut rest = rows;
            for &n in sends.iter().cycle() {
                if rest.is_empty() {
                    break;
                }
                let (now, later) = rest.split_at(n.clamp(1, rest.len()));
                s.send(now.to_vec()).unwrap();
                rest = later;
            }
            s.finish().unwrap()
        })
    }

    #[test]
    fn many_row_groups_on_any_thread_count_give_the_one_thread_bytes() {
        let rows = triples(2 * ROW_GROUP as u64 + 12_345);
        let want = one_thread(&rows);
        for threads in [1, 2, 3] {
            for sends in [
                &[STREAM_BATCH][..],
                &[1, 9_000, 77, 30_000],
                &[ROW_GROUP * 3],
            ] {
                // A budget below one piece: pieces go one at a time (and nothing waits for ever).
                for budget in [1, 64 << 20] {
                    let got = parallel(&rows, threads, sends, budget);
                    assert!(
                        got == want,
                        "threads {threads}, sends {sends:?}, budget {budget}"
                    );
                }
            }
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(24))]
        #[test]
        fn any_sends_give_the_one_thread_bytes(
            n in 0u64..40_000,
            sends in proptest::collection::vec(1usize..20_000, 1..6),
            threads in 1usize..4,
        ) {
            let rows = triples(n);
            proptest::prop_assert!(parallel(&rows, threads, &sends, 4 << 20) == one_thread(&rows));
        }
    }

    #[test]
    fn entities_with_many_columns_give_the_one_thread_bytes() {
        let langs: Vec<String> = ["en", "fr", "ko"].iter().map(|s| s.to_string()).collect();
        let rows = entities(30_000, langs.len() as u64);
        let want = {
            let mut s = super::super::Sink::new(
                Vec::new(),
                super::super::entity_schema(&langs),
                true,
                Path::new("mem"),
            )
            .unwrap();
            for chunk in rows.chunks(STREAM_BATCH) {
                s.entities(&langs, chunk).unwrap();
            }
            s.finish().unwrap()
        };
        // And what the whole-table writer gives (one batch per row group): the same.
        assert!(write_entities(Vec::new(), &langs, &rows, true, Path::new("mem")).unwrap() == want);
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap();
        let got = pool.install(|| {
            let mut s = sink(Vec::new(), EntityColumns::new(&langs), "mem", 1 << 20);
            for chunk in rows.chunks(5_000) {
                s.send(chunk.to_vec()).unwrap();
            }
            s.finish().unwrap()
        });
        assert!(got == want);
    }

    /// A writer that fails after `left` bytes.
    #[derive(Debug)]
    struct Failing {
        left: usize,
    }

    impl Write for Failing {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            if b.len() > self.left {
                return Err(std::io::Error::other("disk full"));
            }
            self.left -= b.len();
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_failing_file_is_an_error_naming_it_and_nothing_hangs() {
        let rows = triples(3 * ROW_GROUP as u64);
        let mut s = sink(
            Failing { left: 100_000 },
            TripleColumns,
            "out/t.parquet",
            1 << 20,
        );
        // The failure shows at a later send or at the end, never as a hang.
        let mut err = None;
        for chunk in rows.chunks(STREAM_BATCH) {
            if let Err(e) = s.send(chunk.to_vec()) {
                err = Some(e);
                break;
            }
        }
        let e = match err {
            Some(e) => e,
            None => s.finish().unwrap_err(),
        };
        assert!(e.to_string().contains("out/t.parquet"), "{e}");
        // Rows left unfinished: dropping the sink waits for its lanes and returns.
        let mut s = sink(Vec::new(), TripleColumns, "mem", 1 << 20);
        s.send(rows).unwrap();
        drop(s);
    }

    #[test]
    fn rows_that_do_not_fit_the_schema_are_refused_when_sent() {
        let langs = vec!["en".to_string(), "fr".to_string()];
        let mut s = sink(Vec::new(), EntityColumns::new(&langs), "e.parquet", 1 << 20);
        let e = s
            .send(vec![EntityRecord {
                id: EntityId::Item(Qid(1)),
                labels: vec![],
                descriptions: vec![],
                sitelinks: 0,
                lastrevid: None,
                modified: None,
            }])
            .unwrap_err();
        assert!(e.to_string().contains("does not have 2 languages"), "{e}");
    }
}
