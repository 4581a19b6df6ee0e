//! Revalidation: the status of every statement of an old SWORD benchmark against the extract of a newer dump
//! (docs/versions.md). The pure core, shared by `sword revalidate` and `distort --carry-from`: read the old
//! benchmark ([`OldBenchmark`]), read what the newer dump says about the entities it names ([`NewFacts`]), and
//! give each statement its [`Verdict`], a variant's through the existence index and guards distort draws
//! with ([`Index::check`]).

use super::benchmark::{print_of, OldBenchmark};
use super::index::{Index, Reason, SearchStats, Searches};
use crate::core::error::{Error, IoContext, Result};
use crate::core::ids::{EntityId, Pid, Qid};
use crate::core::records::{Distortion, Label, PropertyRecord, Rank, Strategy};
use crate::store::layout::{
    self, Artifact, ENTITIES, EXTRACT, ITEMS, PROPERTIES, STATEMENTS, SWORD, TRANSITIVE, TRIPLES,
};
use crate::store::tables;
use crate::store::Manifest;
use rayon::prelude::*;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;

/// The status of a statement of an old benchmark against a newer dump, in precedence order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Status {
    /// The subject or the object (or the property) is not in the newer dump.
    EntityMissing,
    /// The subject, property or object is no longer labelled in every language.
    LabelMissing,
    /// An original that is no longer a final triple (its statements removed or deprecated).
    OriginalRemoved,
    /// A variant that the existence check and guards now find true.
    DistortionNowTrue,
    /// A property-based variant whose replacement no longer holds its property in its role: a PSS whose
    /// subject is no longer a subject of P among the final triples, a POS whose object is no longer an object
    /// of P. Outside the pool distort draws that strategy from, it is a random swap, not a PSS / POS.
    DefinitionBroken,
    /// The subject, property or object has another label in some language.
    LabelChanged,
    /// None of the above.
    Valid,
}

impl Status {
    /// Every status, in precedence order.
    pub const ALL: [Status; 7] = [
        Status::EntityMissing,
        Status::LabelMissing,
        Status::OriginalRemoved,
        Status::DistortionNowTrue,
        Status::DefinitionBroken,
        Status::LabelChanged,
        Status::Valid,
    ];

    /// The name in `revalidation.parquet`, manifests and reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::EntityMissing => "entity_missing",
            Status::LabelMissing => "label_missing",
            Status::OriginalRemoved => "original_removed",
            Status::DistortionNowTrue => "distortion_now_true",
            Status::DefinitionBroken => "definition_broken",
            Status::LabelChanged => "label_changed",
            Status::Valid => "valid",
        }
    }

    /// Does a carried benchmark keep a statement with this status?
    pub fn keeps(self) -> bool {
        matches!(self, Status::Valid | Status::LabelChanged)
    }
}

/// A status with what made it: the missing or unlabelled entities, the guard, the languages whose label
/// changed (`Q1:en,fr P31:ko`), or why an original is gone.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verdict {
    pub status: Status,
    pub detail: String,
}

/// What the newer dump says about the entities and originals of an old benchmark, read from its extract
/// artifacts without the dump: which items exist (`items.parquet`), the labels of the labelled ones
/// (`entities.parquet`), every property (`properties.parquet`), and the originals that are still final
/// triples, with their rank and statement GUID, and which replacements of its property-based variants are still
/// in their strategy's pool (`triples.parquet`).
#[derive(Clone, Debug, Default)]
pub struct NewFacts {
    pub languages: Vec<String>,
    /// The benchmark's items that are in the newer dump.
    pub present: HashSet<Qid>,
    /// The labels of the benchmark's items that are labelled in every language there.
    pub labels: HashMap<Qid, Vec<Label>>,
    /// Every property of the newer dump.
    pub properties: HashMap<Pid, PropertyRecord>,
    /// The benchmark's originals that are final triples there: rank and statement GUID.
    pub finals: HashMap<(Qid, Pid, Qid), (Rank, String)>,
    /// The PSS subjects and POS objects of the benchmark that are still in their pool there: (P, S) when S is
    /// the subject of a final triple of P, for a PSS (S, P, O); (P, O) when O is the object of one, for a POS.
    pub pools: RolePools,
}

