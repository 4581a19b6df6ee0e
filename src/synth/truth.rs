//! The oracle: what the generator wrote, computed from its own model of each entity.

use super::*;

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
    /// Property metadata of every property line.
    pub properties: BTreeMap<Pid, PropertyTruth>,
}

impl Truth {
    pub(super) fn merge(&mut self, b: BlockTruth) {
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
        for (k, r) in b.transitive {
            let e = self.transitive.entry(k).or_insert(r);
            *e = (*e).max(r);
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
    pub(super) transitive: Vec<((Qid, Pid, Qid), Rank)>,
}

/// The popularity index of an item id that is in the dump (None for dangling ids).
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
    if p.transitive {
        t.transitive.push((key, rk));
    }
    let o_labelled = oi.is_some_and(|r| m.labelled(EntityIndex::Item(r)));
    let p_labelled = m.labelled(EntityIndex::Prop(pi));
    // The existence index also keeps the statements of an unlabelled inverse partner of a labelled property.
    let partner_labelled = p.inverse.is_some_and(|q| {
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
