//! The revalidate stage: an old benchmark (`--benchmark OLD_RUN`) and the extract of a newer dump
//! (`--against NEW_RUN`) → `revalidation.parquet`, `revalidation.md` and a JSON summary on stdout.

use super::report::render_report;
use crate::core::error::{Error, Result};
use crate::core::ids::Pid;
use crate::core::records::{PropertyRecord, Strategy};
use crate::core::stdout::print_json;
use crate::kb::index::{Index, IndexBuilder, DEFAULT_MAX_VISITS};
use crate::kb::verdict::{check_runs, tally, verdicts, NewFacts, Status, Verdict, NEW_INPUTS};
use crate::kb::OldBenchmark;
use crate::stages::contract::{Context, Input, Stage};
use crate::store::layout::{
    self, Artifact, EXTRACT, REVALIDATION, REVALIDATION_MD, STATEMENTS, SWORD, TRANSITIVE, TRIPLES,
};
use crate::store::tables;
use crate::store::tables::revalidation::{write_revalidation, RevalidationRow};
use crate::store::{check_input, Manifest};
use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

/// Settings of `sword revalidate`.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize, clap::Args)]
#[serde(default, deny_unknown_fields)]
pub struct RevalidateConfig {
    /// Node budget of one transitive reachability search, as distort's `transitive_max_visits` (a search
    /// that runs out of it finds the variant `distortion_now_true` with detail `transitive_bound`, as distort
    /// rejects such a candidate). Typical: 100 000.
    #[arg(long, required = false)]
    pub transitive_max_visits: usize,
    /// Examples per status in `revalidation.md`. Typical: 5.
    #[arg(long, required = false)]
    pub examples: usize,
}

impl Default for RevalidateConfig {
    fn default() -> Self {
        RevalidateConfig {
            transitive_max_visits: DEFAULT_MAX_VISITS,
            examples: 5,
        }
    }
}

/// Flags of `sword revalidate` that are not settings: the two runs.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct RevalidateArgs {
    /// The old run: its `sword.parquet` is revalidated (and its `extract.manifest.json` gives the extract
    /// settings it was built with).
    #[arg(long, required = true, value_name = "OLD_RUN")]
    pub benchmark: PathBuf,
    /// The newer run: the extract artifacts of a newer dump, extracted with the same settings.
    #[arg(long, required = true, value_name = "NEW_RUN")]
    pub against: PathBuf,
}

/// `sword revalidate`.
#[derive(Clone, Copy, Debug, Default)]
pub struct RevalidateStage;

/// What `run` hands to `done`: the JSON summary printed on stdout.
pub struct Summary(pub serde_json::Value);

impl Stage for RevalidateStage {
    const NAME: &'static str = layout::REVALIDATE;
    const FORCE: bool = false;
    type Settings = RevalidateConfig;
    type Args = RevalidateArgs;
    type Outcome = Summary;

    fn inputs(&self, _: &RevalidateConfig, args: &RevalidateArgs) -> Vec<Input> {
        vec![
            Input::File(args.benchmark.join(SWORD.file)),
            Input::File(args.against.join(layout::manifest_file(EXTRACT))),
        ]
    }

    const WRITES: &'static [Artifact] = &[REVALIDATION, REVALIDATION_MD];

    /// Everything that can be refused without reading the tables, before the output folder is touched:
    /// the files of both runs, the newer extract's completeness, and the extract settings of both.
    fn validate(&self, cfg: &RevalidateConfig, args: &RevalidateArgs) -> Result<()> {
        if cfg.transitive_max_visits == 0 {
            return Err(Error::Config(
                "--transitive-max-visits must be at least 1".into(),
            ));
        }
        check_runs(&args.benchmark, &args.against, "--benchmark")
    }

    fn run(
        &self,
        cx: &mut Context,
        cfg: &RevalidateConfig,
        args: &RevalidateArgs,
    ) -> Result<Summary> {
        run(cx, cfg, args)
    }

    fn done(&self, out: &Path, m: &Manifest, s: Summary, _: &RevalidateArgs) -> Result<()> {
        crate::core::progress::log(self.summary(out, m));
        print_json(&s.0)
    }

    fn summary(&self, out: &Path, m: &Manifest) -> String {
        let mut line = format!("revalidate: {} statements:", m.count("statements"));
        for s in Status::ALL {
            line.push_str(&format!(
                " {}={}",
                s.as_str(),
                m.count(&format!("status_{}", s.as_str()))
            ));
        }
        line.push_str(&format!(" → {}", out.join(REVALIDATION.file).display()));
        line
    }
}

