//! The run folder's layout: every artifact a stage writes into it, named once, with the stage that writes it;
//! the names of the stages (a stage `s` vouches for its outputs in `s.manifest.json`); the lock file.
//!
//! ```text
//! RUN/
//!   .sword.lock                    the lock every stage writing here holds
//!   input/                         the embedded default dump (`sword run` without --dump) and its manifest
//!   extract.manifest.json          entities.parquet triples.parquet statements.parquet properties.parquet
//!                                  transitive.parquet items.parquet constraints.parquet values.parquet
//!                                  types.parquet distinct.parquet
//!   graph.manifest.json            graph.csr nodes.txt
//!   walks.manifest.json            walks.bin [walks.txt]
//!   train.manifest.json            embeddings.npy embeddings.w2v
//!   distort.manifest.json          distortions.parquet
//!   export.manifest.json           sword.parquet translation_requests.jsonl report/
//!   translate.manifest.json        statements_text.parquet (translate/answers.jsonl: the request log)
//!   import-translations.manifest.json   statements_text.parquet
//!   revalidate.manifest.json       revalidation.parquet revalidation.md (in its own folder: `sword revalidate`)
//!   run.summary.json               what `sword run` did, stage by stage
//!   parts/                         `extract --shard i/n` parts, joined by `--join-shards n`
//!   eval/                          `make eval`'s answers, scores and reports
//! ```
//!
//! Stages name their inputs and outputs with these constants (never with string literals), so that a rename
//! is one edit here and the tests, `sword run` and the Makefile follow.

/// Name of the lock file in a run directory.
pub const LOCK_FILE: &str = ".sword.lock";

/// File name of the manifest of `stage` (`<stage>.manifest.json`).
pub fn manifest_file(stage: &str) -> String {
    format!("{stage}.manifest.json")
}

/// `sword extract`: the dump into Parquet.
pub const EXTRACT: &str = "extract";
/// `sword graph`: the entity graph.
pub const GRAPH: &str = "graph";
/// `sword walks`: node2vec walks over the graph.
pub const WALKS: &str = "walks";
/// `sword train`: embeddings from the walks.
pub const TRAIN: &str = "train";
/// `sword distort`: the sample and its distortions.
pub const DISTORT: &str = "distort";
/// `sword export`: the benchmark, the translation requests, the report.
pub const EXPORT: &str = "export";
/// `sword translate`: the statements' texts from an endpoint.
pub const TRANSLATE: &str = "translate";
/// `sword import-translations`: the statements' texts from OpenAI Batch output.
pub const IMPORT_TRANSLATIONS: &str = "import-translations";
/// `sword revalidate`: the status of an old benchmark's statements against a newer dump.
pub const REVALIDATE: &str = "revalidate";

/// A file of the run folder and the stage that writes it (whose manifest vouches for it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Artifact {
    /// Path relative to the run folder (`report/report.md`).
    pub file: &'static str,
    /// The stage that writes it.
    pub stage: &'static str,
}

const fn artifact(file: &'static str, stage: &'static str) -> Artifact {
    Artifact { file, stage }
}

