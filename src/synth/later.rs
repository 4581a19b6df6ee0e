//! Later versions of a generated world (`sword synth --later-of OLD_RUN`): the dump of the same world after a
//! month of edits, with the edits aimed at the statements of a benchmark built from the first version, and the
//! status each of those statements should get when the benchmark is revalidated against the later dump.
//!
//! The later dump is the first one with a handful of lines edited: an entity deleted (its line is gone, as a
//! deleted or merged-away item is gone from a JSON dump), a label dropped or renamed, a description changed, a
//! statement removed or deprecated while its entity stays, a statement added that makes a false statement of
//! the benchmark true — directly, only through its symmetric reverse, only through an inverse property, or only
//! through a chain of a transitive property — or the final triples that hold a PSS / POS variant's replacement
//! in its role removed, so that it leaves the pool its strategy is drawn from. Each edit is aimed at a different statement of the benchmark,
//! preferring entities that few other statements name, so every status occurs; what else an edit touches
//! (every statement naming a deleted entity, say) is part of the expected statuses, which are computed for
//! every statement of the benchmark from the generator's model and the list of edits — the first version's
//! [`Truth`], changed by the edits, and its [`Closure`] — never by reading the output.
//!
//! Lines that are not edited are the first version's bytes; an edited line is the first version's line parsed,
//! changed and written again (key order and escapes then differ, which the extract stage does not mind).

use super::*;
use crate::core::records::{Distortion, Strategy};
use crate::kb::OldBenchmark;
use crate::store::layout::TRIPLES;
use std::collections::{HashMap, HashSet};

/// Settings of a later version.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LaterConfig {
    /// Edits of each kind, each aimed at another statement of the old benchmark (one property rename at
    /// most: it reaches every statement of its property). Typical 3.
    pub per_kind: usize,
    /// Seed of the choice of edits and of the new texts (the world itself is the first version's).
    pub seed: u64,
    /// The old run (its folder, or its `sword.parquet`): the `leave_pool` edits read the final triples of the
    /// first version from its `triples.parquet` (which lines hold a replacement in its role). None: no
    /// `leave_pool` edit is made (they are counted as unmade).
    pub old_run: Option<PathBuf>,
    /// Edits of each kind (but `rename_property`) beyond the benchmark, on labelled items that no statement of
    /// it names: the bulk of a real month's edits, which a later dump must carry at scale (default 0).
    pub world_per_kind: usize,
}

impl Default for LaterConfig {
    fn default() -> Self {
        LaterConfig {
            per_kind: 3,
            seed: 1,
            old_run: None,
            world_per_kind: 0,
        }
    }
}

/// The most final triples a `leave_pool` edit removes: a replacement that holds its property in its role in
/// more of them is not aimed at (a POS's are on as many lines as they have subjects).
pub const LEAVE_POOL_MAX: usize = 16;

/// For each PSS (P, S′) and POS (P, O′) of a benchmark, the other ends of the first version's final triples
/// that put the replacement in its pool: the objects of (S′, P, ·), the subjects of (·, P, O′). None when
/// there are more than [`LEAVE_POOL_MAX`]. Read from the old run's `triples.parquet` (its final triples, which
/// are the first version's: the run was extracted from it).
#[derive(Debug, Default)]
struct RoleTriples {
    subjects: HashMap<(Pid, Qid), Option<Vec<Qid>>>,
    objects: HashMap<(Pid, Qid), Option<Vec<Qid>>>,
}

impl RoleTriples {
    fn read(old: &Path, bench: &[Distortion]) -> Result<RoleTriples> {
        let dir = if old.is_dir() {
            old
        } else {
            old.parent().unwrap_or(Path::new("."))
        };
        let path = dir.join(TRIPLES.file);
        if !path.is_file() {
            return Err(Error::bad_input(
                &path,
                "missing: `sword synth --later-of` reads the old run's final triples for its leave_pool \
                 edits; give it the run folder that `sword extract` and `sword export` wrote",
            ));
        }
        let mut r = RoleTriples::default();
        for st in bench {
            match st.strategy {
                Strategy::PSS => {
                    r.subjects
                        .insert((st.property, st.subject), Some(Vec::new()));
                }
                Strategy::POS => {
                    r.objects.insert((st.property, st.object), Some(Vec::new()));
                }
                _ => {}
            }
        }
        fn push(slot: &mut Option<Vec<Qid>>, x: Qid) {
            if let Some(v) = slot {
                v.push(x);
                if v.len() > LEAVE_POOL_MAX {
                    v.sort_unstable();
                    v.dedup();
                    if v.len() > LEAVE_POOL_MAX {
                        *slot = None;
                    }
                }
            }
        }
        crate::store::tables::for_each_triple(&path, false, |_, s, p, o, _| {
            if let Some(slot) = r.subjects.get_mut(&(p, s)) {
                push(slot, o);
            }
            if let Some(slot) = r.objects.get_mut(&(p, o)) {
                push(slot, s);
            }
        })?;
        for v in r
            .subjects
            .values_mut()
            .chain(r.objects.values_mut())
            .flatten()
        {
            v.sort_unstable();
            v.dedup();
        }
        Ok(r)
    }

    /// The final triples that hold the replacement of the PSS / POS `st` in its role, when there are at most
    /// [`LEAVE_POOL_MAX`].
    fn of(&self, st: &Distortion) -> Option<Vec<(Qid, Pid, Qid)>> {
        let p = st.property;
        match st.strategy {
            Strategy::PSS => Some(
                self.subjects
                    .get(&(p, st.subject))?
                    .as_ref()?
                    .iter()
                    .map(|&o| (st.subject, p, o))
                    .collect(),
            ),
            Strategy::POS => Some(
                self.objects
                    .get(&(p, st.object))?
                    .as_ref()?
                    .iter()
                    .map(|&s| (s, p, st.object))
                    .collect(),
            ),
            _ => None,
        }
    }
}

/// The statements of a benchmark: `sword.parquet` itself, or the run directory that holds it.
pub fn read_benchmark(path: &Path) -> Result<Vec<Distortion>> {
    let file = if path.is_dir() {
        path.join("sword.parquet")
    } else {
        path.to_path_buf()
    };
    Ok(OldBenchmark::read(&file)?.rows)
}

