//! The arithmetic of the trainer: three SIMD kernels and σ, with the same bits on every CPU.
//!
//! A minibatch of skip-gram (see [`super`]) is three small matrix products over rows of `dim` floats:
//! [`Kernel::gram`] (the logits, every context row against every target row), and twice
//! [`Kernel::lincomb`] (each gradient row as a weighted sum of rows), followed by [`Kernel::add_assign`] of
//! each gradient row to its row. The trainer runs the last three as one pass, [`Kernel::update`]: the vector
//! builds take a register's width of columns of every row of the minibatch at once, keep the sums in
//! registers and add them to the rows before moving on, so the rows are read once and no temporary is
//! written — the same operations in the same order as `lincomb` then `add_assign`, so the same bits.
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
//!   two 8-lane registers and the scalar path with an array; the AVX-512 build of [`Kernel::gram`] runs the
//!   trees of four dot products side by side in one register, the same additions of the same lanes); the
//!   `dim mod 16` last elements are then added by
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
        self.gram_rows(Rows::dense(dim, a), Rows::dense(dim, b), out);
    }

    /// [`Kernel::gram`] on rows picked from matrices ([`Rows`]): the same bits as on the rows copied out.
    pub fn gram_rows(self, a: Rows, b: Rows, out: &mut [f32]) {
        assert!(
            a.dim == b.dim && out.len() == a.len() * b.len(),
            "gram shapes"
        );
        let dim = a.dim;
        if dim == 0 {
            out.fill(0.0);
            return;
        }
        match self {
            Kernel::Scalar => scalar::gram(a, b, out),
            #[cfg(target_arch = "x86_64")]
            // SAFETY: a `Kernel::Avx2` exists only where `available` detected AVX2 and FMA; shapes checked.
            Kernel::Avx2 => unsafe { avx2::gram(dim, a, b, out) },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: as above, AVX-512F detected.
            Kernel::Avx512 => unsafe { avx512::gram(dim, a, b, out) },
            #[cfg(not(target_arch = "x86_64"))]
            _ => scalar::gram(a, b, out),
        }
    }

    /// `y[r] = Σₛ w[r·S + s] · x[s]` for the `R` rows of `y` and the `S` rows of `x` (`dim` wide).
    pub fn lincomb(self, dim: usize, w: &[f32], x: &[f32], y: &mut [f32]) {
        let s = x.len() / dim.max(1);
        assert!(x.len() == s * dim, "lincomb shapes");
        if dim == 0 {
            return;
        }
        self.lincomb_rows(w, Rows::dense(dim, x), y);
    }

    /// [`Kernel::lincomb`] on rows picked from a matrix ([`Rows`]): the same bits as on the rows copied out.
    pub fn lincomb_rows(self, w: &[f32], x: Rows, y: &mut [f32]) {
        let dim = x.dim;
        let (s, r) = (x.len(), y.len() / dim.max(1));
        assert!(y.len() == r * dim && w.len() == r * s, "lincomb shapes");
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

    /// `y[i] -= x[i]`.
    pub fn sub_assign(self, y: &mut [f32], x: &[f32]) {
        assert_eq!(y.len(), x.len(), "sub_assign shapes");
        match self {
            Kernel::Scalar => scalar::sub_assign(y, x),
            #[cfg(target_arch = "x86_64")]
            // SAFETY: AVX2 detected; equal lengths checked.
            Kernel::Avx2 => unsafe { avx2::sub_assign(y, x) },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: AVX-512F detected.
            Kernel::Avx512 => unsafe { avx512::sub_assign(y, x) },
            #[cfg(not(target_arch = "x86_64"))]
            _ => scalar::sub_assign(y, x),
        }
    }

    /// `out[i] = σ(x[i])`, bit for bit [`sigmoid`] on every build (the vector builds run [`exp`]'s
    /// operations on 8 or 4 `f64` lanes).
    pub fn sigmoid(self, x: &[f32], out: &mut [f32]) {
        assert_eq!(x.len(), out.len(), "sigmoid shapes");
        match self {
            Kernel::Scalar => scalar::sigmoid(x, out),
            #[cfg(target_arch = "x86_64")]
            // SAFETY: AVX2 and FMA detected (see `gram`); equal lengths checked.
            Kernel::Avx2 => unsafe { avx2::sigmoid(x, out) },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: AVX-512F detected.
            Kernel::Avx512 => unsafe { avx512::sigmoid(x, out) },
            #[cfg(not(target_arch = "x86_64"))]
            _ => scalar::sigmoid(x, out),
        }
    }

    /// The update of one minibatch, in place in the `dim`-wide matrix `m`: with `C[j]` = row `ci[j]`,
    /// `O[k]` = row `ti[k]` and the `C × T` gradient `g` (`g[j·T + k]`, `T = ti.len()`), first
    /// `ΔC[j] = Σₖ g[j·T + k]·O[k]` and `ΔO[k] = Σⱼ g[j·T + k]·C[j]`, both from the rows as they are on entry
    /// (fma chains from +0.0 in ascending index, exactly [`Kernel::lincomb`]), then `row ci[j] += ΔC[j]` for
    /// `j` in order and `row ti[k] += ΔO[k]` for `k` in order ([`Kernel::add_assign`]). `ci` may repeat a
    /// row and so may `ti`, but no row may be in both (contexts and targets are rows of different matrices;
    /// checked in debug builds). The same bits as `lincomb` into temporaries followed by `add_assign`, on
    /// every build; the vector builds do it one register of columns at a time with the sums in registers,
    /// so the rows are read once and no temporary is written.
    pub fn update(self, dim: usize, g: &[f32], m: &mut [f32], ci: &[u32], ti: &[u32]) {
        let rows = m.len().checked_div(dim).unwrap_or(0);
        assert!(
            g.len() == ci.len() * ti.len()
                && m.len() == rows * dim
                && ci.iter().chain(ti).all(|&r| (r as usize) < rows),
            "update shapes"
        );
        debug_assert!(
            ci.iter().all(|r| !ti.contains(r)),
            "update: a row is both context and target"
        );
        if dim == 0 || ci.is_empty() || ti.is_empty() {
            return;
        }
        match self {
            Kernel::Scalar => self.update_composed(dim, g, m, ci, ti),
            #[cfg(target_arch = "x86_64")]
            // SAFETY: AVX2 and FMA detected (see `gram`); shapes and row indices checked.
            Kernel::Avx2 => unsafe { avx2::update(dim, g, m, ci, ti) },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: AVX-512F detected; as above.
            Kernel::Avx512 => unsafe { avx512::update(dim, g, m, ci, ti) },
            #[cfg(not(target_arch = "x86_64"))]
            _ => self.update_composed(dim, g, m, ci, ti),
        }
    }

    /// [`Kernel::update`] by its definition, for any shape: `lincomb` into temporaries, then `add_assign`.
    fn update_composed(self, dim: usize, g: &[f32], m: &mut [f32], ci: &[u32], ti: &[u32]) {
        let (nc, nt) = (ci.len(), ti.len());
        let gt: Vec<f32> = (0..nt * nc).map(|i| g[(i % nc) * nt + i / nc]).collect();
        let mut dc = vec![0f32; nc * dim];
        let mut dout = vec![0f32; nt * dim];
        self.lincomb_rows(g, Rows::picked(dim, m, ti), &mut dc);
        self.lincomb_rows(&gt, Rows::picked(dim, m, ci), &mut dout);
        let deltas = dc.chunks_exact(dim).chain(dout.chunks_exact(dim));
        for (&r, d) in ci.iter().chain(ti).zip(deltas) {
            self.add_assign(&mut m[r as usize * dim..(r as usize + 1) * dim], d);
        }
    }

    /// One dot product (the 1 × 1 case of [`Kernel::gram`]).
    pub fn dot(self, a: &[f32], b: &[f32]) -> f32 {
        let mut out = [0f32];
        self.gram(a.len(), a, &b[..a.len()], &mut out);
        out[0]
    }
}

