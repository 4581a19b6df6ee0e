//! The distort stage: the extract artifacts (and, when present, the embeddings) → `distortions.parquet`.

use super::carry::{carry, carry_seed, dropped_originals, CarryInputs};
use super::config::DistortConfig;
use super::draw::{draw_all, InputSizes};
use super::ids::build_tag;
use super::probe::probe_json;
use super::sample::sample_frame;
use super::similarity::{EmbeddingSimilarity, NoSimilarity, NpySimilarity, Similarity};
use crate::core::error::{Error, Result};
use crate::core::falsity::Tier;
use crate::core::ids::{Pid, Qid};
use crate::core::records::Strategy;
use crate::core::records::{PropertyRecord, Rank, Triple};
use crate::kb::benchmark::differences;
use crate::kb::index::IndexBuilder;
use crate::kb::verdict::{check_old_run, check_runs, verdicts};
use crate::kb::{NewFacts, OldBenchmark};
use crate::stages::contract::{Context, Input, Stage};
use crate::store::layout::{
    self, Artifact, CONSTRAINTS, DISTINCT, DISTORTIONS, EMBEDDINGS_NPY, EMBEDDINGS_W2V, LINEAGE,
    NODES, PROPERTIES, STATEMENTS, SWORD, TRANSITIVE, TRIPLES, TYPES, VALUES,
};
use crate::store::tables;
use crate::store::tables::distortions::{write_distortions, DISTORTIONS_FORMAT_VERSION};
use crate::store::tables::lineage::write_lineage;
use crate::store::{FileRef, Manifest};
use std::collections::BTreeMap;
use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// Read `properties.parquet` (the extract stage's reader).
fn load_properties(path: &Path) -> Result<Vec<PropertyRecord>> {
    tables::read_properties(path)
}

/// Flags of `sword distort` that are not settings.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct DistortArgs {
    /// Carry the benchmark of this earlier run (a folder with `sword.parquet` and `extract.manifest.json`) to
    /// this run's dump: keep its `valid` and `label_changed` statements with their ids, drop the others and
    /// draw new ones in their place (docs/versions.md). Writes `lineage.parquet` too.
    #[arg(long, value_name = "OLD_RUN")]
    pub carry_from: Option<PathBuf>,
}

/// The distort stage: the extract artifacts (and, when present, the embeddings) → `distortions.parquet`.
#[derive(Clone, Copy, Debug, Default)]
pub struct DistortStage;

impl Stage for DistortStage {
    const NAME: &'static str = layout::DISTORT;
    type Settings = DistortConfig;
    type Args = DistortArgs;
    type Outcome = ();

    fn outputs(&self, _: &DistortConfig, args: &DistortArgs) -> Vec<Artifact> {
        let mut v = Self::WRITES.to_vec();
        if args.carry_from.is_some() {
            v.push(LINEAGE);
        }
        v
    }

    /// The settings, and the run carried from (a carried build differs from a fresh one). The old benchmark's
    /// contents need not be here: `run` lists `OLD_RUN/sword.parquet` with its size and hash among the inputs,
    /// and freshness compares every input, so the same path with other bytes makes the build stale.
    fn identity(&self, cfg: &DistortConfig, args: &DistortArgs) -> serde_json::Value {
        let mut v = serde_json::to_value(cfg).unwrap_or_default();
        if let (Some(old), Some(m)) = (&args.carry_from, v.as_object_mut()) {
            m.insert("carry_from".into(), old.display().to_string().into());
        }
        v
    }

    /// [`Self::READS`], and with `--carry-from` the old benchmark, which `run` records once it is known to be
    /// one.
    fn inputs(&self, _: &DistortConfig, args: &DistortArgs) -> Vec<Input> {
        let mut v = Self::READS.to_vec();
        if let Some(old) = &args.carry_from {
            v.push(Input::ReadByRun(old.join(SWORD.file)));
        }
        v
    }

