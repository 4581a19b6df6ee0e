//! `sword` command line: parse arguments, dispatch to the library's stage, print an error chain once.

use clap::{Parser, Subcommand};
use std::process::ExitCode;
use sword::stages::cli::{main as stage, StageCli};
use sword::stages::distort::DistortStage;
use sword::stages::embed::{graph::GraphStage, train::TrainStage, walks::WalksStage};
use sword::stages::export::ExportStage;
use sword::stages::extract::ExtractStage;
use sword::stages::revalidate::RevalidateStage;
use sword::stages::translate::{ImportStage, TranslateStage};

/// Rebuild the SWORD benchmark from a Wikidata dump and evaluate models on it and its sibling suites.
#[derive(Parser, Debug)]
#[command(name = "sword", version, about, long_about = None)]
struct Cli {
    /// Worker threads (default: all cores). No output depends on it.
    #[arg(long, short = 'j', global = true)]
    threads: Option<usize>,
    /// No progress bars or log lines on stderr (errors are still printed).
    #[arg(long, short = 'q', global = true)]
    quiet: bool,
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// Stream a Wikidata JSON dump into labelled entities, triples, statements and property metadata.
    Extract(StageCli<ExtractStage>),
    /// Write a realistic synthetic Wikidata dump of any size (plain, multi-member gzip, bzip2 or zstd).
    Synth(sword::synth::Args),
    /// Build the undirected entity graph (CSR) from triples or an edge list.
    Graph(StageCli<GraphStage>),
    /// node2vec random walks over the graph.
    Walks(StageCli<WalksStage>),
    /// Skip-gram with negative sampling on the walks: entity embeddings.
    Train(StageCli<TrainStage>),
    /// graph → walks → train for any edge list, in one command.
    Embed(sword::stages::embed::Args),
    /// Nearest entities by cosine similarity of the embeddings.
    Similar(sword::stages::embed::SimilarArgs),
    /// Sample original triples and draw SS/OS/PSS/POS distortions that do not exist in Wikidata.
    Distort(StageCli<DistortStage>),
    /// Export sword.parquet, translation requests and the report.
    Export(StageCli<ExportStage>),
    /// Read translation batch output back into statements with text.
    ImportTranslations(StageCli<ImportStage>),
    /// Generate the statements' texts from an OpenAI-compatible endpoint (resumable), with checks.
    Translate(StageCli<TranslateStage>),
    /// The status of every statement of an old benchmark against the extract of a newer dump.
    Revalidate(StageCli<RevalidateStage>),
    /// Evaluate models on SWORD, AdversaRiskQA and the Chinese sycophancy suite.
    Eval(sword::eval::Args),
    /// Run every stage on a dump (or on the embedded synthetic default).
    Run(sword::stages::pipeline::Args),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if cli.quiet {
        // Read by sword::core::progress; set before any thread starts.
        unsafe { std::env::set_var("SWORD_QUIET", "1") };
    }
    if let Some(n) = cli.threads {
        if let Err(e) = rayon::ThreadPoolBuilder::new()
            .num_threads(n.max(1))
            .build_global()
        {
            eprintln!("sword: cannot start {n} threads: {e}");
            return ExitCode::from(4);
        }
    }
    let result = match cli.cmd {
        Cmd::Extract(a) => stage(a),
        Cmd::Synth(a) => sword::synth::cli(a, sword::stages::contract::pool_threads()),
        Cmd::Graph(a) => stage(a),
        Cmd::Walks(a) => stage(a),
        Cmd::Train(a) => stage(a),
        Cmd::Embed(a) => sword::stages::embed::cli(a),
        Cmd::Similar(a) => sword::stages::embed::similar_cli(a),
        Cmd::Distort(a) => stage(a),
        Cmd::Export(a) => stage(a),
        Cmd::ImportTranslations(a) => stage(a),
        Cmd::Translate(a) => stage(a),
        Cmd::Revalidate(a) => stage(a),
        Cmd::Eval(a) => sword::eval::cli(a),
        Cmd::Run(a) => sword::stages::pipeline::cli(a),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.is_broken_pipe() => ExitCode::SUCCESS,
        Err(e) => {
            let mut msg = format!("sword: error: {e}");
            let mut src = std::error::Error::source(&e);
            while let Some(s) = src {
                msg.push_str(&format!("\n  caused by: {s}"));
                src = s.source();
            }
            eprintln!("{msg}");
            ExitCode::from(e.exit_code() as u8)
        }
    }
}