/// The kinds of edit, in the order they are planned, with the status each gives the statement it aims at.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EditKind {
    /// The line of a variant's replacement entity is gone (a deleted or merged-away item): `entity_missing`.
    Delete,
    /// An entity loses its Korean label: `label_missing`.
    DropLabel,
    /// The statements behind an original are removed from its subject's line: `original_removed`.
    RemoveStatement,
    /// The statements behind an original are deprecated: `original_removed`.
    Deprecate,
    /// A variant is stated as it is: `distortion_now_true` (`exists` / `subject_has_value`).
    AddDirect,
    /// A variant of a symmetric property is stated the other way round only: `distortion_now_true`
    /// (`symmetric`).
    AddSymmetric,
    /// A variant is stated through an inverse property only: `distortion_now_true` (`inverse`).
    AddInverse,
    /// A variant of a transitive property becomes true through a new chain of two statements via an
    /// unlabelled item: `distortion_now_true` (`transitive`).
    AddTransitive,
    /// The final triples that hold a PSS's replacement subject as a subject of its property (a POS's
    /// replacement object as an object) are removed; the replacement stays labelled and the original intact:
    /// `definition_broken`.
    LeavePool,
    /// An entity gets another label in one language: `label_changed`.
    Rename,
    /// A property gets another label in one language: `label_changed` for every statement of it.
    RenameProperty,
    /// An entity gets another English description: `valid` (descriptions are not part of the status).
    Describe,
}

impl EditKind {
    /// Every kind, in planning order.
    pub const ALL: [EditKind; 12] = [
        EditKind::Delete,
        EditKind::DropLabel,
        EditKind::RemoveStatement,
        EditKind::Deprecate,
        EditKind::AddDirect,
        EditKind::AddSymmetric,
        EditKind::AddInverse,
        EditKind::AddTransitive,
        EditKind::LeavePool,
        EditKind::Rename,
        EditKind::RenameProperty,
        EditKind::Describe,
    ];

    /// The name used in the truth file.
    pub fn as_str(self) -> &'static str {
        match self {
            EditKind::Delete => "delete",
            EditKind::DropLabel => "drop_label",
            EditKind::RemoveStatement => "remove_statement",
            EditKind::Deprecate => "deprecate",
            EditKind::AddDirect => "add_direct",
            EditKind::AddSymmetric => "add_symmetric",
            EditKind::AddInverse => "add_inverse",
            EditKind::AddTransitive => "add_transitive",
            EditKind::LeavePool => "leave_pool",
            EditKind::Rename => "rename",
            EditKind::RenameProperty => "rename_property",
            EditKind::Describe => "describe",
        }
    }
}

/// One edit, as the truth file lists it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Edit {
    pub kind: EditKind,
    /// The statement of the old benchmark it aims at; empty for an edit beyond the benchmark.
    pub target: String,
    /// The entity whose line is edited (`Q42`, `P31`); for `add_transitive`, the subject's; for
    /// `leave_pool`, the replacement that leaves the pool (the lines edited are the subjects' of `statements`).
    pub entity: String,
    /// Statements removed, deprecated or added (`[S, P, O]`).
    pub statements: Vec<[String; 3]>,
    /// The language of a label or description edit.
    pub language: Option<String>,
    /// The new text of a label or description edit.
    pub text: Option<String>,
}

/// A change to one line.
#[derive(Clone, Debug, PartialEq)]
enum LineOp {
    /// Set (`Some`) or remove (`None`) the label in a language.
    Label(&'static str, Option<String>),
    /// Set the description in a language.
    Description(&'static str, String),
    /// Remove every statement (P, O) of the line.
    Remove(Pid, Qid),
    /// Deprecate every statement (P, O) of the line.
    Deprecate(Pid, Qid),
    /// Add a statement (P, O) with this GUID.
    Add(Pid, Qid, String),
}

/// The edits of a later version: what each line becomes, and what that means for the oracle.
#[derive(Clone, Debug, Default)]
pub struct Plan {
    pub edits: Vec<Edit>,
    /// Kinds for which fewer than the asked edits found a statement to aim at, and how many are missing.
    pub unmade: BTreeMap<EditKind, u64>,
    /// The same for the edits beyond the benchmark.
    pub unmade_world: BTreeMap<EditKind, u64>,
    deleted_lines: HashSet<u64>,
    ops: HashMap<u64, Vec<LineOp>>,
    deleted: HashSet<Qid>,
    dropped: HashSet<EntityId>,
    renamed: HashSet<EntityId>,
    removed: HashSet<(Qid, Pid, Qid)>,
    deprecated: HashSet<(Qid, Pid, Qid)>,
    added: Vec<(Qid, Pid, Qid)>,
}

impl Plan {
    /// Leave out line `k`, the line of item `q` (a deleted or merged-away item).
    fn delete(&mut self, k: u64, q: Qid) {
        self.deleted_lines.insert(k);
        self.deleted.insert(q);
    }

    /// Remove the Korean label of item `q`, on line `k`.
    fn drop_korean_label(&mut self, k: u64, q: Qid, edit: &mut Edit) {
        self.ops
            .entry(k)
            .or_default()
            .push(LineOp::Label("ko", None));
        self.dropped.insert(EntityId::Item(q));
        edit.language = Some("ko".into());
    }

    /// Is line `k` of the first version left out of the later one?
    fn skips(&self, k: u64) -> bool {
        self.deleted_lines.contains(&k)
    }
}

impl Model {
    /// The popularity rank of an item id of this dump (None for ids that are not in it).
    pub(super) fn item_rank(&self, q: Qid) -> Option<u64> {
        let r = q.0.checked_sub(1)? / 5;
        (r < self.n_items && self.item_id(r) == q).then_some(r)
    }

    /// The line of item `r` (the r-th line that is not a property or a lexeme).
    pub(super) fn item_line(&self, r: u64) -> u64 {
        // k = r + (special lines at or before k): a fixed point, reached from below in a few steps.
        let mut k = r;
        loop {
            let before = self.special.partition_point(|s| s.0 <= k) as u64;
            if r + before == k {
                return k;
            }
            k = r + before;
        }
    }

    /// The line of property `props[j]`.
    pub(super) fn property_line(&self, j: usize) -> Option<u64> {
        self.special
            .iter()
            .find(|s| s.1 == Kind::Property(j))
            .map(|s| s.0)
    }

    /// The line of an entity of the dump.
    fn line_of(&self, e: EntityId) -> Option<u64> {
        match e {
            EntityId::Item(q) => self.item_rank(q).map(|r| self.item_line(r)),
            EntityId::Property(p) => self.property_line(self.props.iter().position(|d| d.id == p)?),
        }
    }

    fn is_labelled(&self, e: EntityId) -> bool {
        match e {
            EntityId::Item(q) => self
                .item_rank(q)
                .is_some_and(|r| self.labelled(EntityIndex::Item(r))),
            EntityId::Property(p) => self
                .props
                .iter()
                .position(|d| d.id == p)
                .is_some_and(|j| self.labelled(EntityIndex::Prop(j))),
        }
    }

    fn prop(&self, p: Pid) -> Option<&PropDef> {
        self.props.iter().find(|d| d.id == p)
    }
}

/// Line `k` of the first version, parsed.
fn parsed_line(m: &Model, k: u64) -> serde_json::Value {
    let mut out = Vec::new();
    entity_line(m, k, &mut out, &mut BlockTruth::default());
    serde_json::from_slice(&out).expect("the generator writes JSON")
}

/// The explicit label of a parsed line in `lang`.
fn label_in<'a>(line: &'a serde_json::Value, lang: &str) -> Option<&'a str> {
    line["labels"][lang]["value"]
        .as_str()
        .filter(|s| !s.is_empty())
}

