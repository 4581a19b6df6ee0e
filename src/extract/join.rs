//! The join of the extract stage (pure): from what the streaming pass kept — labelled entities, property
//! metadata, candidate statements of labelled subjects and seed statements of unlabelled ones — to the five
//! artifacts' rows: entities and properties sorted and deduplicated, the existence index (`statements`), the
//! final `triples` and the statements of transitive properties.

use crate::extract::keep::Cand;
use crate::ids::{EntityId, Pid, Qid};
use crate::model::{EntityRecord, PropertyRecord, Rank, Triple};
use std::collections::{HashMap, HashSet};

/// The join's products.
pub struct Joined {
    pub entities: Vec<EntityRecord>,
    pub properties: Vec<PropertyRecord>,
    pub triples: Vec<Triple>,
    pub statements: Vec<Triple>,
    /// Sorted like `Triple` (subject, property, object, rank, statement id); converted to rows while writing.
    pub transitive: Vec<Cand>,
    /// Statements with unlabelled subjects of transitive properties outside the seed (not kept).
    pub transitive_missed: u64,
    pub duplicate_entities: u64,
}

/// Properties whose statements between labelled items go to the existence index: the labelled properties,
/// and every inverse partner of a labelled property (P1696 stated on either side) even when the partner itself
/// is not labelled in every language.
///
/// Why the partners: a distortion (S′, P, O′) of a labelled P is true when (O′, P′, S′) is stated for an inverse
/// P′ of P, and Wikidata often states such a fact on one side only. An index restricted to labelled properties
/// would be blind to it whenever P′ lacks a Korean or Japanese label, and the distortion stage would label a
/// true statement false. Partners add few rows (there are a few hundred inverse pairs in Wikidata).
pub fn index_properties(
    properties: &[PropertyRecord],
    labelled: &HashSet<EntityId>,
) -> HashSet<Pid> {
    let is_labelled = |p: Pid| labelled.contains(&EntityId::Property(p));
    let mut out: HashSet<Pid> = labelled
        .iter()
        .filter_map(|e| match e {
            EntityId::Property(p) => Some(*p),
            EntityId::Item(_) => None,
        })
        .collect();
    for p in properties {
        for &q in &p.inverse {
            if is_labelled(p.id) {
                out.insert(q);
            }
            if is_labelled(q) {
                out.insert(p.id);
            }
        }
    }
    out
}