    const READS: &'static [Input] = &[
        Input::Vouched(TRIPLES),
        Input::Vouched(STATEMENTS),
        Input::Vouched(TRANSITIVE),
        Input::Vouched(PROPERTIES),
        Input::Optional(EMBEDDINGS_NPY),
        Input::Optional(NODES),
        Input::Optional(EMBEDDINGS_W2V),
        // The falsity tier's tables (absent from a run folder of an older extract: the column is then null).
        Input::Optional(CONSTRAINTS),
        Input::Optional(VALUES),
        Input::Optional(TYPES),
        Input::Optional(DISTINCT),
    ];

    const WRITES: &'static [Artifact] = &[DISTORTIONS];
    /// `--carry-from` only; a build without it removes the lineage an earlier carried build left here (it
    /// would describe a benchmark that is gone).
    const MAY_WRITE: &'static [Artifact] = &[LINEAGE];

    /// The settings, and the old run of `--carry-from` (a readable benchmark beside its extract manifest),
    /// before the run folder is locked; its compatibility with this run's extract is checked in `run`.
    fn validate(&self, cfg: &DistortConfig, args: &DistortArgs) -> Result<()> {
        if cfg.max_attempts == 0 {
            return Err(Error::Config("--max-attempts must be at least 1".into()));
        }
        if let Some(old) = &args.carry_from {
            check_old_run(old, "--carry-from")?;
        }
        Ok(())
    }

    fn seed(&self, cfg: &DistortConfig) -> Option<u64> {
        Some(cfg.seed)
    }

    fn run(&self, cx: &mut Context, cfg: &DistortConfig, args: &DistortArgs) -> Result<()> {
        run(cx, cfg, args.carry_from.as_deref())
    }

    fn summary(&self, _: &Path, m: &Manifest) -> String {
        let mut line = String::from("distort:");
        for s in Strategy::ALL {
            let k = format!("emitted_{}", s.as_str());
            line.push_str(&format!(" {}={}", s.as_str(), m.count(&k)));
        }
        line
    }
}

