//! The property-constraint statements (P2302) of a property entity, read for the falsity rule
//! (`core::falsity`, docs/falsity.md).
//!
//! The fast line parsers skip qualifiers, and a constraint is all qualifiers (classes P2308, relation P2309,
//! exceptions P2303, separators P4155). Property lines are ≈ 10⁴ of a dump's ≈ 10⁸, so the extract stage reads
//! their claims a second time here, with serde_json, and the hot path stays as it is. Only the P2302 claim is
//! built as a `Value` (the others are passed over, see `ConstraintClaim`): a generated dump has a property line
//! in 60, and building whole lines cost ≈ 2 % of extract's instructions there.

use crate::core::falsity::{Constraint, Kind, Relation, Summary};
use crate::core::ids::{Pid, Qid};
use serde::Deserialize;
use serde_json::Value;

/// The id of a `wikibase-entityid` datavalue, the way the extract stage's parser resolves it: its `id` when it
/// has one, else a positive `numeric-id` of an item or property. `(letter, number)`.
fn entity_id(datavalue: &Value) -> Option<(u8, u64)> {
    if datavalue.get("type")?.as_str()? != "wikibase-entityid" {
        return None;
    }
    let v = datavalue.get("value")?;
    match v.get("id") {
        Some(Value::Null) | None => {}
        Some(id) => {
            let id = id.as_str()?;
            return Qid::parse(id)
                .map(|q| (b'Q', q.0))
                .or_else(|| Pid::parse(id).map(|p| (b'P', p.0)));
        }
    }
    let n = v.get("numeric-id")?.as_u64().filter(|&n| n > 0)?;
    match v.get("entity-type")?.as_str()? {
        "item" => Some((b'Q', n)),
        "property" => Some((b'P', n)),
        _ => None,
    }
}

/// The value of a snak that is a `value` snak of an entity of kind `letter` (`Q` or `P`).
fn snak_value(snak: &Value, letter: u8) -> Option<u64> {
    if snak.get("snaktype")?.as_str()? != "value" {
        return None;
    }
    let (l, n) = entity_id(snak.get("datavalue")?)?;
    (l == letter).then_some(n)
}

fn inc(n: &mut u64) {
    *n = n.saturating_add(1);
}

/// The P2302 statements of a property entity (its `claims` value), and what was counted reading them.
pub fn read_claims(property: Pid, claims: &Value) -> (Vec<Constraint>, Summary) {
    read_constraint_statements(property, claims.get("P2302"))
}

/// [`read_claims`] from the value of the `P2302` claim alone (`None`: the entity has none).
fn read_constraint_statements(property: Pid, p2302: Option<&Value>) -> (Vec<Constraint>, Summary) {
    let mut summary = Summary::new();
    let mut out = Vec::new();
    let Some(statements) = p2302.and_then(Value::as_array) else {
        return (out, summary);
    };
    for st in statements {
        if !st.is_object() {
            continue;
        }
        if st.get("rank").and_then(Value::as_str) == Some("deprecated") {
            inc(&mut summary.constraints_deprecated);
            continue;
        }
        let Some(kind_q) = st.get("mainsnak").and_then(|s| snak_value(s, b'Q')) else {
            inc(&mut summary.bad_constraint_without_type);
            continue;
        };
        let Some(kind) = Kind::of(Qid(kind_q)) else {
            inc(&mut summary.constraints_other_kind);
            continue;
        };
        let quals = st.get("qualifiers").filter(|q| q.is_object());
        let mut usable = |p: &str, letter: u8| -> Vec<u64> {
            let mut v = Vec::new();
            let snaks = quals.and_then(|q| q.get(p)).and_then(Value::as_array);
            for snak in snaks.into_iter().flatten() {
                match snak_value(snak, letter) {
                    Some(n) => v.push(n),
                    None => inc(&mut summary.bad_qualifier_without_value),
                }
            }
            v.sort_unstable();
            v.dedup();
            v
        };
        let classes = usable("P2308", b'Q');
        let relations = usable("P2309", b'Q');
        let exceptions = usable("P2303", b'Q');
        let separators = usable("P4155", b'P');
        let (classes, relation) = if kind.is_type() {
            if classes.is_empty() {
                inc(&mut summary.bad_constraint_without_classes);
                continue;
            }
            let relation = match relations.as_slice() {
                [] => Relation::Instance,
                [r] => match Relation::ALL.into_iter().find(|x| x.qid() == Qid(*r)) {
                    Some(x) => x,
                    None => {
                        inc(&mut summary.bad_constraint_unknown_relation);
                        continue;
                    }
                },
                _ => {
                    inc(&mut summary.bad_constraint_unknown_relation);
                    continue;
                }
            };
            (classes.into_iter().map(Qid).collect(), Some(relation))
        } else {
            (Vec::new(), None)
        };
        inc(&mut summary.constraints);
        inc(summary
            .constraints_by_kind
            .entry(kind.as_str().to_string())
            .or_default());
        let separator = !separators.is_empty();
        if separator {
            inc(&mut summary.constraints_with_separator);
        }
        if !exceptions.is_empty() {
            inc(&mut summary.constraints_with_exceptions);
        }
        out.push(Constraint {
            property,
            kind,
            statement_id: st
                .get("id")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
            separator,
            exceptions: exceptions.into_iter().map(Qid).collect(),
            classes,
            relation,
        });
    }
    (out, summary)
}