/// A deterministic order over the benchmark for one kind: by a hash of (seed, kind, statement).
fn shuffled(bench: &[Distortion], seed: u64, kind: EditKind) -> Vec<usize> {
    let h = |s: &str| {
        s.bytes()
            .fold(splitmix(seed ^ ((kind as u64) << 40)), |a, b| {
                splitmix(a ^ u64::from(b))
            })
    };
    let mut order: Vec<(u64, usize)> = bench
        .iter()
        .enumerate()
        .map(|(i, st)| (h(&st.statement_id), i))
        .collect();
    order.sort_unstable();
    order.into_iter().map(|x| x.1).collect()
}

/// Choose the edits of a later version for a benchmark of the first version of `m`'s world.
fn plan(m: &Model, bench: &[Distortion], lc: &LaterConfig) -> Result<Plan> {
    // The benchmark must come from this world: every entity of it an item or property labelled here.
    for st in bench {
        for e in [
            EntityId::Item(st.subject),
            EntityId::Property(st.property),
            EntityId::Item(st.object),
        ] {
            if !m.is_labelled(e) {
                return Err(Error::Config(format!(
                    "statement {} names {e}, which is not a labelled entity of this generated dump: give \
                     `sword synth --later-of` the --entities, --seed and --config that made the old run's dump",
                    st.statement_id
                )));
            }
        }
    }
    let mut degree: HashMap<Qid, u64> = HashMap::new();
    let mut per_property: BTreeMap<Pid, u64> = BTreeMap::new();
    for st in bench {
        *degree.entry(st.subject).or_default() += 1;
        *degree.entry(st.object).or_default() += 1;
        *per_property.entry(st.property).or_default() += 1;
    }
    let last_line = m.cfg.entities.saturating_sub(1);
    let mut rng = ChaCha8Rng::seed_from_u64(splitmix(lc.seed ^ 0x1A7E5));
    let mut plan = Plan::default();
    let roles = match &lc.old_run {
        Some(old) if lc.per_kind > 0 => Some(RoleTriples::read(old, bench)?),
        _ => None,
    };
    let originals: HashSet<(Qid, Pid, Qid)> = bench
        .iter()
        .filter(|st| st.strategy == Strategy::ORG)
        .map(|st| (st.subject, st.property, st.object))
        .collect();
    let mut used: HashSet<Qid> = HashSet::new();
    let free = |used: &HashSet<Qid>, st: &Distortion| {
        !used.contains(&st.subject) && !used.contains(&st.object)
    };
    for kind in EditKind::ALL {
        let want = if kind == EditKind::RenameProperty {
            lc.per_kind.min(1)
        } else {
            lc.per_kind
        };
        // Candidates: statements of the benchmark this kind can aim at, the ones whose edited entity few other
        // statements name first.
        let order = shuffled(bench, lc.seed, kind);
        let edited = |st: &Distortion| -> Qid {
            match kind {
                EditKind::Delete => st.replacement_entity.unwrap_or(st.subject),
                EditKind::AddSymmetric | EditKind::AddInverse | EditKind::Rename => st.object,
                EditKind::LeavePool if st.strategy == Strategy::POS => st.object,
                _ => st.subject,
            }
        };
        let mut candidates: Vec<usize> = order
            .into_iter()
            .filter(|&i| {
                let st = &bench[i];
                let p = m.prop(st.property);
                match kind {
                    EditKind::Delete => st.replacement_entity.is_some(),
                    EditKind::RemoveStatement | EditKind::Deprecate => st.strategy == Strategy::ORG,
                    EditKind::AddDirect => st.strategy != Strategy::ORG,
                    EditKind::AddSymmetric => {
                        st.strategy != Strategy::ORG
                            && p.is_some_and(|p| p.symmetric_p31 || p.symmetric_constraint)
                    }
                    EditKind::AddInverse => {
                        st.strategy != Strategy::ORG && p.is_some_and(|p| !p.inverse.is_empty())
                    }
                    EditKind::AddTransitive => {
                        st.strategy != Strategy::ORG && p.is_some_and(|p| p.transitive)
                    }
                    EditKind::LeavePool => matches!(st.strategy, Strategy::PSS | Strategy::POS),
                    _ => true,
                }
            })
            .collect();
        if kind == EditKind::RenameProperty {
            // The property with the fewest statements in the benchmark (its statements all change).
            candidates.sort_by_key(|&i| per_property[&bench[i].property]);
        } else {
            candidates.sort_by_key(|&i| degree[&edited(&bench[i])]);
        }
        let mut made = 0;
        for i in candidates {
            if made == want {
                break;
            }
            let st = &bench[i];
            if !free(&used, st) {
                continue;
            }
            let e = edited(st);
            let Some(k) = m.line_of(EntityId::Item(e)) else {
                continue;
            };
            if kind == EditKind::Delete && k == last_line {
                // The last line carries no comma; keeping it keeps the layout of the dump simple.
                continue;
            }
            let key = (st.subject, st.property, st.object);
            let triple = |(s, p, o): (Qid, Pid, Qid)| [s.to_string(), p.to_string(), o.to_string()];
            let mut edit = Edit {
                kind,
                target: st.statement_id.clone(),
                entity: e.to_string(),
                statements: Vec::new(),
                language: None,
                text: None,
            };
            match kind {
                EditKind::Delete => plan.delete(k, e),
                EditKind::DropLabel => plan.drop_korean_label(k, e, &mut edit),
                EditKind::RemoveStatement | EditKind::Deprecate => {
                    let op = if kind == EditKind::Deprecate {
                        plan.deprecated.insert(key);
                        LineOp::Deprecate(st.property, st.object)
                    } else {
                        plan.removed.insert(key);
                        LineOp::Remove(st.property, st.object)
                    };
                    plan.ops.entry(k).or_default().push(op);
                    edit.statements.push(triple(key));
                }
                EditKind::AddDirect | EditKind::AddSymmetric | EditKind::AddInverse => {
                    let (s, p, o) = match kind {
                        EditKind::AddDirect => key,
                        EditKind::AddSymmetric => (st.object, st.property, st.subject),
                        _ => {
                            let inv = m.prop(st.property).map(|d| d.inverse[0]);
                            (st.object, inv.expect("filtered on inverses"), st.subject)
                        }
                    };
                    plan.ops
                        .entry(k)
                        .or_default()
                        .push(LineOp::Add(p, o, new_guid(&mut rng, s)));
                    plan.added.push((s, p, o));
                    edit.statements.push(triple((s, p, o)));
                }
                EditKind::AddTransitive => {
                    // (S', P, M) and (M, P, O'), M an unlabelled item no statement of the benchmark names.
                    let Some((mid, mk)) = pick_middle(m, &mut rng, &degree, &used, last_line)
                    else {
                        continue;
                    };
                    let (s, p, o) = key;
                    for (a, b, line) in [(s, mid, k), (mid, o, mk)] {
                        plan.ops.entry(line).or_default().push(LineOp::Add(
                            p,
                            b,
                            new_guid(&mut rng, a),
                        ));
                        plan.added.push((a, p, b));
                        edit.statements.push(triple((a, p, b)));
                    }
                    used.insert(mid);
                }
                EditKind::LeavePool => {
                    // Every final triple that holds the replacement in its role, if there are few, none an
                    // original of the benchmark and none naming an entity another edit touched.
                    let Some(gone) = roles.as_ref().and_then(|r| r.of(st)) else {
                        continue;
                    };
                    if gone.is_empty()
                        || gone.iter().any(|&(a, _, b)| {
                            originals.contains(&(a, st.property, b))
                                || (a != e && used.contains(&a))
                                || (b != e && used.contains(&b))
                        })
                    {
                        continue;
                    }
                    let lines: Option<Vec<u64>> = gone
                        .iter()
                        .map(|&(a, _, _)| m.line_of(EntityId::Item(a)))
                        .collect();
                    let Some(lines) = lines else {
                        continue;
                    };
                    for (&(a, p, b), line) in gone.iter().zip(lines) {
                        plan.ops.entry(line).or_default().push(LineOp::Remove(p, b));
                        plan.removed.insert((a, p, b));
                        edit.statements.push(triple((a, p, b)));
                    }
                }
                EditKind::Rename | EditKind::RenameProperty | EditKind::Describe => {
                    let target = if kind == EditKind::RenameProperty {
                        EntityId::Property(st.property)
                    } else {
                        EntityId::Item(e)
                    };
                    let Some(line_k) = m.line_of(target) else {
                        continue;
                    };
                    text_edit(m, &mut rng, &mut plan, kind, target, line_k, &mut edit);
                }
            }
            used.insert(st.subject);
            used.insert(st.object);
            used.insert(e);
            plan.edits.push(edit);
            made += 1;
        }
        if made < want {
            plan.unmade.insert(kind, (want - made) as u64);
            if kind == EditKind::LeavePool && roles.is_none() {
                progress::log(
                    "synth: no leave_pool edits: they read the old run's triples.parquet, and no old run was given",
                );
            }
        }
    }
    if lc.world_per_kind > 0 {
        plan.unmade_world = plan_world(
            m,
            &mut plan,
            lc.world_per_kind,
            &degree,
            &mut used,
            &mut rng,
            last_line,
        );
    }
    Ok(plan)
}

