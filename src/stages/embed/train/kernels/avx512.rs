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
