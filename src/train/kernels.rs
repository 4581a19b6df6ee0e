//! The arithmetic of the trainer: three SIMD kernels and σ, with the same bits on every CPU.
//!
//! A minibatch of skip-gram (see [`super`]) is three small matrix products over rows of `dim` floats:
//! [`Kernel::gram`] (the logits, every context row against every target row), and twice
//! [`Kernel::lincomb`] (each gradient row as a weighted sum of rows); the update is [`Kernel::add_assign`].
//! Each exists in three builds chosen at run time ([`Kernel::detect`]): AVX-512F, AVX2 + FMA, and a portable
//! scalar build. They give **bit-identical results**, because every path performs the same IEEE operations in
//! the same order:
//!
//! - **Fused multiply-add everywhere.** Every product-and-sum is one `fma(a, b, acc)` (one rounding). The
//!   vector paths use the FMA instructions; the scalar path uses `f32::mul_add`, which is the correctly
//!   rounded fused operation on every target (an instruction where the CPU has one, else the C library's
//!   exact `fmaf`). No path ever rounds a product separately.
//! - **A dot product has 16 lanes on every path.** Element `i` of the row goes to lane `i mod 16`; each lane
//!   accumulates its elements in ascending order from +0.0; the 16 lanes are then summed by a fixed tree
//!   (`l + l⊕8`, then `+4`, `+2`, `+1`: exactly the halving an AVX-512 reduction does, which AVX2 does with
//!   two 8-lane registers and the scalar path with an array); the `dim mod 16` last elements are then added by
//!   `fma` one at a time, in order. The width of the machine's registers never changes the order.
//! - **Weighted sums and additions are element-wise.** `y[i] = Σₛ w[s]·x[s][i]` starts from +0.0 and applies
//!   `fma` in ascending `s` for every element independently, so vector width is irrelevant.
//! - **σ is computed in scalar code from basic operations only** ([`exp`]: Cody–Waite range reduction and a
//!   fixed polynomial, in `f64`), never through the C library's `exp`, whose last bit differs between
//!   libraries and between its own FMA and non-FMA builds.
//!
//! So a seed gives the same vectors on a laptop without AVX2, on an AVX2 desktop and on an AVX-512 server (the
//! tests compare the three builds bit for bit on random shapes). The price is small: FMA is as fast as a
//! multiply, and the fixed 16-lane order is the natural one for both register widths.

/// One build of the kernels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kernel {
    /// Portable Rust, 16 emulated lanes (any CPU).
    Scalar,
    /// AVX2 and FMA (x86-64 since 2013: Haswell, Zen).
    Avx2,
    /// AVX-512F (Skylake-SP and later Xeons, Zen 4).
    Avx512,
}

/// Lanes of a dot product on every path.
pub const LANES: usize = 16;

impl Kernel {
    /// The fastest build this CPU runs.
    pub fn detect() -> Kernel {
        *Self::available().last().unwrap_or(&Kernel::Scalar)
    }