/// A label or description edit of `target`, whose line is `line_k`: `describe` gives it another English
/// description, `rename` and `rename_property` another label in a language it has one in (ko and ja always).
fn text_edit(
    m: &Model,
    rng: &mut ChaCha8Rng,
    plan: &mut Plan,
    kind: EditKind,
    target: EntityId,
    line_k: u64,
    edit: &mut Edit,
) {
    let line = parsed_line(m, line_k);
    let op = if kind == EditKind::Describe {
        let old = line["descriptions"]["en"]["value"].as_str().unwrap_or("");
        let text = loop {
            let t = format!("{} (revised)", latin_name(rng, 2).to_lowercase());
            if t != old {
                break t;
            }
        };
        edit.language = Some("en".into());
        edit.text = Some(text.clone());
        LineOp::Description("en", text)
    } else {
        let langs: Vec<&'static str> = SWORD_LANGS
            .into_iter()
            .filter(|l| label_in(&line, l).is_some())
            .collect();
        let lang = langs[rng.random_range(0..langs.len())];
        let old = label_in(&line, lang).unwrap_or("");
        let text = loop {
            let t = script_name(lang, &latin_name(rng, 2), rng);
            if t != old && !t.is_empty() {
                break t;
            }
        };
        plan.renamed.insert(target);
        edit.language = Some(lang.into());
        edit.text = Some(text.clone());
        LineOp::Label(lang, Some(text))
    };
    plan.ops.entry(line_k).or_default().push(op);
    edit.entity = target.to_string();
}

/// The item-valued statements `(P, O)` of a parsed line, in the order of its claims.
fn item_statements(line: &serde_json::Value) -> Vec<(Pid, Qid)> {
    let mut out = Vec::new();
    if let Some(claims) = line["claims"].as_object() {
        for (key, sts) in claims {
            let Some(p) = key.strip_prefix('P').and_then(|n| n.parse().ok()) else {
                continue;
            };
            for st in sts.as_array().into_iter().flatten() {
                let v = &st["mainsnak"]["datavalue"]["value"];
                if let (Some("item"), Some(o)) =
                    (v["entity-type"].as_str(), v["numeric-id"].as_u64())
                {
                    out.push((Pid(p), Qid(o)));
                }
            }
        }
    }
    out
}

/// Random items tried per edit beyond the benchmark before the kind's shortfall counts as unmade (an item is
/// labelled with a chance of about 1 in 77 at the full size's proportions, and an edit may need two).
const WORLD_TRIES_PER_EDIT: usize = 20_000;

