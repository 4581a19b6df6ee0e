//! Candidate statements: the item→item statements kept while the dump is read, before the join knows which
//! objects are labelled, with their Wikidata statement ids packed small.

#![deny(clippy::indexing_slicing, clippy::arithmetic_side_effects)]

use crate::core::ids::{Pid, Qid};
use crate::core::records::{Rank, Triple};
use serde::{Deserialize, Serialize};

/// A candidate statement held in memory between the streaming pass and the join: 48 bytes and no heap
/// allocation for the usual statement GUID `Q42$0D9D1E2E-…` (stored as 16 bytes plus case flags), which keeps
/// the ≈10⁸ candidates of a full dump in a few GB (see the README).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cand {
    pub s: u64,
    pub o: u64,
    pub p: u32,
    pub rank: Rank,
    pub id: StmtId,
}

/// `HEX[b]`: the value of hex digit `b`, `| 0x10` for a-f, `| 0x20` for A-F; 0xFF for a non-digit.
#[allow(clippy::indexing_slicing, clippy::arithmetic_side_effects)] // evaluated at compile time
const HEX: [u8; 256] = {
    let mut t = [0xFFu8; 256];
    let mut i = 0;
    while i < 10 {
        t[b'0' as usize + i] = i as u8;
        i += 1;
    }
    let mut i = 0;
    while i < 6 {
        t[b'a' as usize + i] = (10 + i as u8) | 0x10;
        t[b'A' as usize + i] = (10 + i as u8) | 0x20;
        i += 1;
    }
    t
};

/// A statement GUID, compact when it has the standard shape `<Q|q><subject>$<UUID>`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum StmtId {
    /// UUID bytes; flags bit 0: prefix `q` (else `Q`), bit 1: lower-case hex (else upper-case).
    Guid([u8; 16], u8),
    Other(Box<str>),
    Missing,
}

impl StmtId {
    /// Encode the GUID of a statement of item `subject`.
    pub fn encode(subject: u64, id: Option<&str>) -> StmtId {
        let Some(id) = id else {
            return StmtId::Missing;
        };
        Self::guid(subject, id).unwrap_or_else(|| StmtId::Other(id.into()))
    }

    /// `<Q|q><subject>$<UUID>` read in one pass over the bytes: the UUID is the last 36 bytes, preceded by `$`,
    /// so a second `$` anywhere fails the digits or the hex check, as the split at the first `$` did (the
    /// iterator chain that split, parsed and filtered cost ≈ 1 % of extract's instructions).
    fn guid(subject: u64, id: &str) -> Option<StmtId> {
        let b = id.as_bytes();
        let (head, u) = b.split_at_checked(b.len().checked_sub(36)?)?;
        let u: &[u8; 36] = u.try_into().ok()?;
        let (&dollar, head) = head.split_last()?;
        let (&first, digits) = head.split_first()?;
        if dollar != b'$' {
            return None;
        }
        let mut flags = match first {
            b'Q' => 0u8,
            b'q' => 1,
            _ => return None,
        };
        // A positive decimal without a leading zero, equal to the subject (no overflow: checked).
        if digits.first().is_none_or(|&d| d == b'0') {
            return None;
        }
        let mut n = 0u64;
        for &d in digits {
            if !d.is_ascii_digit() {
                return None;
            }
            n = n
                .checked_mul(10)?
                .checked_add(u64::from(d.wrapping_sub(b'0')))?;
        }
        if n != subject {
            return None;
        }
        if u[8] != b'-' || u[13] != b'-' || u[18] != b'-' || u[23] != b'-' {
            return None;
        }
        let mut out = [0u8; 16];
        let mut seen = 0u8;
        // The 32 hex digits in pairs: (start of each group, its length in digits).
        let mut k = 0usize;
        for (start, len) in [(0usize, 8usize), (9, 4), (14, 4), (19, 4), (24, 12)] {
            let group = u.get(start..start.checked_add(len)?)?;
            for pair in group.chunks_exact(2) {
                let hi = HEX
                    .get(usize::from(*pair.first()?))
                    .copied()
                    .unwrap_or(0xFF);
                let lo = HEX.get(usize::from(*pair.get(1)?)).copied().unwrap_or(0xFF);
                seen |= hi | lo;
                *out.get_mut(k)? = ((hi & 0x0F) << 4) | (lo & 0x0F);
                k = k.checked_add(1)?;
            }
        }
        // A non-digit sets every bit; mixed case sets both case bits.
        if seen & 0x30 == 0x30 {
            return None;
        }
        let lower = seen & 0x10 != 0;
        if lower {
            flags |= 2;
        }
        Some(StmtId::Guid(out, flags))
    }

    /// The GUID text (empty when missing).
    pub fn decode(&self, subject: u64) -> String {
        let mut b = Vec::with_capacity(58);
        self.write(subject, &mut b);
        // ASCII, or the text of an `Other` id: UTF-8 either way.
        String::from_utf8(b).unwrap_or_default()
    }