/// The work of the stage: the existence index from the triples, statements and transitive statements (streamed
/// into the compact index: nothing else of them is held), the sample, the draws, `distortions.parquet`.
fn run(cx: &mut Context, cfg: &DistortConfig, carry_from: Option<&Path>) -> Result<()> {
    // A carry's bad input (no old benchmark, an extract that cannot be compared) is refused before any work.
    let old = match carry_from {
        Some(dir) => {
            check_runs(dir, cx.dir(), "--carry-from")?;
            let bench = dir.join(SWORD.file);
            // Recorded (and hashed into the tag) only once it is known to be a benchmark.
            cx.manifest().inputs.push(FileRef::of(&bench)?);
            Some(OldBenchmark::read(&bench)?)
        }
        None => None,
    };
    let properties = load_properties(&cx.path(&PROPERTIES))?;
    let mut builder = IndexBuilder::default();
    let finals_path = cx.path(&TRIPLES);
    let mut finals: Vec<(Pid, Rank)> = Vec::new();
    let mut final_keys: Vec<(Qid, Qid)> = Vec::new();
    let n_final = tables::for_each_triple(&finals_path, true, |_, s, p, o, rank| {
        builder.final_triple(s, p, o);
        finals.push((p, rank));
        final_keys.push((s, o));
    })?;
    if n_final > u64::from(u32::MAX) {
        return Err(Error::bad_input(
            &finals_path,
            format!("{n_final} final triples: more than the 4 294 967 295 distort samples from"),
        ));
    }
    let mut sizes = InputSizes {
        final_triples: n_final,
        ..InputSizes::default()
    };
    sizes.statements = tables::for_each_triple(&cx.path(&STATEMENTS), false, |_, s, p, o, _| {
        builder.statement(s, p, o)
    })?;
    sizes.transitive = tables::for_each_triple(&cx.path(&TRANSITIVE), false, |_, s, p, o, _| {
        builder.statement(s, p, o)
    })?;
    let index = builder.finish(&properties);
    drop(properties);
    let falsity = load_falsity(cx, cfg)?;
    let lineage_in: Vec<String> = old.as_ref().map(|o| o.lineage.clone()).unwrap_or_default();
    let tag_inputs: Vec<FileRef> = cx
        .manifest()
        .inputs
        .iter()
        .filter(|f| {
            [TRIPLES, STATEMENTS, TRANSITIVE, PROPERTIES, SWORD]
                .iter()
                .any(|a| Path::new(&f.path).file_name() == Some(a.file.as_ref()))
        })
        .cloned()
        .collect();
    let tag = build_tag(&tag_inputs, cfg, &lineage_in);
    let mut lineage = lineage_in.clone();
    lineage.push(tag.clone());
    let sim = similarity(cx)?;
    cx.lap("read");
    let (out, carried) = match &old {
        None => {
            let (chosen, sampling) = sample_frame(finals.len(), |i| finals[i], cfg);
            let originals = originals_at(&finals_path, &chosen, &finals, &final_keys)?;
            drop((finals, final_keys));
            let out = draw_all(
                &index,
                falsity.as_ref().map(|f| &f.0),
                &originals,
                sampling,
                sizes,
                cfg,
                sim.0.as_ref(),
                &tag,
            );
            (out, None)
        }
        Some(old) => {
            let facts = NewFacts::read(cx.dir(), old)?;
            let found = verdicts(old, &facts, &index, cfg.transitive_max_visits);
            cx.lap("revalidate");
            // New originals: a uniform (or stratified) draw from the final triples that are not originals of
            // the old benchmark, from the carry's own stream; as many as the old originals dropped.
            let need = dropped_originals(old, &found);
            let taken: HashSet<(Qid, Pid, Qid)> = old
                .rows
                .iter()
                .filter(|r| r.strategy == Strategy::ORG)
                .map(|r| r.key())
                .collect();
            let draw_cfg = DistortConfig {
                seed: carry_seed(cfg.seed, &tag),
                samples: need + taken.len(),
                ..cfg.clone()
            };
            let (chosen, sampling) = sample_frame(finals.len(), |i| finals[i], &draw_cfg);
            let chosen: Vec<usize> = chosen
                .into_iter()
                .filter(|&i| !taken.contains(&(final_keys[i].0, finals[i].0, final_keys[i].1)))
                .take(need)
                .collect();
            let new_originals = originals_at(&finals_path, &chosen, &finals, &final_keys)?;
            drop((finals, final_keys));
            let c = carry(
                old,
                &found,
                &CarryInputs {
                    index: &index,
                    rule: falsity.as_ref().map(|f| &f.0),
                    cfg,
                    sim: sim.0.as_ref(),
                    tag: &tag,
                    finals: &facts.finals,
                    new_originals: &new_originals,
                },
            );
            let mut counts = row_counts(&c.rows, &index, sizes);
            // What the carry did, flat for the nightly's summary line: carried, dropped (and why), drawn.
            for l in &c.lineage {
                *counts.entry(format!("carry_{}", l.action)).or_default() += 1;
                if l.action == "dropped" {
                    *counts
                        .entry(format!("carry_dropped_{}", l.status))
                        .or_default() += 1;
                }
            }
            for a in ["carried", "dropped", "drawn"] {
                counts.entry(format!("carry_{a}")).or_default();
            }
            let out = super::draw::DistortOutput {
                counts,
                rows: c.rows.clone(),
                sampling,
                rejects: c
                    .undrawn
                    .iter()
                    .map(|(s, n)| (format!("variant_undrawn:{s}"), *n))
                    .collect(),
                attempts_histogram: BTreeMap::new(),
                probe: Default::default(),
            };
            (out, Some(c))
        }
    };
    let embeddings_present = sim.1;
    drop(index);
    cx.lap("distort");
    // An incomplete build (its extract kept what a truncated dump held) marks this file too.
    let complete = cx.inputs_incomplete().is_empty();
    let dest = cx.path(&DISTORTIONS);
    let mut file = cx.create(&DISTORTIONS)?;
    write_distortions(&mut file, &out.rows, complete, &dest)?;
    file.commit()?;
    if let Some(c) = &carried {
        let file = cx.create(&LINEAGE)?;
        write_lineage(file, &c.lineage, complete, &cx.path(&LINEAGE))?.commit()?;
    }
    let manifest = cx.manifest();
    manifest.counts = out.counts;
    manifest
        .counts
        .insert("embeddings_present".into(), u64::from(embeddings_present));
    manifest.rejects = out.rejects;
    let diff = |a, b, centred| {
        let d = differences(&out.rows, a, b, centred);
        let mean = (!d.is_empty()).then(|| d.iter().sum::<f64>() / d.len() as f64);
        serde_json::json!({"n": d.len(), "mean": mean})
    };
    let differences = serde_json::json!({
        "PSS-SS": diff(Strategy::PSS, Strategy::SS, false),
        "POS-OS": diff(Strategy::POS, Strategy::OS, false),
        "PSS-SS_centred": diff(Strategy::PSS, Strategy::SS, true),
        "POS-OS_centred": diff(Strategy::POS, Strategy::OS, true),
    });
    manifest.extra = serde_json::json!({
        "format_version": DISTORTIONS_FORMAT_VERSION,
        "tag": tag,
        "lineage": lineage,
        "carry": carried.as_ref().map(|c| {
            let mut v = c.counts.clone();
            v["from"] = carry_from.map(|p| p.display().to_string()).into();
            v
        }),
        "cosine_differences_per_original": differences,
        "sampling": out.sampling,
        "attempts_histogram": out.attempts_histogram.iter().map(|(k, v)| (k.to_string(), *v)).collect::<BTreeMap<_, _>>(),
        "transitive_bound": format!("breadth-first search expands at most {} nodes per check", cfg.transitive_max_visits),
        "guard_probe": probe_json(&out.probe, cfg.probe_candidates),
        "falsity": falsity_json(falsity.as_ref().map(|f| &f.1), cfg.min_falsity, &out.rows),
    });
    Ok(())
}