/// A labelled item that `free` accepts, on a line no edit changed and other than `last_line`, drawn at
/// random, each draw taken from `budget` (none left: `None`): its id and line.
fn free_labelled_item(
    m: &Model,
    plan: &Plan,
    rng: &mut ChaCha8Rng,
    free: impl Fn(Qid) -> bool,
    last_line: u64,
    budget: &mut usize,
) -> Option<(Qid, u64)> {
    while *budget > 0 {
        *budget -= 1;
        let r = rng.random_range(0..m.n_items.max(1));
        let q = m.item_id(r);
        if !m.labelled(EntityIndex::Item(r)) || !free(q) {
            continue;
        }
        let k = m.item_line(r);
        if k != last_line && !plan.ops.contains_key(&k) && !plan.deleted_lines.contains(&k) {
            return Some((q, k));
        }
    }
    None
}

/// The edits beyond the benchmark (`LaterConfig::world_per_kind` of each kind but `rename_property`): what
/// most of a month of Wikidata is. Each edits labelled items that no statement of the benchmark names and no
/// other edit touched (so it changes what extract keeps, and no line is edited twice), in the manner of its
/// kind: a line deleted, a Korean label dropped, a final triple removed or deprecated, every statement of one
/// property removed from a line (its subject leaves that property's pool), a statement added between two such
/// items with any labelled item property, a symmetric one, the inverse of one that has an inverse, or a
/// transitive one through an unlabelled middle item, a label or an English description changed. The
/// benchmark's statuses can still change through them (a pool emptied by a removal elsewhere, a chain a new
/// transitive statement completes); the expected statuses are computed after all edits, as for any edit.
/// Each edit's `target` is empty. Returns the kinds that found fewer entities than asked, with the shortfall.
fn plan_world(
    m: &Model,
    plan: &mut Plan,
    n: usize,
    named: &HashMap<Qid, u64>,
    used: &mut HashSet<Qid>,
    rng: &mut ChaCha8Rng,
    last_line: u64,
) -> BTreeMap<EditKind, u64> {
    let mut unmade = BTreeMap::new();
    // Labelled item properties of each class, by index into `m.props`.
    let props = |f: &dyn Fn(&PropDef) -> bool| -> Vec<Pid> {
        m.props
            .iter()
            .enumerate()
            .filter(|(j, d)| {
                d.datatype == "wikibase-item" && m.labelled(EntityIndex::Prop(*j)) && f(d)
            })
            .map(|(_, d)| d.id)
            .collect()
    };
    let any = props(&|_| true);
    let symmetric = props(&|d| d.symmetric_p31 || d.symmetric_constraint);
    let inverse = props(&|d| !d.inverse.is_empty());
    let transitive = props(&|d| d.transitive);
    let free = |q: Qid, used: &HashSet<Qid>| !named.contains_key(&q) && !used.contains(&q);
    for kind in EditKind::ALL {
        if kind == EditKind::RenameProperty {
            continue;
        }
        let mut made = 0;
        // A budget of draws for the kind, spent by the subjects and objects it tries.
        let mut budget = n.saturating_mul(WORLD_TRIES_PER_EDIT);
        while made < n {
            // A labelled item no edit touched, on a line no edit changed.
            let Some((q, k)) =
                free_labelled_item(m, plan, rng, |x| free(x, used), last_line, &mut budget)
            else {
                break;
            };
            let mut edit = Edit {
                kind,
                target: String::new(),
                entity: q.to_string(),
                statements: Vec::new(),
                language: None,
                text: None,
            };
            let triple = |(s, p, o): (Qid, Pid, Qid)| [s.to_string(), p.to_string(), o.to_string()];
            let mut touched = vec![q];
            match kind {
                EditKind::Delete => plan.delete(k, q),
                EditKind::DropLabel => plan.drop_korean_label(k, q, &mut edit),
                EditKind::RemoveStatement | EditKind::Deprecate | EditKind::LeavePool => {
                    // A final triple of the line: its property and object labelled, the object free.
                    // leave_pool: every statement of P on the line, so the subject leaves P's pool.
                    let sts = item_statements(&parsed_line(m, k));
                    let objects_of = |p: Pid| -> Vec<Qid> {
                        let mut v: Vec<Qid> =
                            sts.iter().filter(|s| s.0 == p).map(|s| s.1).collect();
                        v.sort_unstable();
                        v.dedup();
                        v
                    };
                    let Some(&(p, o)) = sts.iter().find(|&&(p, o)| {
                        free(o, used)
                            && o != q
                            && m.is_labelled(EntityId::Item(o))
                            && m.is_labelled(EntityId::Property(p))
                            && (kind != EditKind::LeavePool
                                || objects_of(p).iter().all(|&x| x != q && free(x, used)))
                    }) else {
                        continue;
                    };
                    let objects = if kind == EditKind::LeavePool {
                        objects_of(p)
                    } else {
                        vec![o]
                    };
                    for &x in &objects {
                        if kind == EditKind::Deprecate {
                            plan.deprecated.insert((q, p, x));
                            plan.ops.entry(k).or_default().push(LineOp::Deprecate(p, x));
                        } else {
                            plan.removed.insert((q, p, x));
                            plan.ops.entry(k).or_default().push(LineOp::Remove(p, x));
                        }
                        edit.statements.push(triple((q, p, x)));
                    }
                    touched.extend(objects);
                }
                EditKind::AddDirect
                | EditKind::AddSymmetric
                | EditKind::AddInverse
                | EditKind::AddTransitive => {
                    let class = match kind {
                        EditKind::AddDirect => &any,
                        EditKind::AddSymmetric => &symmetric,
                        EditKind::AddInverse => &inverse,
                        _ => &transitive,
                    };
                    if class.is_empty() {
                        break;
                    }
                    let mut p = class[rng.random_range(0..class.len())];
                    if kind == EditKind::AddInverse {
                        p = m.prop(p).map_or(p, |d| d.inverse[0]);
                    }
                    // The object: another labelled, free item, not already an object of P on the line.
                    let Some((o, _)) = free_labelled_item(
                        m,
                        plan,
                        rng,
                        |x| x != q && free(x, used),
                        u64::MAX,
                        &mut budget,
                    ) else {
                        break;
                    };
                    if item_statements(&parsed_line(m, k)).contains(&(p, o)) {
                        continue;
                    }
                    let mut chain = vec![(q, p, o, k)];
                    if kind == EditKind::AddTransitive {
                        let Some((mid, mk)) = pick_middle(m, rng, named, used, last_line) else {
                            continue;
                        };
                        if plan.ops.contains_key(&mk) || plan.deleted_lines.contains(&mk) {
                            continue;
                        }
                        chain = vec![(q, p, mid, k), (mid, p, o, mk)];
                        touched.push(mid);
                    }
                    for (a, p, b, line) in chain {
                        plan.ops
                            .entry(line)
                            .or_default()
                            .push(LineOp::Add(p, b, new_guid(rng, a)));
                        plan.added.push((a, p, b));
                        edit.statements.push(triple((a, p, b)));
                    }
                    touched.push(o);
                }
                EditKind::Rename | EditKind::Describe => {
                    text_edit(m, rng, plan, kind, EntityId::Item(q), k, &mut edit);
                }
                EditKind::RenameProperty => unreachable!("skipped above"),
            }
            used.extend(touched);
            plan.edits.push(edit);
            made += 1;
        }
        if made < n {
            unmade.insert(kind, (n - made) as u64);
        }
    }
    unmade
}

