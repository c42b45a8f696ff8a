#include "cpu/dot.h"

#include <immintrin.h>

#include <cstring>

#include "cpu/quants/quants.h"
#include "hostlm/half.h"

namespace hostlm::cpu {
using hostlm::bf16_to_f32;
using hostlm::f16_to_f32;
namespace {

float dot_f32_scalar(const void* w, const float* x, int64_t n) {
  const float* a = static_cast<const float*>(w);
  float s = 0.f;
  for (int64_t i = 0; i < n; ++i) s += a[i] * x[i];
  return s;
}
float dot_f16_scalar(const void* w, const float* x, int64_t n) {
  const uint16_t* a = static_cast<const uint16_t*>(w);
  float s = 0.f;
  for (int64_t i = 0; i < n; ++i) s += f16_to_f32(a[i]) * x[i];
  return s;
}
float dot_bf16_scalar(const void* w, const float* x, int64_t n) {
  const uint16_t* a = static_cast<const uint16_t*>(w);
  float s = 0.f;
  for (int64_t i = 0; i < n; ++i) s += bf16_to_f32(a[i]) * x[i];
  return s;
}

void row_f32(const void* w, float* out, int64_t n) { std::memcpy(out, w, sizeof(float) * n); }
void row_f16(const void* w, float* out, int64_t n) {
  const uint16_t* a = static_cast<const uint16_t*>(w);
  for (int64_t i = 0; i < n; ++i) out[i] = f16_to_f32(a[i]);
}
void row_bf16(const void* w, float* out, int64_t n) {
  const uint16_t* a = static_cast<const uint16_t*>(w);
  for (int64_t i = 0; i < n; ++i) out[i] = bf16_to_f32(a[i]);
}

#define HOSTLM_AVX2 __attribute__((target("avx2,fma,f16c")))

HOSTLM_AVX2 inline float hsum(__m256 v) {
  __m128 lo = _mm256_castps256_ps128(v);
  __m128 hi = _mm256_extractf128_ps(v, 1);
  lo = _mm_add_ps(lo, hi);
  lo = _mm_add_ps(lo, _mm_movehl_ps(lo, lo));
  lo = _mm_add_ss(lo, _mm_shuffle_ps(lo, lo, 1));
  return _mm_cvtss_f32(lo);
}

// Four independent accumulators hide the FMA latency.
template <typename Load>
HOSTLM_AVX2 inline float dot_avx2(const float* x, int64_t n, Load load, float tail_sum) {
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  __m256 acc2 = _mm256_setzero_ps(), acc3 = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    acc0 = _mm256_fmadd_ps(load(i), _mm256_loadu_ps(x + i), acc0);
    acc1 = _mm256_fmadd_ps(load(i + 8), _mm256_loadu_ps(x + i + 8), acc1);
    acc2 = _mm256_fmadd_ps(load(i + 16), _mm256_loadu_ps(x + i + 16), acc2);
    acc3 = _mm256_fmadd_ps(load(i + 24), _mm256_loadu_ps(x + i + 24), acc3);
  }
  for (; i + 8 <= n; i += 8) acc0 = _mm256_fmadd_ps(load(i), _mm256_loadu_ps(x + i), acc0);
  (void)tail_sum;
  return hsum(_mm256_add_ps(_mm256_add_ps(acc0, acc1), _mm256_add_ps(acc2, acc3)));
}

HOSTLM_AVX2 float dot_f32_avx2(const void* w, const float* x, int64_t n) {
  const float* a = static_cast<const float*>(w);
  float s = dot_avx2(
      x, n, [a](int64_t i) HOSTLM_AVX2 { return _mm256_loadu_ps(a + i); }, 0.f);
  for (int64_t i = n & ~int64_t{7}; i < n; ++i) s += a[i] * x[i];
  return s;
}

HOSTLM_AVX2 float dot_f16_avx2(const void* w, const float* x, int64_t n) {
  const uint16_t* a = static_cast<const uint16_t*>(w);
  float s = dot_avx2(
      x, n,
      [a](int64_t i) HOSTLM_AVX2 {
        return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a + i)));
      },
      0.f);
  for (int64_t i = n & ~int64_t{7}; i < n; ++i) s += f16_to_f32(a[i]) * x[i];
  return s;
}

HOSTLM_AVX2 float dot_bf16_avx2(const void* w, const float* x, int64_t n) {
  const uint16_t* a = static_cast<const uint16_t*>(w);
  float s = dot_avx2(
      x, n,
      [a](int64_t i) HOSTLM_AVX2 {
        const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(a + i));
        return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
      },
      0.f);
  for (int64_t i = n & ~int64_t{7}; i < n; ++i) s += bf16_to_f32(a[i]) * x[i];
  return s;
}

bool has_avx2() {
  static const bool yes = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                          __builtin_cpu_supports("f16c");
  return yes;
}

}  // namespace

DotFn dot_kernel(DType type) {
  const bool avx2 = has_avx2();
  switch (type) {
    case DType::F32:
      return avx2 ? dot_f32_avx2 : dot_f32_scalar;
    case DType::F16:
      return avx2 ? dot_f16_avx2 : dot_f16_scalar;
    case DType::BF16:
      return avx2 ? dot_bf16_avx2 : dot_bf16_scalar;
    default:
      if (DotFn f = avx2 ? quants::dot_avx2(type) : nullptr) return f;
      return quants::dot_scalar(type);
  }
}

RowToF32Fn row_to_f32_kernel(DType type) {
  switch (type) {
    case DType::F32:
      return row_f32;
    case DType::F16:
      return row_f16;
    case DType::BF16:
      return row_bf16;
    default:
      if (RowToF32Fn f = has_avx2() ? quants::row_to_f32_avx2(type) : nullptr) return f;
      return quants::row_to_f32_scalar(type);
  }
}

}  // namespace hostlm::cpu
