// The conv1d + SiLU output kernel on AVX-512F (see conv1d_simd.h).
#include <immintrin.h>

#include "cpu/conv1d.h"

#pragma GCC push_options
#pragma GCC target("avx2,fma,avx512f")

namespace hostlm::cpu {
namespace {

// The zero-masked forms with a full mask: GCC 12 reports the unmasked forms' undefined
// source as maybe-uninitialized.
constexpr __mmask16 kAll = 0xFFFF;

struct V {
  using Vec = __m512;
  static constexpr int kLanes = 16;
  static Vec zero() { return _mm512_setzero_ps(); }
  static Vec set1(float f) { return _mm512_set1_ps(f); }
  static Vec load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, Vec v) { _mm512_storeu_ps(p, v); }
  static Vec add(Vec a, Vec b) { return _mm512_add_ps(a, b); }
  static Vec sub(Vec a, Vec b) { return _mm512_sub_ps(a, b); }
  static Vec mul(Vec a, Vec b) { return _mm512_mul_ps(a, b); }
  static Vec div(Vec a, Vec b) { return _mm512_div_ps(a, b); }
  static Vec min(Vec a, Vec b) { return _mm512_maskz_min_ps(kAll, a, b); }
  static Vec max(Vec a, Vec b) { return _mm512_maskz_max_ps(kAll, a, b); }
  static Vec fmadd(Vec a, Vec b, Vec c) { return _mm512_fmadd_ps(a, b, c); }
  static Vec fnmadd(Vec a, Vec b, Vec c) { return _mm512_fnmadd_ps(a, b, c); }
  static Vec gather(const float* p, int64_t stride) {
    const __m512i idx =
        _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                           _mm512_set1_epi32(static_cast<int>(stride)));
    return _mm512_mask_i32gather_ps(zero(), kAll, idx, p, 4);
  }
  // Lane i of out[r] = p[4i + r]: each half of the channels from two registers, then the
  // halves joined.
  static void transpose4(const float* p, Vec out[4]) {
    const Vec v0 = load(p), v1 = load(p + 16), v2 = load(p + 32), v3 = load(p + 48);
    for (int r = 0; r < 4; ++r) {
      const __m512i idx = _mm512_add_epi32(
          _mm512_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28, 0, 4, 8, 12, 16, 20, 24, 28),
          _mm512_set1_epi32(r));
      const Vec lo = _mm512_permutex2var_ps(v0, idx, v1), hi = _mm512_permutex2var_ps(v2, idx, v3);
      out[r] = _mm512_maskz_shuffle_f32x4(kAll, lo, hi, 0x44);
    }
  }
  static Vec round(Vec v) { return _mm512_maskz_roundscale_ps(kAll, v, _MM_FROUND_TO_NEAREST_INT); }
  // One rounding, with overflow to inf and gradual underflow built in.
  static Vec pow2n(Vec p, Vec n) { return _mm512_maskz_scalef_ps(kAll, p, n); }
};

#include "cpu/conv1d_simd.h"

}  // namespace

void conv1d_outputs_avx512(const Conv1dArgs& a, int64_t c0, int64_t c1, float* wt) {
  outputs(a, c0, c1, wt);
}

}  // namespace hostlm::cpu

#pragma GCC pop_options
