//! The graph stage: triples (or an edge list) → `graph.csr` and `nodes.txt` through the contract.

use super::{
    component_summary, degree_summary, keyed_from_qid_pairs, parse_edge_list, write_nodes, Csr,
    CSR_VERSION,
};
use crate::core::error::{IoContext, Result};
use crate::core::ids::Qid;
use crate::stages::contract::{Context, Input, Stage};
use crate::store::layout::{self, Artifact, GRAPH_CSR, NODES, TRIPLES};
use crate::store::{tables, Manifest};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// Settings of the graph stage: none yet (the graph has no parameter); `pipeline/graph.toml` may stay empty.
#[derive(Clone, Debug, Default, Serialize, Deserialize, clap::Args)]
#[serde(default, deny_unknown_fields)]
pub struct GraphConfig {}

/// Flags of `sword graph` that are not settings.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct GraphArgs {
    /// Plain edge list instead of the triples: two ids per line, tab or space separated, `#` comments.
    #[arg(long)]
    pub edges: Option<PathBuf>,
}

/// The graph stage: triples (or an edge list) → `graph.csr` and `nodes.txt`.
#[derive(Clone, Copy, Debug, Default)]
pub struct GraphStage;

impl Stage for GraphStage {
    const NAME: &'static str = layout::GRAPH;
    type Settings = GraphConfig;
    type Args = GraphArgs;
    type Outcome = ();

    fn inputs(&self, _: &GraphConfig, args: &GraphArgs) -> Vec<Input> {
        match &args.edges {
            Some(path) => vec![Input::File(path.clone())],
            None => vec![Input::Vouched(TRIPLES)],
        }
    }

    const WRITES: &'static [Artifact] = &[GRAPH_CSR, NODES];

    /// Read the triples (or the edge list), write `graph.csr` and `nodes.txt`.
    fn run(&self, cx: &mut Context, _: &GraphConfig, args: &GraphArgs) -> Result<()> {
        let (keyed, input_count) = match &args.edges {
            Some(path) => {
                let f = std::fs::File::open(path).at(path)?;
                let keyed = parse_edge_list(f, path)?;
                let n = keyed.edges.len() as u64;
                (keyed, n)
            }
            None => {
                // Only the subject and object columns, batch by batch: the pairs are all that is held.
                let mut pairs: Vec<(Qid, Qid)> = Vec::new();
                tables::for_each_triple(&cx.path(&TRIPLES), false, |_, s, _, o, _| {
                    pairs.push((s, o))
                })?;
                let n = pairs.len() as u64;
                (keyed_from_qid_pairs(&pairs), n)
            }
        };
        cx.lap("read");
        let (csr, stats) = Csr::build(keyed.keys.len(), &keyed.edges);
        cx.lap("build");
        let mut f = cx.create(&GRAPH_CSR)?;
        csr.write(&mut f).at(cx.path(&GRAPH_CSR))?;
        f.commit()?;
        cx.write(&NODES, |w| write_nodes(&keyed.keys, w))?;
        cx.lap("write");
        let degrees = degree_summary(&csr);
        let components = component_summary(&csr);
        cx.lap("stats");
        cx.count("input_edges", input_count);
        cx.count("nodes", csr.n_nodes() as u64);
        cx.count("edges", csr.n_edges() as u64);
        cx.count("self_loops_dropped", stats.self_loops_dropped);
        cx.count("duplicate_edges_merged", stats.duplicates_merged);
        cx.count("isolated_nodes", degrees.isolated);
        cx.count("components", components.count);
        cx.count("largest_component", components.largest);
        cx.manifest().extra = serde_json::json!({
            "source": if args.edges.is_some() { "edge_list" } else { "triples" },
            "node_order": "natural key order (prefix, then number); Q-ids ascending",
            "degree": degrees,
            "components": components,
            "format_version": CSR_VERSION,
        });
        Ok(())
    }

    fn summary(&self, out: &Path, m: &Manifest) -> String {
        format!(
            "graph: {} nodes, {} edges ({} self-loops dropped, {} duplicates merged) -> {}",
            m.count("nodes"),
            m.count("edges"),
            m.count("self_loops_dropped"),
            m.count("duplicate_edges_merged"),
            out.join(GRAPH_CSR.file).display()
        )
    }
}
