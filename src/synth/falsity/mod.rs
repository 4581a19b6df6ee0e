//! What the generator says about how false a false statement is (docs/falsity.md): the property constraints
//! it writes on property lines (P2302 with classes, relations, exceptions and separators, and now and then a
//! malformed one), the statements without a value it writes on item lines (`novalue`, `somevalue`, alone or
//! beside values), the P279 cycles it plants among class items, and the oracle that reads all of it back from
//! its own model: [`Falsity::tier`].
//!
//! Everything added to the lines here comes from random streams of its own, so the item → item statements of
//! labelled items, and therefore the extract artifacts the existing stages read and every distortion drawn
//! from them, are those of a world without it: the planted P279 cycles join unlabelled class items that no
//! other item is a subclass of, and the claims without a value hold no item.

use super::world::{Cls, N_CLS};
use super::*;
use std::collections::{HashMap, HashSet};

/// Constraint types (the main snak of a P2302 statement) that decide a tier.
pub(super) const SINGLE_VALUE: u64 = 19474404;
pub(super) const DISTINCT_VALUES: u64 = 21502410;
pub(super) const SUBJECT_TYPE: u64 = 21503250;
pub(super) const VALUE_TYPE: u64 = 21510865;
/// Relations of a type constraint (P2309).
pub(super) const INSTANCE_OF: u64 = 21503252;
pub(super) const SUBCLASS_OF: u64 = 21514624;
pub(super) const INSTANCE_OR_SUBCLASS: u64 = 30208840;
/// A relation no constraint checker knows (bad input: the constraint is ignored).
const UNKNOWN_RELATION: u64 = 21503251;
/// Constraint types that are written but decide nothing here: symmetric, format, property scope, conflicts
/// with, value requires statement.
const SYMMETRIC: u64 = 21510862;
const OTHER_KINDS: [u64; 4] = [21502404, 53869507, 21502838, 21510864];
/// Qualifiers: classes, relation, exceptions, separators, constraint status (mandatory: Q21502408).
const P_CLASSES: u64 = 2308;
const P_RELATION: u64 = 2309;
const P_EXCEPTIONS: u64 = 2303;
const P_SEPARATORS: u64 = 4155;
const P_STATUS: u64 = 2316;
const MANDATORY: u64 = 21502408;

/// A snak of a constraint statement: its main snak or a qualifier.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum CSnak {
    Item(Qid),
    Prop(Pid),
    /// A snak without a value (bad input where a value is needed).
    NoValue,
    SomeValue,
}

/// One P2302 statement as the generator writes it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Constraint {
    /// The main snak: the constraint type, or a snak without a value (bad input).
    pub kind: CSnak,
    pub rank: Rank,
    /// P2308 snaks.
    pub classes: Vec<CSnak>,
    /// P2309 snaks.
    pub relation: Vec<CSnak>,
    /// P2303 snaks.
    pub exceptions: Vec<CSnak>,
    /// P4155 snaks.
    pub separators: Vec<CSnak>,
    /// A P2316 (constraint status: mandatory) qualifier, which decides nothing.
    pub mandatory: bool,
}

impl Constraint {
    fn of(kind: u64) -> Constraint {
        Constraint {
            kind: CSnak::Item(Qid(kind)),
            rank: Rank::Normal,
            classes: Vec::new(),
            relation: Vec::new(),
            exceptions: Vec::new(),
            separators: Vec::new(),
            mandatory: false,
        }
    }
    fn typed(kind: u64, classes: &[Qid], relation: Option<u64>) -> Constraint {
        Constraint {
            classes: classes.iter().map(|&q| CSnak::Item(q)).collect(),
            relation: relation.map(|r| CSnak::Item(Qid(r))).into_iter().collect(),
            ..Constraint::of(kind)
        }
    }
    fn except(mut self, qs: &[Qid]) -> Constraint {
        self.exceptions.extend(qs.iter().map(|&q| CSnak::Item(q)));
        self
    }
    fn separated(mut self, ps: &[u64]) -> Constraint {
        self.separators
            .extend(ps.iter().map(|&p| CSnak::Prop(Pid(p))));
        self
    }
}