/// Membership of the replacement pools distort draws PSS and POS from (the subjects, the objects of P among
/// the final triples), for the pairs a benchmark asks about: 16 bytes per PSS / POS of the benchmark, not
/// the pools themselves.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RolePools {
    pub subjects: HashSet<(Pid, Qid)>,
    pub objects: HashSet<(Pid, Qid)>,
}

impl RolePools {
    /// Is the variant's replacement in the pool of its strategy (always true for the other strategies)?
    pub fn holds(&self, strategy: Strategy, s: Qid, p: Pid, o: Qid) -> bool {
        match strategy {
            Strategy::PSS => self.subjects.contains(&(p, s)),
            Strategy::POS => self.objects.contains(&(p, o)),
            _ => true,
        }
    }

    /// The detail of a [`Status::DefinitionBroken`].
    pub fn broken_detail(strategy: Strategy, s: Qid, p: Pid, o: Qid) -> String {
        match strategy {
            Strategy::PSS => format!("{s} is no longer a subject of {p}"),
            _ => format!("{o} is no longer an object of {p}"),
        }
    }
}

impl NewFacts {
    /// Read the facts about `old`'s entities and originals from the extract artifacts in `dir`.
    pub fn read(dir: &Path, old: &OldBenchmark) -> Result<NewFacts> {
        let items = old.items();
        let mut out = NewFacts {
            present: tables::items::items_among(&dir.join(ITEMS.file), &items)?,
            ..NewFacts::default()
        };
        let epath = dir.join("entities.parquet");
        let f = std::fs::File::open(&epath).at(&epath)?;
        let (languages, records) =
            tables::read_entities_where(f, &epath, tables::STREAM_BATCH, |id| match id {
                EntityId::Item(q) => items.contains(&q),
                EntityId::Property(_) => false,
            })?;
        out.languages = languages;
        for r in records {
            if let EntityId::Item(q) = r.id {
                out.labels.insert(q, r.labels);
            }
        }
        out.properties = tables::read_properties(&dir.join("properties.parquet"))?
            .into_iter()
            .map(|p| (p.id, p))
            .collect();
        let originals: HashSet<(Qid, Pid, Qid)> = old
            .rows
            .iter()
            .filter(|r| r.strategy == Strategy::ORG)
            .map(Distortion::key)
            .collect();
        // The pairs the PSS and POS of the benchmark ask about.
        let want_s: HashSet<(Pid, Qid)> = old
            .rows
            .iter()
            .filter(|r| r.strategy == Strategy::PSS)
            .map(|r| (r.property, r.subject))
            .collect();
        let want_o: HashSet<(Pid, Qid)> = old
            .rows
            .iter()
            .filter(|r| r.strategy == Strategy::POS)
            .map(|r| (r.property, r.object))
            .collect();
        let tpath = dir.join("triples.parquet");
        let mut found: Vec<((Qid, Pid, Qid), Rank, u64)> = Vec::new();
        let pools = &mut out.pools;
        tables::for_each_triple(&tpath, true, |row, s, p, o, rank| {
            if originals.contains(&(s, p, o)) {
                found.push(((s, p, o), rank, row));
            }
            if want_s.contains(&(p, s)) {
                pools.subjects.insert((p, s));
            }
            if want_o.contains(&(p, o)) {
                pools.objects.insert((p, o));
            }
        })?;
        let rows: Vec<u64> = found.iter().map(|f| f.2).collect();
        let guids = tables::statement_ids_at(&tpath, &rows)?;
        out.finals = found
            .into_iter()
            .zip(guids)
            .map(|((k, rank, _), guid)| (k, (rank, guid)))
            .collect();
        Ok(out)
    }

    /// The label of an entity in every language, when it is labelled in all of them.
    fn labels_of(&self, e: EntityId) -> Option<Vec<&str>> {
        match e {
            EntityId::Item(q) => Some(
                self.labels
                    .get(&q)?
                    .iter()
                    .map(|l| l.text.as_str())
                    .collect(),
            ),
            EntityId::Property(p) => self
                .properties
                .get(&p)?
                .labels
                .iter()
                .map(|l| l.as_ref().map(|l| l.text.as_str()))
                .collect(),
        }
    }