    /// Append the GUID text (nothing when missing) to `out`.
    pub fn write(&self, subject: u64, out: &mut Vec<u8>) {
        const UPPER: &[u8; 16] = b"0123456789ABCDEF";
        const LOWER: &[u8; 16] = b"0123456789abcdef";
        match self {
            StmtId::Missing => {}
            StmtId::Other(s) => out.extend_from_slice(s.as_bytes()),
            StmtId::Guid(b, flags) => {
                // Where each byte's two digits go in `$XXXXXXXX-XXXX-XXXX-XXXX-XXXXXXXXXXXX`.
                const AT: [usize; 16] =
                    [1, 3, 5, 7, 10, 12, 15, 17, 20, 22, 25, 27, 29, 31, 33, 35];
                let digits = if flags & 2 == 0 { UPPER } else { LOWER };
                let hex = |d: u8| digits.get(usize::from(d & 15)).copied().unwrap_or(b'0');
                // Filled on the stack and appended at once (a push per character was most of the cost of
                // writing the `statement_id` columns).
                let mut t = [b'-'; 37];
                if let Some(d) = t.first_mut() {
                    *d = b'$';
                }
                for (&byte, &at) in b.iter().zip(&AT) {
                    if let Some([h, l]) = t.get_mut(at..).and_then(|s| s.first_chunk_mut::<2>()) {
                        *h = hex(byte >> 4);
                        *l = hex(byte);
                    }
                }
                out.reserve(58);
                out.push(if flags & 1 != 0 { b'q' } else { b'Q' });
                crate::core::ids::push_u64(out, subject);
                out.extend_from_slice(&t);
            }
        }
    }
}

impl Cand {
    /// The order of the corresponding [`Triple`]s (statement ids compared as text only on ties).
    pub fn cmp_as_triple(a: &Cand, b: &Cand) -> std::cmp::Ordering {
        (a.s, a.p, a.o, a.rank)
            .cmp(&(b.s, b.p, b.o, b.rank))
            .then_with(|| {
                if a.id == b.id {
                    std::cmp::Ordering::Equal
                } else {
                    a.id.decode(a.s).cmp(&b.id.decode(b.s))
                }
            })
    }

    /// The statement as a [`Triple`].
    pub fn to_triple(&self) -> Triple {
        Triple {
            subject: Qid(self.s),
            property: Pid(u64::from(self.p)),
            object: Qid(self.o),
            rank: self.rank,
            statement_id: self.id.decode(self.s),
        }
    }

    /// From a [`Triple`] (`None` when the property number does not fit 32 bits).
    pub fn from_triple(t: &Triple) -> Option<Cand> {
        Some(Cand {
            s: t.subject.0,
            o: t.object.0,
            p: u32::try_from(t.property.0).ok()?,
            rank: t.rank,
            id: StmtId::encode(
                t.subject.0,
                (!t.statement_id.is_empty()).then_some(t.statement_id.as_str()),
            ),
        })
    }
}

#[cfg(test)]
#[allow(clippy::indexing_slicing, clippy::arithmetic_side_effects)]
mod tests {
    use super::*;

    /// The standard shape, checked the plain way: `<Q|q><subject, no leading zero>$<8-4-4-4-12 hex digits of
    /// one case>`.
    fn standard(subject: u64, id: &str) -> bool {
        let Some((prefix, uuid)) = id.split_once('$') else {
            return false;
        };
        let (Some(q), digits) = (prefix.chars().next(), prefix.get(1..).unwrap_or("")) else {
            return false;
        };
        let groups: Vec<&str> = uuid.split('-').collect();
        let lens: Vec<usize> = groups.iter().map(|g| g.len()).collect();
        let hex: String = groups.concat();
        (q == 'Q' || q == 'q')
            && !digits.starts_with('0')
            && digits == subject.to_string()
            && lens == [8, 4, 4, 4, 12]
            && hex.chars().all(|c| c.is_ascii_hexdigit())
            && !(hex.chars().any(|c| c.is_ascii_lowercase())
                && hex.chars().any(|c| c.is_ascii_uppercase()))
    }

    proptest::proptest! {
        /// Every id comes back as given, and exactly the standard ones are packed.
        #[test]
        fn encode_packs_exactly_the_standard_ids_and_round_trips(
            subject in proptest::prop_oneof![0u64..200, proptest::num::u64::ANY],
            prefix in "[Qqx]?",
            digits in proptest::option::of("0?[0-9]{0,3}"),
            dollar in "[$]{0,2}",
            uuid in proptest::option::of("[0-9a-fA-F$g-]{30,38}"),
            std_case in proptest::option::of(proptest::bool::ANY),
        ) {
            let digits = digits.unwrap_or_else(|| subject.to_string());
            let uuid = match (uuid, std_case) {
                (_, Some(upper)) => {
                    let u = "0d9d1e2e-6c97-4b66-8ad4-0123456789ab";
                    if upper { u.to_uppercase() } else { u.to_string() }
                }
                (Some(u), None) => u,
                (None, None) => String::new(),
            };
            let id = format!("{prefix}{digits}{dollar}{uuid}");
            let e = StmtId::encode(subject, Some(&id));
            proptest::prop_assert_eq!(e.decode(subject), id.clone());
            proptest::prop_assert_eq!(matches!(e, StmtId::Guid(..)), standard(subject, &id), "{}", id);
        }
    }
}