    /// Every build this CPU runs, slowest first (always starts with [`Kernel::Scalar`]).
    pub fn available() -> Vec<Kernel> {
        #[allow(unused_mut)]
        let mut v = vec![Kernel::Scalar];
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx2")
                && std::arch::is_x86_feature_detected!("fma")
            {
                v.push(Kernel::Avx2);
            }
            if std::arch::is_x86_feature_detected!("avx512f") {
                v.push(Kernel::Avx512);
            }
        }
        v
    }

    /// Name used in the manifest and in `SWORD_TRAIN_KERNEL`: `scalar`, `avx2`, `avx512`.
    pub fn name(self) -> &'static str {
        match self {
            Kernel::Scalar => "scalar",
            Kernel::Avx2 => "avx2",
            Kernel::Avx512 => "avx512",
        }
    }

    /// The build of that name, if this CPU runs it.
    pub fn by_name(name: &str) -> Option<Kernel> {
        Self::available().into_iter().find(|k| k.name() == name)
    }

    /// `out[r·S + s] = a[r] · b[s]` for the `R` rows of `a` and the `S` rows of `b` (row-major, `dim` wide).
    pub fn gram(self, dim: usize, a: &[f32], b: &[f32], out: &mut [f32]) {
        let (r, s) = (a.len() / dim.max(1), b.len() / dim.max(1));
        assert!(
            a.len() == r * dim && b.len() == s * dim && out.len() == r * s,
            "gram shapes"
        );
        if dim == 0 {
            out.fill(0.0);
            return;
        }
        match self {
            Kernel::Scalar => scalar::gram(dim, a, b, out),
            #[cfg(target_arch = "x86_64")]
            // SAFETY: a `Kernel::Avx2` exists only where `available` detected AVX2 and FMA; shapes checked.
            Kernel::Avx2 => unsafe { avx2::gram(dim, a, b, out) },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: as above, AVX-512F detected.
            Kernel::Avx512 => unsafe { avx512::gram(dim, a, b, out) },
            #[cfg(not(target_arch = "x86_64"))]
            _ => scalar::gram(dim, a, b, out),
        }
    }

    /// `y[r] = Σₛ w[r·S + s] · x[s]` for the `R` rows of `y` and the `S` rows of `x` (`dim` wide).
    pub fn lincomb(self, dim: usize, w: &[f32], x: &[f32], y: &mut [f32]) {
        let (s, r) = (x.len() / dim.max(1), y.len() / dim.max(1));
        assert!(
            x.len() == s * dim && y.len() == r * dim && w.len() == r * s,
            "lincomb shapes"
        );
        if dim == 0 {
            return;
        }
        match self {
            Kernel::Scalar => scalar::lincomb(dim, w, x, y),
            #[cfg(target_arch = "x86_64")]
            // SAFETY: AVX2 and FMA detected (see `gram`); shapes checked.
            Kernel::Avx2 => unsafe { avx2::lincomb(dim, w, x, y) },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: AVX-512F detected.
            Kernel::Avx512 => unsafe { avx512::lincomb(dim, w, x, y) },
            #[cfg(not(target_arch = "x86_64"))]
            _ => scalar::lincomb(dim, w, x, y),
        }
    }

    /// `y[i] += x[i]`.
    pub fn add_assign(self, y: &mut [f32], x: &[f32]) {
        assert_eq!(y.len(), x.len(), "add_assign shapes");
        match self {
            Kernel::Scalar => scalar::add_assign(y, x),
            #[cfg(target_arch = "x86_64")]
            // SAFETY: AVX2 detected; equal lengths checked.
            Kernel::Avx2 => unsafe { avx2::add_assign(y, x) },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: AVX-512F detected.
            Kernel::Avx512 => unsafe { avx512::add_assign(y, x) },
            #[cfg(not(target_arch = "x86_64"))]
            _ => scalar::add_assign(y, x),
        }
    }

    /// One dot product (the 1 × 1 case of [`Kernel::gram`]).
    pub fn dot(self, a: &[f32], b: &[f32]) -> f32 {
        let mut out = [0f32];
        self.gram(a.len(), a, &b[..a.len()], &mut out);
        out[0]
    }
}

/// The fixed reduction tree of 16 lanes: `l + (l+8)`, then `+4`, `+2`, `+1`.
#[inline(always)]
fn reduce16(v: &[f32; LANES]) -> f32 {
    let mut t8 = [0f32; 8];
    for l in 0..8 {
        t8[l] = v[l] + v[l + 8];
    }
    let t4 = [t8[0] + t8[4], t8[1] + t8[5], t8[2] + t8[6], t8[3] + t8[7]];
    let t2 = [t4[0] + t4[2], t4[1] + t4[3]];
    t2[0] + t2[1]
}

/// The portable build: 16 lanes in an array, `f32::mul_add` for every fused step.
pub mod scalar {
    use super::{reduce16, LANES};