/// What a constraint statement means for the tiers, read the way docs/falsity.md says a reader must.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reading {
    /// A constraint of one of the four kinds that decides tiers.
    Applies(Effective),
    /// Deprecated: ignored.
    Deprecated,
    /// Another constraint type (symmetric, format, …): decides nothing.
    OtherKind,
    /// Malformed, counted and ignored: `without_type`, `without_classes` or `unknown_relation`.
    Bad(&'static str),
}

/// A constraint that decides tiers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Effective {
    /// `single_value`, `distinct_values`, `subject_type` or `value_type`.
    pub kind: &'static str,
    /// A usable separator: the constraint is never applied.
    pub separator: bool,
    pub exceptions: BTreeSet<Qid>,
    /// Type constraints: the classes and the properties the relation looks at.
    pub classes: BTreeSet<Qid>,
    pub looks_at: Vec<Pid>,
}

/// The items among `snaks`, and how many snaks are not items (counted and ignored).
fn item_values(snaks: &[CSnak]) -> (BTreeSet<Qid>, u64) {
    let mut bad = 0;
    let mut out = BTreeSet::new();
    for s in snaks {
        match s {
            CSnak::Item(q) => {
                out.insert(*q);
            }
            _ => bad += 1,
        }
    }
    (out, bad)
}

impl Constraint {
    /// How the statement reads, and how many of its qualifier snaks have no value (counted and ignored).
    pub fn reading(&self) -> (Reading, u64) {
        if self.rank == Rank::Deprecated {
            return (Reading::Deprecated, 0);
        }
        let kind = match self.kind {
            CSnak::Item(Qid(SINGLE_VALUE)) => "single_value",
            CSnak::Item(Qid(DISTINCT_VALUES)) => "distinct_values",
            CSnak::Item(Qid(SUBJECT_TYPE)) => "subject_type",
            CSnak::Item(Qid(VALUE_TYPE)) => "value_type",
            CSnak::Item(_) => return (Reading::OtherKind, 0),
            _ => return (Reading::Bad("without_type"), 0),
        };
        let (classes, b1) = item_values(&self.classes);
        let (relations, b2) = item_values(&self.relation);
        let (exceptions, b3) = item_values(&self.exceptions);
        let b4 = self
            .separators
            .iter()
            .filter(|s| !matches!(s, CSnak::Prop(_)))
            .count() as u64;
        let separator = self.separators.iter().any(|s| matches!(s, CSnak::Prop(_)));
        let bad = b1 + b2 + b3 + b4;
        let mut looks_at = Vec::new();
        if matches!(kind, "subject_type" | "value_type") {
            if classes.is_empty() {
                return (Reading::Bad("without_classes"), bad);
            }
            let rel: Vec<Qid> = relations.into_iter().collect();
            looks_at = match rel.as_slice() {
                [] | [Qid(INSTANCE_OF)] => vec![Pid(31)],
                [Qid(SUBCLASS_OF)] => vec![Pid(279)],
                [Qid(INSTANCE_OR_SUBCLASS)] => vec![Pid(31), Pid(279)],
                _ => return (Reading::Bad("unknown_relation"), bad),
            };
        }
        let e = Effective {
            kind,
            separator,
            exceptions,
            classes: if looks_at.is_empty() {
                BTreeSet::new()
            } else {
                classes
            },
            looks_at,
        };
        (Reading::Applies(e), bad)
    }
}

/// What the generator plants for the tiers, computed once per dump from the model.
#[derive(Default)]
pub(super) struct Plan {
    /// Constraint statements of each property (indexed like `Model::props`).
    pub(super) constraints: Vec<Vec<Constraint>>,
    /// P279 statements added to class items to close cycles: (subject rank, object rank).
    pub(super) cycle_edges: Vec<(u64, u64)>,
    /// Cycles those edges close (a ring of class items and a class that is its own subclass).
    pub(super) cycles: u64,
}

