//! The oracle: what the generator wrote, computed from its own model of each entity.

use super::*;
use std::collections::{HashMap, HashSet};

/// Metadata the generator gave a property entity.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PropertyTruth {
    /// Wikibase datatype written in the property line.
    pub datatype: String,
    /// Labelled in all eight languages (after `mul` fallback).
    pub labelled: bool,
    /// P31 has Q18647515.
    pub transitive: bool,
    /// P31 has Q18647518 or P2302 has Q21510862.
    pub symmetric: bool,
    /// P1696 values.
    pub inverse: Vec<Pid>,
}

/// What the generator wrote, under the default keep rule of the extract stage (languages en fr de es it pt ko
/// ja; a `mul` label counts for en fr de es it pt). Computed from the generator's model, not from the output.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Truth {
    /// Entity lines written.
    pub entities: u64,
    /// Item lines.
    pub items: u64,
    /// Property lines.
    pub properties_written: u64,
    /// Lexeme lines.
    pub lexemes: u64,
    /// Items and properties labelled in all eight languages.
    pub labelled: BTreeSet<EntityId>,
    /// Labelled entities that are labelled only thanks to `mul` (some of en fr de es it pt come from `mul`).
    pub mul_only: u64,
    /// Final triples: subject item, property and object item all labelled, statement not deprecated; one entry
    /// per (S, P, O) with the best rank of its statements.
    pub triples: BTreeMap<(Qid, Pid, Qid), Rank>,
    /// Existence index: every item → item statement of any rank whose subject and object are labelled and
    /// whose property is labelled or is the inverse of a labelled property.
    pub statements: BTreeSet<(Qid, Pid, Qid)>,
    /// Every item → item statement of a transitive property, whatever the labels, with its best rank over all
    /// its statements (deprecated included).
    pub transitive: BTreeMap<(Qid, Pid, Qid), Rank>,
    /// Item → item statements written (any rank, any labels), duplicates counted.
    pub item_statements: u64,
    /// Every item → item statement written (any rank, any labels, dangling objects included), in line order,
    /// duplicates kept: the generator's world before closure (see [`Truth::closure`]).
    pub stated: Vec<(Qid, Pid, Qid)>,
    /// Property metadata of every property line.
    pub properties: BTreeMap<Pid, PropertyTruth>,
    /// What the falsity tiers need (see [`Truth::falsity`]).
    pub falsity: FalsityTruth,
}

impl Truth {
    pub(super) fn merge(&mut self, mut b: BlockTruth) {
        self.falsity.merge(&mut b);
        self.entities += b.entities;
        self.items += b.items;
        self.properties_written += b.properties;
        self.lexemes += b.lexemes;
        self.labelled.extend(b.labelled);
        self.mul_only += b.mul_only;
        self.item_statements += b.item_statements;
        for (k, r) in b.triples {
            let e = self.triples.entry(k).or_insert(r);
            *e = (*e).max(r);
        }
        self.statements.extend(b.statements);
        self.stated.extend(b.stated);
        for (k, r) in b.transitive {
            let e = self.transitive.entry(k).or_insert(r);
            *e = (*e).max(r);
        }
    }
}

/// The sizes of a [`Truth`], gathered without holding its sets (what `sword synth` reports when no `--truth`
/// file is asked for, so a dump of any size is generated in memory that does not grow with it). Exact: every
/// final triple, existence-index statement and transitive statement has the item of its line as subject, so
/// its duplicates meet inside one block and are removed there.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    /// Entity lines written.
    pub entities: u64,
    /// Item lines.
    pub items: u64,
    /// Property lines.
    pub properties_written: u64,
    /// Lexeme lines.
    pub lexemes: u64,
    /// Items and properties labelled in all eight languages (`Truth::labelled.len()`).
    pub labelled: u64,
    /// Of which items (the rest are properties).
    pub labelled_items: u64,
    /// Labelled only thanks to `mul`.
    pub mul_only: u64,
    /// Item → item statements written, duplicates counted.
    pub item_statements: u64,
    /// Final triples (`Truth::triples.len()`).
    pub triples: u64,
    /// Existence-index statements (`Truth::statements.len()`).
    pub statements: u64,
    /// Distinct statements of transitive properties (`Truth::transitive.len()`).
    pub transitive: u64,
}