    fn is_present(&self, e: EntityId) -> bool {
        match e {
            EntityId::Item(q) => self.present.contains(&q),
            EntityId::Property(p) => self.properties.contains_key(&p),
        }
    }
}

/// The status of one statement (see [`Status`] for the precedence).
pub fn verdict(
    old: &OldBenchmark,
    row: &Distortion,
    new: &NewFacts,
    index: &Index,
    searches: &mut Searches<'_>,
) -> Verdict {
    let ents = row.entities();
    let list = |v: Vec<String>| v.join(" ");
    let missing: Vec<String> = ents
        .iter()
        .filter(|e| !new.is_present(**e))
        .map(|e| e.to_string())
        .collect();
    if !missing.is_empty() {
        return Verdict {
            status: Status::EntityMissing,
            detail: list(missing),
        };
    }
    let unlabelled: Vec<String> = ents
        .iter()
        .filter(|e| new.labels_of(**e).is_none())
        .map(|e| e.to_string())
        .collect();
    if !unlabelled.is_empty() {
        return Verdict {
            status: Status::LabelMissing,
            detail: list(unlabelled),
        };
    }
    let (s, p, o) = row.key();
    if row.strategy == Strategy::ORG {
        if !new.finals.contains_key(&(s, p, o)) {
            // Stated still, at rank deprecated, or gone (perhaps still said the other way round).
            let detail = match index.check_with(Strategy::SS, s, p, o, searches) {
                Err(Reason::Exists) => "deprecated".to_string(),
                Err(r) => format!("no longer stated (still implied: {})", r.as_str()),
                Ok(()) => "no longer stated".to_string(),
            };
            return Verdict {
                status: Status::OriginalRemoved,
                detail,
            };
        }
    } else if let Err(reason) = index.check_with(row.strategy, s, p, o, searches) {
        return Verdict {
            status: Status::DistortionNowTrue,
            detail: reason.as_str().to_string(),
        };
    } else if !new.pools.holds(row.strategy, s, p, o) {
        return Verdict {
            status: Status::DefinitionBroken,
            detail: RolePools::broken_detail(row.strategy, s, p, o),
        };
    }
    let mut changed = Vec::new();
    for e in ents {
        let now = print_of(new.labels_of(e).unwrap_or_default().into_iter().map(Some));
        let before = old.labels.get(&e);
        if before != Some(&now) {
            let langs: Vec<&str> = old
                .languages
                .iter()
                .enumerate()
                .filter(|(l, _)| before.and_then(|b| b.get(*l)) != now.get(*l))
                .map(|(_, name)| name.as_str())
                .collect();
            changed.push(format!("{e}:{}", langs.join(",")));
        }
    }
    if !changed.is_empty() {
        return Verdict {
            status: Status::LabelChanged,
            detail: list(changed),
        };
    }
    Verdict {
        status: Status::Valid,
        detail: String::new(),
    }
}

/// The status of every statement of `old`, in its order (in parallel; the same at any thread count).
///
/// The statements are checked in groups of the same (property, subject), each group by one worker with one
/// [`Searches`]: an original's OS and POS variants (and the original itself, when it is gone) keep its
/// subject and property, so one reachability search answers all of them. A verdict does not depend on the
/// grouping (a shared search answers what a search of its own would), only the work does.
pub fn verdicts(
    old: &OldBenchmark,
    new: &NewFacts,
    index: &Index,
    max_visits: usize,
) -> Vec<Verdict> {
    let rows = &old.rows;
    let mut order: Vec<usize> = (0..rows.len()).collect();
    let key = |i: usize| (rows[i].property, rows[i].subject);
    order.par_sort_unstable_by_key(|&i| key(i));
    let stats = std::sync::Mutex::new(SearchStats::default());
    // The verdicts in `order`'s order, then each moved to its row's place (no second vector of them).
    let mut found: Vec<Verdict> = order
        .par_chunk_by(|&a, &b| key(a) == key(b))
        .flat_map_iter(|group| {
            let mut searches = Searches::new(index, max_visits);
            let found: Vec<Verdict> = group
                .iter()
                .map(|&i| verdict(old, &rows[i], new, index, &mut searches))
                .collect();
            if searches.stats.questions > 0 {
                stats
                    .lock()
                    .expect("no panic while held")
                    .add(&searches.stats);
            }
            found
        })
        .collect();
    // found[k] belongs at order[k]: follow the cycles of the permutation, swapping.
    for k in 0..found.len() {
        while order[k] != k {
            let j = order[k];
            found.swap(k, j);
            order.swap(k, j);
        }
    }
    let stats = stats.into_inner().expect("no panic while held");
    crate::core::progress::log(format!("revalidate: existence checks: {stats}"));
    found
}