impl Plan {
    pub(super) fn new(m: &Model) -> Plan {
        let constraints = (0..m.props.len()).map(|j| constraints_of(m, j)).collect();
        // The least popular unlabelled generic subclasses: P279 leaves (no item is a subclass of them) whose
        // statements are not triples, so the cycles change no draw of the other stages.
        let w = &m.world;
        let first = N_CLS + 2 * w.n_countries();
        let classes = &w.members[Cls::Class as usize];
        let leaves: Vec<u64> = classes
            .iter()
            .skip(first)
            .rev()
            .map(|&r| u64::from(r))
            .filter(|&r| !m.item_profile(r).labelled)
            .take(4)
            .collect();
        let mut cycle_edges = Vec::new();
        let mut cycles = 0;
        let ring = &leaves[..leaves.len().min(3)];
        if ring.len() >= 2 {
            for (i, &a) in ring.iter().enumerate() {
                cycle_edges.push((a, ring[(i + 1) % ring.len()]));
            }
            cycles += 1;
        }
        if let Some(&d) = leaves.get(3) {
            cycle_edges.push((d, d));
            cycles += 1;
        }
        Plan {
            constraints,
            cycle_edges,
            cycles,
        }
    }
}

/// The item id of the class item standing for `c`.
fn class_q(m: &Model, c: Cls) -> Option<Qid> {
    m.world.class_item(c).map(|r| m.item_id(u64::from(r)))
}

/// Items `from..from + k` of class `c` by popularity (popular items are labelled: graph entities).
fn tops(m: &Model, c: Cls, from: usize, k: usize) -> Vec<Qid> {
    m.world.members[c as usize]
        .iter()
        .skip(from)
        .take(k)
        .map(|&r| m.item_id(u64::from(r)))
        .collect()
}