impl Truth {
    /// The sizes of this oracle.
    pub fn counts(&self) -> Counts {
        Counts {
            entities: self.entities,
            items: self.items,
            properties_written: self.properties_written,
            lexemes: self.lexemes,
            labelled: self.labelled.len() as u64,
            labelled_items: self
                .labelled
                .iter()
                .filter(|e| matches!(e, EntityId::Item(_)))
                .count() as u64,
            mul_only: self.mul_only,
            item_statements: self.item_statements,
            triples: self.triples.len() as u64,
            statements: self.statements.len() as u64,
            transitive: self.transitive.len() as u64,
        }
    }
}

impl Counts {
    pub(super) fn add(&mut self, b: &Counts) {
        self.entities += b.entities;
        self.items += b.items;
        self.properties_written += b.properties_written;
        self.lexemes += b.lexemes;
        self.labelled += b.labelled;
        self.labelled_items += b.labelled_items;
        self.mul_only += b.mul_only;
        self.item_statements += b.item_statements;
        self.triples += b.triples;
        self.statements += b.statements;
        self.transitive += b.transitive;
    }
}

impl BlockTruth {
    /// The counts of one block (duplicates removed: their subject is a line of this block).
    pub(super) fn counts(mut self) -> Counts {
        fn distinct<T: Ord>(v: &mut Vec<T>) -> u64 {
            v.sort_unstable();
            v.dedup();
            v.len() as u64
        }
        let mut triples: Vec<_> = self.triples.iter().map(|t| t.0).collect();
        let mut transitive: Vec<_> = self.transitive.iter().map(|t| t.0).collect();
        Counts {
            entities: self.entities,
            items: self.items,
            properties_written: self.properties,
            lexemes: self.lexemes,
            labelled: self.labelled.len() as u64,
            labelled_items: self
                .labelled
                .iter()
                .filter(|e| matches!(e, EntityId::Item(_)))
                .count() as u64,
            mul_only: self.mul_only,
            item_statements: self.item_statements,
            triples: distinct(&mut triples),
            statements: distinct(&mut self.statements),
            transitive: distinct(&mut transitive),
        }
    }
}

#[derive(Default)]
pub(super) struct BlockTruth {
    pub(super) entities: u64,
    pub(super) items: u64,
    pub(super) properties: u64,
    pub(super) lexemes: u64,
    pub(super) labelled: Vec<EntityId>,
    pub(super) mul_only: u64,
    pub(super) item_statements: u64,
    pub(super) triples: Vec<((Qid, Pid, Qid), Rank)>,
    pub(super) statements: Vec<(Qid, Pid, Qid)>,
    pub(super) stated: Vec<(Qid, Pid, Qid)>,
    pub(super) transitive: Vec<((Qid, Pid, Qid), Rank)>,
    /// For the falsity tiers: live item → item statements and live snaks without a value.
    pub(super) live: Vec<(Qid, Pid, Qid)>,
    pub(super) somevalue: Vec<(Qid, Pid)>,
    pub(super) novalue: Vec<(Qid, Pid)>,
}

/// The popularity index of an item id that is in the dump (None for dangling ids).
#[cfg(test)]
pub(super) fn m_index_of(m: &Model, q: Qid) -> Option<u64> {
    let r = (q.0 - 1) / 5;
    (r < m.n_items && m.item_id(r) == q).then_some(r)
}

/// Record an item → item statement in the oracle.
#[allow(clippy::too_many_arguments)]
pub(super) fn record(
    m: &Model,
    t: &mut BlockTruth,
    s: Qid,
    s_labelled: bool,
    pi: usize,
    o: Qid,
    oi: Option<u64>,
    rk: Rank,
) {
    let p = &m.props[pi];
    t.item_statements += 1;
    let key = (s, p.id, o);
    t.stated.push(key);
    if p.transitive {
        t.transitive.push((key, rk));
    }
    let o_labelled = oi.is_some_and(|r| m.labelled(EntityIndex::Item(r)));
    let p_labelled = m.labelled(EntityIndex::Prop(pi));
    // The existence index also keeps the statements of an unlabelled inverse partner of a labelled property.
    let partner_labelled = p.inverse.iter().any(|&q| {
        m.props
            .iter()
            .position(|d| d.id == q)
            .is_some_and(|j| m.labelled(EntityIndex::Prop(j)))
    });
    if s_labelled && o_labelled && (p_labelled || partner_labelled) {
        t.statements.push(key);
        if p_labelled && rk != Rank::Deprecated {
            t.triples.push((key, rk));
        }
    }
}