/// The constraints of a property entity's dump line (a JSON object, with or without the trailing comma).
/// `Ok(None)` when the line is not a property with a P-id; an error when it is not JSON.
pub fn read_property_line(line: &[u8]) -> serde_json::Result<Option<(Vec<Constraint>, Summary)>> {
    let line = line.trim_ascii_end();
    let line = line.strip_suffix(b",").unwrap_or(line);
    #[derive(Deserialize)]
    struct Line {
        #[serde(rename = "type")]
        kind: Option<String>,
        id: Option<String>,
        claims: Option<ConstraintClaim>,
    }
    let l: Line = serde_json::from_slice(line)?;
    let property = match (l.kind.as_deref(), l.id.as_deref().and_then(Pid::parse)) {
        (Some("property") | None, Some(p)) => p,
        _ => return Ok(None),
    };
    Ok(Some(read_constraint_statements(
        property,
        l.claims.as_ref().and_then(|c| c.0.as_ref()),
    )))
}

/// The `P2302` value of a `claims` value, as `claims.get("P2302")` finds it in the whole `Value` (the last one
/// when the key is repeated; none when `claims` is no object), with every other claim passed over by serde's
/// `IgnoredAny` instead of being built: the other claims are most of a property line, and building them was
/// most of the cost of reading the constraints (≈ 2 % of extract's instructions on a generated dump, whose
/// property lines are one in 60). Passed-over values are checked as JSON syntax, but not for the limits only a
/// built `Value` has (128 levels of nesting, a float beyond `f64`): such a line is now read, as the oracle's
/// Python reader reads it.
struct ConstraintClaim(Option<Value>);

impl<'de> Deserialize<'de> for ConstraintClaim {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::{IgnoredAny, MapAccess, SeqAccess, Visitor};
        /// A map key: whether it is `P2302` (compared as the unescaped text, as a `Value` map's key is).
        struct IsP2302(bool);
        impl<'de> Deserialize<'de> for IsP2302 {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct K;
                impl Visitor<'_> for K {
                    type Value = IsP2302;
                    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                        f.write_str("a claim key")
                    }
                    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<IsP2302, E> {
                        Ok(IsP2302(v == "P2302"))
                    }
                }
                d.deserialize_str(K)
            }
        }
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = ConstraintClaim;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("the claims of an entity")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<ConstraintClaim, A::Error> {
                let mut p2302 = None;
                while let Some(IsP2302(is)) = m.next_key()? {
                    if is {
                        p2302 = Some(m.next_value::<Value>()?);
                    } else {
                        m.next_value::<IgnoredAny>()?;
                    }
                }
                Ok(ConstraintClaim(p2302))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut s: A) -> Result<ConstraintClaim, A::Error> {
                while s.next_element::<IgnoredAny>()?.is_some() {}
                Ok(ConstraintClaim(None))
            }
            fn visit_bool<E: serde::de::Error>(self, _: bool) -> Result<ConstraintClaim, E> {
                Ok(ConstraintClaim(None))
            }
            fn visit_i64<E: serde::de::Error>(self, _: i64) -> Result<ConstraintClaim, E> {
                Ok(ConstraintClaim(None))
            }
            fn visit_u64<E: serde::de::Error>(self, _: u64) -> Result<ConstraintClaim, E> {
                Ok(ConstraintClaim(None))
            }
            fn visit_f64<E: serde::de::Error>(self, _: f64) -> Result<ConstraintClaim, E> {
                Ok(ConstraintClaim(None))
            }
            fn visit_str<E: serde::de::Error>(self, _: &str) -> Result<ConstraintClaim, E> {
                Ok(ConstraintClaim(None))
            }
            fn visit_unit<E: serde::de::Error>(self) -> Result<ConstraintClaim, E> {
                Ok(ConstraintClaim(None))
            }
        }
        d.deserialize_any(V)
    }
}