/// The constraint statements of property `j`: curated ones for the curated properties (what Wikidata's own
/// constraints say, on the classes of the world), random ones for the generated properties, and the
/// symmetric constraint where the property metadata asks for it.
fn constraints_of(m: &Model, j: usize) -> Vec<Constraint> {
    let d = &m.props[j];
    let mut out = Vec::new();
    if d.symmetric_constraint {
        out.push(Constraint::of(SYMMETRIC));
    }
    let cls = |cs: &[Cls]| -> Vec<Qid> { cs.iter().filter_map(|&c| class_q(m, c)).collect() };
    let subject = |cs: &[Cls], rel: Option<u64>| Constraint::typed(SUBJECT_TYPE, &cls(cs), rel);
    let value = |cs: &[Cls], rel: Option<u64>| Constraint::typed(VALUE_TYPE, &cls(cs), rel);
    let single = || Constraint::of(SINGLE_VALUE);
    let distinct = || Constraint::of(DISTINCT_VALUES);
    let both = Some(INSTANCE_OR_SUBCLASS);
    let inst = Some(INSTANCE_OF);
    let root = |c: Cls| -> Vec<Qid> { tops(m, c, 0, 1) };
    use Cls::*;
    let places = [City, Region, Country];
    if j < CURATED.len() {
        match d.id.0 {
            21 => out.extend([
                single().except(&tops(m, Human, 0, 3)),
                subject(&[Human], None),
                value(&[Other], inst),
            ]),
            19 => out.extend([
                single(),
                subject(&[Human], None)
                    .except(&[tops(m, City, 0, 2), tops(m, Work, 0, 1)].concat()),
                value(&places, inst),
            ]),
            20 => out.extend([
                single().except(&tops(m, Human, 3, 2)),
                subject(&[Human], both),
                value(&places, None),
            ]),
            22 => out.extend([single(), subject(&[Human], None), value(&[Human], None)]),
            // A separator without a value: counted and ignored, so the constraint applies.
            25 => out.extend([
                Constraint {
                    separators: vec![CSnak::NoValue],
                    ..single()
                },
                value(&[Human], None),
            ]),
            // Separators: a spouse at a time; one class snak without a value (ignored: human stays).
            26 => out.extend([
                single().separated(&[580, 582]),
                Constraint {
                    classes: vec![
                        CSnak::NoValue,
                        CSnak::Item(class_q(m, Human).unwrap_or(Qid(5))),
                    ],
                    ..subject(&[], None)
                },
                value(&[Human], None),
            ]),
            27 => out.extend([subject(&[Human], None), value(&[Country], inst)]),
            17 => out.extend([single().separated(&[580]), value(&[Country], inst)]),
            36 => out.extend([
                single().separated(&[580]),
                value(&[City], inst),
                distinct().except(&tops(m, Country, 0, 1)),
            ]),
            30 => out.extend([subject(&[Country], inst), value(&[Continent], None)]),
            37 => out.extend([value(&[Language], both)]),
            47 => out.extend([subject(&places, inst), value(&places, inst)]),
            50 => out.extend([subject(&[Work], both), value(&[Human], None)]),
            57 => out.extend([subject(&[Work], inst), value(&[Human], None)]),
            69 => out.extend([subject(&[Human], None), value(&[University], inst)]),
            106 => out.extend([subject(&[Human], None), value(&[Occupation], both)]),
            108 => out.extend([value(&[Org, University, Party], inst)]),
            131 => out.extend([
                subject(&[Region, City, Org, University], inst),
                value(&places, inst),
            ]),
            // Genres are subclasses of the first genre through chains of P279: a deep closure.
            136 => out.push(Constraint::typed(
                VALUE_TYPE,
                &root(Genre),
                Some(SUBCLASS_OF),
            )),
            150 => out.extend([distinct(), value(&[Region, City], inst)]),
            159 => out.extend([single().separated(&[580, 582])]),
            166 => out.extend([
                subject(&[Human], None).except(&tops(m, Org, 0, 2)),
                value(&[Award], inst),
            ]),
            171 => out.extend([single(), subject(&[Taxon], None), value(&[Taxon], None)]),
            // A type constraint without classes: counted and ignored.
            40 => out.extend([subject(&[], None), value(&[Human], inst)]),
            // A relation no checker knows: counted and ignored.
            3373 => out.extend([
                subject(&[Human], None),
                value(&[Human], Some(UNKNOWN_RELATION)),
            ]),
            1066 | 802 => out.extend([subject(&[Human], None), value(&[Human], None)]),
            1376 => out.extend([subject(&[City], inst), value(&[Country, Region], inst)]),
            // A deprecated constraint: ignored.
            1412 => out.extend([
                subject(&[Human], None),
                value(&[Language], both),
                Constraint {
                    rank: Rank::Deprecated,
                    ..single()
                },
            ]),
            407 => out.extend([value(&[Language], inst)]),
            463 => out.extend([value(&[Org, Party], inst)]),
            // Exceptions with a snak without a value (ignored) beside an item.
            102 => out.extend([
                single().separated(&[580]),
                Constraint {
                    exceptions: vec![
                        CSnak::SomeValue,
                        CSnak::Item(tops(m, Org, 0, 1).first().copied().unwrap_or(Qid(1))),
                    ],
                    ..subject(&[Human], None)
                },
                value(&[Party], inst),
            ]),
            495 => out.extend([value(&[Country], inst)]),
            530 => out.extend([subject(&[Country], inst), value(&[Country], inst)]),
            551 | 937 | 840 => out.extend([value(&places, None)]),
            161 => out.extend([subject(&[Work], both), value(&[Human], None)]),
            527 => out.push(distinct()),
            // A constraint statement whose main snak has no value: counted and ignored.
            921 => out.push(Constraint {
                kind: CSnak::NoValue,
                ..Constraint::of(0)
            }),
            279 => out.extend([Constraint::of(21502838), Constraint::of(53869507)]),
            _ => {}
        }
        // Type constraints without a class in a tiny world are not written (they would be bad input by
        // accident); the ones above that are bad on purpose have their kind of bad shape regardless.
        out.retain(|c| {
            !matches!(c.kind, CSnak::Item(Qid(SUBJECT_TYPE | VALUE_TYPE)))
                || !c.classes.is_empty()
                || d.id.0 == 40
        });
        for c in &mut out {
            c.mandatory = splitmix(m.cfg.seed ^ d.id.0 ^ 0x57A7).is_multiple_of(3);
        }
        return out;
    }
    // Generated properties: a random set of constraints from a stream of their own.
    let mut rng = ChaCha8Rng::seed_from_u64(splitmix(m.cfg.seed ^ splitmix(j as u64 ^ 0xC0A57)));
    let pick_classes = |rng: &mut ChaCha8Rng, pool: &[Cls]| -> Vec<Cls> {
        let mut v: Vec<Cls> = pool
            .iter()
            .copied()
            .filter(|_| rng.random_bool(0.6))
            .collect();
        if v.is_empty() {
            v.push(pool[rng.random_range(0..pool.len())]);
        }
        v
    };
    let relation = |rng: &mut ChaCha8Rng| match rng.random_range(0..10) {
        0..=4 => None,
        5 | 6 => inst,
        7 => Some(SUBCLASS_OF),
        _ => both,
    };
    if d.datatype == "wikibase-item" {
        if rng.random_bool(0.25) {
            let mut c = single();
            if rng.random_bool(0.15) {
                c = c.separated(&[580]);
            }
            if rng.random_bool(0.2) {
                c = c.except(&tops(m, Human, rng.random_range(0..5), 2));
            }
            out.push(c);
        }
        if rng.random_bool(0.12) {
            out.push(distinct());
        }
        if rng.random_bool(0.3) {
            let cs = pick_classes(&mut rng, &[Human, City, Org, Work, Country]);
            let rel = relation(&mut rng);
            out.push(subject(&cs, rel));
        }
        if rng.random_bool(0.4) {
            // The objects of a generated item property are mostly a person, city or organisation.
            let cs = pick_classes(&mut rng, &[Human, City, Org]);
            let rel = relation(&mut rng);
            let mut c = value(&cs, rel);
            if rng.random_bool(0.1) {
                c = c.except(&tops(m, Human, rng.random_range(0..20), 1));
            }
            out.push(c);
        }
        if rng.random_bool(0.04) {
            out.push(if rng.random_bool(0.5) {
                value(&[], None)
            } else {
                value(&[Human], Some(UNKNOWN_RELATION))
            });
        }
    } else {
        if rng.random_bool(0.3) {
            out.push(single());
        }
        if rng.random_bool(0.25) {
            out.push(distinct());
        }
        if rng.random_bool(0.1) {
            let cs = pick_classes(&mut rng, &[Human, Work, Org]);
            out.push(subject(&cs, None));
        }
    }
    if rng.random_bool(0.3) {
        out.push(Constraint::of(OTHER_KINDS[rng.random_range(0..2)]));
    }
    if rng.random_bool(0.03) {
        let mut c = single();
        c.rank = Rank::Deprecated;
        out.push(c);
    }
    for c in &mut out {
        c.mandatory = rng.random_bool(0.3);
    }
    out
}

