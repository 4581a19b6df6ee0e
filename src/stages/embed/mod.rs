//! `sword embed` (graph → walks → train for any edge list) and `sword similar` (nearest entities by cosine).
//! The embeddings value and its formats live in `crate::store::embeddings`, below `train`.

pub mod graph;
pub mod train;
pub mod walks;

use self::graph::{GraphArgs, GraphConfig, GraphStage};
use self::train::{TrainConfig, TrainStage};
use self::walks::{WalkConfig, WalksStage};
use crate::core::config;
use crate::stages::cli::apply_flags;
use crate::stages::contract::{execute_in, NoSettings, Stage};
use crate::store::embeddings::Embeddings;
use crate::store::layout::EMBEDDINGS_W2V;
use crate::store::{Manifest, RunDir};

use crate::core::error::{Error, IoContext, Result};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Configuration of `sword embed` (`--config FILE`): the `[walks]` and `[train]` tables (the graph stage has no
/// settings).
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EmbedConfig {
    /// Walk parameters (`p`, `q`, `length`, `walks_per_node`, `seed`, `order`, `text`).
    pub walks: WalkConfig,
    /// Training parameters (`dim`, `window`, `negative`, `epochs`, `alpha`, `sample`, `seed`, ...).
    pub train: TrainConfig,
}

/// graph → walks → train on an edge list, each through the stage contract: writes `graph.csr`, `nodes.txt`,
/// `walks.bin`, `embeddings.npy`, `embeddings.w2v` (keyed by the edge list's ids) and the three manifests into
/// `dir`. Every setting is checked before the first stage runs. Returns train's manifest.
pub fn run(dir: &Path, edges: &Path, cfg: &EmbedConfig) -> Result<Manifest> {
    let graph_args = GraphArgs {
        edges: Some(edges.to_path_buf()),
    };
    GraphStage.validate(&GraphConfig::default(), &graph_args)?;
    WalksStage.validate(&cfg.walks, &NoSettings {})?;
    TrainStage.validate(&cfg.train, &NoSettings {})?;
    let run = RunDir::open(dir)?;
    execute_in(
        &GraphStage,
        &run,
        &GraphConfig::default(),
        &graph_args,
        false,
    )?;
    execute_in(&WalksStage, &run, &cfg.walks, &NoSettings {}, false)?;
    execute_in(&TrainStage, &run, &cfg.train, &NoSettings {}, false).map(|(m, ())| m)
}

/// Command line of `sword embed`: `--edges`, `--out`, `--config`, the walks stage's flags and the train stage's,
/// from their settings' definitions; `--seed` (train's) seeds the walks too.
#[derive(Clone, Debug)]
pub struct Args {
    /// Edge list: two ids per line, tab or space separated (`#` comments).
    pub edges: PathBuf,
    /// Run directory for every artifact.
    pub out: PathBuf,
    /// TOML file with `[walks]` and `[train]` tables.
    pub config: Option<PathBuf>,
    matches: clap::ArgMatches,
}

impl clap::Args for Args {
    fn augment_args(cmd: clap::Command) -> clap::Command {
        let path = |id: &'static str, name: &'static str, help: &'static str| {
            clap::Arg::new(id)
                .long(id)
                .value_name(name)
                .value_parser(clap::value_parser!(PathBuf))
                .help(help)
        };
        let mut cmd = cmd
            .arg(
                path(
                    "edges",
                    "EDGES",
                    "Edge list: two ids per line, tab or space separated (`#` comments)",
                )
                .required(true),
            )
            .arg(path("out", "OUT", "Run directory for every artifact").required(true))
            .arg(path(
                "config",
                "CONFIG",
                "TOML file with `[walks]` and `[train]` tables; flags override it",
            ));
        // The walks' flags but `--seed`: train's seeds both.
        let walks = WalkConfig::augment_args(clap::Command::new("walks"));
        for a in walks.get_arguments().filter(|a| a.get_id() != "seed") {
            cmd = cmd.arg(a.clone());
        }
        TrainConfig::augment_args(cmd).mut_arg("seed", |a| {
            a.help("Seed of the walks and of the training (walks default 1, training 42)")
        })
    }

    fn augment_args_for_update(cmd: clap::Command) -> clap::Command {
        Self::augment_args(cmd)
    }
}

impl clap::FromArgMatches for Args {
    fn from_arg_matches(m: &clap::ArgMatches) -> std::result::Result<Self, clap::Error> {
        let path = |id: &str| m.get_one::<PathBuf>(id).cloned();
        let missing = || clap::Error::new(clap::error::ErrorKind::MissingRequiredArgument);
        Ok(Args {
            edges: path("edges").ok_or_else(missing)?,
            out: path("out").ok_or_else(missing)?,
            config: path("config"),
            matches: m.clone(),
        })
    }

    fn update_from_arg_matches(
        &mut self,
        m: &clap::ArgMatches,
    ) -> std::result::Result<(), clap::Error> {
        *self = Self::from_arg_matches(m)?;
        Ok(())
    }
}

/// Entry point of `sword embed`: the config file, then the flags given (`--seed` seeds both the walks and the
/// training).
pub fn cli(args: Args) -> Result<()> {
    let mut cfg: EmbedConfig = config::load_stage(args.config.as_deref(), "embed")?;
    apply_flags(&mut cfg.walks, &args.matches)?;
    apply_flags(&mut cfg.train, &args.matches)?;
    let m = run(&args.out, &args.edges, &cfg)?;
    crate::core::progress::log(format!(
        "embed: {} nodes × {} dims -> {}",
        m.count("nodes"),
        cfg.train.dim,
        args.out.join(EMBEDDINGS_W2V.file).display()
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
        .unwrap_or_else(|| args.out.join(EMBEDDINGS_W2V.file));
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
