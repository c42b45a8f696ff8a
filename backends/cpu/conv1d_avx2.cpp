// The conv1d + SiLU output kernel on AVX2 + FMA (see conv1d_simd.h).
#include <immintrin.h>

#include "cpu/conv1d.h"

#pragma GCC push_options
#pragma GCC target("avx2,fma")

namespace hostlm::cpu {
namespace {

struct V {
  using Vec = __m256;
  static constexpr int kLanes = 8;
  static Vec zero() { return _mm256_setzero_ps(); }
  static Vec set1(float f) { return _mm256_set1_ps(f); }
  static Vec load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, Vec v) { _mm256_storeu_ps(p, v); }
  static Vec add(Vec a, Vec b) { return _mm256_add_ps(a, b); }
  static Vec sub(Vec a, Vec b) { return _mm256_sub_ps(a, b); }
  static Vec mul(Vec a, Vec b) { return _mm256_mul_ps(a, b); }
  static Vec div(Vec a, Vec b) { return _mm256_div_ps(a, b); }
  static Vec min(Vec a, Vec b) { return _mm256_min_ps(a, b); }
  static Vec max(Vec a, Vec b) { return _mm256_max_ps(a, b); }
  static Vec fmadd(Vec a, Vec b, Vec c) { return _mm256_fmadd_ps(a, b, c); }
  static Vec fnmadd(Vec a, Vec b, Vec c) { return _mm256_fnmadd_ps(a, b, c); }
  static Vec gather(const float* p, int64_t stride) {
    const __m256i idx = _mm256_mullo_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7),
                                           _mm256_set1_epi32(static_cast<int>(stride)));
    return _mm256_mask_i32gather_ps(zero(), p, idx, _mm256_castsi256_ps(_mm256_set1_epi32(-1)), 4);
  }
  // Lane i of out[r] = p[4i + r]: channels i and i+4 share a register (one per 128-bit
  // half), then a 4x4 transpose within each half.
  static void transpose4(const float* p, Vec out[4]) {
    Vec v[4];
    for (int i = 0; i < 4; ++i) v[i] = _mm256_loadu2_m128(p + 4 * (i + 4), p + 4 * i);
    const Vec t0 = _mm256_unpacklo_ps(v[0], v[1]), t1 = _mm256_unpackhi_ps(v[0], v[1]);
    const Vec t2 = _mm256_unpacklo_ps(v[2], v[3]), t3 = _mm256_unpackhi_ps(v[2], v[3]);
    out[0] = _mm256_castpd_ps(_mm256_unpacklo_pd(_mm256_castps_pd(t0), _mm256_castps_pd(t2)));
    out[1] = _mm256_castpd_ps(_mm256_unpackhi_pd(_mm256_castps_pd(t0), _mm256_castps_pd(t2)));
    out[2] = _mm256_castpd_ps(_mm256_unpacklo_pd(_mm256_castps_pd(t1), _mm256_castps_pd(t3)));
    out[3] = _mm256_castpd_ps(_mm256_unpackhi_pd(_mm256_castps_pd(t1), _mm256_castps_pd(t3)));
  }
  static Vec round(Vec v) {
    return _mm256_round_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  }
  // 2^n in two factors 2^(n>>1) and 2^(n-(n>>1)), each a normal float for n in [-150, 128];
  // the first product is exact, so only the second rounds.
  static Vec pow2n(Vec p, Vec n) {
    const __m256i ni = _mm256_cvtps_epi32(n);
    const __m256i lo = _mm256_srai_epi32(ni, 1), hi = _mm256_sub_epi32(ni, lo);
    const __m256i bias = _mm256_set1_epi32(127);
    const Vec f_lo = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(lo, bias), 23));
    const Vec f_hi = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(hi, bias), 23));
    return _mm256_mul_ps(_mm256_mul_ps(p, f_lo), f_hi);
  }
};

#include "cpu/conv1d_simd.h"

}  // namespace

void conv1d_outputs_avx2(const Conv1dArgs& a, int64_t c0, int64_t c1, float* wt) {
  outputs(a, c0, c1, wt);
}

}  // namespace hostlm::cpu

#pragma GCC pop_options
