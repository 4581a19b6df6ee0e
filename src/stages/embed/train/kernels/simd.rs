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
/// read; the last `dim mod W` columns by [`super::scalar::update_cols_ptr`].
///
/// # Safety
/// `I`'s features; every pointer of `cp` (contexts, repeats allowed) and `tp` (targets) points to `dim`
/// floats that nothing else reads or writes meanwhile, the targets distinct and apart from the contexts;
/// `tp.len() == NT`, `cp.len() ≤ UPDATE_MAX_C`, `g.len() == cp.len() · NT`.
#[inline(always)]
unsafe fn update_nt<I: Isa, const NT: usize>(
    dim: usize,
    g: &[f32],
    cp: &[*mut f32],
    tp: &[*mut f32],
) {
    let full = dim / I::W * I::W;
    // SAFETY (every call below): `I`'s features; the rows are `dim` wide (the caller's contract) and
    // c + W ≤ dim. `dc[j]` is written before it is read, for every j < cp.len() ≤ UPDATE_MAX_C (not zeroed:
    // that would cost as much as a small update).
    let mut dc = [const { std::mem::MaybeUninit::<I::V>::uninit() }; UPDATE_MAX_C];
    let mut c = 0;
    while c < full {
        let mut o: [I::V; NT] = std::array::from_fn(|k| unsafe { I::load(tp[k].add(c)) });
        for (j, &r) in cp.iter().enumerate() {
            let cj = unsafe { I::load(r.add(c)) };
            let gr = &g[j * NT..(j + 1) * NT];
            let mut a = unsafe { I::zero() };
            for k in 0..NT {
                let gv = unsafe { I::splat(gr[k]) };
                a = unsafe { I::fmadd(gv, o[k], a) };
                o[k] = unsafe { I::fmadd(gv, cj, o[k]) };
            }
            dc[j].write(a);
        }
        for (j, &r) in cp.iter().enumerate() {
            let p = unsafe { r.add(c) };
            unsafe { I::store(p, I::add(I::load(p), dc[j].assume_init())) };
        }
        for (k, &r) in tp.iter().enumerate() {
            unsafe { I::store(r.add(c), o[k]) };
        }
        c += I::W;
    }
    // SAFETY: the caller's contract.
    unsafe { super::scalar::update_cols_ptr(dim, full, g, cp, tp) };
}

/// [`update_nt`] for shapes the registers do not hold (more than [`UPDATE_MAX_C`] contexts or
/// [`super::UPDATE_MAX_T`] targets): the same operations, the targets and sums in buffers.
///
/// # Safety
/// As [`update_nt`], for any number of contexts and targets.
#[inline(always)]
unsafe fn update_any<I: Isa>(dim: usize, g: &[f32], cp: &[*mut f32], tp: &[*mut f32]) {
    let (nc, nt) = (cp.len(), tp.len());
    let full = dim / I::W * I::W;
    // SAFETY (every call below): as in `update_nt`.
    let mut dc = vec![unsafe { I::zero() }; nc];
    let mut o = vec![unsafe { I::zero() }; nt];
    let mut c = 0;
    while c < full {
        for (ok, &r) in o.iter_mut().zip(tp) {
            *ok = unsafe { I::load(r.add(c)) };
        }
        for (j, &r) in cp.iter().enumerate() {
            let cj = unsafe { I::load(r.add(c)) };
            let mut a = unsafe { I::zero() };
            for (ok, &gk) in o.iter_mut().zip(&g[j * nt..(j + 1) * nt]) {
                let gv = unsafe { I::splat(gk) };
                a = unsafe { I::fmadd(gv, *ok, a) };
                *ok = unsafe { I::fmadd(gv, cj, *ok) };
            }
            dc[j] = a;
        }
        for (&d, &r) in dc.iter().zip(cp) {
            let p = unsafe { r.add(c) };
            unsafe { I::store(p, I::add(I::load(p), d)) };
        }
        for (&ok, &r) in o.iter().zip(tp) {
            unsafe { I::store(r.add(c), ok) };
        }
        c += I::W;
    }
    // SAFETY: the caller's contract.
    unsafe { super::scalar::update_cols_ptr(dim, full, g, cp, tp) };
}

/// See [`super::Kernel::update`].
///
/// # Safety
/// `I`'s features; the rows as [`update_nt`] asks, shapes checked by the caller.
#[inline(always)]
pub(super) unsafe fn update<I: Isa>(dim: usize, g: &[f32], cp: &[*mut f32], tp: &[*mut f32]) {
    // SAFETY: the caller's contract, and tp.len() is the NT of each arm.
    unsafe {
        if cp.len() > UPDATE_MAX_C {
            return update_any::<I>(dim, g, cp, tp);
        }
        match tp.len() {
            1 => update_nt::<I, 1>(dim, g, cp, tp),
            2 => update_nt::<I, 2>(dim, g, cp, tp),
            3 => update_nt::<I, 3>(dim, g, cp, tp),
            4 => update_nt::<I, 4>(dim, g, cp, tp),
            5 => update_nt::<I, 5>(dim, g, cp, tp),
            6 => update_nt::<I, 6>(dim, g, cp, tp),
            7 => update_nt::<I, 7>(dim, g, cp, tp),
            8 => update_nt::<I, 8>(dim, g, cp, tp),
            _ => update_any::<I>(dim, g, cp, tp),
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
