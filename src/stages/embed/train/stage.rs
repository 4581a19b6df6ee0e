//! The train stage: `walks.bin` (and `nodes.txt` for the keys) → `embeddings.npy`, `embeddings.w2v` through the
//! contract.

use super::{kernel_from_env, train_from, TrainConfig, WalkFile, WalkSource};
use crate::core::error::{Error, Result};
use crate::core::progress::{Progress, Unit};
use crate::stages::contract::{Context, Input, NoSettings, Stage};
use crate::store::embeddings::Embeddings;
use crate::store::layout::{self, Artifact, EMBEDDINGS_NPY, EMBEDDINGS_W2V, NODES, WALKS_BIN};
use crate::store::Manifest;
use std::path::Path;
use std::time::Instant;

/// Write `embeddings.npy` on a thread of its own while `embeddings.w2v` is formatted on the pool, fsync both at
/// once and rename them together. One after the other, the NPY's write and fsync (≈ 30 ms for 42 k × 128
/// floats) and the text's fsync were a serial tail that no `-j` shortens. Either failing leaves neither.
fn write_both(cx: &Context, emb: &Embeddings) -> Result<()> {
    use crate::core::error::IoContext;
    let mut npy = cx.create(&EMBEDDINGS_NPY)?;
    let mut w2v = cx.create(&EMBEDDINGS_W2V)?;
    let (npy_path, w2v_path) = (npy.path().to_path_buf(), w2v.path().to_path_buf());
    let (npy_done, w2v_done) = std::thread::scope(|s| {
        let h = s.spawn(|| -> Result<()> {
            emb.write_npy(&mut npy).at(&npy_path)?;
            npy.sync()
        });
        let w2v_done = emb
            .write_w2v(&mut w2v)
            .at(&w2v_path)
            .and_then(|()| w2v.sync());
        let npy_done = h.join().unwrap_or_else(|p| std::panic::resume_unwind(p));
        (npy_done, w2v_done)
    });
    npy_done?;
    w2v_done?;
    crate::store::commit_all(vec![npy, w2v]).map(drop)
}

/// The train stage: `walks.bin` (and `nodes.txt` for the keys) → `embeddings.npy`, `embeddings.w2v`.
#[derive(Clone, Copy, Debug, Default)]
pub struct TrainStage;

impl Stage for TrainStage {
    const NAME: &'static str = layout::TRAIN;
    type Settings = TrainConfig;
    type Args = NoSettings;
    type Outcome = ();

    const READS: &'static [Input] = &[Input::Vouched(WALKS_BIN), Input::Vouched(NODES)];

    const WRITES: &'static [Artifact] = &[EMBEDDINGS_NPY, EMBEDDINGS_W2V];

    fn validate(&self, cfg: &TrainConfig, _: &NoSettings) -> Result<()> {
        cfg.validate()?;
        kernel_from_env().map(|_| ())
    }

    fn seed(&self, cfg: &TrainConfig) -> Option<u64> {
        Some(cfg.seed)
    }

    /// Train on `walks.bin`, write the vectors keyed by `nodes.txt`.
    fn run(&self, cx: &mut Context, cfg: &TrainConfig, _: &NoSettings) -> Result<()> {
        // Streamed chunk by chunk: the walks never sit in memory beside the two matrices.
        let walks = WalkFile::open(&cx.path(&WALKS_BIN))?;
        let walk_len = walks.length;
        let keys = crate::stages::embed::graph::read_nodes(&cx.path(&NODES))?;
        cx.lap("read");
        // Progress total: ids × epochs (padding, rare, is counted too: an upper bound).
        let n_words = walks.len_ids() as u64 * cfg.epochs as u64;
        let progress = Progress::new("train", Some(n_words), Unit::Items("words"));
        let trained = train_from(&walks, walk_len, keys.len(), cfg, cx.threads(), &progress)?;
        progress.finish();
        drop(walks);
        let s = &trained.stats;
        cx.timing("train", s.seconds);
        let t1 = Instant::now();
        let emb = Embeddings::new(keys, trained.vectors)
            .map_err(|e| Error::bad_input(cx.path(&NODES), e.to_string()))?;
        write_both(cx, &emb)?;
        cx.timing("write", t1.elapsed().as_secs_f64());
        cx.count("nodes", emb.len() as u64);
        cx.count("vocab", s.vocab);
        cx.count("words", s.words);
        cx.count("kept_words", s.kept_words);
        cx.count("pairs", s.pairs);
        cx.count("threads", s.threads);
        cx.count("batches", s.batches);
        cx.count("steps", s.steps);
        cx.count("blocks", s.blocks);
        cx.manifest().extra = serde_json::json!({
            "words_per_sec": s.words_per_sec,
            "mean_loss": s.mean_loss,
            "kernel": s.kernel,
            // Thread-seconds per phase of the SGD loop (summed over the threads): where `-j` scaling goes.
            "thread_seconds": s.phases,
        });
        Ok(())
    }

    fn summary(&self, _: &Path, m: &Manifest) -> String {
        format!(
            "train: {} nodes, {} words, {:.0} words/s ({}), mean loss {:.4}",
            m.count("nodes"),
            m.count("words"),
            m.extra["words_per_sec"].as_f64().unwrap_or(0.0),
            m.extra["kernel"].as_str().unwrap_or("?"),
            m.extra["mean_loss"].as_f64().unwrap_or(0.0),
        )
    }
}