#[cfg(test)]
#[allow(clippy::indexing_slicing)]
mod tests {
    use super::*;

    fn constraint(kind: &str, quals: &str, rank: &str) -> String {
        format!(
            r#"{{"mainsnak":{{"snaktype":"value","property":"P2302","datavalue":{{"value":{{"entity-type":"item","numeric-id":{kind},"id":"Q{kind}"}},"type":"wikibase-entityid"}},"datatype":"wikibase-item"}},"type":"statement","qualifiers":{{{quals}}},"id":"P1$X","rank":"{rank}"}}"#
        )
    }

    fn item_snak(p: &str, q: u64) -> String {
        format!(
            r#"{{"snaktype":"value","property":"{p}","datavalue":{{"value":{{"entity-type":"item","numeric-id":{q}}},"type":"wikibase-entityid"}}}}"#
        )
    }

    #[test]
    fn reads_each_shape_and_counts_what_it_ignores() {
        let sep = r#""P4155":[{"snaktype":"value","property":"P4155","datavalue":{"value":{"entity-type":"property","numeric-id":580,"id":"P580"},"type":"wikibase-entityid"}}]"#;
        let statements = [
            // single value with a separator and an exception
            constraint(
                "19474404",
                &format!(r#"{sep},"P2303":[{}]"#, item_snak("P2303", 7)),
                "normal",
            ),
            // subject type, two classes (one twice), relation subclass, a novalue class snak
            constraint(
                "21503250",
                &format!(
                    r#""P2308":[{},{},{},{{"snaktype":"novalue","property":"P2308"}}],"P2309":[{}]"#,
                    item_snak("P2308", 9),
                    item_snak("P2308", 5),
                    item_snak("P2308", 9),
                    item_snak("P2309", 21514624)
                ),
                "preferred",
            ),
            // value type without classes: bad
            constraint("21510865", "", "normal"),
            // value type with an unknown relation: bad
            constraint(
                "21510865",
                &format!(
                    r#""P2308":[{}],"P2309":[{}]"#,
                    item_snak("P2308", 5),
                    item_snak("P2309", 3)
                ),
                "normal",
            ),
            // deprecated, another type, a main snak without value
            constraint("19474404", "", "deprecated"),
            constraint("21510862", "", "normal"),
            r#"{"mainsnak":{"snaktype":"novalue","property":"P2302"},"rank":"normal"}"#.into(),
            // distinct values whose separator is an item (not usable): applies
            constraint(
                "21502410",
                &format!(r#""P4155":[{}]"#, item_snak("P4155", 580)),
                "normal",
            ),
        ];
        let line = format!(
            r#"{{"type":"property","datatype":"wikibase-item","id":"P1","claims":{{"P2302":[{}]}}}},"#,
            statements.join(",")
        );
        let (cs, s) = read_property_line(line.as_bytes()).unwrap().unwrap();
        assert_eq!(cs.len(), 3);
        assert_eq!(cs[0].kind, Kind::SingleValue);
        assert!(cs[0].separator);
        assert_eq!(cs[0].exceptions, vec![Qid(7)]);
        assert_eq!(cs[0].statement_id, "P1$X");
        assert_eq!(cs[1].kind, Kind::SubjectType);
        assert_eq!(cs[1].classes, vec![Qid(5), Qid(9)]);
        assert_eq!(cs[1].relation, Some(Relation::Subclass));
        assert_eq!(cs[2].kind, Kind::DistinctValues);
        assert!(!cs[2].separator);
        assert_eq!(s.constraints, 3);
        assert_eq!(s.constraints_by_kind["single_value"], 1);
        assert_eq!(s.constraints_by_kind["value_type"], 0);
        assert_eq!(s.constraints_other_kind, 1);
        assert_eq!(s.constraints_deprecated, 1);
        assert_eq!(s.constraints_with_separator, 1);
        assert_eq!(s.constraints_with_exceptions, 1);
        assert_eq!(s.bad_constraint_without_type, 1);
        assert_eq!(s.bad_constraint_without_classes, 1);
        assert_eq!(s.bad_constraint_unknown_relation, 1);
        // the novalue class snak and the item separator
        assert_eq!(s.bad_qualifier_without_value, 2);
    }

    #[test]
    fn other_lines_and_odd_shapes() {
        assert_eq!(
            read_property_line(br#"{"type":"item","id":"Q1","claims":{}}"#).unwrap(),
            None
        );
        assert!(read_property_line(b"{\"type\":").is_err());
        // claims as an array (2015 serialisation of an empty map), P2302 not an array, no claims
        for claims in [r#""claims":[]"#, r#""claims":{"P2302":{}}"#, r#""x":1"#] {
            let line = format!(r#"{{"type":"property","id":"P9",{claims}}}"#);
            let (cs, s) = read_property_line(line.as_bytes()).unwrap().unwrap();
            assert!(cs.is_empty());
            assert_eq!(s, Summary::new());
        }
    }
    /// The claim-by-claim reader of a line gives what `read_claims` gives on the line's whole `Value`: P2302
    /// among other claims (before, after, escaped in its key, repeated: the last one counts, as in a map),
    /// claims that are no object, other claims of every JSON kind.
    #[test]
    fn reading_only_p2302_agrees_with_the_whole_value() {
        let c1 = constraint("21502410", "", "normal");
        let c2 = constraint("19474404", "", "preferred");
        let other = r#""P31":[{"mainsnak":{"snaktype":"value","property":"P31","datavalue":{"value":{"entity-type":"item","numeric-id":5},"type":"wikibase-entityid"}},"rank":"normal","q":[1,-2.5e3,true,null,"\u0041"]}]"#;
        let claims = [
            format!(r#"{{"P2302":[{c1}]}}"#),
            format!(r#"{{{other},"P2302":[{c1},{c2}]}}"#),
            format!(r#"{{"P2302":[{c2}],{other}}}"#),
            format!(r#"{{"P2302":[{c1}],"P\u00322302":1,"P2302":[{c2}]}}"#),
            format!(r#"{{"P\u0032302":[{c2}],"X":{{"a":[{{}},[]]}}}}"#),
            format!(r#"{{"P2302":[{c1}],"P2302":null}}"#),
            "[]".to_string(),
            "[1,{\"P2302\":[]}]".to_string(),
            "null".to_string(),
            "7".to_string(),
            "-1.5".to_string(),
            "\"P2302\"".to_string(),
            "true".to_string(),
            "{}".to_string(),
        ];
        for c in claims {
            let line = format!(r#"{{"type":"property","id":"P9","claims":{c}}}"#);
            let whole: Value = serde_json::from_str(&line).unwrap();
            let want = match &whole["claims"] {
                Value::Null => (Vec::new(), Summary::new()),
                claims => read_claims(Pid(9), claims),
            };
            let got = read_property_line(line.as_bytes()).unwrap().unwrap();
            assert_eq!(got, want, "{c}");
        }
        assert!(read_property_line(br#"{"type":"property","id":"P9","claims":{"P1":[}}"#).is_err());
    }
}
