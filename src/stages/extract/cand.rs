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

    fn guid(subject: u64, id: &str) -> Option<StmtId> {
        let (prefix, uuid) = id.split_once('$')?;
        let mut flags = match prefix.as_bytes().first()? {
            b'Q' => 0u8,
            b'q' => 1,
            _ => return None,
        };
        let digits = &prefix[1..];
        if digits.is_empty()
            || digits.starts_with('0')
            || !digits.bytes().all(|b| b.is_ascii_digit())
            || digits.parse::<u64>().ok()? != subject
        {
            return None;
        }
        let u: &[u8; 36] = uuid.as_bytes().try_into().ok()?;
        if u[8] != b'-' || u[13] != b'-' || u[18] != b'-' || u[23] != b'-' {
            return None;
        }
        let mut out = [0u8; 16];
        let mut seen = 0u8;
        let digits = u
            .iter()
            .enumerate()
            .filter(|(i, _)| !matches!(i, 8 | 13 | 18 | 23))
            .map(|(_, &b)| b);
        for (n, b) in digits.enumerate() {
            let v = HEX.get(usize::from(b)).copied().unwrap_or(0xFF);
            seen |= v;
            if let Some(slot) = out.get_mut(n / 2) {
                *slot |= (v & 0x0F) << if n % 2 == 0 { 4 } else { 0 };
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
                let digits = if flags & 2 == 0 { UPPER } else { LOWER };
                let hex = |d: u8| digits.get(usize::from(d & 15)).copied().unwrap_or(b'0');
                out.push(if flags & 1 != 0 { b'q' } else { b'Q' });
                crate::core::ids::push_u64(out, subject);
                out.push(b'$');
                for (i, byte) in b.iter().enumerate() {
                    if matches!(i, 4 | 6 | 8 | 10) {
                        out.push(b'-');
                    }
                    out.push(hex(byte >> 4));
                    out.push(hex(*byte));
                }
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