    /// See [`super::Kernel::dot`].
    #[inline(always)]
    pub fn dot(a: &[f32], b: &[f32]) -> f32 {
        let dim = a.len();
        let full = dim / LANES * LANES;
        let mut acc = [0f32; LANES];
        for c in (0..full).step_by(LANES) {
            for l in 0..LANES {
                acc[l] = a[c + l].mul_add(b[c + l], acc[l]);
            }
        }
        let mut s = reduce16(&acc);
        for i in full..dim {
            s = a[i].mul_add(b[i], s);
        }
        s
    }

    /// See [`super::Kernel::gram`].
    pub fn gram(dim: usize, a: &[f32], b: &[f32], out: &mut [f32]) {
        let s = b.len() / dim;
        for (r, ar) in a.chunks_exact(dim).enumerate() {
            for (k, bk) in b.chunks_exact(dim).enumerate() {
                out[r * s + k] = dot(ar, bk);
            }
        }
    }

    /// See [`super::Kernel::lincomb`].
    pub fn lincomb(dim: usize, w: &[f32], x: &[f32], y: &mut [f32]) {
        let s = x.len() / dim;
        for (r, yr) in y.chunks_exact_mut(dim).enumerate() {
            yr.fill(0.0);
            for (k, xk) in x.chunks_exact(dim).enumerate() {
                let wk = w[r * s + k];
                for (yi, xi) in yr.iter_mut().zip(xk) {
                    *yi = wk.mul_add(*xi, *yi);
                }
            }
        }
    }