// ---------------------------------------------------------------------------------------------------------
// Writing.

impl Gen<'_> {
    fn csnak(&mut self, j: &mut J, property: u64, snak: CSnak, qualifier: bool) {
        let datatype = if matches!(snak, CSnak::Prop(_)) || property == P_SEPARATORS {
            "wikibase-property"
        } else {
            "wikibase-item"
        };
        let kind = match snak {
            CSnak::NoValue => "novalue",
            CSnak::SomeValue => "somevalue",
            _ => "value",
        };
        j.raw("{\"snaktype\":");
        j.str(kind);
        j.raw(",\"property\":");
        j.id(b'P', property);
        if qualifier {
            j.raw(",\"hash\":");
            j.hex(&mut self.rng, 40, false);
        }
        match snak {
            CSnak::Item(q) => {
                j.raw(",\"datavalue\":");
                self.item_value(j, q);
            }
            CSnak::Prop(p) => {
                j.raw(",\"datavalue\":");
                self.prop_value(j, p);
            }
            CSnak::NoValue | CSnak::SomeValue => {}
        }
        j.raw(",\"datatype\":");
        j.str(datatype);
        j.raw("}");
    }

    /// The P2302 claim's statements (`[` and `]` written by the caller).
    pub(super) fn constraint_statements(&mut self, j: &mut J, entity: &str, cons: &[Constraint]) {
        for (i, c) in cons.iter().enumerate() {
            j.comma(i);
            j.raw("{\"mainsnak\":");
            self.csnak(j, 2302, c.kind, false);
            j.raw(",\"type\":\"statement\"");
            let status = [CSnak::Item(Qid(MANDATORY))];
            let groups: Vec<(u64, &[CSnak])> = [
                (P_CLASSES, &c.classes[..]),
                (P_RELATION, &c.relation[..]),
                (P_EXCEPTIONS, &c.exceptions[..]),
                (P_SEPARATORS, &c.separators[..]),
                (P_STATUS, if c.mandatory { &status[..] } else { &[] }),
            ]
            .into_iter()
            .filter(|g| !g.1.is_empty())
            .collect();
            if !groups.is_empty() {
                j.raw(",\"qualifiers\":{");
                for (gi, (p, snaks)) in groups.iter().enumerate() {
                    j.comma(gi);
                    j.key_id(b'P', *p);
                    j.raw("[");
                    for (si, s) in snaks.iter().enumerate() {
                        j.comma(si);
                        self.csnak(j, *p, *s, true);
                    }
                    j.raw("]");
                }
                j.raw("},\"qualifiers-order\":[");
                for (gi, (p, _)) in groups.iter().enumerate() {
                    j.comma(gi);
                    j.id(b'P', *p);
                }
                j.raw("]");
            }
            j.raw(",\"id\":");
            j.guid(&mut self.rng, entity);
            j.raw(",\"rank\":");
            j.str(c.rank.as_str());
            j.raw("}");
        }
    }
}