/// `dim`-wide rows for [`Kernel::gram_rows`] and [`Kernel::lincomb_rows`]: the rows of a dense block, or rows
/// of a matrix picked by index (so a minibatch need not copy its rows out first).
#[derive(Clone, Copy)]
pub struct Rows<'a> {
    base: &'a [f32],
    idx: Option<&'a [u32]>,
    n: usize,
    dim: usize,
}

impl<'a> Rows<'a> {
    /// Every row of `m` (length a multiple of `dim`).
    pub fn dense(dim: usize, m: &'a [f32]) -> Rows<'a> {
        let n = m.len().checked_div(dim).unwrap_or(0);
        assert_eq!(m.len(), n * dim, "rows shapes");
        Rows {
            base: m,
            idx: None,
            n,
            dim,
        }
    }

    /// Rows `idx[0], idx[1], …` of the `dim`-wide matrix `m` (repeats allowed).
    pub fn picked(dim: usize, m: &'a [f32], idx: &'a [u32]) -> Rows<'a> {
        let rows = m.len().checked_div(dim).unwrap_or(0);
        assert!(
            idx.iter().all(|&i| (i as usize) < rows),
            "picked row out of bounds"
        );
        Rows {
            base: m,
            idx: Some(idx),
            n: idx.len(),
            dim,
        }
    }

    /// Number of rows.
    #[inline(always)]
    pub fn len(&self) -> usize {
        self.n
    }

    /// True without rows.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// Row `k`.
    #[inline(always)]
    pub fn row(&self, k: usize) -> &'a [f32] {
        let r = match self.idx {
            Some(i) => i[k] as usize,
            None => k,
        };
        &self.base[r * self.dim..(r + 1) * self.dim]
    }
}