/// Counts per status and strategy.
pub fn tally(
    old: &OldBenchmark,
    verdicts: &[Verdict],
) -> BTreeMap<Status, BTreeMap<Strategy, u64>> {
    let mut t: BTreeMap<Status, BTreeMap<Strategy, u64>> = BTreeMap::new();
    for (r, v) in old.rows.iter().zip(verdicts) {
        *t.entry(v.status)
            .or_default()
            .entry(r.strategy)
            .or_default() += 1;
    }
    t
}

/// The extract artifacts revalidation reads from the newer run: presence (`items.parquet`), labels
/// (`entities.parquet`, `properties.parquet`) and the existence index (the three statement tables).
pub const NEW_INPUTS: [Artifact; 6] =
    [ITEMS, ENTITIES, PROPERTIES, TRIPLES, STATEMENTS, TRANSITIVE];

/// The extract settings that change what the artifacts hold: two runs must agree on them to be compared.
/// (Reading settings — chunk size, threads, skim, memory limit, bad-line tolerance — change nothing read.)
pub const COMPARED_SETTINGS: [&str; 4] = [
    "languages",
    "mul_fallback",
    "transitive_seed",
    "unlabelled_statements",
];

/// Refuse (exit code 2, naming what is wrong) two runs that cannot be compared: an old run without
/// `sword.parquet` or one that is not a SWORD benchmark, a newer run without its extract artifacts or
/// manifest, a newer extract that ended early, or extract settings that differ. `flag` is the option that
/// named the old run (`--benchmark`, `--carry-from`): the messages name it.
pub fn check_runs(old: &Path, new: &Path, flag: &str) -> Result<()> {
    let old_config = check_old_run(old, flag)?;
    let new_manifest = new.join(layout::manifest_file(EXTRACT));
    let missing: Vec<&str> = NEW_INPUTS
        .iter()
        .map(|a| a.file)
        .chain([new_manifest
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("")])
        .filter(|f| !new.join(f).is_file())
        .collect();
    if !missing.is_empty() {
        return Err(Error::bad_input(
            new,
            format!(
                "the newer run lacks extract artifacts: {} (run `sword extract` on the newer dump into it{})",
                missing.join(", "),
                if missing.contains(&ITEMS.file) && missing.len() == 1 {
                    "; items.parquet is written by extract since revalidation exists: extract again"
                } else {
                    ""
                }
            ),
        ));
    }
    let nm = Manifest::read(&new_manifest)?;
    if !nm.complete {
        return Err(Error::bad_input(
            &new_manifest,
            "the newer extract is incomplete (its dump ended early): against half a dump most of the \
             benchmark would look missing",
        ));
    }
    check_settings(old, &old_config, &nm.config, &new_manifest, flag)
}

/// The old run's side of [`check_runs`], which needs nothing of the newer run (so `sword run --carry-from`
/// makes it before extract): `OLD/sword.parquet` is a readable SWORD benchmark of a format this sword reads, and
/// `OLD/extract.manifest.json` is there and readable. Returns the old extract's settings.
pub fn check_old_run(old: &Path, flag: &str) -> Result<serde_json::Value> {
    let bench = old.join(SWORD.file);
    if !bench.is_file() {
        return Err(Error::bad_input(
            &bench,
            format!(
                "no {} in the old run {}: {flag} names a run folder that `sword export` wrote",
                SWORD.file,
                old.display()
            ),
        ));
    }
    // Read whole, not only its footer: a damaged data page is refused here, before anything is written.
    OldBenchmark::read(&bench).map_err(|e| in_flag(e, flag))?;
    let old_manifest = old.join(layout::manifest_file(EXTRACT));
    if !old_manifest.is_file() {
        return Err(Error::bad_input(
            &old_manifest,
            format!(
                "missing: {flag} names a run whose extract settings cannot be compared with the newer \
                 run's"
            ),
        ));
    }
    Ok(Manifest::read(&old_manifest)
        .map_err(|e| in_flag(e, flag))?
        .config)
}