/// The existence index of the newer dump, restricted to the properties `wanted` (the benchmark's, with
/// their inverses): distort's [`IndexBuilder`] fed from the three statement tables, so its
/// [`Index::check`] is the very check distort runs on a candidate.
pub fn index_for(
    dir: &Path,
    wanted: &HashSet<Pid>,
    properties: &[PropertyRecord],
) -> Result<Index> {
    let mut relevant = wanted.clone();
    for p in properties {
        if wanted.contains(&p.id) {
            relevant.extend(p.inverse.iter().copied());
        } else if p.inverse.iter().any(|q| wanted.contains(q)) {
            relevant.insert(p.id);
        }
    }
    let mut b = IndexBuilder::default();
    for a in [TRIPLES, STATEMENTS, TRANSITIVE] {
        tables::for_each_triple(&dir.join(a.file), false, |_, s, p, o, _| {
            if relevant.contains(&p) {
                b.statement(s, p, o);
            }
        })?;
    }
    Ok(b.finish(properties))
}

fn run(cx: &mut Context, cfg: &RevalidateConfig, args: &RevalidateArgs) -> Result<Summary> {
    let new = args.against.as_path();
    // The newer artifacts must be those its extract manifest vouches for (exit 3 when not).
    for a in NEW_INPUTS {
        let r = check_input(new, EXTRACT, a.file, false)?;
        cx.manifest().inputs.push(r);
    }
    let old = OldBenchmark::read(&args.benchmark.join(SWORD.file))?;
    cx.lap("read_benchmark");
    let facts = NewFacts::read(new, &old)?;
    let properties: Vec<PropertyRecord> = facts.properties.values().cloned().collect();
    let index = index_for(new, &old.properties(), &properties)?;
    drop(properties);
    cx.lap("read_new");
    let found = verdicts(&old, &facts, &index, cfg.transitive_max_visits);
    drop(index);
    cx.lap("revalidate");

    let rows: Vec<RevalidationRow> = old
        .rows
        .iter()
        .zip(&found)
        .map(|(r, v)| RevalidationRow {
            statement_id: r.statement_id.clone(),
            strategy: r.strategy.as_str().to_string(),
            status: v.status.as_str().to_string(),
            detail: v.detail.clone(),
        })
        .collect();
    let complete = cx.inputs_incomplete().is_empty();
    let dest = cx.path(&REVALIDATION);
    let file = cx.create(&REVALIDATION)?;
    write_revalidation(file, &rows, complete, &dest)?.commit()?;
    let md = render_report(&old, &facts, &found, cfg.examples, &args.benchmark, new)?;
    cx.write(&REVALIDATION_MD, |w| w.write_all(md.as_bytes()))?;
    cx.lap("write");

    let summary = summary_json(&old, &found);
    cx.count("statements", old.rows.len() as u64);
    for (s, by) in tally(&old, &found) {
        cx.count(&format!("status_{}", s.as_str()), by.values().sum());
    }
    let m = cx.manifest();
    m.extra = serde_json::json!({
        "benchmark": args.benchmark.display().to_string(),
        "against": new.display().to_string(),
        "benchmark_format_version": old.format_version,
        "revalidation": summary,
    });
    Ok(Summary(summary))
}

/// `{"statements": N, "by_status": {status: n}, "by_strategy": {strategy: {status: n}}}`, every status and
/// strategy listed (zeros included) so that two summaries line up.
pub fn summary_json(old: &OldBenchmark, found: &[Verdict]) -> serde_json::Value {
    let t = tally(old, found);
    let mut by_status = serde_json::Map::new();
    let mut by_strategy: BTreeMap<&str, serde_json::Map<String, serde_json::Value>> = Strategy::ALL
        .iter()
        .map(|s| (s.as_str(), serde_json::Map::new()))
        .collect();
    for s in Status::ALL {
        let row = t.get(&s);
        let n: u64 = row.map(|r| r.values().sum()).unwrap_or(0);
        by_status.insert(s.as_str().into(), n.into());
        for g in Strategy::ALL {
            let k = row.and_then(|r| r.get(&g)).copied().unwrap_or(0);
            if let Some(m) = by_strategy.get_mut(g.as_str()) {
                m.insert(s.as_str().into(), k.into());
            }
        }
    }
    serde_json::json!({
        "statements": old.rows.len(),
        "by_status": by_status,
        "by_strategy": by_strategy,
    })
}