/// Most contexts (rows `ci`) the vector builds of [`Kernel::update`] take in one pass; more go through the
/// definition (`lincomb` into temporaries, then `add_assign`, with the build's own kernels): the same bits.
pub const UPDATE_MAX_C: usize = 32;
/// Most targets (rows `ti`) the vector builds of [`Kernel::update`] keep in registers (as above).
pub const UPDATE_MAX_T: usize = 8;

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
    use super::{reduce16, Rows, LANES};

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
    pub fn gram(a: Rows, b: Rows, out: &mut [f32]) {
        let s = b.len();
        for r in 0..a.len() {
            let ar = a.row(r);
            for k in 0..s {
                out[r * s + k] = dot(ar, b.row(k));
            }
        }
    }

    /// See [`super::Kernel::lincomb`].
    pub fn lincomb(dim: usize, w: &[f32], x: Rows, y: &mut [f32]) {
        let s = x.len();
        for (r, yr) in y.chunks_exact_mut(dim).enumerate() {
            yr.fill(0.0);
            for k in 0..s {
                let xk = x.row(k);
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

    /// See [`super::Kernel::sub_assign`].
    pub fn sub_assign(y: &mut [f32], x: &[f32]) {
        for (yi, xi) in y.iter_mut().zip(x) {
            *yi -= *xi;
        }
    }

    /// The columns `from..dim` of [`super::Kernel::update`], element by element (the vector builds' tail).
    /// `NT` targets; at most [`super::UPDATE_MAX_C`] contexts.
    #[inline(always)]
    pub(super) fn update_tail<const NT: usize>(
        dim: usize,
        from: usize,
        g: &[f32],
        m: &mut [f32],
        ci: &[u32],
        ti: &[u32],
    ) {
        let mut dc = [0f32; super::UPDATE_MAX_C];
        for i in from..dim {
            let o: [f32; NT] = std::array::from_fn(|k| m[ti[k] as usize * dim + i]);
            let mut dout = [0f32; NT];
            for (j, &r) in ci.iter().enumerate() {
                let c = m[r as usize * dim + i];
                let gr = &g[j * NT..(j + 1) * NT];
                let mut a = 0f32;
                for k in 0..NT {
                    a = gr[k].mul_add(o[k], a);
                    dout[k] = gr[k].mul_add(c, dout[k]);
                }
                dc[j] = a;
            }
            for (j, &r) in ci.iter().enumerate() {
                m[r as usize * dim + i] += dc[j];
            }
            for (k, &r) in ti.iter().enumerate() {
                m[r as usize * dim + i] += dout[k];
            }
        }
    }

    /// See [`super::Kernel::sigmoid`].
    pub fn sigmoid(x: &[f32], out: &mut [f32]) {
        for (o, &v) in out.iter_mut().zip(x) {
            *o = super::sigmoid(v);
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use super::{Kernel, Rows, LANES};
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
    pub unsafe fn gram(dim: usize, a: Rows, b: Rows, out: &mut [f32]) {
        let s = b.len();
        let bp = |k: usize| b.row(k).as_ptr();
        for r in 0..a.len() {
            let ar = a.row(r);
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
    pub unsafe fn lincomb(dim: usize, w: &[f32], x: Rows, y: &mut [f32]) {
        let s = x.len();
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
                    let xp = x.row(k)[c..].as_ptr();
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
                    let xv = unsafe { _mm256_loadu_ps(x.row(k)[c..].as_ptr()) };
                    a = _mm256_fmadd_ps(_mm256_set1_ps(wk), xv, a);
                }
                // SAFETY: c + 8 ≤ dim.
                unsafe { _mm256_storeu_ps(yp.add(c), a) };
                c += 8;
            }
            for (i, yi) in yr.iter_mut().enumerate().skip(full8) {
                let mut a = 0f32;
                for (k, &wk) in wr.iter().enumerate() {
                    a = wk.mul_add(x.row(k)[i], a);
                }
                *yi = a;
            }
        }
    }

    /// See [`super::Kernel::update`]: 8 columns at a time; the `NT` target rows of those columns and their
    /// sums stay in registers, the contexts' sums wait in `dc` until every context row has been read.
    ///
    /// # Safety
    /// AVX2 and FMA; every index of `ci` and `ti` is a row of `m` (`dim` wide); `ti.len() == NT`, `ci.len() ≤
    /// UPDATE_MAX_C`, `g.len() == ci.len() · NT`.
    #[target_feature(enable = "avx2,fma")]
    unsafe fn update_nt<const NT: usize>(
        dim: usize,
        g: &[f32],
        m: &mut [f32],
        ci: &[u32],
        ti: &[u32],
    ) {
        let full = dim / 8 * 8;
        let base = m.as_mut_ptr();
        let at = |r: u32, c: usize| r as usize * dim + c;
        let mut dc = [_mm256_setzero_ps(); super::UPDATE_MAX_C];
        let mut c = 0;
        while c < full {
            // SAFETY (every load and store below): the rows are rows of `m` (the caller's contract) and
            // c + 8 ≤ dim; no reference into `m` is alive while `base` is used.
            let mut o = [_mm256_setzero_ps(); NT];
            for k in 0..NT {
                o[k] = unsafe { _mm256_loadu_ps(base.add(at(ti[k], c))) };
            }
            let mut dout = [_mm256_setzero_ps(); NT];
            for (j, &r) in ci.iter().enumerate() {
                let cj = unsafe { _mm256_loadu_ps(base.add(at(r, c))) };
                let gr = &g[j * NT..(j + 1) * NT];
                let mut a = _mm256_setzero_ps();
                for k in 0..NT {
                    let gv = _mm256_set1_ps(gr[k]);
                    a = _mm256_fmadd_ps(gv, o[k], a);
                    dout[k] = _mm256_fmadd_ps(gv, cj, dout[k]);
                }
                dc[j] = a;
            }
            for (j, &r) in ci.iter().enumerate() {
                let p = unsafe { base.add(at(r, c)) };
                unsafe { _mm256_storeu_ps(p, _mm256_add_ps(_mm256_loadu_ps(p), dc[j])) };
            }
            for (k, &r) in ti.iter().enumerate() {
                let p = unsafe { base.add(at(r, c)) };
                unsafe { _mm256_storeu_ps(p, _mm256_add_ps(_mm256_loadu_ps(p), dout[k])) };
            }
            c += 8;
        }
        super::scalar::update_tail::<NT>(dim, full, g, m, ci, ti);
    }

    /// See [`super::Kernel::update`].
    ///
    /// # Safety
    /// AVX2 and FMA; shapes and row indices checked by the caller.
    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn update(dim: usize, g: &[f32], m: &mut [f32], ci: &[u32], ti: &[u32]) {
        if ci.len() > super::UPDATE_MAX_C {
            return Kernel::Avx2.update_composed(dim, g, m, ci, ti);
        }
        // SAFETY: the caller's contract, and ti.len() is the NT of each arm.
        unsafe {
            match ti.len() {
                1 => update_nt::<1>(dim, g, m, ci, ti),
                2 => update_nt::<2>(dim, g, m, ci, ti),
                3 => update_nt::<3>(dim, g, m, ci, ti),
                4 => update_nt::<4>(dim, g, m, ci, ti),
                5 => update_nt::<5>(dim, g, m, ci, ti),
                6 => update_nt::<6>(dim, g, m, ci, ti),
                7 => update_nt::<7>(dim, g, m, ci, ti),
                8 => update_nt::<8>(dim, g, m, ci, ti),
                _ => Kernel::Avx2.update_composed(dim, g, m, ci, ti),
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

    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn sub_assign(y: &mut [f32], x: &[f32]) {
        let n = y.len();
        let full = n / 8 * 8;
        let (yp, xp) = (y.as_mut_ptr(), x.as_ptr());
        let mut c = 0;
        while c < full {
            // SAFETY: c + 8 ≤ n = len of both.
            unsafe {
                let v = _mm256_sub_ps(_mm256_loadu_ps(yp.add(c)), _mm256_loadu_ps(xp.add(c)));
                _mm256_storeu_ps(yp.add(c), v);
            }
            c += 8;
        }
        for i in full..n {
            y[i] -= x[i];
        }
    }

    /// See [`super::Kernel::sigmoid`]: [`super::exp_core`] on 4 `f64` lanes, then `1 / (1 + e)`.
    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn sigmoid(x: &[f32], out: &mut [f32]) {
        use super::{EXP_C, EXP_MAGIC, LN2_HI, LN2_LO};
        let n = x.len();
        let full = n / 4 * 4;
        let sign = _mm256_set1_pd(-0.0);
        let one = _mm256_set1_pd(1.0);
        let magic = _mm256_set1_pd(EXP_MAGIC);
        let mut c = 0;
        while c < full {
            // SAFETY: c + 4 ≤ n = len of both.
            let xf = unsafe { _mm_loadu_ps(x.as_ptr().add(c)) };
            let xd = _mm256_xor_pd(_mm256_cvtps_pd(xf), sign);
            let v = _mm256_max_pd(xd, _mm256_set1_pd(-700.0));
            let v = _mm256_min_pd(v, _mm256_set1_pd(700.0));
            let t = _mm256_add_pd(
                _mm256_mul_pd(v, _mm256_set1_pd(std::f64::consts::LOG2_E)),
                magic,
            );
            let nn = _mm256_sub_pd(t, magic);
            let r = _mm256_sub_pd(
                _mm256_sub_pd(v, _mm256_mul_pd(nn, _mm256_set1_pd(LN2_HI))),
                _mm256_mul_pd(nn, _mm256_set1_pd(LN2_LO)),
            );
            let mut p = _mm256_set1_pd(EXP_C[0]);
            for &k in &EXP_C[1..] {
                p = _mm256_add_pd(_mm256_mul_pd(p, r), _mm256_set1_pd(k));
            }
            p = _mm256_add_pd(_mm256_mul_pd(p, r), one);
            let k = _mm256_sub_epi64(
                _mm256_castpd_si256(t),
                _mm256_set1_epi64x(EXP_MAGIC.to_bits() as i64),
            );
            let scale = _mm256_slli_epi64::<52>(_mm256_add_epi64(k, _mm256_set1_epi64x(1023)));
            let e = _mm256_mul_pd(p, _mm256_castsi256_pd(scale));
            let s = _mm256_cvtpd_ps(_mm256_div_pd(one, _mm256_add_pd(one, e)));
            let nan = _mm_cmpunord_ps(xf, xf);
            let s = _mm_blendv_ps(s, _mm_set1_ps(f32::NAN), nan);
            // SAFETY: as above.
            unsafe { _mm_storeu_ps(out.as_mut_ptr().add(c), s) };
            c += 4;
        }
        for i in full..n {
            out[i] = super::sigmoid(x[i]);
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod avx512 {
    use super::{Kernel, Rows, LANES};
    use std::arch::x86_64::*;

    /// The trees of [`super::reduce16`] of four registers side by side: the same additions of the same lanes
    /// in the same order, four sums per instruction instead of one.
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn reduce4(a0: __m512, a1: __m512, a2: __m512, a3: __m512) -> [f32; 4] {
        // l + (l + 8): quarters 0, 1 of each register plus its quarters 2, 3.
        let s01 = _mm512_add_ps(
            _mm512_shuffle_f32x4::<0x44>(a0, a1),
            _mm512_shuffle_f32x4::<0xEE>(a0, a1),
        );
        let s23 = _mm512_add_ps(
            _mm512_shuffle_f32x4::<0x44>(a2, a3),
            _mm512_shuffle_f32x4::<0xEE>(a2, a3),
        );
        // + 4: the first half of each 8-lane sum plus its second half; quarter q now belongs to register q.
        let u = _mm512_add_ps(
            _mm512_shuffle_f32x4::<0x88>(s01, s23),
            _mm512_shuffle_f32x4::<0xDD>(s01, s23),
        );
        // + 2, then + 1, within each quarter.
        let w = _mm512_add_ps(u, _mm512_permute_ps::<0xEE>(u));
        let z = _mm512_add_ps(w, _mm512_permute_ps::<0x55>(w));
        let mut t = [0f32; LANES];
        // SAFETY: `t` holds 16 floats.
        unsafe { _mm512_storeu_ps(t.as_mut_ptr(), z) };
        [t[0], t[4], t[8], t[12]]
    }

    /// `out[k] = a · b.row(k0 + k)` for `k < N ≤ 8`: `N` accumulators over the 16-lane columns, reduced four at
    /// a time ([`reduce4`]), then each dot's tail in order.
    ///
    /// # Safety
    /// AVX-512F; `a` points to `dim` floats; rows `k0..k0 + N` of `b` exist and are `dim` wide.
    #[inline]
    #[target_feature(enable = "avx512f")]
    unsafe fn dots<const N: usize>(
        dim: usize,
        a: *const f32,
        b: &Rows,
        k0: usize,
        out: &mut [f32],
    ) {
        let full = dim / LANES * LANES;
        let mut bp = [a; N];
        for (k, p) in bp.iter_mut().enumerate() {
            *p = b.row(k0 + k).as_ptr();
        }
        let mut acc = [_mm512_setzero_ps(); 8];
        let mut c = 0;
        while c < full {
            // SAFETY (all loads here): rows of `dim` floats; c + 16 ≤ full ≤ dim.
            let x = unsafe { _mm512_loadu_ps(a.add(c)) };
            for k in 0..N {
                acc[k] = _mm512_fmadd_ps(x, unsafe { _mm512_loadu_ps(bp[k].add(c)) }, acc[k]);
            }
            c += LANES;
        }
        let lo = reduce4(acc[0], acc[1], acc[2], acc[3]);
        let hi = if N > 4 {
            reduce4(acc[4], acc[5], acc[6], acc[7])
        } else {
            [0.0; 4]
        };
        for k in 0..N {
            let mut s = if k < 4 { lo[k] } else { hi[k - 4] };
            for i in full..dim {
                // SAFETY: i < dim.
                s = unsafe { (*a.add(i)).mul_add(*bp[k].add(i), s) };
            }
            out[k] = s;
        }
    }

    #[target_feature(enable = "avx512f")]
    pub unsafe fn gram(dim: usize, a: Rows, b: Rows, out: &mut [f32]) {
        let s = b.len();
        for r in 0..a.len() {
            let ar = a.row(r).as_ptr();
            let o = &mut out[r * s..(r + 1) * s];
            let mut k = 0;
            while k < s {
                let n = (s - k).min(8);
                let o = &mut o[k..k + n];
                // SAFETY: row r of a and rows k..k + n of b hold `dim` floats each.
                unsafe {
                    match n {
                        1 => dots::<1>(dim, ar, &b, k, o),
                        2 => dots::<2>(dim, ar, &b, k, o),
                        3 => dots::<3>(dim, ar, &b, k, o),
                        4 => dots::<4>(dim, ar, &b, k, o),
                        5 => dots::<5>(dim, ar, &b, k, o),
                        6 => dots::<6>(dim, ar, &b, k, o),
                        7 => dots::<7>(dim, ar, &b, k, o),
                        _ => dots::<8>(dim, ar, &b, k, o),
                    }
                }
                k += n;
            }
        }
    }

    #[target_feature(enable = "avx512f")]
    pub unsafe fn lincomb(dim: usize, w: &[f32], x: Rows, y: &mut [f32]) {
        let s = x.len();
        let full = dim / LANES * LANES;
        for (r, yr) in y.chunks_exact_mut(dim).enumerate() {
            let wr = &w[r * s..(r + 1) * s];
            let yp = yr.as_mut_ptr();
            let mut c = 0;
            while c + 64 <= full {
                let mut acc = [_mm512_setzero_ps(); 4];
                for (k, &wk) in wr.iter().enumerate() {
                    let wv = _mm512_set1_ps(wk);
                    let xp = x.row(k)[c..].as_ptr();
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
                    let xv = unsafe { _mm512_loadu_ps(x.row(k)[c..].as_ptr()) };
                    a = _mm512_fmadd_ps(_mm512_set1_ps(wk), xv, a);
                }
                // SAFETY: c + 16 ≤ dim.
                unsafe { _mm512_storeu_ps(yp.add(c), a) };
                c += LANES;
            }
            for (i, yi) in yr.iter_mut().enumerate().skip(full) {
                let mut a = 0f32;
                for (k, &wk) in wr.iter().enumerate() {
                    a = wk.mul_add(x.row(k)[i], a);
                }
                *yi = a;
            }
        }
    }

    /// See [`super::Kernel::update`]: 16 columns at a time; the `NT` target rows of those columns and their
    /// sums stay in registers, the contexts' sums wait in `dc` until every context row has been read.
    ///
    /// # Safety
    /// AVX-512F; every index of `ci` and `ti` is a row of `m` (`dim` wide); `ti.len() == NT`, `ci.len() ≤
    /// UPDATE_MAX_C`, `g.len() == ci.len() · NT`.
    #[target_feature(enable = "avx512f")]
    unsafe fn update_nt<const NT: usize>(
        dim: usize,
        g: &[f32],
        m: &mut [f32],
        ci: &[u32],
        ti: &[u32],
    ) {
        let full = dim / LANES * LANES;
        let base = m.as_mut_ptr();
        let at = |r: u32, c: usize| r as usize * dim + c;
        let mut dc = [_mm512_setzero_ps(); super::UPDATE_MAX_C];
        let mut c = 0;
        while c < full {
            // SAFETY (every load and store below): the rows are rows of `m` (the caller's contract) and
            // c + 16 ≤ dim; no reference into `m` is alive while `base` is used.
            let mut o = [_mm512_setzero_ps(); NT];
            for k in 0..NT {
                o[k] = unsafe { _mm512_loadu_ps(base.add(at(ti[k], c))) };
            }
            let mut dout = [_mm512_setzero_ps(); NT];
            for (j, &r) in ci.iter().enumerate() {
                let cj = unsafe { _mm512_loadu_ps(base.add(at(r, c))) };
                let gr = &g[j * NT..(j + 1) * NT];
                let mut a = _mm512_setzero_ps();
                for k in 0..NT {
                    let gv = _mm512_set1_ps(gr[k]);
                    a = _mm512_fmadd_ps(gv, o[k], a);
                    dout[k] = _mm512_fmadd_ps(gv, cj, dout[k]);
                }
                dc[j] = a;
            }
            for (j, &r) in ci.iter().enumerate() {
                let p = unsafe { base.add(at(r, c)) };
                unsafe { _mm512_storeu_ps(p, _mm512_add_ps(_mm512_loadu_ps(p), dc[j])) };
            }
            for (k, &r) in ti.iter().enumerate() {
                let p = unsafe { base.add(at(r, c)) };
                unsafe { _mm512_storeu_ps(p, _mm512_add_ps(_mm512_loadu_ps(p), dout[k])) };
            }
            c += LANES;
        }
        super::scalar::update_tail::<NT>(dim, full, g, m, ci, ti);
    }

    /// See [`super::Kernel::update`].
    ///
    /// # Safety
    /// AVX-512F; shapes and row indices checked by the caller.
    #[target_feature(enable = "avx512f")]
    pub unsafe fn update(dim: usize, g: &[f32], m: &mut [f32], ci: &[u32], ti: &[u32]) {
        if ci.len() > super::UPDATE_MAX_C {
            return Kernel::Avx512.update_composed(dim, g, m, ci, ti);
        }
        // SAFETY: the caller's contract, and ti.len() is the NT of each arm.
        unsafe {
            match ti.len() {
                1 => update_nt::<1>(dim, g, m, ci, ti),
                2 => update_nt::<2>(dim, g, m, ci, ti),
                3 => update_nt::<3>(dim, g, m, ci, ti),
                4 => update_nt::<4>(dim, g, m, ci, ti),
                5 => update_nt::<5>(dim, g, m, ci, ti),
                6 => update_nt::<6>(dim, g, m, ci, ti),
                7 => update_nt::<7>(dim, g, m, ci, ti),
                8 => update_nt::<8>(dim, g, m, ci, ti),
                _ => Kernel::Avx512.update_composed(dim, g, m, ci, ti),
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

    #[target_feature(enable = "avx512f")]
    pub unsafe fn sub_assign(y: &mut [f32], x: &[f32]) {
        let n = y.len();
        let full = n / LANES * LANES;
        let (yp, xp) = (y.as_mut_ptr(), x.as_ptr());
        let mut c = 0;
        while c < full {
            // SAFETY: c + 16 ≤ n = len of both.
            unsafe {
                let v = _mm512_sub_ps(_mm512_loadu_ps(yp.add(c)), _mm512_loadu_ps(xp.add(c)));
                _mm512_storeu_ps(yp.add(c), v);
            }
            c += LANES;
        }
        for i in full..n {
            y[i] -= x[i];
        }
    }

    /// See [`super::Kernel::sigmoid`]: [`super::exp_core`] on 8 `f64` lanes, then `1 / (1 + e)`.
    #[target_feature(enable = "avx512f")]
    pub unsafe fn sigmoid(x: &[f32], out: &mut [f32]) {
        use super::{EXP_C, EXP_MAGIC, LN2_HI, LN2_LO};
        let n = x.len();
        let full = n / 8 * 8;
        let sign = _mm512_set1_epi64(i64::MIN);
        let one = _mm512_set1_pd(1.0);
        let magic = _mm512_set1_pd(EXP_MAGIC);
        let mut c = 0;
        while c < full {
            // SAFETY: c + 8 ≤ n = len of both.
            let xf = unsafe { _mm256_loadu_ps(x.as_ptr().add(c)) };
            let xd = _mm512_castsi512_pd(_mm512_xor_si512(
                _mm512_castpd_si512(_mm512_cvtps_pd(xf)),
                sign,
            ));
            let v = _mm512_max_pd(xd, _mm512_set1_pd(-700.0));
            let v = _mm512_min_pd(v, _mm512_set1_pd(700.0));
            let t = _mm512_add_pd(
                _mm512_mul_pd(v, _mm512_set1_pd(std::f64::consts::LOG2_E)),
                magic,
            );
            let nn = _mm512_sub_pd(t, magic);
            let r = _mm512_sub_pd(
                _mm512_sub_pd(v, _mm512_mul_pd(nn, _mm512_set1_pd(LN2_HI))),
                _mm512_mul_pd(nn, _mm512_set1_pd(LN2_LO)),
            );
            let mut p = _mm512_set1_pd(EXP_C[0]);
            for &k in &EXP_C[1..] {
                p = _mm512_add_pd(_mm512_mul_pd(p, r), _mm512_set1_pd(k));
            }
            p = _mm512_add_pd(_mm512_mul_pd(p, r), one);
            let k = _mm512_sub_epi64(
                _mm512_castpd_si512(t),
                _mm512_set1_epi64(EXP_MAGIC.to_bits() as i64),
            );
            let scale = _mm512_slli_epi64::<52>(_mm512_add_epi64(k, _mm512_set1_epi64(1023)));
            let e = _mm512_mul_pd(p, _mm512_castsi512_pd(scale));
            let s = _mm512_cvtpd_ps(_mm512_div_pd(one, _mm512_add_pd(one, e)));
            let nan = _mm256_cmp_ps::<_CMP_UNORD_Q>(xf, xf);
            let s = _mm256_blendv_ps(s, _mm256_set1_ps(f32::NAN), nan);
            // SAFETY: as above.
            unsafe { _mm256_storeu_ps(out.as_mut_ptr().add(c), s) };
            c += 8;
        }
        for i in full..n {
            out[i] = super::sigmoid(x[i]);
        }
    }
}

// ---------------------------------------------------------------------------------------------------------
// σ from basic operations

/// ln 2 in two parts (fdlibm's): the high part has 11 trailing zero bits, so `n · LN2_HI` is exact for
/// `|n| < 2¹¹`; `LN2_HI + LN2_LO` = ln 2 to 2⁻⁸⁵.
const LN2_HI: f64 = f64::from_bits(0x3FE6_2E42_FEE0_0000);
const LN2_LO: f64 = f64::from_bits(0x3DEA_39EF_3579_3C76);

/// `eˣ` from +, −, × and exponent bits only (no C library, no fused steps), so every machine gives the same
/// bits. Relative error below 1e-13 on `[−700, 700]` (the input is clamped there): range reduction
/// `x = n·ln 2 + r`, `|r| ≤ ln 2 / 2` (`n` rounded to nearest, ties to even, by adding [`EXP_MAGIC`]), with
/// ln 2 split in two (Cody–Waite), then the degree-12 Taylor polynomial of `eʳ` by Horner, then `· 2ⁿ`
/// through the exponent field. The vector builds of [`Kernel::sigmoid`] do the same operations lane by lane.
pub fn exp(x: f64) -> f64 {
    if x.is_nan() {
        return x;
    }
    exp_core(x)
}

/// `1.5 · 2⁵²`: adding it rounds an `f64` of magnitude below 2⁵¹ to the nearest integer (ties to even), which
/// then sits in the low mantissa bits.
const EXP_MAGIC: f64 = 6_755_399_441_055_744.0;
/// 1/k! for k = 12 down to 1: the Taylor coefficients of `eʳ`, highest first.
const EXP_C: [f64; 12] = [
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

/// [`exp`] without the NaN test, written operation for operation as the vector builds do it (their
/// `max`/`min` return the bound for a NaN, and so do these comparisons).
#[inline(always)]
fn exp_core(x: f64) -> f64 {
    let x = if x > -700.0 { x } else { -700.0 };
    let x = if x < 700.0 { x } else { 700.0 };
    let t = x * std::f64::consts::LOG2_E + EXP_MAGIC;
    let n = t - EXP_MAGIC;
    let r = (x - n * LN2_HI) - n * LN2_LO;
    let mut p = EXP_C[0];
    for c in &EXP_C[1..] {
        p = p * r + c;
    }
    p = p * r + 1.0;
    let k = (t.to_bits() as i64).wrapping_sub(EXP_MAGIC.to_bits() as i64);
    p * f64::from_bits(((k + 1023) as u64) << 52)
}

/// σ(x) = 1 / (1 + e⁻ˣ) through [`exp`], rounded once to `f32`; σ(NaN) is `f32::NAN` on every build.
#[inline]
pub fn sigmoid(x: f32) -> f32 {
    if x.is_nan() {
        return f32::NAN;
    }
    (1.0 / (1.0 + exp_core(-(x as f64)))) as f32
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

        /// Rows picked by index from a matrix (repeats allowed) give, on every build, the bits of the dense
        /// scalar kernels on the same rows copied out.
        #[test]
        fn picked_rows_give_the_bits_of_copied_rows(
            (dim, m, ia, ib, w) in (1usize..=12, prop_oneof![1usize..40, Just(128)]).prop_flat_map(
                |(n, dim)| {
                    (
                        Just(dim),
                        values(n * dim),
                        proptest::collection::vec(0..n as u32, 1..=10),
                        proptest::collection::vec(0..n as u32, 1..=8),
                        values(80),
                    )
                },
            ),
        ) {
            let copy = |idx: &[u32]| -> Vec<f32> {
                idx.iter()
                    .flat_map(|&i| m[i as usize * dim..(i as usize + 1) * dim].to_vec())
                    .collect()
            };
            let (a, b) = (copy(&ia), copy(&ib));
            let (r, s) = (ia.len(), ib.len());
            let mut g0 = vec![0f32; r * s];
            Kernel::Scalar.gram(dim, &a, &b, &mut g0);
            let mut l0 = vec![0f32; r * dim];
            Kernel::Scalar.lincomb(dim, &w[..r * s], &b, &mut l0);
            for k in Kernel::available() {
                let (pa, pb) = (Rows::picked(dim, &m, &ia), Rows::picked(dim, &m, &ib));
                let mut g = vec![1f32; r * s];
                k.gram_rows(pa, pb, &mut g);
                prop_assert_eq!(bits(&g), bits(&g0), "gram_rows on {}", k.name());
                let mut l = vec![1f32; r * dim];
                k.lincomb_rows(&w[..r * s], pb, &mut l);
                prop_assert_eq!(bits(&l), bits(&l0), "lincomb_rows on {}", k.name());
            }
        }

        /// `update` gives on every build the bits of its definition on the scalar build (`lincomb` into
        /// temporaries, then `add_assign`), with repeated context and target rows, every register width and
        /// tail, and more targets than the vector builds keep in registers.
        #[test]
        fn update_gives_the_bits_of_its_definition(
            (dim, m, ci, ti, g) in (prop_oneof![1usize..40, Just(128), Just(100)], 1usize..=12, 1usize..=10)
                .prop_flat_map(|(dim, nc, nt)| {
                    (
                        Just(dim),
                        values(16 * dim),
                        proptest::collection::vec(0..8u32, nc),
                        proptest::collection::vec(8..16u32, nt),
                        values(nc * nt),
                    )
                }),
        ) {
            let mut want = m.clone();
            Kernel::Scalar.update(dim, &g, &mut want, &ci, &ti);
            for k in Kernel::available() {
                let mut got = m.clone();
                k.update(dim, &g, &mut got, &ci, &ti);
                prop_assert_eq!(bits(&got), bits(&want), "update on {}", k.name());
            }
        }

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
            let mut z0 = y0.clone();
            Kernel::Scalar.sub_assign(&mut z0, &a);
            let sg0: Vec<f32> = a.iter().map(|&v| sigmoid(v)).collect();
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
                k.sub_assign(&mut y, &a);
                prop_assert_eq!(bits(&y), bits(&z0), "sub_assign on {}", k.name());
                let mut sg = vec![1f32; a.len()];
                k.sigmoid(&a, &mut sg);
                prop_assert_eq!(bits(&sg), bits(&sg0), "sigmoid on {}", k.name());
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

    /// A context row used twice: both its deltas come from the old target row, and the target's delta from
    /// the old context row (twice). Values exact in f32, by hand.
    #[test]
    fn update_by_hand() {
        // rows: 0 = C = (1, 2), 1 = O = (0.5, −1); contexts [0, 0], target [1], g = [0.25, 0.5].
        // row 0 = C + 0.25·O + 0.5·O = (1.375, 1.25); row 1 = O + 0.25·C + 0.5·C = (1.25, 0.5).
        for k in Kernel::available() {
            let mut m = vec![1.0f32, 2.0, 0.5, -1.0];
            k.update(2, &[0.25, 0.5], &mut m, &[0, 0], &[1]);
            assert_eq!(m, vec![1.375, 1.25, 1.25, 0.5], "{}", k.name());
        }
        // More contexts than the vector builds take in one pass (UPDATE_MAX_C): the same bits everywhere.
        let (dim, nc) = (20usize, UPDATE_MAX_C + 5);
        let m: Vec<f32> = (0..(nc + 2) * dim)
            .map(|i| ((i * 37 % 101) as f32 - 50.0) / 64.0)
            .collect();
        let ci: Vec<u32> = (0..nc as u32).collect();
        let ti = [nc as u32, nc as u32 + 1];
        let g: Vec<f32> = (0..nc * 2).map(|i| (i as f32 - 30.0) / 128.0).collect();
        let mut want = m.clone();
        Kernel::Scalar.update(dim, &g, &mut want, &ci, &ti);
        for k in Kernel::available() {
            let mut got = m.clone();
            k.update(dim, &g, &mut got, &ci, &ti);
            assert_eq!(bits(&got), bits(&want), "{}", k.name());
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

    /// σ on every build against f64 σ of the C library, on a grid and at the edges (±0, ±∞, NaN, the clamp,
    /// subnormals), with the scalar build's bits.
    #[test]
    fn sigmoid_on_every_build() {
        let mut x: Vec<f32> = (-2000..=2000).map(|i| i as f32 / 40.0).collect();
        x.extend([
            0.0,
            -0.0,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
            -f32::NAN,
            700.0,
            -700.0,
            701.5,
            -1e30,
            1e-40,
            -1e-40,
            f32::MAX,
            f32::MIN,
        ]);
        let want: Vec<f32> = x.iter().map(|&v| sigmoid(v)).collect();
        for (&v, &w) in x.iter().zip(&want) {
            if v.is_nan() {
                assert_eq!(w.to_bits(), f32::NAN.to_bits());
                continue;
            }
            let r = (1.0 / (1.0 + (-(v as f64)).exp())) as f32;
            assert!((w - r).abs() <= f32::EPSILON * r, "{v}: {w} vs {r}");
        }
        // Every length 0..=x.len(), so each build's vector body and scalar tail meet at every offset.
        for k in Kernel::available() {
            for len in [0usize, 1, 3, 4, 5, 7, 8, 9, 15, 16, 17, x.len()] {
                let mut out = vec![0f32; len];
                k.sigmoid(&x[x.len() - len..], &mut out);
                assert_eq!(
                    bits(&out),
                    bits(&want[x.len() - len..]),
                    "{} len {len}",
                    k.name()
                );
            }
        }
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