/// An unlabelled item that no statement of the benchmark names and no edit touched yet, with its line.
fn pick_middle(
    m: &Model,
    rng: &mut ChaCha8Rng,
    degree: &HashMap<Qid, u64>,
    used: &HashSet<Qid>,
    last_line: u64,
) -> Option<(Qid, u64)> {
    for _ in 0..10_000 {
        let r = rng.random_range(0..m.n_items.max(1));
        let q = m.item_id(r);
        let k = m.item_line(r);
        if !m.labelled(EntityIndex::Item(r))
            && !degree.contains_key(&q)
            && !used.contains(&q)
            && k != last_line
        {
            return Some((q, k));
        }
    }
    None
}

/// A statement GUID in Wikidata's shape, `Q42$8AB2…`.
fn new_guid(rng: &mut ChaCha8Rng, subject: Qid) -> String {
    let (a, b, c, d, e): (u32, u16, u16, u16, u64) = (
        rng.random(),
        rng.random(),
        rng.random(),
        rng.random(),
        rng.random(),
    );
    format!(
        "{subject}${a:08X}-{b:04X}-{c:04X}-{d:04X}-{:012X}",
        e & 0xFFFF_FFFF_FFFF
    )
}

/// Does the statement value of `st` name item `o`?
fn names_item(st: &serde_json::Value, o: Qid) -> bool {
    let v = &st["mainsnak"]["datavalue"]["value"];
    v["entity-type"] == "item" && v["numeric-id"].as_u64() == Some(o.0)
}

/// `{}` in place of a `[]` written for an empty map (the 2015 serialisation), so keys can be added.
fn as_object<'a>(
    v: &'a mut serde_json::Value,
    key: &str,
) -> &'a mut serde_json::Map<String, serde_json::Value> {
    if !v[key].is_object() {
        v[key] = serde_json::Value::Object(Default::default());
    }
    v[key].as_object_mut().expect("made an object")
}

/// Apply the edits of one line.
fn apply(line: &mut serde_json::Value, ops: &[LineOp]) {
    use serde_json::{json, Value};
    for op in ops {
        match op {
            LineOp::Label(lang, Some(text)) => {
                as_object(line, "labels")
                    .insert(lang.to_string(), json!({"language": lang, "value": text}));
            }
            LineOp::Label(lang, None) => {
                as_object(line, "labels").remove(*lang);
            }
            LineOp::Description(lang, text) => {
                as_object(line, "descriptions")
                    .insert(lang.to_string(), json!({"language": lang, "value": text}));
            }
            LineOp::Remove(p, o) | LineOp::Deprecate(p, o) => {
                let claims = as_object(line, "claims");
                let key = p.to_string();
                if let Some(Value::Array(sts)) = claims.get_mut(&key) {
                    if matches!(op, LineOp::Remove(..)) {
                        sts.retain(|st| !names_item(st, *o));
                    } else {
                        for st in sts.iter_mut().filter(|st| names_item(st, *o)) {
                            st["rank"] = json!("deprecated");
                        }
                    }
                    if sts.is_empty() {
                        claims.remove(&key);
                    }
                }
            }
            LineOp::Add(p, o, guid) => {
                let st = json!({
                    "mainsnak": {
                        "snaktype": "value",
                        "property": p.to_string(),
                        "datavalue": {
                            "value": {"entity-type": "item", "numeric-id": o.0, "id": o.to_string()},
                            "type": "wikibase-entityid"
                        },
                        "datatype": "wikibase-item"
                    },
                    "type": "statement",
                    "id": guid,
                    "rank": "normal"
                });
                let claims = as_object(line, "claims");
                match claims.get_mut(&p.to_string()) {
                    Some(Value::Array(sts)) => sts.push(st),
                    _ => {
                        claims.insert(p.to_string(), Value::Array(vec![st]));
                    }
                }
            }
        }
    }
}

/// Lines `start..end` of the later version (the first version's oracle for all of them, deleted lines
/// included: the later oracle is derived from it), in the dump layout.
pub(super) fn block_bytes(m: &Model, plan: &Plan, start: u64, end: u64) -> (Vec<u8>, BlockTruth) {
    let mut out = Vec::with_capacity(((end - start) * 2048) as usize);
    let mut t = BlockTruth::default();
    let mut line = Vec::new();
    for k in start..end {
        line.clear();
        entity_line(m, k, &mut line, &mut t);
        if plan.skips(k) {
            continue;
        }
        match plan.ops.get(&k) {
            Some(ops) => {
                let mut v: serde_json::Value =
                    serde_json::from_slice(&line).expect("the generator writes JSON");
                apply(&mut v, ops);
                serde_json::to_writer(&mut out, &v).expect("JSON to memory");
            }
            None => out.extend_from_slice(&line),
        }
        if k + 1 < m.cfg.entities {
            out.extend_from_slice(b",\n");
        }
    }
    (out, t)
}

/// The status a statement of the old benchmark should get against the later version.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Expected {
    pub statement_id: String,
    pub strategy: String,
    /// `valid`, `label_changed`, `original_removed`, `distortion_now_true`, `definition_broken`,
    /// `entity_missing` or `label_missing`.
    pub status: String,
    /// For `distortion_now_true`, the guard that finds it true, as distort names it (`exists`,
    /// `subject_has_value`, `symmetric`, `inverse`, `transitive`); empty otherwise.
    pub guard: String,
}

/// What a later version holds: its oracle (as for a first version), the edits and the expected statuses.
#[derive(Clone, Debug)]
pub struct LaterTruth {
    pub truth: Truth,
    pub edits: Vec<Edit>,
    pub unmade: BTreeMap<EditKind, u64>,
    /// See [`Plan::unmade_world`].
    pub unmade_world: BTreeMap<EditKind, u64>,
    /// One per statement of the old benchmark, in its order.
    pub expected: Vec<Expected>,
}

