// The gated delta rule's row kernel on AVX2 + FMA (see delta_rule_simd.h).
#include <immintrin.h>

#include "cpu/delta_rule.h"

#pragma GCC push_options
#pragma GCC target("avx2,fma")

namespace hostlm::cpu {
namespace {

// Lane r = sum of the 8 lanes of a[r]: two rounds of pairwise adds within 128-bit halves,
// then the two halves of each sum.
__attribute__((always_inline)) inline __m256 reduce8_ymm(const __m256 a[8]) {
  const __m256 h0 = _mm256_hadd_ps(_mm256_hadd_ps(a[0], a[1]), _mm256_hadd_ps(a[2], a[3]));
  const __m256 h1 = _mm256_hadd_ps(_mm256_hadd_ps(a[4], a[5]), _mm256_hadd_ps(a[6], a[7]));
  return _mm256_add_ps(_mm256_permute2f128_ps(h0, h1, 0x20), _mm256_permute2f128_ps(h0, h1, 0x31));
}

struct V {
  using Vec = __m256;
  static constexpr int kRows = 8;  // state rows per step: what the registers hold
  static constexpr int kLanes = 8;
  static Vec zero() { return _mm256_setzero_ps(); }
  static Vec set1(float f) { return _mm256_set1_ps(f); }
  static Vec load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, Vec v) { _mm256_storeu_ps(p, v); }
  static Vec mul(Vec a, Vec b) { return _mm256_mul_ps(a, b); }
  static Vec fmadd(Vec a, Vec b, Vec c) { return _mm256_fmadd_ps(a, b, c); }
  static __m256 reduce8(const Vec a[8]) { return reduce8_ymm(a); }
};

#include "cpu/delta_rule_simd.h"

}  // namespace

void delta_rows_avx2(const DeltaChunk& c, float* S) { rows_all(c, S); }

float sum_squares_avx2(const float* x, int64_t n) {
  __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256 x0 = _mm256_loadu_ps(x + i), x1 = _mm256_loadu_ps(x + i + 8);
    a0 = _mm256_fmadd_ps(x0, x0, a0);
    a1 = _mm256_fmadd_ps(x1, x1, a1);
  }
  for (; i + 8 <= n; i += 8) {
    const __m256 x0 = _mm256_loadu_ps(x + i);
    a0 = _mm256_fmadd_ps(x0, x0, a0);
  }
  a0 = _mm256_add_ps(a0, a1);
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(a0), _mm256_extractf128_ps(a0, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
  return _mm_cvtss_f32(s);
}

}  // namespace hostlm::cpu

#pragma GCC pop_options