/// A refusal of a file the old run `flag` named holds: said to come from that flag.
fn in_flag(e: Error, flag: &str) -> Error {
    match e {
        Error::BadInput { path, what } => Error::BadInput {
            path,
            what: format!("{what} (the benchmark {flag} names)"),
        },
        Error::Corrupt { path, what } => Error::Corrupt {
            path,
            what: format!("{what} (the benchmark {flag} names)"),
        },
        e => e,
    }
}

/// Refuse (exit code 2) extract settings `new` (of the newer run, `new_manifest` naming where they come from:
/// a manifest, or the settings a run is about to extract with) that differ from the old run's `old` in what
/// the artifacts hold ([`COMPARED_SETTINGS`]).
pub fn check_settings(
    old_run: &Path,
    old: &serde_json::Value,
    new: &serde_json::Value,
    new_manifest: &Path,
    flag: &str,
) -> Result<()> {
    let old_manifest = old_run.join(layout::manifest_file(EXTRACT));
    let differ: Vec<String> = COMPARED_SETTINGS
        .iter()
        .filter(|k| old.get(**k) != new.get(**k))
        .map(|k| {
            format!(
                "{k}: {} (old) vs {} (new)",
                old.get(*k).cloned().unwrap_or_default(),
                new.get(*k).cloned().unwrap_or_default()
            )
        })
        .collect();
    if !differ.is_empty() {
        return Err(Error::bad_input(
            new_manifest,
            format!(
                "extract settings differ from those of the run {flag} names ({}): {}; extract the newer \
                 dump with the old settings",
                old_manifest.display(),
                differ.join("; ")
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::records::Triple;
    use crate::kb::index::KnowledgeBase;

    fn t(s: u64, p: u64, o: u64, rank: Rank) -> Triple {
        Triple {
            subject: Qid(s),
            property: Pid(p),
            object: Qid(o),
            rank,
            statement_id: format!("Q{s}$G"),
        }
    }

    fn label(text: &str) -> Label {
        Label {
            text: text.into(),
            from_mul: false,
        }
    }

    fn prop(id: u64, name: &str, symmetric: bool, inverse: Vec<Pid>) -> PropertyRecord {
        PropertyRecord {
            id: Pid(id),
            datatype: "wikibase-item".into(),
            labels: vec![Some(label(name)), Some(label(&format!("{name}-ko")))],
            transitive: false,
            symmetric,
            inverse,
        }
    }

    fn row(id: &str, strategy: Strategy, s: u64, p: u64, o: u64) -> Distortion {
        Distortion {
            statement_id: id.into(),
            strategy,
            subject: Qid(s),
            property: Pid(p),
            object: Qid(o),
            ..Distortion::original(0, &t(s, p, o, Rank::Normal))
        }
    }

    /// A newer dump by hand: items 1..=9 exist but 8; 7 lost its Korean label; P47 is symmetric, P150 the
    /// inverse of P131; (1, P131, 2) still holds, (3, P131, 2) was deprecated, (4, P131, 2) removed but (2,
    /// P150, 4) states it; (5, P47, 6) is stated the other way round only; 9 was renamed in English. The
    /// subjects of P131 among the final triples are 1 and 9, its objects 2 and 6; P47's subject is 6, its
    /// object 5.
    fn new_dump() -> (NewFacts, Index) {
        let kb = KnowledgeBase {
            final_triples: vec![
                t(1, 131, 2, Rank::Normal),
                t(6, 47, 5, Rank::Normal),
                t(9, 131, 6, Rank::Normal),
            ],
            statements: vec![
                t(1, 131, 2, Rank::Normal),
                t(3, 131, 2, Rank::Deprecated),
                t(2, 150, 4, Rank::Normal),
                t(6, 47, 5, Rank::Normal),
            ],
            transitive: vec![],
            properties: vec![
                prop(131, "located in", false, vec![Pid(150)]),
                prop(150, "contains", false, vec![]),
                prop(47, "borders", true, vec![]),
            ],
        };
        let labelled = [1u64, 2, 3, 4, 5, 6, 9];
        let facts = facts_of(&kb, &[1, 2, 3, 4, 5, 6, 7, 9], &labelled, |q| {
            if q == 9 {
                "nine (new)".to_string()
            } else {
                format!("q{q}")
            }
        });
        (facts, Index::build(&kb))
    }

    /// The newer dump's facts: the items `present`, those of `labelled` with an English label (`en`) and a
    /// Korean one (`q<n>-ko`), `kb`'s properties, and (1, P131, 2) the one final statement.
    fn facts_of(
        kb: &KnowledgeBase,
        present: &[u64],
        labelled: &[u64],
        en: impl Fn(u64) -> String,
    ) -> NewFacts {
        NewFacts {
            languages: vec!["en".into(), "ko".into()],
            present: present.iter().copied().map(Qid).collect(),
            labels: labelled
                .iter()
                .map(|&q| (Qid(q), vec![label(&en(q)), label(&format!("q{q}-ko"))]))
                .collect(),
            properties: kb.properties.iter().map(|p| (p.id, p.clone())).collect(),
            finals: [(
                (Qid(1), Pid(131), Qid(2)),
                (Rank::Normal, "Q1$G".to_string()),
            )]
            .into_iter()
            .collect(),
            pools: RolePools {
                subjects: kb
                    .final_triples
                    .iter()
                    .map(|t| (t.property, t.subject))
                    .collect(),
                objects: kb
                    .final_triples
                    .iter()
                    .map(|t| (t.property, t.object))
                    .collect(),
            },
        }
    }

    fn old(rows: Vec<Distortion>) -> OldBenchmark {
        let mut labels = HashMap::new();
        for r in &rows {
            for e in r.entities() {
                let (en, ko) = match e {
                    EntityId::Item(q) => (format!("q{}", q.0), format!("q{}-ko", q.0)),
                    EntityId::Property(p) => {
                        let n = [(131, "located in"), (150, "contains"), (47, "borders")]
                            .iter()
                            .find(|x| x.0 == p.0)
                            .map_or("?", |x| x.1);
                        (n.to_string(), format!("{n}-ko"))
                    }
                };
                labels.insert(
                    e,
                    print_of([Some(en.as_str()), Some(ko.as_str())].into_iter()),
                );
            }
        }
        OldBenchmark {
            languages: vec!["en".into(), "ko".into()],
            rows,
            labels,
            format_version: 2,
            ..OldBenchmark::default()
        }
    }

    #[test]
    fn every_status_by_hand_and_the_precedence() {
        use Strategy::*;
        let bench = old(vec![
            row("a-000000-ORG", ORG, 1, 131, 2),
            row("a-000001-ORG", ORG, 3, 131, 2),
            row("a-000002-ORG", ORG, 4, 131, 2),
            row("a-000000-SS", SS, 5, 47, 6),
            row("a-000000-OS", OS, 1, 131, 8),
            row("a-000001-POS", POS, 7, 131, 2),
            row("a-000002-PSS", PSS, 9, 131, 2),
            row("a-000002-SS", SS, 3, 131, 1),
            // Both missing (8) and unlabelled (7): missing wins.
            row("a-000003-ORG", ORG, 7, 131, 8),
            // Out of the pool: 5 is no subject of P131, 1 no object of P47 (and Q9 renamed: broken wins).
            row("a-000004-PSS", PSS, 5, 131, 1),
            row("a-000005-POS", POS, 9, 47, 1),
            // Out of the pool (4 is no subject of P131 now) and true through (2, P150, 4): now true wins.
            row("a-000006-PSS", PSS, 4, 131, 2),
            // In the pools: a POS whose object (6) is an object of P131, a PSS whose subject (6) is one of P47.
            row("a-000007-POS", POS, 1, 131, 6),
            row("a-000008-PSS", PSS, 6, 47, 1),
        ]);
        let (facts, index) = new_dump();
        let got: Vec<(Status, String)> = verdicts(&bench, &facts, &index, 1000)
            .into_iter()
            .map(|v| (v.status, v.detail))
            .collect();
        let want = vec![
            (Status::Valid, String::new()),
            (Status::OriginalRemoved, "deprecated".into()),
            (
                Status::OriginalRemoved,
                "no longer stated (still implied: inverse)".into(),
            ),
            (Status::DistortionNowTrue, "symmetric".into()),
            (Status::EntityMissing, "Q8".into()),
            (Status::LabelMissing, "Q7".into()),
            (Status::LabelChanged, "Q9:en".into()),
            (Status::Valid, String::new()),
            (Status::EntityMissing, "Q8".into()),
            (
                Status::DefinitionBroken,
                "Q5 is no longer a subject of P131".into(),
            ),
            (
                Status::DefinitionBroken,
                "Q1 is no longer an object of P47".into(),
            ),
            (Status::DistortionNowTrue, "inverse".into()),
            (Status::Valid, String::new()),
            (Status::Valid, String::new()),
        ];
        assert_eq!(got, want);
        let t = tally(&bench, &verdicts(&bench, &facts, &index, 1000));
        assert_eq!(t[&Status::OriginalRemoved][&ORG], 2);
        assert_eq!(t[&Status::EntityMissing].values().sum::<u64>(), 2);
    }

    /// Statements of a transitive property sharing subjects, out of order, with a budget that runs out: the
    /// grouped verdicts (one search per (property, subject)) are the hand-worked ones, and those of a search
    /// of its own per statement.
    #[test]
    fn grouped_searches_give_each_statement_its_own_verdict() {
        use Strategy::*;
        // P131 transitive: 1 → 2 → 3 → 4 and 1 → 5. From 1, expansion 1 meets 2 and 5, expansion 2 (node 2)
        // meets 3, expansion 3 (node 5) nothing, expansion 4 (node 3) meets 4.
        let mut located = prop(131, "located in", false, vec![]);
        located.transitive = true;
        let chain = [(1, 2), (2, 3), (3, 4), (1, 5)];
        let kb = KnowledgeBase {
            final_triples: vec![t(1, 131, 2, Rank::Normal)],
            transitive: chain
                .iter()
                .map(|&(s, o)| t(s, 131, o, Rank::Normal))
                .collect(),
            properties: vec![located],
            ..KnowledgeBase::default()
        };
        let index = Index::build(&kb);
        let all: Vec<u64> = (1..10).collect();
        let facts = facts_of(&kb, &all, &all, |q| format!("q{q}"));
        let bench = old(vec![
            row("b-000000-OS", OS, 1, 131, 4),
            row("b-000001-SS", SS, 2, 131, 4),
            row("b-000000-ORG", ORG, 1, 131, 2),
            row("b-000003-OS", OS, 4, 131, 1),
            row("b-000000-POS", POS, 1, 131, 3),
            row("b-000002-OS", OS, 1, 131, 9),
            row("b-000004-ORG", ORG, 1, 131, 3),
        ]);
        let got: Vec<(Status, String)> = verdicts(&bench, &facts, &index, 3)
            .into_iter()
            .map(|v| (v.status, v.detail))
            .collect();
        let now_true = |d: &str| (Status::DistortionNowTrue, d.to_string());
        let want = vec![
            now_true("transitive_bound"), // 4 is met at expansion 4 > 3
            now_true("transitive"),       // from 2: 4 met at expansion 2
            (Status::Valid, String::new()),
            (Status::Valid, String::new()), // 4 has no successor
            now_true("transitive"),         // 3 met at expansion 2
            now_true("transitive_bound"),   // 9 never met, the search unfinished after 3
            (
                Status::OriginalRemoved,
                "no longer stated (still implied: transitive)".into(),
            ),
        ];
        assert_eq!(got, want);
        let alone: Vec<(Status, String)> = bench
            .rows
            .iter()
            .map(|r| verdict(&bench, r, &facts, &index, &mut Searches::new(&index, 3)))
            .map(|v| (v.status, v.detail))
            .collect();
        assert_eq!(got, alone);
        // With the budget for the whole graph (5 nodes from 1), the bound no longer decides.
        let got: Vec<Status> = verdicts(&bench, &facts, &index, 5)
            .into_iter()
            .map(|v| v.status)
            .collect();
        assert_eq!(got[0], Status::DistortionNowTrue);
        assert_eq!(got[5], Status::Valid);
    }
}
