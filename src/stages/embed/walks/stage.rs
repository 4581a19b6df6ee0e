//! The walks stage: `graph.csr` → `walks.bin` (and `walks.txt`).

use super::config::WalkConfig;
use super::format::{write_header, write_ids, write_text, WALKS_VERSION};
use super::generate::generate_with;
use super::step::Bias;
use crate::core::error::{Error, IoContext, Result};
use crate::core::progress::{Progress, Unit};
use crate::stages::contract::{Context, Input, NoSettings};
use crate::stages::embed::graph::{self, Csr};
use crate::store::layout::{self, Artifact, GRAPH_CSR, NODES, WALKS_BIN, WALKS_TEXT};
use crate::store::Manifest;
use std::path::Path;
use std::time::Instant;

/// The walks stage: `graph.csr` → `walks.bin` (and `walks.txt`).
#[derive(Clone, Copy, Debug, Default)]
pub struct WalksStage;

// ---------------------------------------------------------------------------------------------------------
// Walks in memory and the binary format
// ---------------------------------------------------------------------------------------------------------

impl crate::stages::contract::Stage for WalksStage {
    const NAME: &'static str = layout::WALKS;
    type Settings = WalkConfig;
    type Args = NoSettings;
    type Outcome = ();

    fn inputs(&self, cfg: &WalkConfig, _: &NoSettings) -> Vec<Input> {
        let mut v = vec![Input::Vouched(GRAPH_CSR)];
        if cfg.text {
            v.push(Input::Vouched(NODES));
        }
        v
    }

    const WRITES: &'static [Artifact] = &[WALKS_BIN];
    /// `--text` only; a run without it removes the `walks.txt` an earlier run left (other walks).
    const MAY_WRITE: &'static [Artifact] = &[WALKS_TEXT];

    fn outputs(&self, cfg: &WalkConfig, _: &NoSettings) -> Vec<Artifact> {
        let mut v = Self::WRITES.to_vec();
        if cfg.text {
            v.push(WALKS_TEXT);
        }
        v
    }

    fn validate(&self, cfg: &WalkConfig, _: &NoSettings) -> Result<()> {
        cfg.validate()
    }

    fn seed(&self, cfg: &WalkConfig) -> Option<u64> {
        Some(cfg.seed)
    }

    /// Walk the graph, streaming `walks.bin` (and `walks.txt`) batch after batch.
    fn run(&self, cx: &mut Context, cfg: &WalkConfig, _: &NoSettings) -> Result<()> {
        let csr = Csr::read(&cx.path(&GRAPH_CSR))?;
        let keys = if cfg.text {
            let path = cx.path(&NODES);
            let keys = graph::read_nodes(&path)?;
            if keys.len() != csr.n_nodes() {
                return Err(Error::Corrupt {
                    path,
                    what: format!("{} keys for a graph of {} nodes", keys.len(), csr.n_nodes()),
                });
            }
            Some(keys)
        } else {
            None
        };
        cx.lap("read");
        let total = csr.n_nodes() as u64 * cfg.walks_per_node as u64;
        let (bin_path, txt_path) = (cx.path(&WALKS_BIN), cx.path(&WALKS_TEXT));
        let mut bin = cx.create(&WALKS_BIN)?;
        write_header(&mut bin, cfg.length, total).at(&bin_path)?;
        let mut txt = match keys {
            Some(_) => Some(cx.create(&WALKS_TEXT)?),
            None => None,
        };
        let t1 = Instant::now();
        let progress = Progress::new("walks", Some(total), Unit::Items("walks"));
        let stats = generate_with(&csr, cfg, &progress, |batch| {
            write_ids(&mut bin, batch).at(&bin_path)?;
            if let (Some(t), Some(k)) = (txt.as_mut(), keys.as_ref()) {
                write_text(t, batch, cfg.length, k).at(&txt_path)?;
            }
            Ok(())
        })?;
        progress.finish();
        let secs = t1.elapsed().as_secs_f64();
        bin.commit()?;
        if let Some(t) = txt {
            t.commit()?;
        }
        cx.timing("walk", secs);
        cx.count("nodes", csr.n_nodes() as u64);
        cx.count("walks", stats.walks);
        cx.count("walk_length", cfg.length as u64);
        cx.count("steps", stats.steps);
        cx.count("candidates", stats.candidates);
        cx.count("padded_ids", stats.padded);
        let secs = secs.max(1e-9);
        cx.manifest().extra = serde_json::json!({
            "sampler": if Bias::new(cfg.p, cfg.q).is_uniform() { "uniform" } else { "rejection" },
            "acceptance": if stats.candidates > 0 { stats.steps as f64 / stats.candidates as f64 } else { 1.0 },
            "walks_per_s": stats.walks as f64 / secs,
            "steps_per_s": stats.steps as f64 / secs,
            "format_version": WALKS_VERSION,
        });
        Ok(())
    }

    fn summary(&self, out: &Path, m: &Manifest) -> String {
        format!(
            "walks: {} walks of {} nodes -> {}",
            m.count("walks"),
            m.count("walk_length"),
            out.join(WALKS_BIN.file).display()
        )
    }
}