    /// See [`super::Kernel::add_assign`].
    pub fn add_assign(y: &mut [f32], x: &[f32]) {
        for (yi, xi) in y.iter_mut().zip(x) {
            *yi += *xi;
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use super::LANES;
    use std::arch::x86_64::*;

    /// `v` = lanes 0..8 in `lo`, 8..16 in `hi`, reduced by the tree of [`super::reduce16`].
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    fn reduce(lo: __m256, hi: __m256) -> f32 {
        let t8 = _mm256_add_ps(lo, hi);
        let t4 = _mm_add_ps(_mm256_castps256_ps128(t8), _mm256_extractf128_ps::<1>(t8));
        let t2 = _mm_add_ps(t4, _mm_movehl_ps(t4, t4));
        let t1 = _mm_add_ss(t2, _mm_shuffle_ps::<1>(t2, t2));
        _mm_cvtss_f32(t1)
    }

    /// Dot products of one row `a` against `N` rows `b[k]`, 16 lanes each.
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    unsafe fn dots<const N: usize>(dim: usize, a: *const f32, b: [*const f32; N]) -> [f32; N] {
        let full = dim / LANES * LANES;
        let mut lo = [_mm256_setzero_ps(); N];
        let mut hi = [_mm256_setzero_ps(); N];
        let mut c = 0;
        while c < full {
            // SAFETY (all loads here): the caller passes rows of `dim` floats; c + 16 ≤ full ≤ dim.
            let (x0, x1) = unsafe { (_mm256_loadu_ps(a.add(c)), _mm256_loadu_ps(a.add(c + 8))) };
            for k in 0..N {
                let (y0, y1) = unsafe {
                    (
                        _mm256_loadu_ps(b[k].add(c)),
                        _mm256_loadu_ps(b[k].add(c + 8)),
                    )
                };
                lo[k] = _mm256_fmadd_ps(x0, y0, lo[k]);
                hi[k] = _mm256_fmadd_ps(x1, y1, hi[k]);
            }
            c += LANES;
        }
        let mut out = [0f32; N];
        for k in 0..N {
            let mut s = reduce(lo[k], hi[k]);
            for i in full..dim {
                // SAFETY: i < dim.
                s = unsafe { (*a.add(i)).mul_add(*b[k].add(i), s) };
            }
            out[k] = s;
        }
        out
    }

    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn gram(dim: usize, a: &[f32], b: &[f32], out: &mut [f32]) {
        let s = b.len() / dim;
        let bp = |k: usize| b[k * dim..].as_ptr();
        for (r, ar) in a.chunks_exact(dim).enumerate() {
            let o = &mut out[r * s..(r + 1) * s];
            let mut k = 0;
            while k + 3 <= s {
                // SAFETY: rows k..k+3 of b and row r of a hold `dim` floats each.
                let d = unsafe { dots::<3>(dim, ar.as_ptr(), [bp(k), bp(k + 1), bp(k + 2)]) };
                o[k..k + 3].copy_from_slice(&d);
                k += 3;
            }
            while k < s {
                // SAFETY: as above.
                o[k] = unsafe { dots::<1>(dim, ar.as_ptr(), [bp(k)]) }[0];
                k += 1;
            }
        }
    }

    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn lincomb(dim: usize, w: &[f32], x: &[f32], y: &mut [f32]) {
        let s = x.len() / dim;
        let full8 = dim / 8 * 8;
        for (r, yr) in y.chunks_exact_mut(dim).enumerate() {
            let wr = &w[r * s..(r + 1) * s];
            let yp = yr.as_mut_ptr();
            let mut c = 0;
            // Four registers (32 floats) at a time, then single registers, then scalar elements; every
            // element is the same fma chain over s = 0..S whichever group it falls in.
            while c + 32 <= full8 {
                let mut acc = [_mm256_setzero_ps(); 4];
                for (k, &wk) in wr.iter().enumerate() {
                    let wv = _mm256_set1_ps(wk);
                    let xp = x[k * dim + c..].as_ptr();
                    for (q, a) in acc.iter_mut().enumerate() {
                        // SAFETY: c + 32 ≤ dim within row k of x.
                        *a = _mm256_fmadd_ps(wv, unsafe { _mm256_loadu_ps(xp.add(8 * q)) }, *a);
                    }
                }
                for (q, a) in acc.iter().enumerate() {
                    // SAFETY: c + 32 ≤ dim within row r of y.
                    unsafe { _mm256_storeu_ps(yp.add(c + 8 * q), *a) };
                }
                c += 32;
            }
            while c < full8 {
                let mut a = _mm256_setzero_ps();
                for (k, &wk) in wr.iter().enumerate() {
                    // SAFETY: c + 8 ≤ dim.
                    let xv = unsafe { _mm256_loadu_ps(x[k * dim + c..].as_ptr()) };
                    a = _mm256_fmadd_ps(_mm256_set1_ps(wk), xv, a);
                }
                // SAFETY: c + 8 ≤ dim.
                unsafe { _mm256_storeu_ps(yp.add(c), a) };
                c += 8;
            }
            for i in full8..dim {
                let mut a = 0f32;
                for (k, &wk) in wr.iter().enumerate() {
                    a = wk.mul_add(x[k * dim + i], a);
                }
                yr[i] = a;
            }
        }
    }

    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn add_assign(y: &mut [f32], x: &[f32]) {
        let n = y.len();
        let full = n / 8 * 8;
        let (yp, xp) = (y.as_mut_ptr(), x.as_ptr());
        let mut c = 0;
        while c < full {
            // SAFETY: c + 8 ≤ n = len of both.
            unsafe {
                let v = _mm256_add_ps(_mm256_loadu_ps(yp.add(c)), _mm256_loadu_ps(xp.add(c)));
                _mm256_storeu_ps(yp.add(c), v);
            }
            c += 8;
        }
        for i in full..n {
            y[i] += x[i];
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod avx512 {
    use super::LANES;
    use std::arch::x86_64::*;

    /// The tree of [`super::reduce16`] on one 16-lane register.
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn reduce(v: __m512) -> f32 {
        let lo = _mm512_castps512_ps256(v);
        let hi = _mm256_castpd_ps(_mm512_extractf64x4_pd::<1>(_mm512_castps_pd(v)));
        let t8 = _mm256_add_ps(lo, hi);
        let t4 = _mm_add_ps(_mm256_castps256_ps128(t8), _mm256_extractf128_ps::<1>(t8));
        let t2 = _mm_add_ps(t4, _mm_movehl_ps(t4, t4));
        let t1 = _mm_add_ss(t2, _mm_shuffle_ps::<1>(t2, t2));
        _mm_cvtss_f32(t1)
    }

    #[inline]
    #[target_feature(enable = "avx512f")]
    unsafe fn dots<const N: usize>(dim: usize, a: *const f32, b: [*const f32; N]) -> [f32; N] {
        let full = dim / LANES * LANES;
        let mut acc = [_mm512_setzero_ps(); N];
        let mut c = 0;
        while c < full {
            // SAFETY (all loads here): rows of `dim` floats; c + 16 ≤ full ≤ dim.
            let x = unsafe { _mm512_loadu_ps(a.add(c)) };
            for k in 0..N {
                acc[k] = _mm512_fmadd_ps(x, unsafe { _mm512_loadu_ps(b[k].add(c)) }, acc[k]);
            }
            c += LANES;
        }
        let mut out = [0f32; N];
        for k in 0..N {
            let mut s = reduce(acc[k]);
            for i in full..dim {
                // SAFETY: i < dim.
                s = unsafe { (*a.add(i)).mul_add(*b[k].add(i), s) };
            }
            out[k] = s;
        }
        out
    }

    #[target_feature(enable = "avx512f")]
    pub unsafe fn gram(dim: usize, a: &[f32], b: &[f32], out: &mut [f32]) {
        let s = b.len() / dim;
        let bp = |k: usize| b[k * dim..].as_ptr();
        for (r, ar) in a.chunks_exact(dim).enumerate() {
            let o = &mut out[r * s..(r + 1) * s];
            let mut k = 0;
            while k + 3 <= s {
                // SAFETY: rows k..k+3 of b and row r of a hold `dim` floats each.
                let d = unsafe { dots::<3>(dim, ar.as_ptr(), [bp(k), bp(k + 1), bp(k + 2)]) };
                o[k..k + 3].copy_from_slice(&d);
                k += 3;
            }
            while k < s {
                // SAFETY: as above.
                o[k] = unsafe { dots::<1>(dim, ar.as_ptr(), [bp(k)]) }[0];
                k += 1;
            }
        }
    }

    #[target_feature(enable = "avx512f")]
    pub unsafe fn lincomb(dim: usize, w: &[f32], x: &[f32], y: &mut [f32]) {
        let s = x.len() / dim;
        let full = dim / LANES * LANES;
        for (r, yr) in y.chunks_exact_mut(dim).enumerate() {
            let wr = &w[r * s..(r + 1) * s];
            let yp = yr.as_mut_ptr();
            let mut c = 0;
            while c + 64 <= full {
                let mut acc = [_mm512_setzero_ps(); 4];
                for (k, &wk) in wr.iter().enumerate() {
                    let wv = _mm512_set1_ps(wk);
                    let xp = x[k * dim + c..].as_ptr();
                    for (q, a) in acc.iter_mut().enumerate() {
                        // SAFETY: c + 64 ≤ dim within row k of x.
                        *a = _mm512_fmadd_ps(wv, unsafe { _mm512_loadu_ps(xp.add(16 * q)) }, *a);
                    }
                }
                for (q, a) in acc.iter().enumerate() {
                    // SAFETY: c + 64 ≤ dim within row r of y.
                    unsafe { _mm512_storeu_ps(yp.add(c + 16 * q), *a) };
                }
                c += 64;
            }
            while c < full {
                let mut a = _mm512_setzero_ps();
                for (k, &wk) in wr.iter().enumerate() {
                    // SAFETY: c + 16 ≤ dim.
                    let xv = unsafe { _mm512_loadu_ps(x[k * dim + c..].as_ptr()) };
                    a = _mm512_fmadd_ps(_mm512_set1_ps(wk), xv, a);
                }
                // SAFETY: c + 16 ≤ dim.
                unsafe { _mm512_storeu_ps(yp.add(c), a) };
                c += LANES;
            }
            for i in full..dim {
                let mut a = 0f32;
                for (k, &wk) in wr.iter().enumerate() {
                    a = wk.mul_add(x[k * dim + i], a);
                }
                yr[i] = a;
            }
        }
    }

    #[target_feature(enable = "avx512f")]
    pub unsafe fn add_assign(y: &mut [f32], x: &[f32]) {
        let n = y.len();
        let full = n / LANES * LANES;
        let (yp, xp) = (y.as_mut_ptr(), x.as_ptr());
        let mut c = 0;
        while c < full {
            // SAFETY: c + 16 ≤ n = len of both.
            unsafe {
                let v = _mm512_add_ps(_mm512_loadu_ps(yp.add(c)), _mm512_loadu_ps(xp.add(c)));
                _mm512_storeu_ps(yp.add(c), v);
            }
            c += LANES;
        }
        for i in full..n {
            y[i] += x[i];
        }
    }
}

// ---------------------------------------------------------------------------------------------------------
// σ from basic operations

/// ln 2 in two parts (fdlibm's): the high part has 11 trailing zero bits, so `n · LN2_HI` is exact for
/// `|n| < 2¹¹`; `LN2_HI + LN2_LO` = ln 2 to 2⁻⁸⁵.
const LN2_HI: f64 = f64::from_bits(0x3FE6_2E42_FEE0_0000);
const LN2_LO: f64 = f64::from_bits(0x3DEA_39EF_3579_3C76);

/// `eˣ` from +, −, ×, rounding and exponent bits only (no C library), so every machine gives the same bits.
/// Relative error below 1e-13 on `[−700, 700]` (the input is clamped there): range reduction
/// `x = n·ln 2 + r`, `|r| ≤ ln 2 / 2`, with ln 2 split in two (Cody–Waite), then the degree-12 Taylor
/// polynomial of `eʳ` by Horner, then `· 2ⁿ` through the exponent field.
pub fn exp(x: f64) -> f64 {
    if x.is_nan() {
        return x;
    }
    let x = x.clamp(-700.0, 700.0);
    let n = (x * std::f64::consts::LOG2_E).round();
    let r = (x - n * LN2_HI) - n * LN2_LO;
    // 1/k! for k = 12 down to 1.
    const C: [f64; 12] = [
        1.0 / 479_001_600.0,
        1.0 / 39_916_800.0,
        1.0 / 3_628_800.0,
        1.0 / 362_880.0,
        1.0 / 40_320.0,
        1.0 / 5_040.0,
        1.0 / 720.0,
        1.0 / 120.0,
        1.0 / 24.0,
        1.0 / 6.0,
        1.0 / 2.0,
        1.0,
    ];
    let mut p = C[0];
    for c in &C[1..] {
        p = p * r + c;
    }
    p = p * r + 1.0;
    p * f64::from_bits(((n as i64 + 1023) as u64) << 52)
}

/// σ(x) = 1 / (1 + e⁻ˣ) through [`exp`], rounded once to `f32`.
#[inline]
pub fn sigmoid(x: f32) -> f32 {
    (1.0 / (1.0 + exp(-(x as f64)))) as f32
}

/// Bound of word2vec's σ table.
pub const MAX_EXP: f32 = 6.0;
/// Entries of word2vec's σ table.
pub const EXP_TABLE_SIZE: usize = 1000;

/// word2vec's σ table over (−MAX_EXP, MAX_EXP), from [`exp`].
pub fn sigmoid_table() -> Vec<f32> {
    (0..EXP_TABLE_SIZE)
        .map(|i| {
            let x = (i as f64 / EXP_TABLE_SIZE as f64 * 2.0 - 1.0) * MAX_EXP as f64;
            let e = exp(x);
            (e / (e + 1.0)) as f32
        })
        .collect()
}

/// σ(x) from the table, saturating outside (−MAX_EXP, MAX_EXP).
#[inline]
pub fn sigmoid_from_table(x: f32, table: &[f32]) -> f32 {
    if x >= MAX_EXP {
        1.0
    } else if x <= -MAX_EXP {
        0.0
    } else {
        let i = ((x + MAX_EXP) * (EXP_TABLE_SIZE as f32 / MAX_EXP / 2.0)) as usize;
        table[i.min(EXP_TABLE_SIZE - 1)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn bits(v: &[f32]) -> Vec<u32> {
        v.iter().map(|x| x.to_bits()).collect()
    }

    /// Values spread over many magnitudes and both signs (so rounding differences would show).
    fn values(n: usize) -> impl Strategy<Value = Vec<f32>> {
        proptest::collection::vec(
            prop_oneof![
                -1.0f32..1.0,
                -1e-3f32..1e-3,
                (-30.0f32..30.0).prop_map(|e| e.exp2() * 0.7),
                Just(0.0f32),
                Just(-0.0f32),
            ],
            n,
        )
    }

    fn shape() -> impl Strategy<Value = (usize, usize, usize)> {
        // dim: multiples of 16 and every remainder; rows as in a batch (≤ 2·window, ≤ negative + 1).
        (
            1usize..=12,
            1usize..=8,
            prop_oneof![1usize..40, Just(128), Just(100), Just(300)],
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]

        /// Every build on this CPU gives the bits of the scalar build, for every kernel.
        #[test]
        fn every_build_gives_the_scalar_bits(
            (r, s, dim, a, b, w) in shape().prop_flat_map(|(r, s, dim)| {
                (Just(r), Just(s), Just(dim), values(r * dim), values(s * dim), values(r * s))
            }),
        ) {
            let mut g0 = vec![0f32; r * s];
            Kernel::Scalar.gram(dim, &a, &b, &mut g0);
            let mut l0 = vec![0f32; r * dim];
            Kernel::Scalar.lincomb(dim, &w, &b, &mut l0);
            let mut y0 = a.clone();
            Kernel::Scalar.add_assign(&mut y0, &a);
            for k in Kernel::available() {
                let mut g = vec![1f32; r * s];
                k.gram(dim, &a, &b, &mut g);
                prop_assert_eq!(bits(&g), bits(&g0), "gram on {}", k.name());
                let mut l = vec![1f32; r * dim];
                k.lincomb(dim, &w, &b, &mut l);
                prop_assert_eq!(bits(&l), bits(&l0), "lincomb on {}", k.name());
                let mut y = a.clone();
                k.add_assign(&mut y, &a);
                prop_assert_eq!(bits(&y), bits(&y0), "add_assign on {}", k.name());
            }
        }

        /// The kernels compute what they claim (in f64, to a tolerance that covers the f32 rounding).
        #[test]
        fn kernels_match_f64_reference((r, s, dim) in shape(), seed in any::<u32>()) {
            let f = |i: usize, m: u32| (((i as u32).wrapping_mul(2654435761) ^ seed ^ m) % 2001) as f32 / 1000.0 - 1.0;
            let a: Vec<f32> = (0..r * dim).map(|i| f(i, 1)).collect();
            let b: Vec<f32> = (0..s * dim).map(|i| f(i, 2)).collect();
            let w: Vec<f32> = (0..r * s).map(|i| f(i, 3)).collect();
            for k in Kernel::available() {
                let mut g = vec![0f32; r * s];
                k.gram(dim, &a, &b, &mut g);
                for i in 0..r {
                    for j in 0..s {
                        let e: f64 = (0..dim).map(|t| a[i * dim + t] as f64 * b[j * dim + t] as f64).sum();
                        prop_assert!((g[i * s + j] as f64 - e).abs() < 1e-5 * dim as f64);
                    }
                }
                let mut y = vec![0f32; r * dim];
                k.lincomb(dim, &w, &b, &mut y);
                for i in 0..r {
                    for t in 0..dim {
                        let e: f64 = (0..s).map(|j| w[i * s + j] as f64 * b[j * dim + t] as f64).sum();
                        prop_assert!((y[i * dim + t] as f64 - e).abs() < 1e-5 * s as f64);
                    }
                }
            }
        }
    }

    #[test]
    fn dot_by_hand() {
        // 19 elements: one full group of 16 lanes and a tail of 3.
        let a: Vec<f32> = (0..19).map(|i| i as f32 * 0.5 - 3.0).collect();
        let b: Vec<f32> = (0..19).map(|i| 1.0 - i as f32 * 0.25).collect();
        // Σ (0.5 i − 3)(1 − 0.25 i), i = 0..18, by hand: Σ (0.5i − 3 − 0.125 i² + 0.75 i)
        // = 1.25 Σi − 0.125 Σi² − 57 = 1.25·171 − 0.125·2109 − 57 = 213.75 − 263.625 − 57 = −106.875.
        for k in Kernel::available() {
            assert_eq!(k.dot(&a, &b), -106.875, "{}", k.name());
        }
    }

    #[test]
    fn fused_rounding_is_used() {
        // x² = 1 + 2⁻¹¹ + 2⁻²⁴ exactly; rounded to f32 alone it loses 2⁻²⁴ (a tie, to even). fma(x, x, −c) with
        // c = 1 + 2⁻¹¹ keeps it: 2⁻²⁴, where a separate product and sum give 0.
        let x = 1.0 + 2f32.powi(-12);
        let c = 1.0 + 2f32.powi(-11);
        assert_eq!(x * x - c, 0.0);
        let tiny = 2f32.powi(-24);
        // dot: lane 0 holds −c (1 · −c), the tail element 16 adds x · x by fma.
        let mut a = vec![0f32; 17];
        let mut b = vec![0f32; 17];
        (a[0], b[0], a[16], b[16]) = (1.0, -c, x, x);
        for k in Kernel::available() {
            assert_eq!(k.dot(&a, &b), tiny, "dot on {}", k.name());
            // lincomb over two rows of width 1..=40: fma(1, −c, 0) then fma(x, x, ·) in every element.
            for dim in [1usize, 8, 16, 17, 33, 40, 64, 128] {
                let mut xs = vec![-c; dim];
                xs.extend(std::iter::repeat_n(x, dim));
                let mut y = vec![0f32; dim];
                k.lincomb(dim, &[1.0, x], &xs, &mut y);
                assert!(
                    y.iter().all(|v| *v == tiny),
                    "lincomb on {} dim {dim}: {y:?}",
                    k.name()
                );
            }
        }
    }

    #[test]
    fn exp_matches_the_library_closely() {
        for i in -7000..=7000 {
            let x = i as f64 / 10.0;
            let (e, r) = (exp(x), x.exp());
            assert!(((e - r) / r).abs() < 1e-13, "{x}: {e} vs {r}");
        }
        assert_eq!(exp(0.0), 1.0);
        assert_eq!(sigmoid(0.0), 0.5);
        assert_eq!(sigmoid(100.0), 1.0);
        assert_eq!(sigmoid(-200.0), 0.0);
        assert!(exp(f64::NAN).is_nan());
    }

    #[test]
    fn sigmoid_table_close_to_exact() {
        let t = sigmoid_table();
        for i in -70..70 {
            let x = i as f32 / 10.0;
            let d = sigmoid_from_table(x, &t) - sigmoid(x);
            assert!(d.abs() < 0.01, "{x}: {d}");
        }
    }

    #[test]
    fn names_round_trip() {
        for k in Kernel::available() {
            assert_eq!(Kernel::by_name(k.name()), Some(k));
        }
        assert_eq!(Kernel::available()[0], Kernel::Scalar);
        assert!(Kernel::by_name("sse9").is_none());
    }
}
