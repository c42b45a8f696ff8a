// Quantization of float32 activations to the 8-bit blocks the integer kernels read.
//
// Both paths compute id = 127 / amax once per block and round x * id to nearest even (the
// vector conversion's default mode; std::nearbyint in the scalar code), with no fused
// operation, so they produce identical blocks.
#include <immintrin.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "cpu/quants/qgemm.h"

#define HOSTLM_AVX2 __attribute__((target("avx2,fma,f16c")))

namespace hostlm::cpu::quants {
namespace {

struct Scale {
  float d, id;
};

Scale scale_for(float amax) {
  return amax > 0.f ? Scale{amax / 127.f, 127.f / amax} : Scale{0.f, 0.f};
}

// Quantizes n (<= 256) values with the scale for their absolute maximum; returns the scale.
float quantize_block_scalar(const float* x, int n, int8_t* q) {
  float amax = 0.f;
  for (int i = 0; i < n; ++i) amax = std::fmax(amax, std::fabs(x[i]));
  const Scale s = scale_for(amax);
  for (int i = 0; i < n; ++i) q[i] = static_cast<int8_t>(std::nearbyint(x[i] * s.id));
  return s.d;
}

bool has_avx2() {
  static const bool yes = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                          __builtin_cpu_supports("f16c");
  return yes;
}

HOSTLM_AVX2 inline float hmax(__m256 v) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_shuffle_ps(m, m, 1));
  return _mm_cvtss_f32(m);
}

HOSTLM_AVX2 inline int hsum_epi32(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_unpackhi_epi64(s, s));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 1));
  return _mm_cvtsi128_si32(s);
}

// Absolute maximum of n (a multiple of 32) floats.
HOSTLM_AVX2 inline float amax_avx2(const float* x, int n) {
  const __m256 sign = _mm256_set1_ps(-0.f);
  __m256 m = _mm256_setzero_ps();
  for (int i = 0; i < n; i += 8)
    m = _mm256_max_ps(m, _mm256_andnot_ps(sign, _mm256_loadu_ps(x + i)));
  return hmax(m);
}

// 32 values times id, rounded, as int8 in element order; the int32 values go to i32[4].
HOSTLM_AVX2 inline __m256i round32(const float* x, __m256 id, __m256i i32[4]) {
  for (int k = 0; k < 4; ++k)
    i32[k] = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + 8 * k), id));
  // packs works per 128-bit lane; the permutation restores element order.
  const __m256i p16a = _mm256_packs_epi32(i32[0], i32[1]);
  const __m256i p16b = _mm256_packs_epi32(i32[2], i32[3]);
  const __m256i p8 = _mm256_packs_epi16(p16a, p16b);
  return _mm256_permutevar8x32_epi32(p8, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

HOSTLM_AVX2 void quantize_q8_0_avx2(const float* x, ActQ8_0* out, int64_t n) {
  for (int64_t b = 0; b < n / 32; ++b, x += 32) {
    const Scale s = scale_for(amax_avx2(x, 32));
    __m256i i32[4];
    const __m256i q = round32(x, _mm256_set1_ps(s.id), i32);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out[b].qs), q);
    out[b].d = s.d;
    out[b].sum = hsum_epi32(
        _mm256_add_epi32(_mm256_add_epi32(i32[0], i32[1]), _mm256_add_epi32(i32[2], i32[3])));
  }
}

HOSTLM_AVX2 void quantize_q8_k_avx2(const float* x, ActQ8_K* out, int64_t n) {
  for (int64_t b = 0; b < n / 256; ++b, x += 256) {
    const Scale s = scale_for(amax_avx2(x, 256));
    const __m256 id = _mm256_set1_ps(s.id);
    ActQ8_K& o = out[b];
    for (int c = 0; c < 8; ++c) {
      __m256i i32[4];
      const __m256i q = round32(x + 32 * c, id, i32);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(o.qs + 32 * c), q);
      o.bsums[2 * c] = static_cast<int16_t>(hsum_epi32(_mm256_add_epi32(i32[0], i32[1])));
      o.bsums[2 * c + 1] = static_cast<int16_t>(hsum_epi32(_mm256_add_epi32(i32[2], i32[3])));
    }
    o.d = s.d;
  }
}

}  // namespace

void quantize_act_q8_0_scalar(const float* x, ActQ8_0* out, int64_t n) {
  for (int64_t b = 0; b < n / 32; ++b, x += 32) {
    out[b].d = quantize_block_scalar(x, 32, out[b].qs);
    int sum = 0;
    for (int i = 0; i < 32; ++i) sum += out[b].qs[i];
    out[b].sum = sum;
  }
}

