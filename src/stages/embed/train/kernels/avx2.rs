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
