//! The oracle: what the falsity tier of a statement needs, as the generator wrote it, and the tier and reasons
//! it gives each false candidate ([`Falsity::tier`]).

use super::*;

/// What the falsity tier of a statement needs, as the generator wrote it (whole oracle only).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FalsityTruth {
    /// Live (not deprecated) item → item statements of item-datatype properties, dangling objects included.
    pub live: BTreeSet<(Qid, Pid, Qid)>,
    /// Items with a live `somevalue` statement for a property of item datatype.
    pub somevalue: BTreeSet<(Qid, Pid)>,
    /// Items with a live `novalue` statement for a property of item datatype.
    pub novalue: BTreeSet<(Qid, Pid)>,
    /// The P2302 statements of every property line.
    pub constraints: BTreeMap<Pid, Vec<Constraint>>,
    /// P279 cycles planted (the world's own P279 statements point at more popular classes and never close
    /// one).
    pub p279_cycles: u64,
}

/// Note one statement of an item-datatype claim in the block's oracle.
pub(in crate::synth) fn note(
    t: &mut BlockTruth,
    s: Qid,
    p: &PropDef,
    rank: Rank,
    object: Option<Qid>,
    snak: &str,
) {
    if p.datatype != "wikibase-item" || rank == Rank::Deprecated {
        return;
    }
    match (snak, object) {
        ("value", Some(o)) => t.live.push((s, p.id, o)),
        ("somevalue", _) => t.somevalue.push((s, p.id)),
        ("novalue", _) => t.novalue.push((s, p.id)),
        _ => {}
    }
}

/// Falsity tier, weakest first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Tier {
    Open,
    Likely,
    Certain,
}

impl Tier {
    /// `open`, `likely`, `certain`.
    pub fn as_str(self) -> &'static str {
        match self {
            Tier::Open => "open",
            Tier::Likely => "likely",
            Tier::Certain => "certain",
        }
    }
}

/// The tiers of the generator's world (see [`Truth::falsity`]).
pub struct Falsity {
    values: HashMap<(Qid, Pid), Vec<Qid>>,
    subjects: HashMap<(Pid, Qid), Vec<Qid>>,
    p279: HashMap<Qid, Vec<Qid>>,
    somevalue: HashSet<(Qid, Pid)>,
    novalue: HashSet<(Qid, Pid)>,
    constraints: HashMap<Pid, Vec<Effective>>,
}

impl Truth {
    /// The falsity tiers of the world the generator wrote (docs/falsity.md), from its own record of the
    /// statements and constraints, never from the output.
    pub fn falsity(&self) -> Falsity {
        let f = &self.falsity;
        let mut values: HashMap<(Qid, Pid), Vec<Qid>> = HashMap::new();
        let mut subjects: HashMap<(Pid, Qid), Vec<Qid>> = HashMap::new();
        let mut p279: HashMap<Qid, Vec<Qid>> = HashMap::new();
        for &(s, p, o) in &f.live {
            values.entry((s, p)).or_default().push(o);
            subjects.entry((p, o)).or_default().push(s);
            if p == Pid(279) {
                p279.entry(s).or_default().push(o);
            }
        }
        let constraints = f
            .constraints
            .iter()
            .map(|(&p, cs)| {
                let e = cs
                    .iter()
                    .filter_map(|c| match c.reading().0 {
                        Reading::Applies(e) => Some(e),
                        _ => None,
                    })
                    .collect();
                (p, e)
            })
            .collect();
        Falsity {
            values,
            subjects,
            p279,
            somevalue: f.somevalue.iter().copied().collect(),
            novalue: f.novalue.iter().copied().collect(),
            constraints,
        }
    }
}

impl FalsityTruth {
    /// The counts a reader of the dump makes of the constraint statements and the P279 graph, under the names
    /// `scripts/falsity-oracle --summary` gives them.
    pub fn summary(&self) -> serde_json::Value {
        let mut by_kind: BTreeMap<&str, u64> = [
            "single_value",
            "distinct_values",
            "subject_type",
            "value_type",
        ]
        .into_iter()
        .map(|k| (k, 0))
        .collect();
        let mut n: BTreeMap<&str, u64> = BTreeMap::new();
        for c in self.constraints.values().flatten() {
            let (reading, bad) = c.reading();
            *n.entry("bad_qualifier_without_value").or_default() += bad;
            match reading {
                Reading::Applies(e) => {
                    *n.entry("constraints").or_default() += 1;
                    *by_kind.entry(e.kind).or_default() += 1;
                    *n.entry("constraints_with_separator").or_default() += u64::from(e.separator);
                    *n.entry("constraints_with_exceptions").or_default() +=
                        u64::from(!e.exceptions.is_empty());
                }
                Reading::Deprecated => *n.entry("constraints_deprecated").or_default() += 1,
                Reading::OtherKind => *n.entry("constraints_other_kind").or_default() += 1,
                Reading::Bad(why) => match why {
                    "without_type" => *n.entry("bad_constraint_without_type").or_default() += 1,
                    "without_classes" => {
                        *n.entry("bad_constraint_without_classes").or_default() += 1
                    }
                    _ => *n.entry("bad_constraint_unknown_relation").or_default() += 1,
                },
            }
        }
        let get = |k: &str| n.get(k).copied().unwrap_or(0);
        serde_json::json!({
            "constraints": get("constraints"),
            "constraints_by_kind": by_kind,
            "constraints_other_kind": get("constraints_other_kind"),
            "constraints_deprecated": get("constraints_deprecated"),
            "constraints_with_separator": get("constraints_with_separator"),
            "constraints_with_exceptions": get("constraints_with_exceptions"),
            "bad_constraint_without_type": get("bad_constraint_without_type"),
            "bad_constraint_without_classes": get("bad_constraint_without_classes"),
            "bad_constraint_unknown_relation": get("bad_constraint_unknown_relation"),
            "bad_qualifier_without_value": get("bad_qualifier_without_value"),
            "p279_cycles": self.p279_cycles,
        })
    }

