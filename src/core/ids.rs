//! Wikidata identifiers. This is the only place that parses or prints "Q42" / "P31".
//!
//! Item and property ids are stored as their numeric part (`u64`): a `Qid` of 42 is "Q42". Dense graph node
//! ids (`NodeId`, `u32`) are assigned by the graph stage.

use std::fmt;

/// An item id ("Q42" ↔ 42).
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
pub struct Qid(pub u64);

/// A property id ("P31" ↔ 31).
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
pub struct Pid(pub u64);

/// Dense node id in the entity graph (0..n).
pub type NodeId = u32;

/// Any entity id that the extract stage keeps: an item or a property.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
pub enum EntityId {
    Item(Qid),
    Property(Pid),
}

fn parse_num(digits: &[u8]) -> Option<u64> {
    if digits.is_empty() || digits.len() > 20 || digits[0] == b'0' {
        return None;
    }
    let mut n: u64 = 0;
    for &d in digits {
        if !d.is_ascii_digit() {
            return None;
        }
        n = n.checked_mul(10)?.checked_add(u64::from(d - b'0'))?;
    }
    Some(n)
}

impl Qid {
    /// Parse "Q42" (upper-case Q, no leading zeros). Returns `None` for anything else.
    pub fn parse(s: &str) -> Option<Qid> {
        s.as_bytes().strip_prefix(b"Q").and_then(parse_num).map(Qid)
    }
}

impl Pid {
    /// Parse "P31". Returns `None` for anything else.
    pub fn parse(s: &str) -> Option<Pid> {
        s.as_bytes().strip_prefix(b"P").and_then(parse_num).map(Pid)
    }
}

impl EntityId {
    /// Parse "Q42" or "P31".
    pub fn parse(s: &str) -> Option<EntityId> {
        Qid::parse(s)
            .map(EntityId::Item)
            .or_else(|| Pid::parse(s).map(EntityId::Property))
    }
}

/// Decimal digits of `n` (what `{n}` writes), without the formatting machinery (the generator's JSON and the
/// Parquet id columns write millions of them).
pub(crate) fn push_u64(out: &mut Vec<u8>, n: u64) {
    // Two digits per division (`itoa`): the id columns of the statement tables format every subject and object.
    out.extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
}

impl fmt::Display for Qid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Q{}", self.0)
    }
}

impl fmt::Display for Pid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "P{}", self.0)
    }
}

impl fmt::Display for EntityId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EntityId::Item(q) => q.fmt(f),
            EntityId::Property(p) => p.fmt(f),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_prints() {
        assert_eq!(Qid::parse("Q42"), Some(Qid(42)));
        assert_eq!(Pid::parse("P31"), Some(Pid(31)));
        assert_eq!(Qid(42).to_string(), "Q42");
        assert_eq!(EntityId::parse("P31"), Some(EntityId::Property(Pid(31))));
        for bad in [
            "",
            "Q",
            "q42",
            "Q042",
            "Q4x",
            "P",
            "L1",
            "Q99999999999999999999",
            "Q184467440737095516150",
        ] {
            assert_eq!(EntityId::parse(bad), None, "{bad}");
        }
    }

    proptest::proptest! {
        #[test]
        fn round_trip(n in 1u64..u64::MAX) {
            proptest::prop_assert_eq!(Qid::parse(&Qid(n).to_string()), Some(Qid(n)));
            proptest::prop_assert_eq!(Pid::parse(&Pid(n).to_string()), Some(Pid(n)));
        }
    }
}