/// A statement added to an item line for the tiers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Extra {
    /// An item value (the rank of an item of the dump).
    Item(u64),
    NoValue,
    SomeValue,
}

/// The statements item `r` gets for the tiers: added to its claims of the properties it states already
/// (`chosen`, indices into `Model::props`), and new claims of properties it does not state.
pub(super) struct Extras {
    pub(super) in_claims: Vec<(usize, Vec<(Rank, Extra)>)>,
    pub(super) claims: Vec<(usize, Vec<(Rank, Extra)>)>,
}

impl Extras {
    /// The additions to claim `pi`, if any.
    pub(super) fn for_claim(&self, pi: usize) -> &[(Rank, Extra)] {
        self.in_claims
            .iter()
            .find(|c| c.0 == pi)
            .map_or(&[], |c| &c.1[..])
    }
}

/// Claims without a value by class: (property, `novalue` (else `somevalue`)): "no children", "no border"
/// (an island), "unknown father", an anonymous author, …
fn snak_claims(c: Cls) -> &'static [(u64, bool)] {
    match c {
        Cls::Human => &[
            (40, true),
            (26, true),
            (20, false),
            (22, false),
            (25, false),
            (1412, true),
            (27, true),
            (19, false),
        ],
        Cls::Country => &[(47, true), (36, false), (530, true)],
        Cls::Region | Cls::City => &[(47, true), (36, false), (17, false)],
        Cls::Work => &[(50, false), (57, true), (161, true), (136, false)],
        Cls::Org | Cls::University | Cls::Party => &[(159, false), (17, true), (131, false)],
        Cls::Other => &[(17, true)],
        Cls::Taxon => &[(171, false)],
        _ => &[],
    }
}