    pub(in crate::synth) fn merge(&mut self, b: &mut BlockTruth) {
        self.live.extend(b.live.drain(..));
        self.somevalue.extend(b.somevalue.drain(..));
        self.novalue.extend(b.novalue.drain(..));
    }
}

impl Falsity {
    /// Does `x` reach one of `classes` (x is one, or one is in the closure of x over live P279 values)? A
    /// search with a visited set: it ends on cycles.
    fn reaches(&self, x: Qid, classes: &BTreeSet<Qid>) -> bool {
        let mut seen = HashSet::from([x]);
        let mut todo = vec![x];
        while let Some(y) = todo.pop() {
            if classes.contains(&y) {
                return true;
            }
            for &z in self.p279.get(&y).into_iter().flatten() {
                if seen.insert(z) {
                    todo.push(z);
                }
            }
        }
        false
    }

    /// `x` has live values of the properties the relation looks at, and none reaches a class.
    fn breaks_type(&self, x: Qid, e: &Effective) -> bool {
        let looked: Vec<Qid> = e
            .looks_at
            .iter()
            .flat_map(|&p| self.values.get(&(x, p)).into_iter().flatten().copied())
            .collect();
        !looked.is_empty() && !looked.iter().any(|&v| self.reaches(v, &e.classes))
    }

    /// The tier of the false statement (s, p, o) and, when `certain`, why (sorted names).
    pub fn tier(&self, s: Qid, p: Pid, o: Qid) -> (Tier, Vec<&'static str>) {
        let mut why = BTreeSet::new();
        if self.novalue.contains(&(s, p)) {
            why.insert("novalue");
        }
        let values: &[Qid] = self.values.get(&(s, p)).map_or(&[], |v| v);
        for e in self.constraints.get(&p).into_iter().flatten() {
            if e.separator || e.exceptions.contains(&s) {
                continue;
            }
            let broken = match e.kind {
                "single_value" => values.iter().any(|&v| v != o),
                "distinct_values" => self
                    .subjects
                    .get(&(p, o))
                    .is_some_and(|xs| xs.iter().any(|&x| x != s)),
                "subject_type" => self.breaks_type(s, e),
                _ => self.breaks_type(o, e),
            };
            if broken {
                why.insert(e.kind);
            }
        }
        if !why.is_empty() {
            (Tier::Certain, why.into_iter().collect())
        } else if !values.is_empty() || self.somevalue.contains(&(s, p)) {
            (Tier::Likely, Vec::new())
        } else {
            (Tier::Open, Vec::new())
        }
    }
}

/// The falsity part of the truth file: every constraint as the tiers read it, the counts of the summary, and
/// the subjects with a live `novalue` / `somevalue` statement. With the final triples and the statements these
/// give the tier of any candidate (docs/falsity.md); [`Truth::falsity`] computes it.
pub(in crate::synth) fn truth_json(t: &FalsityTruth) -> serde_json::Value {
    let pairs = |s: &BTreeSet<(Qid, Pid)>| {
        s.iter()
            .map(|(s, p)| [s.to_string(), p.to_string()])
            .collect::<Vec<_>>()
    };
    serde_json::json!({
        "constraints": constraints_json(t),
        "summary": t.summary(),
        "novalue": pairs(&t.novalue),
        "somevalue": pairs(&t.somevalue),
    })
}

fn constraints_json(t: &FalsityTruth) -> serde_json::Value {
    let ids = |s: &BTreeSet<Qid>| s.iter().map(|q| q.to_string()).collect::<Vec<_>>();
    let mut out = Vec::new();
    for (p, cs) in &t.constraints {
        for c in cs {
            if let (Reading::Applies(e), _) = c.reading() {
                out.push(serde_json::json!({
                    "property": p.to_string(),
                    "kind": e.kind,
                    "separator": e.separator,
                    "exceptions": ids(&e.exceptions),
                    "classes": ids(&e.classes),
                    "looks_at": e.looks_at.iter().map(|p| p.to_string()).collect::<Vec<_>>(),
                }));
            }
        }
    }
    serde_json::Value::Array(out)
}
