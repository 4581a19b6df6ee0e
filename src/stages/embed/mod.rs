//! `sword embed` (graph → walks → train for any edge list) and `sword similar` (nearest entities by cosine).
//! The embeddings value and its formats live in `crate::store::embeddings`, below `train`.

pub mod graph;
pub mod train;
pub mod walks;

use crate::store::embeddings::Embeddings;

use crate::core::error::{Error, IoContext, Result};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Configuration of `sword embed`: the three stages' configs.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EmbedConfig {
    /// Walk parameters (`p`, `q`, `length`, `walks_per_node`, `seed`, `text`).
    pub walks: crate::stages::embed::walks::WalkConfig,
    /// Training parameters (`dim`, `window`, `negative`, `epochs`, `alpha`, `sample`, `seed`, ...).
    pub train: crate::stages::embed::train::TrainConfig,
}

/// graph → walks → train on an edge list: writes `graph.csr`, `nodes.txt`, `walks.bin`, `embeddings.npy`,
/// `embeddings.w2v` (keyed by the edge list's ids) and the three manifests into `dir`.
pub fn run(dir: &Path, edges: &Path, cfg: &EmbedConfig) -> Result<crate::store::Manifest> {
    let _lock = crate::store::DirLock::acquire(dir)?;
    crate::stages::embed::graph::run(
        dir,
        &crate::stages::embed::graph::GraphConfig::default(),
        Some(edges),
    )?;
    crate::stages::embed::walks::run(dir, &cfg.walks)?;
    crate::stages::embed::train::run(dir, &cfg.train)
}

/// Command-line arguments of `sword embed`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Edge list: two ids per line, tab or space separated (`#` comments).
    #[arg(long)]
    pub edges: PathBuf,
    /// Run directory for every artifact.
    #[arg(long)]
    pub out: PathBuf,
    /// TOML file with `[walks]` and `[train]` tables; flags override it.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// node2vec return parameter p [default 1].
    #[arg(long)]
    pub p: Option<f64>,
    /// node2vec in-out parameter q [default 1].
    #[arg(long)]
    pub q: Option<f64>,
    /// Nodes per walk [default 10].
    #[arg(long)]
    pub length: Option<usize>,
    /// Walks per node [default 10].
    #[arg(long)]
    pub walks_per_node: Option<usize>,
    /// Also write walks.txt (node keys, one walk per line).
    #[arg(long)]
    pub text: bool,
    #[command(flatten)]
    pub train: crate::stages::embed::train::TrainOpts,
}

/// Entry point of `sword embed`. `--seed` seeds both the walks and the training.
pub fn cli(args: Args) -> Result<()> {
    let mut cfg: EmbedConfig = match &args.config {
        Some(p) => {
            let text = std::fs::read_to_string(p).at(p)?;
            toml::from_str(&text).map_err(|e| Error::Config(format!("{}: {e}", p.display())))?
        }
        None => EmbedConfig::default(),
    };
    if let Some(v) = args.p {
        cfg.walks.p = v;
    }
    if let Some(v) = args.q {
        cfg.walks.q = v;
    }
    if let Some(v) = args.length {
        cfg.walks.length = v;
    }
    if let Some(v) = args.walks_per_node {
        cfg.walks.walks_per_node = v;
    }
    if let Some(v) = args.train.seed {
        cfg.walks.seed = v;
    }
    cfg.walks.text |= args.text;
    args.train.apply(&mut cfg.train);
    cfg.walks.validate()?;
    cfg.train.validate()?;
    let m = run(&args.out, &args.edges, &cfg)?;
    crate::core::progress::log(format!(
        "embed: {} nodes × {} dims -> {}",
        m.counts.get("nodes").copied().unwrap_or(0),
        cfg.train.dim,
        args.out.join("embeddings.w2v").display()
    ));
    Ok(())
}

/// Arguments of `sword similar`.
#[derive(clap::Args, Debug)]
pub struct SimilarArgs {
    /// Key to query (a Q-id such as `Q64`, or an id of the input edge list).
    pub key: String,
    /// How many neighbours to print.
    #[arg(long, default_value_t = 10)]
    pub top: usize,
    /// Run directory holding `embeddings.w2v`.
    #[arg(long, default_value = ".")]
    pub out: PathBuf,
    /// Explicit word2vec text file (overrides `--out`).
    #[arg(long)]
    pub embeddings: Option<PathBuf>,
    /// Subtract the mean vector before taking cosines.
    #[arg(long)]
    pub centred: bool,
}

/// Entry point of `sword similar`.
pub fn similar_cli(args: SimilarArgs) -> Result<()> {
    let path = args
        .embeddings
        .clone()
        .unwrap_or_else(|| args.out.join("embeddings.w2v"));
    let mut emb = Embeddings::read_w2v(&path)?;
    if args.centred {
        emb = emb.centred();
    }
    if emb.index_of(&args.key).is_none() {
        return Err(Error::bad_input(
            &path,
            format!("key {:?} has no vector", args.key),
        ));
    }
    let out = std::io::stdout();
    let mut out = out.lock();
    let width = emb
        .most_similar(&args.key, args.top)
        .iter()
        .map(|(k, _)| k.len())
        .max()
        .unwrap_or(3)
        .max(3);
    let res = (|| -> std::io::Result<()> {
        writeln!(out, "{:>4}  {:<width$}  {:>8}", "rank", "key", "cosine")?;
        for (i, (k, c)) in emb.most_similar(&args.key, args.top).iter().enumerate() {
            writeln!(out, "{:>4}  {:<width$}  {:>8.4}", i + 1, k, c)?;
        }
        Ok(())
    })();
    res.at("-")
}