/// What item `r` (with claims `chosen`) gets for the tiers, and the generator (on a random stream of its own)
/// that writes it.
pub(super) fn extras<'m>(
    m: &'m Model,
    r: u64,
    chosen: &[usize],
    legacy: bool,
) -> (Gen<'m>, Extras) {
    let mut rng = ChaCha8Rng::seed_from_u64(splitmix(m.cfg.seed ^ splitmix(r ^ 0xFA151)));
    let mut in_claims: Vec<(usize, Vec<(Rank, Extra)>)> = Vec::new();
    let mut claims: Vec<(usize, Vec<(Rank, Extra)>)> = Vec::new();
    // The planted P279 cycles (normal rank, so they are live).
    let edges: Vec<(Rank, Extra)> = m
        .falsity
        .cycle_edges
        .iter()
        .filter(|e| e.0 == r)
        .map(|e| (Rank::Normal, Extra::Item(e.1)))
        .collect();
    if let (false, Some(pi)) = (edges.is_empty(), m.prop_index(279)) {
        if chosen.contains(&pi) {
            in_claims.push((pi, edges));
        } else {
            claims.push((pi, edges));
        }
    }
    // A claim without a value, on ≈ 6 % of the items (≈ 1 % get two).
    let list = snak_claims(m.world.cls[r as usize]);
    let n = match rng.random::<f64>() {
        u if u < 0.01 => 2,
        u if u < 0.06 => 1,
        _ => 0,
    };
    for _ in 0..n {
        if list.is_empty() {
            break;
        }
        let (pid, novalue) = list[rng.random_range(0..list.len())];
        let Some(pi) = m.prop_index(pid) else {
            continue;
        };
        if chosen.contains(&pi) || claims.iter().any(|c| c.0 == pi) {
            continue;
        }
        let rank = match rng.random::<f64>() {
            u if u < 0.1 => Rank::Deprecated,
            u if u < 0.15 => Rank::Preferred,
            _ => Rank::Normal,
        };
        let mut sts = vec![(
            rank,
            if novalue {
                Extra::NoValue
            } else {
                Extra::SomeValue
            },
        )];
        // Now and then both: an unknown value beside "no value" (contradictory, as real data can be).
        if rng.random_bool(0.1) {
            sts.push((
                Rank::Normal,
                if novalue {
                    Extra::SomeValue
                } else {
                    Extra::NoValue
                },
            ));
        }
        claims.push((pi, sts));
    }
    (Gen { m, rng, legacy }, Extras { in_claims, claims })
}

impl Gen<'_> {
    /// Write `sts`, statements of property `pi` of item `s` (labelled or not), each after a comma unless it is
    /// the claim's first (`after` says whether statements were written before), and record them in the oracle.
    pub(super) fn extra_statements(
        &mut self,
        j: &mut J,
        t: &mut BlockTruth,
        (s, labelled): (Qid, bool),
        pi: usize,
        sts: &[(Rank, Extra)],
        after: bool,
    ) {
        let m = self.m;
        let p = &m.props[pi];
        let entity = s.to_string();
        for (i, &(rank, extra)) in sts.iter().enumerate() {
            if after || i > 0 {
                j.raw(",");
            }
            let (snaktype, object) = match extra {
                Extra::Item(r) => ("value", Some((m.item_id(r), r))),
                Extra::NoValue => ("novalue", None),
                Extra::SomeValue => ("somevalue", None),
            };
            statement(self, j, &entity, rank, &p.name, |g, j| {
                snak_head(j, snaktype, p);
                if let Some((o, _)) = object {
                    j.raw(",\"datavalue\":");
                    g.item_value(j, o);
                }
                j.raw(",\"datatype\":");
                j.str(p.datatype);
                j.raw("}");
            });
            if let Some((o, r)) = object {
                record(m, t, s, labelled, pi, o, Some(r), rank);
            }
            note(t, s, p, rank, object.map(|x| x.0), snaktype);
        }
    }
}

mod oracle;
pub(super) use oracle::{note, truth_json};
pub use oracle::{Falsity, FalsityTruth, Tier};