/// The later version's oracle: the first version's, changed by the edits.
fn later_truth(m: &Model, v1: &Truth, plan: &Plan) -> Truth {
    let gone =
        |s: Qid, p: Pid, o: Qid| plan.deleted.contains(&s) || plan.removed.contains(&(s, p, o));
    let mut t = v1.clone();
    let deleted_items: Vec<EntityId> = plan.deleted.iter().map(|&q| EntityId::Item(q)).collect();
    for e in deleted_items.iter().chain(&plan.dropped) {
        if t.labelled.remove(e) {
            let mul_only = match *e {
                EntityId::Item(q) => m.item_rank(q).is_some_and(|r| m.item_profile(r).mul_only()),
                EntityId::Property(_) => false,
            };
            t.mul_only -= u64::from(mul_only);
        }
    }
    t.entities -= plan.deleted.len() as u64;
    t.items -= plan.deleted.len() as u64;
    t.stated.retain(|&(s, p, o)| !gone(s, p, o));
    t.stated.extend(plan.added.iter().copied());
    t.item_statements = t.stated.len() as u64;
    let lab = |e: EntityId| t.labelled.contains(&e);
    let labelled3 = |s: Qid, p: Pid, o: Qid| {
        lab(EntityId::Item(s)) && lab(EntityId::Property(p)) && lab(EntityId::Item(o))
    };
    let mut triples: BTreeMap<(Qid, Pid, Qid), Rank> = v1
        .triples
        .iter()
        .filter(|(&(s, p, o), _)| {
            !gone(s, p, o) && !plan.deprecated.contains(&(s, p, o)) && labelled3(s, p, o)
        })
        .map(|(k, r)| (*k, *r))
        .collect();
    let mut statements: BTreeSet<(Qid, Pid, Qid)> = v1
        .statements
        .iter()
        .filter(|&&(s, p, o)| !gone(s, p, o) && lab(EntityId::Item(s)) && lab(EntityId::Item(o)))
        .copied()
        .collect();
    let mut transitive: BTreeMap<(Qid, Pid, Qid), Rank> = v1
        .transitive
        .iter()
        .filter(|(&(s, p, o), _)| !gone(s, p, o))
        .map(|(&k, &r)| {
            (
                k,
                if plan.deprecated.contains(&k) {
                    Rank::Deprecated
                } else {
                    r
                },
            )
        })
        .collect();
    for &(s, p, o) in &plan.added {
        let key = (s, p, o);
        let def = m.prop(p);
        let partner_labelled =
            def.is_some_and(|d| d.inverse.iter().any(|&q| lab(EntityId::Property(q))));
        if lab(EntityId::Item(s))
            && lab(EntityId::Item(o))
            && (lab(EntityId::Property(p)) || partner_labelled)
        {
            statements.insert(key);
            if lab(EntityId::Property(p)) {
                let r = triples.entry(key).or_insert(Rank::Normal);
                *r = (*r).max(Rank::Normal);
            }
        }
        if def.is_some_and(|d| d.transitive) {
            let r = transitive.entry(key).or_insert(Rank::Normal);
            *r = (*r).max(Rank::Normal);
        }
    }
    t.triples = triples;
    t.statements = statements;
    t.transitive = transitive;
    t
}

/// The status of every statement of the old benchmark against the later version (see docs/versions.md for
/// the precedence): from the later oracle and its closure, not from the dump.
fn expected_statuses(m: &Model, later: &Truth, plan: &Plan, bench: &[Distortion]) -> Vec<Expected> {
    let closure = later.closure();
    let present = |q: Qid| m.item_rank(q).is_some() && !plan.deleted.contains(&q);
    // The pools distort draws PSS and POS from: the subjects, the objects of P among the final triples.
    let subjects: HashSet<(Pid, Qid)> = later.triples.keys().map(|&(s, p, _)| (p, s)).collect();
    let objects: HashSet<(Pid, Qid)> = later.triples.keys().map(|&(_, p, o)| (p, o)).collect();
    bench
        .iter()
        .map(|st| {
            let (s, p, o) = (st.subject, st.property, st.object);
            let ids = [EntityId::Item(s), EntityId::Property(p), EntityId::Item(o)];
            let mut guard = String::new();
            let status = if !present(s) || !present(o) {
                "entity_missing"
            } else if ids.iter().any(|e| !later.labelled.contains(e)) {
                "label_missing"
            } else if st.strategy == Strategy::ORG {
                if later.triples.contains_key(&(s, p, o)) {
                    if ids.iter().any(|e| plan.renamed.contains(e)) {
                        "label_changed"
                    } else {
                        "valid"
                    }
                } else {
                    "original_removed"
                }
            } else if let Some(why) = closure.why(s, p, o) {
                guard = match why {
                    "stated" if matches!(st.strategy, Strategy::OS | Strategy::POS) => {
                        "subject_has_value"
                    }
                    "stated" => "exists",
                    other => other,
                }
                .to_string();
                "distortion_now_true"
            } else if (st.strategy == Strategy::PSS && !subjects.contains(&(p, s)))
                || (st.strategy == Strategy::POS && !objects.contains(&(p, o)))
            {
                "definition_broken"
            } else if ids.iter().any(|e| plan.renamed.contains(e)) {
                "label_changed"
            } else {
                "valid"
            };
            Expected {
                statement_id: st.statement_id.clone(),
                strategy: st.strategy.as_str().to_string(),
                status: status.to_string(),
                guard,
            }
        })
        .collect()
}

/// Write the later version of `cfg`'s dump for the benchmark `bench` to `w` in `format` (`path` names the
/// destination in errors). With `full`, the whole later oracle and the expected statuses are returned (their
/// sets grow with the dump); otherwise only the first version's sizes, in memory that does not grow with it.
/// The blocks are made on `threads` worker threads; no byte depends on it.
#[allow(clippy::too_many_arguments)]
pub fn generate_later_as<W: Write>(
    cfg: &Config,
    threads: usize,
    lc: &LaterConfig,
    bench: &[Distortion],
    w: W,
    format: Format,
    path: &Path,
    full: bool,
) -> Result<(Option<LaterTruth>, Counts)> {
    writer::check(cfg)?;
    let m = Model::new(cfg);
    let plan = plan(&m, bench, lc)?;
    for (kind, n) in &plan.unmade {
        let why = if *kind == EditKind::LeavePool {
            format!(
                " (a PSS / POS whose replacement holds its property in its role in 1 to {LEAVE_POOL_MAX} \
                 final triples, none of them an original, naming no entity another edit touched)"
            )
        } else {
            String::new()
        };
        progress::log(format!(
            "synth: {n} of the {} {} edit(s) asked for found no statement of the benchmark to aim at{why}",
            if *kind == EditKind::RenameProperty { lc.per_kind.min(1) } else { lc.per_kind },
            kind.as_str()
        ));
    }
    if lc.world_per_kind > 0 {
        let made = plan.edits.iter().filter(|e| e.target.is_empty()).count();
        progress::log(format!(
            "synth: {made} edit(s) beyond the benchmark ({} of each kind asked, rename_property aside)",
            lc.world_per_kind
        ));
        for (kind, n) in &plan.unmade_world {
            progress::log(format!(
                "synth: {n} of the {} {} edit(s) beyond the benchmark found no labelled item to edit that neither the benchmark nor another edit names",
                lc.world_per_kind,
                kind.as_str()
            ));
        }
    }
    let (v1, counts) = writer::stream_with(cfg, threads, w, format, path, full, Some(&plan))?;
    if !full {
        return Ok((None, counts));
    }
    let truth = later_truth(&m, &v1, &plan);
    let expected = expected_statuses(&m, &truth, &plan, bench);
    let counts = truth.counts();
    Ok((
        Some(LaterTruth {
            truth,
            edits: plan.edits,
            unmade: plan.unmade,
            unmade_world: plan.unmade_world,
            expected,
        }),
        counts,
    ))
}

