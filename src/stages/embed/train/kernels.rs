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
//! scalar build. The two vector builds are one code generic over the register width (`simd::Isa`: 8 or 16
//! lanes of `f32`; each build names only its instructions), and the portable build is written apart, element
//! by element, as the reference the tests compare every build with. They give **bit-identical results**,
//! because every path performs the same IEEE operations in the same order:
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

/// `$f` of the build `$k` on the arguments: `$scalar` for the portable build, else the vector build's entry
/// point (a vector `Kernel` exists only where [`Kernel::available`] detected its CPU features; the methods
/// check the shapes before they dispatch).
macro_rules! dispatch {
    ($k:expr, $f:ident($($a:expr),*), $scalar:expr) => {
        match $k {
            Kernel::Scalar => $scalar,
            #[cfg(target_arch = "x86_64")]
            // SAFETY: AVX2 and FMA detected (see above).
            Kernel::Avx2 => unsafe { avx2::$f($($a),*) },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: AVX-512F detected.
            Kernel::Avx512 => unsafe { avx512::$f($($a),*) },
            #[cfg(not(target_arch = "x86_64"))]
            _ => $scalar,
        }
    };
}

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
        dispatch!(self, gram(dim, a, b, out), scalar::gram(a, b, out))
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
        dispatch!(self, lincomb(dim, w, x, y), scalar::lincomb(dim, w, x, y))
    }

    /// `y[i] += x[i]`.
    pub fn add_assign(self, y: &mut [f32], x: &[f32]) {
        assert_eq!(y.len(), x.len(), "add_assign shapes");
        dispatch!(self, add_assign(y, x), scalar::add_assign(y, x))
    }

    /// `y[i] -= x[i]`.
    pub fn sub_assign(self, y: &mut [f32], x: &[f32]) {
        assert_eq!(y.len(), x.len(), "sub_assign shapes");
        dispatch!(self, sub_assign(y, x), scalar::sub_assign(y, x))
    }

    /// `out[i] = σ(x[i])`, bit for bit [`sigmoid`] on every build (the vector builds run [`exp`]'s
    /// operations on 8 or 4 `f64` lanes).
    pub fn sigmoid(self, x: &[f32], out: &mut [f32]) {
        assert_eq!(x.len(), out.len(), "sigmoid shapes");
        dispatch!(self, sigmoid(x, out), scalar::sigmoid(x, out))
    }

    /// The update of one minibatch, in place in the `dim`-wide matrix `m`, in the order of a sequential
    /// trainer: with contexts `C[j]` = row `ci[j]`, targets `O[k]` = row `ti[k]` and the `C × T` gradient `g`
    /// (`g[j·T + k]`, `T = ti.len()`), the pairs `(j, k)` are taken for `j` in order and `k` in order within
    /// it: `ΔC[j] += g[j·T + k]·O[k]` with `O[k]` as the pairs before left it, then `O[k] += g[j·T + k]·C[j]`
    /// with `C[j]` as it is on entry. At the end `row ci[j] += ΔC[j]` for `j` in order, and `row ti[k]` is
    /// `O[k]`. Element by element: `ΔC[j]` is the fma chain from +0.0 in ascending `k`, and `O[k]` the fma
    /// chain over ascending `j` in place. So a context reads the targets as the earlier contexts of the
    /// minibatch moved them (word2vec's and gensim's order of pairs), while the gradient `g` itself comes
    /// from the rows on entry. `ci` may repeat a row (each occurrence adds its own `ΔC`); the targets must be
    /// distinct and no row may be both (checked in debug builds). The vector builds do it one register of
    /// columns at a time with the targets and sums in registers, so the rows are read once; the same bits
    /// on every build ([`scalar::update_cols_ptr`] is the definition).
    pub fn update(self, dim: usize, g: &[f32], m: &mut [f32], ci: &[u32], ti: &[u32]) {
        let rows = m.len().checked_div(dim).unwrap_or(0);
        assert!(
            g.len() == ci.len() * ti.len()
                && m.len() == rows * dim
                && ci.iter().chain(ti).all(|&r| (r as usize) < rows),
            "update shapes"
        );
        // (Distinct rows are distinct pointers: `update_ptrs` checks them in debug builds.)
        let base = m.as_mut_ptr();
        // The row pointers: on the stack for a usual minibatch.
        let (mut cs, mut ts) = (
            [std::ptr::null_mut(); UPDATE_MAX_C],
            [std::ptr::null_mut(); 64],
        );
        let (mut ch, mut th) = (Vec::new(), Vec::new());
        let cp: &mut [*mut f32] = if ci.len() <= UPDATE_MAX_C {
            &mut cs[..ci.len()]
        } else {
            ch.resize(ci.len(), std::ptr::null_mut());
            &mut ch
        };
        let tp: &mut [*mut f32] = if ti.len() <= 64 {
            &mut ts[..ti.len()]
        } else {
            th.resize(ti.len(), std::ptr::null_mut());
            &mut th
        };
        // `wrapping_add`: in bounds (checked above), and no reference into `m` is made from here on.
        for (p, &r) in cp.iter_mut().zip(ci).chain(tp.iter_mut().zip(ti)) {
            *p = base.wrapping_add(r as usize * dim);
        }
        // SAFETY: every pointer is a row of `m`, which this call borrows mutably; the targets are distinct
        // rows apart from the contexts (the caller's contract, checked in debug builds).
        unsafe { self.update_ptrs(dim, g, cp, tp) }
    }

    /// [`Kernel::update`] on rows given by pointer, wherever they live (rows of two matrices and of a working
    /// copy in one minibatch): the same operations in the same order, so the same bits.
    ///
    /// # Safety
    /// Every pointer of `cp` (contexts; repeats allowed) and of `tp` (targets) points to `dim` floats that
    /// nothing else reads or writes during the call; the targets are distinct and none is a context.
    pub unsafe fn update_ptrs(self, dim: usize, g: &[f32], cp: &[*mut f32], tp: &[*mut f32]) {
        assert!(g.len() == cp.len() * tp.len(), "update shapes");
        debug_assert!(
            cp.iter().all(|r| !tp.contains(r))
                && tp.iter().enumerate().all(|(k, r)| !tp[..k].contains(r)),
            "update: a row is both context and target, or a target twice"
        );
        if dim == 0 || cp.is_empty() || tp.is_empty() {
            return;
        }
        // SAFETY: the caller's contract.
        dispatch!(self, update(dim, g, cp, tp), unsafe {
            scalar::update_cols_ptr(dim, 0, g, cp, tp)
        })
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
    /// Rows by pointer ([`Rows::from_ptrs`]), instead of `base` and `idx`.
    ptrs: Option<&'a [*mut f32]>,
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
            ptrs: None,
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
            ptrs: None,
            n: idx.len(),
            dim,
        }
    }

    /// The `dim` floats at each pointer of `ptrs` (repeats allowed).
    ///
    /// # Safety
    /// Each pointer points to `dim` floats that nobody writes while the `Rows` (or a row it gave) lives.
    pub unsafe fn from_ptrs(dim: usize, ptrs: &'a [*mut f32]) -> Rows<'a> {
        Rows {
            base: &[],
            idx: None,
            ptrs: Some(ptrs),
            n: ptrs.len(),
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
        if let Some(p) = self.ptrs {
            // SAFETY: `from_ptrs`'s contract.
            return unsafe { std::slice::from_raw_parts(p[k], self.dim) };
        }
        let r = match self.idx {
            Some(i) => i[k] as usize,
            None => k,
        };
        &self.base[r * self.dim..(r + 1) * self.dim]
    }
}

/// Most contexts (rows `ci`) whose sums [`Kernel::update`] keeps on the stack; more (a window above 16) take
/// buffers on the heap: the same bits.
pub const UPDATE_MAX_C: usize = 32;
/// Most targets (rows `ti`) the vector builds of [`Kernel::update`] keep in registers; more (above 7 noise
/// nodes) are kept in memory: the same bits, a little slower.
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
    use super::{reduce16, Rows, LANES, UPDATE_MAX_C, UPDATE_MAX_T};

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

    /// The columns `from..dim` of [`super::Kernel::update`], element by element: its definition (the
    /// portable build runs it from column 0, the vector builds on their last `dim mod W` columns).
    ///
    /// # Safety
    /// As [`super::Kernel::update_ptrs`].
    pub unsafe fn update_cols_ptr(
        dim: usize,
        from: usize,
        g: &[f32],
        cp: &[*mut f32],
        tp: &[*mut f32],
    ) {
        if from >= dim {
            return;
        }
        let (nc, nt) = (cp.len(), tp.len());
        let (mut o_stack, mut dc_stack) = ([0f32; UPDATE_MAX_T], [0f32; UPDATE_MAX_C]);
        let (mut o_heap, mut dc_heap) = (Vec::new(), Vec::new());
        let o: &mut [f32] = if nt <= UPDATE_MAX_T {
            &mut o_stack[..nt]
        } else {
            o_heap.resize(nt, 0.0);
            &mut o_heap
        };
        let dc: &mut [f32] = if nc <= UPDATE_MAX_C {
            &mut dc_stack[..nc]
        } else {
            dc_heap.resize(nc, 0.0);
            &mut dc_heap
        };
        // SAFETY (every access): i < dim, and each pointer holds `dim` floats (the caller's contract).
        for i in from..dim {
            for (ok, &r) in o.iter_mut().zip(tp) {
                *ok = unsafe { *r.add(i) };
            }
            for (j, &r) in cp.iter().enumerate() {
                let c = unsafe { *r.add(i) };
                let mut a = 0f32;
                for (ok, &gk) in o.iter_mut().zip(&g[j * nt..(j + 1) * nt]) {
                    a = gk.mul_add(*ok, a);
                    *ok = gk.mul_add(c, *ok);
                }
                dc[j] = a;
            }
            for (&d, &r) in dc.iter().zip(cp) {
                unsafe { *r.add(i) += d };
            }
            for (&ok, &r) in o.iter().zip(tp) {
                unsafe { *r.add(i) = ok };
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

/// The vector builds, written once for any register width: [`Isa`] names the handful of instructions the
/// kernels use, [`avx2`] (8 lanes of `f32`) and [`avx512`] (16 lanes) implement it, and the kernels below are
/// generic over it. Every kernel performs the operations of the scalar build in the same order whatever the
/// width (see the module documentation), so both instances give its bits.
///
/// The generic functions are `#[inline(always)]` and are only called from the `#[target_feature]` entry
/// points of each build ([`isa_entry_points`]), so each instance is compiled with its instructions enabled.
#[cfg(target_arch = "x86_64")]
mod simd;

/// The `#[target_feature]` entry points of one vector build: each runs the generic kernel of [`simd`] for
/// the build's [`simd::Isa`], so the generic code is compiled with the build's instructions.
#[cfg(target_arch = "x86_64")]
macro_rules! isa_entry_points {
    ($features:literal, $isa:ty) => {
        /// # Safety
        /// The build's CPU features; shapes checked by [`super::Kernel::gram_rows`].
        #[target_feature(enable = $features)]
        pub unsafe fn gram(dim: usize, a: Rows, b: Rows, out: &mut [f32]) {
            // SAFETY: the features are enabled here.
            unsafe { super::simd::gram::<$isa>(dim, a, b, out) }
        }

        /// # Safety
        /// As [`gram`]; shapes checked by [`super::Kernel::lincomb_rows`].
        #[target_feature(enable = $features)]
        pub unsafe fn lincomb(dim: usize, w: &[f32], x: Rows, y: &mut [f32]) {
            // SAFETY: as above.
            unsafe { super::simd::lincomb::<$isa>(dim, w, x, y) }
        }

        /// # Safety
        /// As [`gram`]; the rows as [`super::Kernel::update_ptrs`] asks, shapes checked there.
        #[target_feature(enable = $features)]
        pub unsafe fn update(dim: usize, g: &[f32], cp: &[*mut f32], tp: &[*mut f32]) {
            // SAFETY: as above.
            unsafe { super::simd::update::<$isa>(dim, g, cp, tp) }
        }

        /// # Safety
        /// As [`gram`].
        #[target_feature(enable = $features)]
        pub unsafe fn add_assign(y: &mut [f32], x: &[f32]) {
            // SAFETY: as above.
            unsafe { super::simd::add_assign::<$isa>(y, x) }
        }

        /// # Safety
        /// As [`gram`].
        #[target_feature(enable = $features)]
        pub unsafe fn sub_assign(y: &mut [f32], x: &[f32]) {
            // SAFETY: as above.
            unsafe { super::simd::sub_assign::<$isa>(y, x) }
        }

        /// # Safety
        /// As [`gram`].
        #[target_feature(enable = $features)]
        pub unsafe fn sigmoid(x: &[f32], out: &mut [f32]) {
            // SAFETY: as above.
            unsafe { super::simd::sigmoid::<$isa>(x, out) }
        }
    };
}

/// The one-instruction methods of an [`simd::Isa`] impl, one line each: `name(args) -> type = intrinsic call;`.
#[cfg(target_arch = "x86_64")]
macro_rules! isa_ops {
    ($($name:ident($($a:ident: $t:ty),*) -> $r:ty = $body:expr;)*) => {
        $(
            #[inline(always)]
            unsafe fn $name($($a: $t),*) -> $r {
                // SAFETY: the build's features (the trait's contract).
                unsafe { $body }
            }
        )*
    };
}

/// AVX2 + FMA: 8 lanes of `f32`; a dot product's 16 lanes are two registers (`lo` = lanes 0..8, `hi` =
/// 8..16), and its tree starts by adding them (the `l + l⊕8` step).
#[cfg(target_arch = "x86_64")]
mod avx2;

/// AVX-512F: 16 lanes of `f32`, one register per dot product; `gram` runs eight dot products side by side and
/// reduces four at a time in one register (`reduce16x4`).
#[cfg(target_arch = "x86_64")]
mod avx512;

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

    /// The first build whose `update` of the rows `m` does not give the scalar build's bits, by name.
    fn update_differs(
        dim: usize,
        g: &[f32],
        m: &[f32],
        ci: &[u32],
        ti: &[u32],
    ) -> Option<&'static str> {
        let mut want = m.to_vec();
        Kernel::Scalar.update(dim, g, &mut want, ci, ti);
        let want = bits(&want);
        Kernel::available()
            .into_iter()
            .find(|k| {
                let mut got = m.to_vec();
                k.update(dim, g, &mut got, ci, ti);
                bits(&got) != want
            })
            .map(Kernel::name)
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

        /// `update` gives on every build the bits of its definition (the scalar build), with repeated context
        /// rows, every register width and tail, and more contexts and targets than the vector builds keep
        /// in registers.
        #[test]
        fn update_gives_the_bits_of_its_definition(
            (dim, m, ci, ti, g) in (
                prop_oneof![1usize..40, Just(128), Just(100)],
                prop_oneof![1usize..=12, Just(UPDATE_MAX_C + 3)],
                1usize..=11,
            )
                .prop_flat_map(|(dim, nc, nt)| {
                    (
                        Just(dim),
                        values(48 * dim),
                        proptest::collection::vec(0..16u32, nc),
                        Just((16..16 + nt as u32).collect::<Vec<u32>>()).prop_shuffle(),
                        values(nc * nt),
                    )
                }),
        ) {
            let differs = update_differs(dim, &g, &m, &ci, &ti);
            prop_assert_eq!(differs, None, "update");
        }

        /// `update` is the sequential trainer's order of pairs: against a plain f64 simulation (pairs one at
        /// a time, each context reading the targets as the earlier pairs left them, the contexts added at
        /// the end), within f32 rounding.
        #[test]
        fn update_follows_the_pairs_in_order(
            (dim, m, ci, g) in (prop_oneof![1usize..40, Just(128)], 1usize..=10).prop_flat_map(|(dim, nc)| {
                (
                    Just(dim),
                    proptest::collection::vec(-1.0f32..1.0, 14 * dim),
                    proptest::collection::vec(0..8u32, nc),
                    proptest::collection::vec(-0.5f32..0.5, nc * 6),
                )
            }),
        ) {
            let ti = [8u32, 9, 10, 11, 12, 13];
            let mut want: Vec<f64> = m.iter().map(|&x| x as f64).collect();
            let entry = want.clone();
            let mut dc = vec![0f64; ci.len() * dim];
            for (j, &c) in ci.iter().enumerate() {
                for (k, &t) in ti.iter().enumerate() {
                    let gk = g[j * 6 + k] as f64;
                    for i in 0..dim {
                        dc[j * dim + i] += gk * want[t as usize * dim + i];
                        want[t as usize * dim + i] += gk * entry[c as usize * dim + i];
                    }
                }
            }
            for (j, &c) in ci.iter().enumerate() {
                for i in 0..dim {
                    want[c as usize * dim + i] += dc[j * dim + i];
                }
            }
            for k in Kernel::available() {
                let mut got = m.clone();
                k.update(dim, &g, &mut got, &ci, &ti);
                for (x, y) in got.iter().zip(&want) {
                    prop_assert!((*x as f64 - y).abs() < 1e-5, "{}: {x} vs {y}", k.name());
                }
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
            // The n × m matrix product Σ_t x(i, t)·y(t, j) over `inner` terms, in f64, row by row.
            type Entry<'a> = &'a dyn Fn(usize, usize) -> f32;
            let product = |n: usize, m: usize, inner: usize, x: Entry, y: Entry| -> Vec<f64> {
                (0..n * m)
                    .map(|c| (0..inner).map(|t| x(c / m, t) as f64 * y(t, c % m) as f64).sum())
                    .collect()
            };
            // gram: a · bᵀ (r × s); lincomb: w · b (r × dim).
            let gram = product(r, s, dim, &|i, t| a[i * dim + t], &|t, j| b[j * dim + t]);
            let lincomb = product(r, dim, s, &|i, j| w[i * s + j], &|j, t| b[j * dim + t]);
            for k in Kernel::available() {
                let mut g = vec![0f32; r * s];
                k.gram(dim, &a, &b, &mut g);
                for (got, e) in g.iter().zip(&gram) {
                    prop_assert!((*got as f64 - e).abs() < 1e-5 * dim as f64);
                }
                let mut y = vec![0f32; r * dim];
                k.lincomb(dim, &w, &b, &mut y);
                for (got, e) in y.iter().zip(&lincomb) {
                    prop_assert!((*got as f64 - e).abs() < 1e-5 * s as f64);
                }
            }
        }
    }

    /// A context row used twice: both its deltas come from the old target row, and the target's delta from
    /// the old context row (twice). Values exact in f32, by hand.
    #[test]
    fn rows_by_pointer_from_three_buffers_give_the_bits_of_one_matrix() {
        // The trainer's case: contexts from one matrix, targets from another, some rows from a working copy.
        // `gram_rows` and `update_ptrs` on them against `gram` and `update` on the same rows in one matrix.
        let dim = 37usize;
        let val = |i: usize| ((i * 61 % 211) as f32 - 105.0) / 97.0;
        let one: Vec<f32> = (0..6 * dim).map(val).collect();
        let (ci, ti) = ([0u32, 2, 0, 1], [3u32, 4, 5]);
        let g: Vec<f32> = (0..ci.len() * ti.len())
            .map(|i| (i as f32 - 5.5) / 16.0)
            .collect();
        for k in Kernel::available() {
            let mut want = one.clone();
            let mut want_logits = vec![0f32; ci.len() * ti.len()];
            k.gram_rows(
                Rows::picked(dim, &want, &ci),
                Rows::picked(dim, &want, &ti),
                &mut want_logits,
            );
            k.update(dim, &g, &mut want, &ci, &ti);
            // Rows 0..2 in `syn0`, row 2 in a copy, rows 3..6 in `syn1`.
            let (mut syn0, mut copy, mut syn1) = (
                one[..2 * dim].to_vec(),
                one[2 * dim..3 * dim].to_vec(),
                one[3 * dim..].to_vec(),
            );
            let at = |v: &mut Vec<f32>, r: usize| v.as_mut_ptr().wrapping_add(r * dim);
            let cp = [
                at(&mut syn0, 0),
                at(&mut copy, 0),
                at(&mut syn0, 0),
                at(&mut syn0, 1),
            ];
            let tp = [at(&mut syn1, 0), at(&mut syn1, 1), at(&mut syn1, 2)];
            let mut logits = vec![0f32; ci.len() * ti.len()];
            // SAFETY: every pointer is a row of `dim` floats of a live buffer used by nothing else here.
            unsafe {
                k.gram_rows(
                    Rows::from_ptrs(dim, &cp),
                    Rows::from_ptrs(dim, &tp),
                    &mut logits,
                );
                k.update_ptrs(dim, &g, &cp, &tp);
            }
            assert_eq!(bits(&logits), bits(&want_logits), "{}", k.name());
            let got: Vec<f32> = [syn0, copy, syn1].concat();
            assert_eq!(bits(&got), bits(&want), "{}", k.name());
        }
    }

    #[test]
    fn update_by_hand() {
        // rows: 0 = C = (1, 2), 1 = O = (0.5, −1); contexts [0, 0], target [1], g = [0.25, 0.5].
        // Pair 1: ΔC₁ = 0.25·O = (0.125, −0.25), O = O + 0.25·C = (0.75, −0.5). Pair 2 reads that O:
        // ΔC₂ = 0.5·(0.75, −0.5) = (0.375, −0.25), O = (0.75, −0.5) + 0.5·C = (1.25, 0.5).
        // row 0 = C + ΔC₁ + ΔC₂ = (1.5, 1.5); row 1 = (1.25, 0.5). (A minibatch reading O on entry for both
        // pairs would give row 0 = (1.375, 1.25).)
        for k in Kernel::available() {
            let mut m = vec![1.0f32, 2.0, 0.5, -1.0];
            k.update(2, &[0.25, 0.5], &mut m, &[0, 0], &[1]);
            assert_eq!(m, vec![1.5, 1.5, 1.25, 0.5], "{}", k.name());
        }
        // More contexts and more targets than the vector builds keep in registers: the same bits everywhere.
        for (nc, nt) in [
            (UPDATE_MAX_C + 5, 2),
            (3, UPDATE_MAX_T + 3),
            (UPDATE_MAX_C + 1, UPDATE_MAX_T + 1),
        ] {
            let dim = 20usize;
            let m: Vec<f32> = (0..(nc + nt) * dim)
                .map(|i| ((i * 37 % 101) as f32 - 50.0) / 64.0)
                .collect();
            let ci: Vec<u32> = (0..nc as u32).collect();
            let ti: Vec<u32> = (nc as u32..(nc + nt) as u32).collect();
            let g: Vec<f32> = (0..nc * nt).map(|i| (i as f32 - 30.0) / 128.0).collect();
            assert_eq!(update_differs(dim, &g, &m, &ci, &ti), None, "{nc} × {nt}");
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