/// Labelled entities (items and properties) with labels, descriptions and sitelink counts.
pub const ENTITIES: Artifact = artifact("entities.parquet", EXTRACT);
/// The final triples: labelled subject, property and object, deprecated out, one row per (S, P, O).
pub const TRIPLES: Artifact = artifact("triples.parquet", EXTRACT);
/// The existence index: every kept statement, all ranks.
pub const STATEMENTS: Artifact = artifact("statements.parquet", EXTRACT);
/// Property metadata (datatype, labels, symmetric, transitive, inverses).
pub const PROPERTIES: Artifact = artifact("properties.parquet", EXTRACT);
/// The statements of transitive properties.
pub const TRANSITIVE: Artifact = artifact("transitive.parquet", EXTRACT);
/// The Q-number of every item of the dump, labelled or not (what tells a deleted item from an unlabelled one).
pub const ITEMS: Artifact = artifact("items.parquet", EXTRACT);
/// The falsity tier's property constraints (P2302 statements of the four types that decide tiers).
pub const CONSTRAINTS: Artifact = artifact("constraints.parquet", EXTRACT);
/// The falsity tier's values: per labelled item and property, its live values and `somevalue`/`novalue`.
pub const VALUES: Artifact = artifact("values.parquet", EXTRACT);
/// The falsity tier's types: live P31/P279 of labelled items and P279 of every item.
pub const TYPES: Artifact = artifact("types.parquet", EXTRACT);
/// The falsity tier's (property, object) pairs of distinct-values properties that some item states.
pub const DISTINCT: Artifact = artifact("distinct.parquet", EXTRACT);
/// The undirected entity graph in compressed sparse rows.
pub const GRAPH_CSR: Artifact = artifact("graph.csr", GRAPH);
/// The graph's node keys, one per line (line `i` is node `i`).
pub const NODES: Artifact = artifact("nodes.txt", GRAPH);
/// The walks, u32 node ids.
pub const WALKS_BIN: Artifact = artifact("walks.bin", WALKS);
/// The walks as node keys, one walk per line (`--text`).
pub const WALKS_TEXT: Artifact = artifact("walks.txt", WALKS);
/// The embeddings, NPY f32 (row `i` is node `i`).
pub const EMBEDDINGS_NPY: Artifact = artifact("embeddings.npy", TRAIN);
/// The embeddings, word2vec text keyed by node key.
pub const EMBEDDINGS_W2V: Artifact = artifact("embeddings.w2v", TRAIN);
/// The sampled originals and their distortions.
pub const DISTORTIONS: Artifact = artifact("distortions.parquet", DISTORT);
/// The benchmark, one row per statement with its labels in every language.
pub const SWORD: Artifact = artifact("sword.parquet", EXPORT);
/// One OpenAI Batch request per statement × language.
pub const TRANSLATION_REQUESTS: Artifact = artifact("translation_requests.jsonl", EXPORT);
/// The export report (Markdown).
pub const REPORT_MD: Artifact = artifact("report/report.md", EXPORT);
/// Density of the raw cosines per strategy (paper Fig. 1b).
pub const REPORT_COSINE: Artifact = artifact("report/cosine_density.svg", EXPORT);
/// Density of the centred cosines per strategy.
pub const REPORT_COSINE_CENTRED: Artifact = artifact("report/cosine_density_centred.svg", EXPORT);
/// Density of the per-original differences PSS − SS and POS − OS (paper Fig. 1c).
pub const REPORT_COSINE_DIFF: Artifact = artifact("report/cosine_diff_density.svg", EXPORT);
/// The statements' texts, from `sword translate`.
pub const TEXTS_GENERATED: Artifact = artifact("statements_text.parquet", TRANSLATE);
/// The statements' texts, from `sword import-translations` (the same file and schema).
pub const TEXTS_IMPORTED: Artifact = artifact("statements_text.parquet", IMPORT_TRANSLATIONS);

/// What `distort --carry-from` carried, dropped and drew (docs/versions.md).
pub const LINEAGE: Artifact = artifact("lineage.parquet", DISTORT);

/// The status of every statement of an old benchmark against a newer dump.
pub const REVALIDATION: Artifact = artifact("revalidation.parquet", REVALIDATE);
/// Counts per status × strategy and examples with their old and new labels (Markdown).
pub const REVALIDATION_MD: Artifact = artifact("revalidation.md", REVALIDATE);

/// What extract writes, in its manifest's order.
pub const EXTRACT_OUTPUTS: [Artifact; 10] = [
    ENTITIES,
    TRIPLES,
    STATEMENTS,
    PROPERTIES,
    TRANSITIVE,
    CONSTRAINTS,
    VALUES,
    TYPES,
    DISTINCT,
    ITEMS,
];
/// What export writes into the run folder, in its manifest's order.
pub const EXPORT_OUTPUTS: [Artifact; 6] = [
    SWORD,
    TRANSLATION_REQUESTS,
    REPORT_MD,
    REPORT_COSINE,
    REPORT_COSINE_CENTRED,
    REPORT_COSINE_DIFF,
];
