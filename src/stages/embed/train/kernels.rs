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
    /// on every build ([`scalar::update_cols`] is the definition).
    pub fn update(self, dim: usize, g: &[f32], m: &mut [f32], ci: &[u32], ti: &[u32]) {
        let rows = m.len().checked_div(dim).unwrap_or(0);
        assert!(
            g.len() == ci.len() * ti.len()
                && m.len() == rows * dim
                && ci.iter().chain(ti).all(|&r| (r as usize) < rows),
            "update shapes"
        );
        debug_assert!(
            ci.iter().all(|r| !ti.contains(r))
                && ti.iter().enumerate().all(|(k, r)| !ti[..k].contains(r)),
            "update: a row is both context and target, or a target twice"
        );
        if dim == 0 || ci.is_empty() || ti.is_empty() {
            return;
        }
        dispatch!(
            self,
            update(dim, g, m, ci, ti),
            scalar::update_cols(dim, 0, g, m, ci, ti)
        )
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
    pub fn update_cols(dim: usize, from: usize, g: &[f32], m: &mut [f32], ci: &[u32], ti: &[u32]) {
        if from >= dim {
            return;
        }
        let (nc, nt) = (ci.len(), ti.len());
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
        for i in from..dim {
            for (ok, &r) in o.iter_mut().zip(ti) {
                *ok = m[r as usize * dim + i];
            }
            for (j, &r) in ci.iter().enumerate() {
                let c = m[r as usize * dim + i];
                let mut a = 0f32;
                for (ok, &gk) in o.iter_mut().zip(&g[j * nt..(j + 1) * nt]) {
                    a = gk.mul_add(*ok, a);
                    *ok = gk.mul_add(c, *ok);
                }
                dc[j] = a;
            }
            for (&d, &r) in dc.iter().zip(ci) {
                m[r as usize * dim + i] += d;
            }
            for (&ok, &r) in o.iter().zip(ti) {
                m[r as usize * dim + i] = ok;
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
mod simd {
    use super::{Rows, LANES, UPDATE_MAX_C};

    /// The registers and instructions of one vector build.
    ///
    /// # Safety
    /// Every method needs the CPU features of the build; callers are the build's `#[target_feature]` entry
    /// points. Loads and stores read or write `W` (or `16`, or `W / 2`) floats at the pointer.
    pub(super) trait Isa {
        /// `f32` lanes of one register.
        const W: usize;
        /// Dot products the `gram` kernel runs side by side (limited by the registers the build has).
        const DOTS: usize;
        /// `W` lanes of `f32`.
        type V: Copy;
        /// The 16 lanes of a dot product's accumulator (one register, or two).
        type V16: Copy;
        /// `W / 2` lanes of `f64` (σ), and the `W / 2` lanes of `f32` they are converted from and to.
        type D: Copy;
        type H: Copy;

        unsafe fn zero() -> Self::V;
        unsafe fn splat(x: f32) -> Self::V;
        unsafe fn load(p: *const f32) -> Self::V;
        unsafe fn store(p: *mut f32, v: Self::V);
        unsafe fn add(a: Self::V, b: Self::V) -> Self::V;
        unsafe fn sub(a: Self::V, b: Self::V) -> Self::V;
        /// `a·b + c`, one rounding.
        unsafe fn fmadd(a: Self::V, b: Self::V, c: Self::V) -> Self::V;

        unsafe fn zero16() -> Self::V16;
        /// `acc + a[0..16]·b[0..16]` lane by lane (lane `l` of the accumulator holds element `l`), fused.
        unsafe fn fmadd16(a: *const f32, b: *const f32, acc: Self::V16) -> Self::V16;
        /// The fixed tree of [`super::reduce16`] over the 16 lanes.
        unsafe fn reduce16(v: Self::V16) -> f32;
        /// Four [`Isa::reduce16`] (a build may run the four trees side by side: the same additions).
        #[inline(always)]
        unsafe fn reduce16x4(v: [Self::V16; 4]) -> [f32; 4] {
            // SAFETY: the caller's contract.
            unsafe { v.map(|x| Self::reduce16(x)) }
        }

        unsafe fn dsplat(x: f64) -> Self::D;
        unsafe fn load_h(p: *const f32) -> Self::H;
        unsafe fn store_h(p: *mut f32, v: Self::H);
        /// Widen to `f64` and negate (exact).
        unsafe fn neg_f64(x: Self::H) -> Self::D;
        /// `max(a, b)` and `min(a, b)` with the bound returned for a NaN `a` (as `x86`'s `max`/`min` do).
        unsafe fn dmax(a: Self::D, b: Self::D) -> Self::D;
        unsafe fn dmin(a: Self::D, b: Self::D) -> Self::D;
        unsafe fn dadd(a: Self::D, b: Self::D) -> Self::D;
        unsafe fn dsub(a: Self::D, b: Self::D) -> Self::D;
        unsafe fn dmul(a: Self::D, b: Self::D) -> Self::D;
        unsafe fn ddiv(a: Self::D, b: Self::D) -> Self::D;
        /// `2^k` for the integer `k` held in the low bits of `t` (`t − EXP_MAGIC`, as bits), as `exp_core`.
        unsafe fn pow2_of_magic(t: Self::D) -> Self::D;
        /// Round to `f32`, with NaN wherever `x` is NaN.
        unsafe fn narrow_nan_from(v: Self::D, x: Self::H) -> Self::H;
    }

    /// Dot products of `a` against rows `k0..k0 + N` of `b`: 16 lanes each over the full groups, the trees,
    /// then each dot's tail in order.
    ///
    /// # Safety
    /// `I`'s features; `a` points to `dim` floats; rows `k0..k0 + N` of `b` exist and are `dim` wide.
    #[inline(always)]
    unsafe fn dots<I: Isa, const N: usize>(
        dim: usize,
        a: *const f32,
        b: &Rows,
        k0: usize,
        out: &mut [f32],
    ) {
        let full = dim / LANES * LANES;
        let bp: [*const f32; N] = std::array::from_fn(|k| b.row(k0 + k).as_ptr());
        // SAFETY (every call here): `I`'s features, the caller's contract; c + 16 ≤ full ≤ dim.
        let mut acc = [unsafe { I::zero16() }; N];
        let mut c = 0;
        while c < full {
            for k in 0..N {
                acc[k] = unsafe { I::fmadd16(a.add(c), bp[k].add(c), acc[k]) };
            }
            c += LANES;
        }
        let mut k = 0;
        while k + 4 <= N {
            let s = unsafe { I::reduce16x4([acc[k], acc[k + 1], acc[k + 2], acc[k + 3]]) };
            out[k..k + 4].copy_from_slice(&s);
            k += 4;
        }
        for k in k..N {
            out[k] = unsafe { I::reduce16(acc[k]) };
        }
        for (k, o) in out.iter_mut().enumerate().take(N) {
            let mut s = *o;
            for i in full..dim {
                // SAFETY: i < dim.
                s = unsafe { (*a.add(i)).mul_add(*bp[k].add(i), s) };
            }
            *o = s;
        }
    }

    /// See [`super::Kernel::gram`].
    #[inline(always)]
    pub(super) unsafe fn gram<I: Isa>(dim: usize, a: Rows, b: Rows, out: &mut [f32]) {
        let s = b.len();
        for r in 0..a.len() {
            let ar = a.row(r).as_ptr();
            let o = &mut out[r * s..(r + 1) * s];
            let mut k = 0;
            while k < s {
                let n = (s - k).min(I::DOTS);
                let o = &mut o[k..k + n];
                // SAFETY: row r of a and rows k..k + n of b hold `dim` floats each; `I`'s features.
                unsafe {
                    match n {
                        1 => dots::<I, 1>(dim, ar, &b, k, o),
                        2 => dots::<I, 2>(dim, ar, &b, k, o),
                        3 => dots::<I, 3>(dim, ar, &b, k, o),
                        4 => dots::<I, 4>(dim, ar, &b, k, o),
                        5 => dots::<I, 5>(dim, ar, &b, k, o),
                        6 => dots::<I, 6>(dim, ar, &b, k, o),
                        7 => dots::<I, 7>(dim, ar, &b, k, o),
                        _ => dots::<I, 8>(dim, ar, &b, k, o),
                    }
                }
                k += n;
            }
        }
    }

    /// See [`super::Kernel::lincomb`]: four registers of columns at a time, then single registers, then
    /// scalar elements; every element is the same fma chain over `s = 0..S` whichever group it falls in.
    #[inline(always)]
    pub(super) unsafe fn lincomb<I: Isa>(dim: usize, w: &[f32], x: Rows, y: &mut [f32]) {
        let s = x.len();
        let full = dim / I::W * I::W;
        for (r, yr) in y.chunks_exact_mut(dim).enumerate() {
            let wr = &w[r * s..(r + 1) * s];
            let yp = yr.as_mut_ptr();
            let mut c = 0;
            // SAFETY (every call here): `I`'s features; c + 4·W (then c + W) ≤ full ≤ dim within row k of x
            // and row r of y.
            while c + 4 * I::W <= full {
                let mut acc = [unsafe { I::zero() }; 4];
                for (k, &wk) in wr.iter().enumerate() {
                    let wv = unsafe { I::splat(wk) };
                    let xp = x.row(k)[c..].as_ptr();
                    for (q, a) in acc.iter_mut().enumerate() {
                        *a = unsafe { I::fmadd(wv, I::load(xp.add(I::W * q)), *a) };
                    }
                }
                for (q, a) in acc.iter().enumerate() {
                    unsafe { I::store(yp.add(c + I::W * q), *a) };
                }
                c += 4 * I::W;
            }
            while c < full {
                let mut a = unsafe { I::zero() };
                for (k, &wk) in wr.iter().enumerate() {
                    a = unsafe { I::fmadd(I::splat(wk), I::load(x.row(k)[c..].as_ptr()), a) };
                }
                unsafe { I::store(yp.add(c), a) };
                c += I::W;
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

    /// See [`super::Kernel::update`]: a register of columns at a time, the `NT` targets of those columns in
    /// registers (updated in place pair by pair), the contexts' sums in `dc` until every context row has been
    /// read; the last `dim mod W` columns by [`super::scalar::update_cols`].
    ///
    /// # Safety
    /// `I`'s features; every index of `ci` and `ti` is a row of `m` (`dim` wide), the targets distinct and
    /// apart from the contexts; `ti.len() == NT`, `ci.len() ≤ UPDATE_MAX_C`, `g.len() == ci.len() · NT`.
    #[inline(always)]
    unsafe fn update_nt<I: Isa, const NT: usize>(
        dim: usize,
        g: &[f32],
        m: &mut [f32],
        ci: &[u32],
        ti: &[u32],
    ) {
        let full = dim / I::W * I::W;
        let base = m.as_mut_ptr();
        let at = |r: u32, c: usize| r as usize * dim + c;
        // SAFETY (every call below): `I`'s features; the rows are rows of `m` (the caller's contract) and
        // c + W ≤ dim; no reference into `m` is alive while `base` is used. `dc[j]` is written before it is
        // read, for every j < ci.len() ≤ UPDATE_MAX_C (not zeroed: that would cost as much as a small update).
        let mut dc = [const { std::mem::MaybeUninit::<I::V>::uninit() }; UPDATE_MAX_C];
        let mut c = 0;
        while c < full {
            let mut o: [I::V; NT] =
                std::array::from_fn(|k| unsafe { I::load(base.add(at(ti[k], c))) });
            for (j, &r) in ci.iter().enumerate() {
                let cj = unsafe { I::load(base.add(at(r, c))) };
                let gr = &g[j * NT..(j + 1) * NT];
                let mut a = unsafe { I::zero() };
                for k in 0..NT {
                    let gv = unsafe { I::splat(gr[k]) };
                    a = unsafe { I::fmadd(gv, o[k], a) };
                    o[k] = unsafe { I::fmadd(gv, cj, o[k]) };
                }
                dc[j].write(a);
            }
            for (j, &r) in ci.iter().enumerate() {
                let p = unsafe { base.add(at(r, c)) };
                unsafe { I::store(p, I::add(I::load(p), dc[j].assume_init())) };
            }
            for (k, &r) in ti.iter().enumerate() {
                unsafe { I::store(base.add(at(r, c)), o[k]) };
            }
            c += I::W;
        }
        super::scalar::update_cols(dim, full, g, m, ci, ti);
    }

    /// [`update_nt`] for shapes the registers do not hold (more than [`UPDATE_MAX_C`] contexts or
    /// [`super::UPDATE_MAX_T`] targets): the same operations, the targets and sums in buffers.
    ///
    /// # Safety
    /// As [`update_nt`], for any number of contexts and targets.
    #[inline(always)]
    unsafe fn update_any<I: Isa>(dim: usize, g: &[f32], m: &mut [f32], ci: &[u32], ti: &[u32]) {
        let (nc, nt) = (ci.len(), ti.len());
        let full = dim / I::W * I::W;
        let base = m.as_mut_ptr();
        let at = |r: u32, c: usize| r as usize * dim + c;
        // SAFETY (every call below): as in `update_nt`.
        let mut dc = vec![unsafe { I::zero() }; nc];
        let mut o = vec![unsafe { I::zero() }; nt];
        let mut c = 0;
        while c < full {
            for (ok, &r) in o.iter_mut().zip(ti) {
                *ok = unsafe { I::load(base.add(at(r, c))) };
            }
            for (j, &r) in ci.iter().enumerate() {
                let cj = unsafe { I::load(base.add(at(r, c))) };
                let mut a = unsafe { I::zero() };
                for (ok, &gk) in o.iter_mut().zip(&g[j * nt..(j + 1) * nt]) {
                    let gv = unsafe { I::splat(gk) };
                    a = unsafe { I::fmadd(gv, *ok, a) };
                    *ok = unsafe { I::fmadd(gv, cj, *ok) };
                }
                dc[j] = a;
            }
            for (&d, &r) in dc.iter().zip(ci) {
                let p = unsafe { base.add(at(r, c)) };
                unsafe { I::store(p, I::add(I::load(p), d)) };
            }
            for (&ok, &r) in o.iter().zip(ti) {
                unsafe { I::store(base.add(at(r, c)), ok) };
            }
            c += I::W;
        }
        super::scalar::update_cols(dim, full, g, m, ci, ti);
    }

    /// See [`super::Kernel::update`].
    ///
    /// # Safety
    /// `I`'s features; shapes and row indices checked by the caller.
    #[inline(always)]
    pub(super) unsafe fn update<I: Isa>(
        dim: usize,
        g: &[f32],
        m: &mut [f32],
        ci: &[u32],
        ti: &[u32],
    ) {
        // SAFETY: the caller's contract, and ti.len() is the NT of each arm.
        unsafe {
            if ci.len() > UPDATE_MAX_C {
                return update_any::<I>(dim, g, m, ci, ti);
            }
            match ti.len() {
                1 => update_nt::<I, 1>(dim, g, m, ci, ti),
                2 => update_nt::<I, 2>(dim, g, m, ci, ti),
                3 => update_nt::<I, 3>(dim, g, m, ci, ti),
                4 => update_nt::<I, 4>(dim, g, m, ci, ti),
                5 => update_nt::<I, 5>(dim, g, m, ci, ti),
                6 => update_nt::<I, 6>(dim, g, m, ci, ti),
                7 => update_nt::<I, 7>(dim, g, m, ci, ti),
                8 => update_nt::<I, 8>(dim, g, m, ci, ti),
                _ => update_any::<I>(dim, g, m, ci, ti),
            }
        }
    }

    /// `y[i] = op(y[i], x[i])` a register at a time, then element by element with `scalar`.
    #[inline(always)]
    unsafe fn zip_assign<I: Isa>(
        y: &mut [f32],
        x: &[f32],
        op: impl Fn(I::V, I::V) -> I::V,
        scalar: impl Fn(f32, f32) -> f32,
    ) {
        let n = y.len().min(x.len());
        let full = n / I::W * I::W;
        let (yp, xp) = (y.as_mut_ptr(), x.as_ptr());
        let mut c = 0;
        while c < full {
            // SAFETY: c + W ≤ n ≤ the length of both; `I`'s features.
            unsafe { I::store(yp.add(c), op(I::load(yp.add(c)), I::load(xp.add(c)))) };
            c += I::W;
        }
        for i in full..n {
            y[i] = scalar(y[i], x[i]);
        }
    }

    /// See [`super::Kernel::add_assign`].
    #[inline(always)]
    pub(super) unsafe fn add_assign<I: Isa>(y: &mut [f32], x: &[f32]) {
        // SAFETY: `I`'s features.
        unsafe { zip_assign::<I>(y, x, |a, b| I::add(a, b), |a, b| a + b) }
    }

    /// See [`super::Kernel::sub_assign`].
    #[inline(always)]
    pub(super) unsafe fn sub_assign<I: Isa>(y: &mut [f32], x: &[f32]) {
        // SAFETY: `I`'s features.
        unsafe { zip_assign::<I>(y, x, |a, b| I::sub(a, b), |a, b| a - b) }
    }

    /// See [`super::Kernel::sigmoid`]: [`super::exp_core`] on `W / 2` lanes of `f64`, operation for
    /// operation, then `1 / (1 + e)` rounded once to `f32`.
    #[inline(always)]
    pub(super) unsafe fn sigmoid<I: Isa>(x: &[f32], out: &mut [f32]) {
        use super::{EXP_C, EXP_MAGIC, LN2_HI, LN2_LO};
        let n = x.len().min(out.len());
        let h = I::W / 2;
        let full = n / h * h;
        let mut c = 0;
        // SAFETY (every call here): `I`'s features; c + W/2 ≤ n ≤ the length of both.
        unsafe {
            let d = |v: f64| I::dsplat(v);
            let (one, magic) = (d(1.0), d(EXP_MAGIC));
            while c < full {
                let xf = I::load_h(x.as_ptr().add(c));
                let v = I::dmin(I::dmax(I::neg_f64(xf), d(-700.0)), d(700.0));
                let t = I::dadd(I::dmul(v, d(std::f64::consts::LOG2_E)), magic);
                let nn = I::dsub(t, magic);
                let r = I::dsub(I::dsub(v, I::dmul(nn, d(LN2_HI))), I::dmul(nn, d(LN2_LO)));
                let mut p = d(EXP_C[0]);
                for &k in &EXP_C[1..] {
                    p = I::dadd(I::dmul(p, r), d(k));
                }
                p = I::dadd(I::dmul(p, r), one);
                let e = I::dmul(p, I::pow2_of_magic(t));
                let s = I::ddiv(one, I::dadd(one, e));
                I::store_h(out.as_mut_ptr().add(c), I::narrow_nan_from(s, xf));
                c += h;
            }
        }
        for i in full..n {
            out[i] = super::sigmoid(x[i]);
        }
    }
}

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
        /// As [`gram`]; shapes and row indices checked by [`super::Kernel::update`].
        #[target_feature(enable = $features)]
        pub unsafe fn update(dim: usize, g: &[f32], m: &mut [f32], ci: &[u32], ti: &[u32]) {
            // SAFETY: as above.
            unsafe { super::simd::update::<$isa>(dim, g, m, ci, ti) }
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
mod avx2 {
    use super::Rows;
    use std::arch::x86_64::*;

    pub(super) struct Avx2;

    impl super::simd::Isa for Avx2 {
        const W: usize = 8;
        const DOTS: usize = 3;
        type V = __m256;
        type V16 = (__m256, __m256);
        type D = __m256d;
        type H = __m128;

        isa_ops! {
            zero() -> __m256 = _mm256_setzero_ps();
            splat(x: f32) -> __m256 = _mm256_set1_ps(x);
            load(p: *const f32) -> __m256 = _mm256_loadu_ps(p);
            store(p: *mut f32, v: __m256) -> () = _mm256_storeu_ps(p, v);
            add(a: __m256, b: __m256) -> __m256 = _mm256_add_ps(a, b);
            sub(a: __m256, b: __m256) -> __m256 = _mm256_sub_ps(a, b);
            fmadd(a: __m256, b: __m256, c: __m256) -> __m256 = _mm256_fmadd_ps(a, b, c);
            zero16() -> (__m256, __m256) = (_mm256_setzero_ps(), _mm256_setzero_ps());
            dsplat(x: f64) -> __m256d = _mm256_set1_pd(x);
            load_h(p: *const f32) -> __m128 = _mm_loadu_ps(p);
            store_h(p: *mut f32, v: __m128) -> () = _mm_storeu_ps(p, v);
            neg_f64(x: __m128) -> __m256d = _mm256_xor_pd(_mm256_cvtps_pd(x), _mm256_set1_pd(-0.0));
            dmax(a: __m256d, b: __m256d) -> __m256d = _mm256_max_pd(a, b);
            dmin(a: __m256d, b: __m256d) -> __m256d = _mm256_min_pd(a, b);
            dadd(a: __m256d, b: __m256d) -> __m256d = _mm256_add_pd(a, b);
            dsub(a: __m256d, b: __m256d) -> __m256d = _mm256_sub_pd(a, b);
            dmul(a: __m256d, b: __m256d) -> __m256d = _mm256_mul_pd(a, b);
            ddiv(a: __m256d, b: __m256d) -> __m256d = _mm256_div_pd(a, b);
        }

        #[inline(always)]
        unsafe fn fmadd16(a: *const f32, b: *const f32, (lo, hi): Self::V16) -> Self::V16 {
            // SAFETY: the trait's contract (16 floats at a and at b).
            unsafe {
                (
                    _mm256_fmadd_ps(_mm256_loadu_ps(a), _mm256_loadu_ps(b), lo),
                    _mm256_fmadd_ps(_mm256_loadu_ps(a.add(8)), _mm256_loadu_ps(b.add(8)), hi),
                )
            }
        }

        #[inline(always)]
        unsafe fn reduce16((lo, hi): Self::V16) -> f32 {
            // SAFETY: the trait's contract.
            unsafe {
                let t8 = _mm256_add_ps(lo, hi);
                let t4 = _mm_add_ps(_mm256_castps256_ps128(t8), _mm256_extractf128_ps::<1>(t8));
                let t2 = _mm_add_ps(t4, _mm_movehl_ps(t4, t4));
                let t1 = _mm_add_ss(t2, _mm_shuffle_ps::<1>(t2, t2));
                _mm_cvtss_f32(t1)
            }
        }

        #[inline(always)]
        unsafe fn pow2_of_magic(t: __m256d) -> __m256d {
            // SAFETY: the trait's contract.
            unsafe {
                let magic = _mm256_set1_epi64x(super::EXP_MAGIC.to_bits() as i64);
                let k = _mm256_sub_epi64(_mm256_castpd_si256(t), magic);
                let bits = _mm256_add_epi64(k, _mm256_set1_epi64x(1023));
                _mm256_castsi256_pd(_mm256_slli_epi64::<52>(bits))
            }
        }

        #[inline(always)]
        unsafe fn narrow_nan_from(v: __m256d, x: __m128) -> __m128 {
            // SAFETY: the trait's contract.
            unsafe {
                _mm_blendv_ps(
                    _mm256_cvtpd_ps(v),
                    _mm_set1_ps(f32::NAN),
                    _mm_cmpunord_ps(x, x),
                )
            }
        }
    }

    isa_entry_points!("avx2,fma", Avx2);
}

/// AVX-512F: 16 lanes of `f32`, one register per dot product; `gram` runs eight dot products side by side and
/// reduces four at a time in one register (`reduce16x4`).
#[cfg(target_arch = "x86_64")]
mod avx512 {
    use super::{Rows, LANES};
    use std::arch::x86_64::*;

    pub(super) struct Avx512;

    impl super::simd::Isa for Avx512 {
        const W: usize = 16;
        const DOTS: usize = 8;
        type V = __m512;
        type V16 = __m512;
        type D = __m512d;
        type H = __m256;

        isa_ops! {
            zero() -> __m512 = _mm512_setzero_ps();
            splat(x: f32) -> __m512 = _mm512_set1_ps(x);
            load(p: *const f32) -> __m512 = _mm512_loadu_ps(p);
            store(p: *mut f32, v: __m512) -> () = _mm512_storeu_ps(p, v);
            add(a: __m512, b: __m512) -> __m512 = _mm512_add_ps(a, b);
            sub(a: __m512, b: __m512) -> __m512 = _mm512_sub_ps(a, b);
            fmadd(a: __m512, b: __m512, c: __m512) -> __m512 = _mm512_fmadd_ps(a, b, c);
            zero16() -> __m512 = _mm512_setzero_ps();
            fmadd16(a: *const f32, b: *const f32, acc: __m512) -> __m512 =
                _mm512_fmadd_ps(_mm512_loadu_ps(a), _mm512_loadu_ps(b), acc);
            reduce16(v: __m512) -> f32 = Self::reduce16x4([v; 4])[0];
            dsplat(x: f64) -> __m512d = _mm512_set1_pd(x);
            load_h(p: *const f32) -> __m256 = _mm256_loadu_ps(p);
            store_h(p: *mut f32, v: __m256) -> () = _mm256_storeu_ps(p, v);
            dmax(a: __m512d, b: __m512d) -> __m512d = _mm512_max_pd(a, b);
            dmin(a: __m512d, b: __m512d) -> __m512d = _mm512_min_pd(a, b);
            dadd(a: __m512d, b: __m512d) -> __m512d = _mm512_add_pd(a, b);
            dsub(a: __m512d, b: __m512d) -> __m512d = _mm512_sub_pd(a, b);
            dmul(a: __m512d, b: __m512d) -> __m512d = _mm512_mul_pd(a, b);
            ddiv(a: __m512d, b: __m512d) -> __m512d = _mm512_div_pd(a, b);
        }

        /// The trees of [`super::reduce16`] of four registers side by side: the same additions of the same
        /// lanes in the same order, four sums per instruction instead of one.
        #[inline(always)]
        unsafe fn reduce16x4([a0, a1, a2, a3]: [__m512; 4]) -> [f32; 4] {
            // SAFETY: the trait's contract.
            unsafe {
                // l + (l + 8): quarters 0, 1 of each register plus its quarters 2, 3.
                let s01 = _mm512_add_ps(
                    _mm512_shuffle_f32x4::<0x44>(a0, a1),
                    _mm512_shuffle_f32x4::<0xEE>(a0, a1),
                );
                let s23 = _mm512_add_ps(
                    _mm512_shuffle_f32x4::<0x44>(a2, a3),
                    _mm512_shuffle_f32x4::<0xEE>(a2, a3),
                );
                // + 4: the first half of each 8-lane sum plus its second half; quarter q now belongs to
                // register q.
                let u = _mm512_add_ps(
                    _mm512_shuffle_f32x4::<0x88>(s01, s23),
                    _mm512_shuffle_f32x4::<0xDD>(s01, s23),
                );
                // + 2, then + 1, within each quarter.
                let w = _mm512_add_ps(u, _mm512_permute_ps::<0xEE>(u));
                let z = _mm512_add_ps(w, _mm512_permute_ps::<0x55>(w));
                let mut t = [0f32; LANES];
                _mm512_storeu_ps(t.as_mut_ptr(), z);
                [t[0], t[4], t[8], t[12]]
            }
        }

        #[inline(always)]
        unsafe fn neg_f64(x: __m256) -> __m512d {
            // SAFETY: the trait's contract.
            unsafe {
                let sign = _mm512_set1_epi64(i64::MIN);
                _mm512_castsi512_pd(_mm512_xor_si512(
                    _mm512_castpd_si512(_mm512_cvtps_pd(x)),
                    sign,
                ))
            }
        }

        #[inline(always)]
        unsafe fn pow2_of_magic(t: __m512d) -> __m512d {
            // SAFETY: the trait's contract.
            unsafe {
                let magic = _mm512_set1_epi64(super::EXP_MAGIC.to_bits() as i64);
                let k = _mm512_sub_epi64(_mm512_castpd_si512(t), magic);
                let bits = _mm512_add_epi64(k, _mm512_set1_epi64(1023));
                _mm512_castsi512_pd(_mm512_slli_epi64::<52>(bits))
            }
        }

        #[inline(always)]
        unsafe fn narrow_nan_from(v: __m512d, x: __m256) -> __m256 {
            // SAFETY: the trait's contract.
            unsafe {
                let nan = _mm256_cmp_ps::<_CMP_UNORD_Q>(x, x);
                _mm256_blendv_ps(_mm512_cvtpd_ps(v), _mm256_set1_ps(f32::NAN), nan)
            }
        }
    }

    isa_entry_points!("avx512f", Avx512);
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
            let mut want = m.clone();
            Kernel::Scalar.update(dim, &g, &mut want, &ci, &ti);
            for k in Kernel::available() {
                let mut got = m.clone();
                k.update(dim, &g, &mut got, &ci, &ti);
                prop_assert_eq!(bits(&got), bits(&want), "update on {}", k.name());
            }
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
            let mut want = m.clone();
            Kernel::Scalar.update(dim, &g, &mut want, &ci, &ti);
            for k in Kernel::available() {
                let mut got = m.clone();
                k.update(dim, &g, &mut got, &ci, &ti);
                assert_eq!(bits(&got), bits(&want), "{} ({nc} × {nt})", k.name());
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
