// The gated delta rule's row kernel on AVX-512F (see delta_rule_simd.h).
#include <immintrin.h>

#include "cpu/delta_rule.h"

#pragma GCC push_options
#pragma GCC target("avx2,fma,avx512f")

namespace hostlm::cpu {
namespace {

// The upper or lower 256 bits. (The masked extract with a zero source: GCC 12 reports the
// unmasked forms' undefined source as maybe-uninitialized.)
template <int kHalf>
inline __m256 half(__m512 a) {
  return _mm256_castpd_ps(
      _mm512_mask_extractf64x4_pd(_mm256_setzero_pd(), 0xFF, _mm512_castps_pd(a), kHalf));
}

// Lane r = sum of the 16 lanes of a[r]: fold each vector to 256 bits, then as for AVX2.
__attribute__((always_inline)) inline __m256 reduce8_zmm(const __m512 a[8]) {
  __m256 h[8];
#pragma GCC unroll 8
  for (int r = 0; r < 8; ++r) h[r] = _mm256_add_ps(half<0>(a[r]), half<1>(a[r]));
  const __m256 h0 = _mm256_hadd_ps(_mm256_hadd_ps(h[0], h[1]), _mm256_hadd_ps(h[2], h[3]));
  const __m256 h1 = _mm256_hadd_ps(_mm256_hadd_ps(h[4], h[5]), _mm256_hadd_ps(h[6], h[7]));
  return _mm256_add_ps(_mm256_permute2f128_ps(h0, h1, 0x20), _mm256_permute2f128_ps(h0, h1, 0x31));
}

struct V {
  using Vec = __m512;
  static constexpr int kRows = 16;  // state rows per step: what the registers hold
  static constexpr int kLanes = 16;
  static Vec zero() { return _mm512_setzero_ps(); }
  static Vec set1(float f) { return _mm512_set1_ps(f); }
  static Vec load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, Vec v) { _mm512_storeu_ps(p, v); }
  static Vec mul(Vec a, Vec b) { return _mm512_mul_ps(a, b); }
  static Vec fmadd(Vec a, Vec b, Vec c) { return _mm512_fmadd_ps(a, b, c); }
  static __m256 reduce8(const Vec a[8]) { return reduce8_zmm(a); }
};

#include "cpu/delta_rule_simd.h"

}  // namespace

void delta_rows_avx512(const DeltaChunk& c, float* S) { rows_all(c, S); }

}  // namespace hostlm::cpu

#pragma GCC pop_options
