//! Walker/Vose alias table: the noise distribution of negative sampling in O(1) per draw.
//!
//! word2vec draws noise words from a 10⁸-entry table (400 MB); an alias table needs 8 bytes per node and one
//! 64-bit random number per draw, and gives the exact distribution up to the 2⁻³² resolution of its
//! thresholds.

/// Walker/Vose alias table: O(1) draws from a discrete distribution with one 64-bit random number.
#[derive(Clone, Debug)]
pub struct AliasTable {
    /// Per slot: acceptance threshold (probability × 2³², saturated) and alias.
    slots: Vec<(u32, u32)>,
}

impl AliasTable {
    /// Table for weights proportional to `weights` (non-negative, not all zero).
    pub fn new(weights: &[f64]) -> Option<AliasTable> {
        let n = weights.len();
        let total: f64 = weights.iter().sum();
        if n == 0 || n > u32::MAX as usize || total.is_nan() || total <= 0.0 || total.is_infinite()
        {
            return None;
        }
        let mut prob: Vec<f64> = weights.iter().map(|w| w * n as f64 / total).collect();
        let mut alias: Vec<u32> = (0..n as u32).collect();
        let (mut small, mut large): (Vec<u32>, Vec<u32>) = (Vec::new(), Vec::new());
        for (i, p) in prob.iter().enumerate() {
            if *p < 1.0 {
                small.push(i as u32);
            } else {
                large.push(i as u32);
            }
        }
        while let (Some(&s), Some(&l)) = (small.last(), large.last()) {
            small.pop();
            alias[s as usize] = l;
            prob[l as usize] -= 1.0 - prob[s as usize];
            if prob[l as usize] < 1.0 {
                large.pop();
                small.push(l);
            }
        }
        // Whatever is left has probability 1 up to rounding.
        for i in small.into_iter().chain(large) {
            prob[i as usize] = 1.0;
            alias[i as usize] = i;
        }
        let slots = prob
            .iter()
            .zip(&alias)
            .map(|(p, a)| {
                let t = (p * 4294967296.0).min(u32::MAX as f64) as u32;
                // Probability 1: point the alias at the slot itself so a draw above the threshold is exact.
                (
                    t,
                    if *p >= 1.0 {
                        alias[*a as usize].min(*a)
                    } else {
                        *a
                    },
                )
            })
            .collect();
        Some(AliasTable { slots })
    }

    /// Number of outcomes.
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// True when empty (never, for a constructed table).
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// The slot a draw from `r` reads: the low 32 bits of `r`, multiply-shifted into `0..len` (so `< len`).
    #[inline(always)]
    fn slot(&self, r: u64) -> usize {
        (((r & 0xffff_ffff) * self.slots.len() as u64) >> 32) as usize
    }

    /// Where the slot that [`AliasTable::sample`] reads for `r` is (null for an empty table), for a caller that
    /// asks the cache for it ahead of the draw.
    #[inline(always)]
    pub fn slot_ptr(&self, r: u64) -> *const u8 {
        self.slots
            .get(self.slot(r))
            .map_or(std::ptr::null(), |s| (s as *const (u32, u32)).cast())
    }

    /// One draw from a 64-bit uniform random number: the low 32 bits pick the slot (multiply-shift), the high
    /// 32 bits decide between the slot and its alias.
    #[inline(always)]
    pub fn sample(&self, r: u64) -> u32 {
        let i = self.slot(r);
        // `i < len` by construction of the multiply-shift.
        let (t, a) = self.slots[i];
        if ((r >> 32) as u32) < t {
            i as u32
        } else {
            a
        }
    }
}