/// The generator's world closed under the semantics the distortion guards rely on: a statement holds when it
/// is stated (any rank, any labels), when its property is symmetric and the reverse is stated, when an inverse
/// of its property is stated the other way, or when its property is transitive and the object is reachable
/// from the subject through stated edges of the property (forward), of its inverses (reversed) and, when it
/// is symmetric, of itself reversed. Built from [`Truth::stated`] and [`Truth::properties`], never from the
/// output.
pub struct Closure {
    stated: HashSet<(Qid, Pid, Qid)>,
    fwd: HashMap<(Pid, Qid), Vec<Qid>>,
    rev: HashMap<(Pid, Qid), Vec<Qid>>,
    symmetric: HashSet<Pid>,
    transitive: HashSet<Pid>,
    inverse: HashMap<Pid, Vec<Pid>>,
}

impl Truth {
    /// The closure of every stated item → item statement (see [`Closure`]).
    pub fn closure(&self) -> Closure {
        let mut symmetric = HashSet::new();
        let mut transitive = HashSet::new();
        let mut inverse: HashMap<Pid, Vec<Pid>> = HashMap::new();
        for (&p, t) in &self.properties {
            if t.symmetric {
                symmetric.insert(p);
            }
            if t.transitive {
                transitive.insert(p);
            }
            for &q in &t.inverse {
                inverse.entry(p).or_default().push(q);
                inverse.entry(q).or_default().push(p);
            }
        }
        let mut fwd: HashMap<(Pid, Qid), Vec<Qid>> = HashMap::new();
        let mut rev: HashMap<(Pid, Qid), Vec<Qid>> = HashMap::new();
        for &(s, p, o) in &self.stated {
            fwd.entry((p, s)).or_default().push(o);
            rev.entry((p, o)).or_default().push(s);
        }
        Closure {
            stated: self.stated.iter().copied().collect(),
            fwd,
            rev,
            symmetric,
            transitive,
            inverse,
        }
    }
}

impl Closure {
    /// Does (s, p, o) hold in the generator's world?
    pub fn holds(&self, s: Qid, p: Pid, o: Qid) -> bool {
        self.why(s, p, o).is_some()
    }

    /// Why (s, p, o) holds, asked in the order of distort's guards: `stated` (as it is, at any rank),
    /// `symmetric` (the reverse is stated), `inverse` (an inverse property states it the other way) or
    /// `transitive` (a chain); `None` when it does not hold.
    pub fn why(&self, s: Qid, p: Pid, o: Qid) -> Option<&'static str> {
        let inv: &[Pid] = self.inverse.get(&p).map_or(&[], |v| v);
        if self.stated.contains(&(s, p, o)) {
            return Some("stated");
        }
        if self.symmetric.contains(&p) && self.stated.contains(&(o, p, s)) {
            return Some("symmetric");
        }
        if inv.iter().any(|&q| self.stated.contains(&(o, q, s))) {
            return Some("inverse");
        }
        if !self.transitive.contains(&p) {
            return None;
        }
        let mut seen = HashSet::from([s]);
        let mut queue = vec![s];
        while let Some(x) = queue.pop() {
            let mut next: Vec<Qid> = self.fwd.get(&(p, x)).cloned().unwrap_or_default();
            if self.symmetric.contains(&p) {
                next.extend(self.rev.get(&(p, x)).into_iter().flatten());
            }
            for &q in inv {
                next.extend(self.rev.get(&(q, x)).into_iter().flatten());
            }
            for y in next {
                if y == o {
                    return Some("transitive");
                }
                if seen.insert(y) {
                    queue.push(y);
                }
            }
        }
        None
    }
}