/// Sort, deduplicate and join (pure).
pub fn join(
    mut entities: Vec<EntityRecord>,
    mut properties: Vec<PropertyRecord>,
    candidates: Vec<Cand>,
    seed_other: Vec<Cand>,
    unlabelled_by_prop: &HashMap<Pid, u64>,
    seed: &[Pid],
) -> Joined {
    entities.sort_by_key(|e| e.id);
    let before = entities.len();
    entities.dedup_by(|b, a| a.id == b.id);
    let duplicate_entities = before.saturating_sub(entities.len()) as u64;
    properties.sort_by_key(|p| p.id);
    properties.dedup_by(|b, a| a.id == b.id);
    let labelled: HashSet<EntityId> = entities.iter().map(|e| e.id).collect();
    let transitive_props: HashSet<Pid> = properties
        .iter()
        .filter(|p| p.transitive)
        .map(|p| p.id)
        .collect();
    let mut transitive: Vec<Cand> = candidates
        .iter()
        .chain(seed_other.iter())
        .filter(|c| transitive_props.contains(&Pid(u64::from(c.p))))
        .cloned()
        .collect();
    drop(seed_other);
    transitive.sort_unstable_by(Cand::cmp_as_triple);
    transitive.dedup();
    let index_props = index_properties(&properties, &labelled);
    let mut statements: Vec<Triple> = candidates
        .iter()
        .filter(|c| {
            index_props.contains(&Pid(u64::from(c.p)))
                && labelled.contains(&EntityId::Item(Qid(c.o)))
        })
        .map(Cand::to_triple)
        .collect();
    drop(candidates);
    statements.sort_unstable();
    statements.dedup();
    // Final triples: P labelled, deprecated out, one row per (S, P, O) with the best rank (ties: smallest
    // statement id).
    let mut triples: Vec<Triple> = Vec::new();
    for t in statements
        .iter()
        .filter(|t| t.rank != Rank::Deprecated)
        .filter(|t| labelled.contains(&EntityId::Property(t.property)))
    {
        match triples.last_mut() {
            Some(last) if last.key() == t.key() => {
                if t.rank > last.rank {
                    *last = t.clone();
                }
            }
            _ => triples.push(t.clone()),
        }
    }
    let transitive_missed = transitive_props
        .iter()
        .filter(|p| !seed.contains(p))
        .map(|p| unlabelled_by_prop.get(p).copied().unwrap_or(0))
        .sum();
    Joined {
        entities,
        properties,
        triples,
        statements,
        transitive,
        transitive_missed,
        duplicate_entities,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn index_keeps_labelled_properties_and_inverse_partners_of_labelled_ones() {
        let prop = |id: u64, inverse: &[u64]| PropertyRecord {
            id: Pid(id),
            datatype: "wikibase-item".into(),
            labels: vec![],
            transitive: false,
            symmetric: false,
            inverse: inverse.iter().map(|&q| Pid(q)).collect(),
        };
        // P1 labelled, declares P2 (unlabelled); P3 unlabelled, declares P4 (labelled); P5 and P6 unlabelled
        // partners of each other; P7 unlabelled, no inverse; P8 labelled, no inverse.
        let props = [
            prop(1, &[2]),
            prop(2, &[]),
            prop(3, &[4]),
            prop(4, &[]),
            prop(5, &[6]),
            prop(6, &[5]),
            prop(7, &[]),
            prop(8, &[]),
        ];
        let labelled: HashSet<EntityId> = [1, 4, 8]
            .into_iter()
            .map(|p| EntityId::Property(Pid(p)))
            .chain([EntityId::Item(Qid(1))])
            .collect();
        let mut got: Vec<u64> = index_properties(&props, &labelled)
            .into_iter()
            .map(|p| p.0)
            .collect();
        got.sort_unstable();
        assert_eq!(got, [1, 2, 3, 4, 8]);
    }

    #[test]
    fn join_keeps_labelled_merges_ranks_and_drops_deprecated() {
        let e = |id: EntityId| EntityRecord {
            id,
            labels: vec![],
            descriptions: vec![],
            sitelinks: 0,
            lastrevid: None,
            modified: None,
        };
        let t = |s, p, o, rank, id: &str| Triple {
            subject: Qid(s),
            property: Pid(p),
            object: Qid(o),
            rank,
            statement_id: id.into(),
        };
        let entities = vec![
            e(EntityId::Item(Qid(1))),
            e(EntityId::Item(Qid(2))),
            e(EntityId::Property(Pid(10))),
        ];
        let props = vec![PropertyRecord {
            id: Pid(10),
            datatype: "wikibase-item".into(),
            labels: vec![],
            transitive: true,
            symmetric: false,
            inverse: vec![],
        }];
        let c = |t: Triple| Cand::from_triple(&t).unwrap();
        let cands = vec![
            c(t(1, 10, 2, Rank::Preferred, "b")),
            c(t(1, 10, 2, Rank::Normal, "a")),
            c(t(2, 10, 1, Rank::Deprecated, "c")),
            c(t(1, 10, 3, Rank::Normal, "d")), // object unlabelled
            c(t(1, 11, 2, Rank::Normal, "e")), // property unlabelled
        ];
        let other = vec![c(t(3, 10, 4, Rank::Normal, "f"))];
        let j = join(entities, props, cands, other, &HashMap::new(), &[]);
        assert_eq!(j.triples, vec![t(1, 10, 2, Rank::Preferred, "b")]);
        assert_eq!(
            j.statements,
            vec![
                t(1, 10, 2, Rank::Normal, "a"),
                t(1, 10, 2, Rank::Preferred, "b"),
                t(2, 10, 1, Rank::Deprecated, "c")
            ]
        );
        assert_eq!(j.transitive.len(), 5);
        let tr: Vec<Triple> = j.transitive.iter().map(Cand::to_triple).collect();
        let mut sorted = tr.clone();
        sorted.sort();
        assert_eq!(tr, sorted);
    }
}