/// The sampled originals as triples: their keys and ranks, and their statement GUIDs read from
/// `triples.parquet` by row.
fn originals_at(
    path: &Path,
    chosen: &[usize],
    finals: &[(Pid, Rank)],
    keys: &[(Qid, Qid)],
) -> Result<Vec<Triple>> {
    let rows: Vec<u64> = chosen.iter().map(|&i| i as u64).collect();
    let ids = tables::statement_ids_at(path, &rows)?;
    Ok(chosen
        .iter()
        .zip(ids)
        .map(|(&i, statement_id)| Triple {
            subject: keys[i].0,
            property: finals[i].0,
            object: keys[i].1,
            rank: finals[i].1,
            statement_id,
        })
        .collect())
}

/// The embeddings' cosines, when the run has embeddings (and whether it has).
fn similarity(cx: &mut Context) -> Result<(Box<dyn Similarity>, bool)> {
    Ok(if let Some(npy) = cx.optional_input(&EMBEDDINGS_NPY)? {
        let nodes = cx.input(&NODES)?;
        (Box::new(NpySimilarity::open(&npy, &nodes)?), true)
    } else if let Some(w2v) = cx.optional_input(&EMBEDDINGS_W2V)? {
        // Only the text form (embeddings made elsewhere): parsed whole, as before embeddings.npy was read.
        let e = crate::store::embeddings::Embeddings::read_w2v(&w2v)?;
        (Box::new(EmbeddingSimilarity::new(e)), true)
    } else {
        crate::core::progress::log(format!(
            "distort: {} missing: cosines will be null",
            cx.path(&EMBEDDINGS_NPY).display()
        ));
        (Box::new(NoSimilarity), false)
    })
}

/// The manifest's counts of a carried benchmark's rows: the inputs' sizes, the originals, and the rows per
/// strategy (`emitted_<STRATEGY>`, as a fresh build counts them).
fn row_counts(
    rows: &[crate::core::records::Distortion],
    index: &crate::kb::index::Index,
    sizes: InputSizes,
) -> BTreeMap<String, u64> {
    let mut counts: BTreeMap<String, u64> = BTreeMap::new();
    counts.insert("final_triples".into(), sizes.final_triples);
    counts.insert("statements".into(), sizes.statements);
    counts.insert("transitive_statements".into(), sizes.transitive);
    counts.insert("graph_entities".into(), index.all_entities.len() as u64);
    for s in Strategy::ALL {
        let n = rows.iter().filter(|d| d.strategy == s).count() as u64;
        counts.insert(format!("emitted_{}", s.as_str()), n);
    }
    counts.insert("originals".into(), counts["emitted_ORG"]);
    counts
}

/// Extract's falsity tables as a rule, when the run folder has them (`None`: an older extract's folder, where
/// only `--min-falsity open` can run).
fn load_falsity(
    cx: &mut Context,
    cfg: &DistortConfig,
) -> Result<Option<(super::falsity::Rule, super::falsity::Loaded)>> {
    let mut paths = Vec::new();
    for a in [CONSTRAINTS, VALUES, TYPES, DISTINCT] {
        match cx.optional_input(&a)? {
            Some(p) => paths.push(p),
            None if cfg.min_falsity > Tier::Open => {
                return Err(Error::Config(format!(
                    "--min-falsity {} needs extract's {} (rerun extract)",
                    cfg.min_falsity, a.file
                )))
            }
            None => return Ok(None),
        }
    }
    let [c, v, t, d] = paths.as_slice() else {
        return Err(Error::internal("four falsity tables"));
    };
    let tables = super::falsity::Tables {
        constraints: c,
        values: v,
        types: t,
        distinct: d,
    };
    super::falsity::load(&tables).map(Some)
}

/// The manifest's `extra.falsity`: the setting, what the tables held, and the tiers of the emitted variants per
/// strategy.
fn falsity_json(
    loaded: Option<&super::falsity::Loaded>,
    min: Tier,
    rows: &[crate::core::records::Distortion],
) -> serde_json::Value {
    let Some(n) = loaded else {
        return serde_json::json!({"min_falsity": min.as_str(), "tables": "missing"});
    };
    let mut by: BTreeMap<&str, BTreeMap<&str, u64>> = BTreeMap::new();
    for d in rows {
        if let Some(t) = d.falsity {
            *by.entry(d.strategy.as_str())
                .or_default()
                .entry(t.as_str())
                .or_default() += 1;
        }
    }
    serde_json::json!({
        "min_falsity": min.as_str(),
        "rows": {"constraints": n.constraints, "values": n.values, "types": n.types, "distinct": n.distinct},
        "p279_cycles": n.p279_cycles,
        "tiers_by_strategy": by,
    })
}