/// Write the later version as a plain JSON dump to `w` and return its whole oracle (tests).
pub fn generate_later<W: Write>(
    cfg: &Config,
    threads: usize,
    lc: &LaterConfig,
    bench: &[Distortion],
    w: W,
) -> Result<LaterTruth> {
    let (t, _) = generate_later_as(
        cfg,
        threads,
        lc,
        bench,
        w,
        Format::Json,
        Path::new("-"),
        true,
    )?;
    Ok(t.expect("full oracle asked for"))
}

/// Write the later version to `path` atomically, in the format its extension names.
pub fn write_later_file(
    cfg: &Config,
    threads: usize,
    lc: &LaterConfig,
    bench: &[Distortion],
    path: &Path,
    full: bool,
) -> Result<(Option<LaterTruth>, Counts)> {
    let format = Format::from_path(path)?;
    writer::ensure_parent(path)?;
    let mut file = AtomicFile::create(path)?;
    let got = generate_later_as(cfg, threads, lc, bench, &mut file, format, path, full)?;
    file.commit()?;
    Ok(got)
}

/// The later oracle as JSON: the first version's fields (see [`truth_json`]) for the later dump, the edits,
/// the kinds that found no statement to aim at, and the expected status of every statement of the old
/// benchmark.
pub fn later_truth_json(t: &LaterTruth) -> serde_json::Value {
    let by_kind = |m: &BTreeMap<EditKind, u64>| {
        let named: BTreeMap<&str, u64> = m.iter().map(|(k, n)| (k.as_str(), *n)).collect();
        serde_json::to_value(named).expect("counts serialise")
    };
    let mut doc = truth_json(&t.truth);
    doc["edits"] = serde_json::to_value(&t.edits).expect("edits serialise");
    doc["unmade"] = by_kind(&t.unmade);
    doc["unmade_world"] = by_kind(&t.unmade_world);
    doc["expected"] = serde_json::to_value(&t.expected).expect("statuses serialise");
    doc
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn item_lines_and_property_lines_are_where_the_model_puts_them() {
        let m = Model::new(&Config {
            entities: 3000,
            seed: 4,
            ..Config::default()
        });
        for k in 0..m.cfg.entities {
            match m.kind(k) {
                Kind::Item(r) => {
                    assert_eq!(m.item_line(r), k);
                    assert_eq!(m.item_rank(m.item_id(r)), Some(r));
                }
                Kind::Property(j) => assert_eq!(m.property_line(j), Some(k)),
                Kind::Lexeme(_) => {}
            }
        }
        assert_eq!(m.item_rank(m.dangling_id(7, 1)), None);
        assert_eq!(m.item_rank(Qid(0)), None);
    }

    #[test]
    fn edits_apply_to_both_serialisations() {
        let st = |o: u64, rank: &str| {
            json!({"mainsnak": {"snaktype": "value", "property": "P47", "datavalue": {"value":
                {"entity-type": "item", "numeric-id": o}, "type": "wikibase-entityid"}},
                "type": "statement", "rank": rank, "id": format!("Q1$x{o}")})
        };
        let mut line = json!({"type": "item", "id": "Q1", "labels": {"ko": {"language": "ko", "value": "가"},
            "en": {"language": "en", "value": "a"}}, "descriptions": [],
            "claims": {"P47": [st(5, "normal"), st(6, "normal"), st(5, "preferred")], "P17": [st(9, "normal")]}});
        apply(
            &mut line,
            &[
                LineOp::Label("ko", None),
                LineOp::Label("en", Some("b".into())),
                LineOp::Description("en", "d".into()),
                LineOp::Remove(Pid(47), Qid(5)),
                LineOp::Deprecate(Pid(17), Qid(9)),
                LineOp::Add(Pid(150), Qid(3), "Q1$G".into()),
                LineOp::Add(Pid(47), Qid(4), "Q1$H".into()),
            ],
        );
        assert!(line["labels"].get("ko").is_none());
        assert_eq!(line["labels"]["en"]["value"], "b");
        assert_eq!(line["descriptions"]["en"]["value"], "d");
        let p47: Vec<u64> = line["claims"]["P47"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| {
                s["mainsnak"]["datavalue"]["value"]["numeric-id"]
                    .as_u64()
                    .unwrap()
            })
            .collect();
        assert_eq!(p47, vec![6, 4]);
        assert_eq!(line["claims"]["P17"][0]["rank"], "deprecated");
        assert_eq!(line["claims"]["P150"][0]["id"], "Q1$G");
        assert_eq!(
            line["claims"]["P150"][0]["mainsnak"]["datavalue"]["value"]["id"],
            "Q3"
        );
        // The 2015 serialisation writes empty maps as `[]`; removing a claim's last statement removes it.
        let mut legacy = json!({"type": "item", "id": "Q2", "labels": [], "claims": []});
        apply(
            &mut legacy,
            &[
                LineOp::Add(Pid(47), Qid(8), "Q2$A".into()),
                LineOp::Label("fr", Some("x".into())),
            ],
        );
        assert_eq!(legacy["labels"]["fr"]["value"], "x");
        assert!(names_item(&legacy["claims"]["P47"][0], Qid(8)));
        apply(&mut legacy, &[LineOp::Remove(Pid(47), Qid(8))]);
        assert!(legacy["claims"].get("P47").is_none());
    }
}