void quantize_act_q8_k_scalar(const float* x, ActQ8_K* out, int64_t n) {
  for (int64_t b = 0; b < n / 256; ++b, x += 256) {
    out[b].d = quantize_block_scalar(x, 256, out[b].qs);
    for (int k = 0; k < 16; ++k) {
      int sum = 0;
      for (int i = 0; i < 16; ++i) sum += out[b].qs[16 * k + i];
      out[b].bsums[k] = static_cast<int16_t>(sum);
    }
  }
}

void quantize_act_q8_0(const float* x, ActQ8_0* out, int64_t n) {
  if (has_avx2()) {
    quantize_q8_0_avx2(x, out, n);
  } else {
    quantize_act_q8_0_scalar(x, out, n);
  }
}

void quantize_act_q8_k(const float* x, ActQ8_K* out, int64_t n) {
  if (has_avx2()) {
    quantize_q8_k_avx2(x, out, n);
  } else {
    quantize_act_q8_k_scalar(x, out, n);
  }
}

size_t act_row_bytes(ActKind kind, int64_t n) {
  return kind == ActKind::Q8_0 ? static_cast<size_t>(n / 32) * sizeof(ActQ8_0)
                               : static_cast<size_t>(n / 256) * sizeof(ActQ8_K);
}

size_t packed_group_bytes(ActKind kind, int64_t n) {
  return kind == ActKind::Q8_0 ? static_cast<size_t>(n / 32) * sizeof(PackedQ8_0)
                               : static_cast<size_t>(n / 256) * sizeof(PackedQ8_K);
}

// Each token is quantized into a row of plain blocks (a per-thread buffer that grows once),
// then its bytes are spread into the group's interleaved layout.
void pack_acts(ActKind kind, const float* x, int64_t n, int64_t n_tok, int64_t t0, int64_t t1,
               void* packed) {
  thread_local std::vector<uint8_t> row;
  const size_t row_bytes = act_row_bytes(kind, n);
  if (row.size() < row_bytes) row.resize(row_bytes);
  auto* base = static_cast<uint8_t*>(packed);
  const size_t group_bytes = packed_group_bytes(kind, n);
  for (int64_t g0 = t0; g0 < t1; g0 += kPackTokens) {
    uint8_t* group = base + static_cast<size_t>(g0 / kPackTokens) * group_bytes;
    for (int t = 0; t < kPackTokens; ++t) {
      const int64_t tok = g0 + t;
      const bool real = tok < n_tok;
      if (real) quantize_act_row(kind, x + tok * n, row.data(), n);
      if (kind == ActKind::Q8_0) {
        const auto* a = reinterpret_cast<const ActQ8_0*>(row.data());
        auto* p = reinterpret_cast<PackedQ8_0*>(group);
        for (int64_t b = 0; b < n / 32; ++b) {
          for (int i = 0; i < 8; ++i)
            for (int j = 0; j < 4; ++j) p[b].q[i][t][j] = real ? a[b].qs[4 * i + j] : int8_t{0};
          p[b].d[t] = real ? a[b].d : 0.f;
          p[b].sum[t] = real ? a[b].sum : 0;
          p[b].dsum[t] = real ? a[b].d * static_cast<float>(a[b].sum) : 0.f;
        }
      } else {
        const auto* a = reinterpret_cast<const ActQ8_K*>(row.data());
        auto* p = reinterpret_cast<PackedQ8_K*>(group);
        for (int64_t b = 0; b < n / 256; ++b) {
          if (real) {
            for (int i = 0; i < 64; ++i) std::memcpy(p[b].q[i][t], a[b].qs + 4 * i, 4);
          } else {
            for (int i = 0; i < 64; ++i) std::memset(p[b].q[i][t], 0, 4);
          }
          p[b].d[t] = real ? a[b].d : 0.f;
          for (int k = 0; k < 16; ++k)
            p[b].bsum[k][t] = real ? static_cast<float>(a[b].bsums[k]) : 0.f;
        }
      }
    }
  }
}

void quantize_act_row(ActKind kind, const float* x, void* out, int64_t n) {
  if (kind == ActKind::Q8_0) {
    quantize_act_q8_0(x, static_cast<ActQ8_0*>(out), n);
  } else {
    quantize_act_q8_k(x, static_cast<ActQ8_K*>(out), n);
  }
}

}  // namespace hostlm::cpu::quants
