// AVX2 dot products of quantized weight rows with float32 activations.
//
// Each block is decoded to small integers in the byte domain, 16 at a time, held twice in a
// 256-bit register (both 128-bit lanes equal, so a broadcast load feeds them for free). One
// in-lane byte shuffle then spreads 8 of them into the top byte of eight 32-bit lanes in
// element order, which matches a plain load of x and sign-extends for free: the lane holds
// q * 2^24 exactly, converted to float without rounding. The 2^-24 is folded into the
// per-block scale. This keeps the cross-lane shuffle port free, which is what limits the
// usual vpmovsxbd-based widening.
//
// The row_* functions dequantize with the same decoding and stay bit-identical to the scalar
// reference (see blocks.h): scaling by 2^24 and 2^-24 is exact, as all values stay normal.

#include <immintrin.h>

#include "cpu/quants/blocks.h"
#include "cpu/quants/quants.h"

#define HOSTLM_AVX2 __attribute__((target("avx2,fma,f16c")))

namespace hostlm::cpu::quants {
namespace {

constexpr float kTop = 1.0f / 16777216.0f;  // undoes the placement in the top byte

HOSTLM_AVX2 inline float hsum(__m256 v) {
  __m128 lo = _mm256_castps256_ps128(v);
  lo = _mm_add_ps(lo, _mm256_extractf128_ps(v, 1));
  lo = _mm_add_ps(lo, _mm_movehl_ps(lo, lo));
  lo = _mm_add_ss(lo, _mm_shuffle_ps(lo, lo, 1));
  return _mm_cvtss_f32(lo);
}

// While the core is busy decoding, the hardware prefetchers alone leave the weight stream
// short of bandwidth: asking for the data 1 KiB ahead measured 1.1-1.5x faster matvecs of
// 4096x2048 matrices streamed from DRAM (most for Q8_0 and Q6_K, and with one thread), and
// made no measurable difference on rows already in L2.
constexpr int kPrefetchAhead = 1024;

// Called once per step of kBytes: one prefetch per 64 bytes from the step's start reaches
// every cache line of the stream, as no gap between prefetched addresses exceeds 64 bytes.
template <int kBytes>
HOSTLM_AVX2 inline void prefetch_block(const uint8_t* b) {
  const char* p = reinterpret_cast<const char*>(b) + kPrefetchAhead;
  for (int off = 0; off < kBytes; off += 64) _mm_prefetch(p + off, _MM_HINT_T0);
}

HOSTLM_AVX2 inline float f16(const uint8_t* p) { return _cvtsh_ss(load_u16(p)); }

HOSTLM_AVX2 inline __m256i bcast16(const uint8_t* p) {
  return _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

HOSTLM_AVX2 inline __m256i low_nibbles(__m256i v) {
  return _mm256_and_si256(v, _mm256_set1_epi8(15));
}
HOSTLM_AVX2 inline __m256i high_nibbles(__m256i v) {
  return _mm256_and_si256(_mm256_srli_epi16(v, 4), _mm256_set1_epi8(15));
}

// Elements 0-7 and 8-15 of a doubled 16-byte vector, each as int8 * 2^24 in float lanes.
HOSTLM_AVX2 inline __m256 spread_lo(__m256i v) {
  const __m256i idx = _mm256_setr_epi8(-1, -1, -1, 0, -1, -1, -1, 1, -1, -1, -1, 2, -1, -1, -1, 3,
                                       -1, -1, -1, 4, -1, -1, -1, 5, -1, -1, -1, 6, -1, -1, -1, 7);
  return _mm256_cvtepi32_ps(_mm256_shuffle_epi8(v, idx));
}
HOSTLM_AVX2 inline __m256 spread_hi(__m256i v) {
  const __m256i idx =
      _mm256_setr_epi8(-1, -1, -1, 8, -1, -1, -1, 9, -1, -1, -1, 10, -1, -1, -1, 11, -1, -1, -1, 12,
                       -1, -1, -1, 13, -1, -1, -1, 14, -1, -1, -1, 15);
  return _mm256_cvtepi32_ps(_mm256_shuffle_epi8(v, idx));
}

// 2^24 * (v . x[0..15]) spread over 8 lanes.
HOSTLM_AVX2 inline __m256 dot16(__m256i v, const float* x) {
  return _mm256_fmadd_ps(spread_hi(v), _mm256_loadu_ps(x + 8),
                         _mm256_mul_ps(spread_lo(v), _mm256_loadu_ps(x)));
}
// The same for 32 elements given as two doubled 16-byte vectors.
HOSTLM_AVX2 inline __m256 dot32(__m256i v0, __m256i v1, const float* x) {
  __m256 s = _mm256_mul_ps(spread_lo(v0), _mm256_loadu_ps(x));
  s = _mm256_fmadd_ps(spread_hi(v0), _mm256_loadu_ps(x + 8), s);
  s = _mm256_fmadd_ps(spread_lo(v1), _mm256_loadu_ps(x + 16), s);
  return _mm256_fmadd_ps(spread_hi(v1), _mm256_loadu_ps(x + 24), s);
}

HOSTLM_AVX2 inline __m256 sum32(const float* x) {
  return _mm256_add_ps(_mm256_add_ps(_mm256_loadu_ps(x), _mm256_loadu_ps(x + 8)),
                       _mm256_add_ps(_mm256_loadu_ps(x + 16), _mm256_loadu_ps(x + 24)));
}

// Byte j of the 16 (doubled) gets 0xFF where bit j of the 16-bit `bits` is set.
HOSTLM_AVX2 inline __m256i bit_mask16(uint32_t bits) {
  const __m256i spread = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0,
                                          0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1);
  const __m256i sel = _mm256_set1_epi64x(static_cast<int64_t>(0x8040201008040201ull));
  const __m256i b = _mm256_shuffle_epi8(_mm256_set1_epi32(static_cast<int>(bits)), spread);
  return _mm256_cmpeq_epi8(_mm256_and_si256(b, sel), sel);
}

HOSTLM_AVX2 inline __m256i table16(const int8_t* t) {
  return bcast16(reinterpret_cast<const uint8_t*>(t));
}

constexpr int8_t kQ4_0Values[16] = {-8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7};

// Stores y[0..15] = scale * q for the 16 doubled int8 q of v (scale carries the 2^-24).
HOSTLM_AVX2 inline void store16(__m256i v, __m256 scale, float* y) {
  _mm256_storeu_ps(y, _mm256_mul_ps(scale, spread_lo(v)));
  _mm256_storeu_ps(y + 8, _mm256_mul_ps(scale, spread_hi(v)));
}
// y = scale*q + m, rounded twice like the reference (no fused multiply-add).
HOSTLM_AVX2 inline void store16_plus(__m256i v, __m256 scale, __m256 m, float* y) {
  _mm256_storeu_ps(y, _mm256_add_ps(_mm256_mul_ps(scale, spread_lo(v)), m));
  _mm256_storeu_ps(y + 8, _mm256_add_ps(_mm256_mul_ps(scale, spread_hi(v)), m));
}
// y = scale*q - m.
HOSTLM_AVX2 inline void store16_minus(__m256i v, __m256 scale, __m256 m, float* y) {
  _mm256_storeu_ps(y, _mm256_sub_ps(_mm256_mul_ps(scale, spread_lo(v)), m));
  _mm256_storeu_ps(y + 8, _mm256_sub_ps(_mm256_mul_ps(scale, spread_hi(v)), m));
}

// ---- Q4_0, IQ4_NL: a 16-entry table maps each nibble to its value.

HOSTLM_AVX2 float dot_nibble_table(const uint8_t* b, const float* x, int64_t n, __m256i table) {
  __m256 acc = _mm256_setzero_ps();
  for (int64_t i = 0; i < n; i += 32, b += 18) {
    prefetch_block<18>(b);
    const __m256i v = bcast16(b + 2);
    const __m256i lo = _mm256_shuffle_epi8(table, low_nibbles(v));
    const __m256i hi = _mm256_shuffle_epi8(table, high_nibbles(v));
    acc = _mm256_fmadd_ps(_mm256_set1_ps(f16(b) * kTop), dot32(lo, hi, x + i), acc);
  }
  return hsum(acc);
}

HOSTLM_AVX2 void row_nibble_table(const uint8_t* b, float* y, int64_t n, __m256i table) {
  for (int64_t i = 0; i < n; i += 32, b += 18) {
    const __m256i v = bcast16(b + 2);
    const __m256 d = _mm256_set1_ps(f16(b) * kTop);
    store16(_mm256_shuffle_epi8(table, low_nibbles(v)), d, y + i);
    store16(_mm256_shuffle_epi8(table, high_nibbles(v)), d, y + i + 16);
  }
}

HOSTLM_AVX2 float dot_q4_0(const void* w, const float* x, int64_t n) {
  return dot_nibble_table(static_cast<const uint8_t*>(w), x, n, table16(kQ4_0Values));
}
HOSTLM_AVX2 float dot_iq4_nl(const void* w, const float* x, int64_t n) {
  return dot_nibble_table(static_cast<const uint8_t*>(w), x, n, table16(kIq4Values));
}
HOSTLM_AVX2 void row_q4_0(const void* w, float* y, int64_t n) {
  row_nibble_table(static_cast<const uint8_t*>(w), y, n, table16(kQ4_0Values));
}
HOSTLM_AVX2 void row_iq4_nl(const void* w, float* y, int64_t n) {
  row_nibble_table(static_cast<const uint8_t*>(w), y, n, table16(kIq4Values));
}

// ---- Q4_1: sum (d*q + m) x = d * (q . x) + m * sum(x).

HOSTLM_AVX2 float dot_q4_1(const void* w, const float* x, int64_t n) {
  const auto* b = static_cast<const uint8_t*>(w);
  __m256 acc = _mm256_setzero_ps(), accm = _mm256_setzero_ps();
  for (int64_t i = 0; i < n; i += 32, b += q4_1::kBytes) {
    prefetch_block<q4_1::kBytes>(b);
    const __m256i v = bcast16(b + q4_1::kQs);
    const __m256 s = dot32(low_nibbles(v), high_nibbles(v), x + i);
    acc = _mm256_fmadd_ps(_mm256_set1_ps(f16(b + q4_1::kD) * kTop), s, acc);
    accm = _mm256_fmadd_ps(_mm256_set1_ps(f16(b + q4_1::kM)), sum32(x + i), accm);
  }
  return hsum(_mm256_add_ps(acc, accm));
}

HOSTLM_AVX2 void row_q4_1(const void* w, float* y, int64_t n) {
  const auto* b = static_cast<const uint8_t*>(w);
  for (int64_t i = 0; i < n; i += 32, b += q4_1::kBytes) {
    const __m256i v = bcast16(b + q4_1::kQs);
    const __m256 d = _mm256_set1_ps(f16(b + q4_1::kD) * kTop);
    const __m256 m = _mm256_set1_ps(f16(b + q4_1::kM));
    store16_plus(low_nibbles(v), d, m, y + i);
    store16_plus(high_nibbles(v), d, m, y + i + 16);
  }
}

// ---- Q5_0, Q5_1: the fifth bits come from a 32-bit mask, bit j for element j.

// Elements 0-15 (lo) and 16-31 (hi) of a Q5 block; kSigned subtracts 16 (Q5_0).
template <bool kSigned>
HOSTLM_AVX2 inline void q5_values(const uint8_t* qh_p, const uint8_t* qs, __m256i& lo,
                                  __m256i& hi) {
  const __m256i sixteen = _mm256_set1_epi8(16);
  const uint32_t qh = load_u32(qh_p);
  const __m256i v = bcast16(qs);
  const __m256i m_lo = bit_mask16(qh & 0xffff), m_hi = bit_mask16(qh >> 16);
  if constexpr (kSigned) {
    // (nibble | bit << 4) - 16 == nibble - (bit ? 0 : 16)
    lo = _mm256_sub_epi8(low_nibbles(v), _mm256_andnot_si256(m_lo, sixteen));
    hi = _mm256_sub_epi8(high_nibbles(v), _mm256_andnot_si256(m_hi, sixteen));
  } else {
    lo = _mm256_or_si256(low_nibbles(v), _mm256_and_si256(m_lo, sixteen));
    hi = _mm256_or_si256(high_nibbles(v), _mm256_and_si256(m_hi, sixteen));
  }
}

HOSTLM_AVX2 float dot_q5_0(const void* w, const float* x, int64_t n) {
  const auto* b = static_cast<const uint8_t*>(w);
  __m256 acc = _mm256_setzero_ps();
  for (int64_t i = 0; i < n; i += 32, b += q5_0::kBytes) {
    prefetch_block<q5_0::kBytes>(b);
    __m256i lo, hi;
    q5_values<true>(b + q5_0::kQh, b + q5_0::kQs, lo, hi);
    acc = _mm256_fmadd_ps(_mm256_set1_ps(f16(b + q5_0::kD) * kTop), dot32(lo, hi, x + i), acc);
  }
  return hsum(acc);
}

HOSTLM_AVX2 void row_q5_0(const void* w, float* y, int64_t n) {
  const auto* b = static_cast<const uint8_t*>(w);
  for (int64_t i = 0; i < n; i += 32, b += q5_0::kBytes) {
    __m256i lo, hi;
    q5_values<true>(b + q5_0::kQh, b + q5_0::kQs, lo, hi);
    const __m256 d = _mm256_set1_ps(f16(b + q5_0::kD) * kTop);
    store16(lo, d, y + i);
    store16(hi, d, y + i + 16);
  }
}

HOSTLM_AVX2 float dot_q5_1(const void* w, const float* x, int64_t n) {
  const auto* b = static_cast<const uint8_t*>(w);
  __m256 acc = _mm256_setzero_ps(), accm = _mm256_setzero_ps();
  for (int64_t i = 0; i < n; i += 32, b += q5_1::kBytes) {
    prefetch_block<q5_1::kBytes>(b);
    __m256i lo, hi;
    q5_values<false>(b + q5_1::kQh, b + q5_1::kQs, lo, hi);
    acc = _mm256_fmadd_ps(_mm256_set1_ps(f16(b + q5_1::kD) * kTop), dot32(lo, hi, x + i), acc);
    accm = _mm256_fmadd_ps(_mm256_set1_ps(f16(b + q5_1::kM)), sum32(x + i), accm);
  }
  return hsum(_mm256_add_ps(acc, accm));
}

HOSTLM_AVX2 void row_q5_1(const void* w, float* y, int64_t n) {
  const auto* b = static_cast<const uint8_t*>(w);
  for (int64_t i = 0; i < n; i += 32, b += q5_1::kBytes) {
    __m256i lo, hi;
    q5_values<false>(b + q5_1::kQh, b + q5_1::kQs, lo, hi);
    const __m256 d = _mm256_set1_ps(f16(b + q5_1::kD) * kTop);
    const __m256 m = _mm256_set1_ps(f16(b + q5_1::kM));
    store16_plus(lo, d, m, y + i);
    store16_plus(hi, d, m, y + i + 16);
  }
}

// ---- Q8_0

HOSTLM_AVX2 float dot_q8_0(const void* w, const float* x, int64_t n) {
  const auto* b = static_cast<const uint8_t*>(w);
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  int64_t i = 0;
  // Two blocks per step keep two independent accumulation chains in flight.
  for (; i + 64 <= n; i += 64, b += 2 * q8_0::kBytes) {
    const uint8_t* b1 = b + q8_0::kBytes;
    prefetch_block<2 * q8_0::kBytes>(b);
    const __m256 s0 = dot32(bcast16(b + 2), bcast16(b + 18), x + i);
    const __m256 s1 = dot32(bcast16(b1 + 2), bcast16(b1 + 18), x + i + 32);
    acc0 = _mm256_fmadd_ps(_mm256_set1_ps(f16(b) * kTop), s0, acc0);
    acc1 = _mm256_fmadd_ps(_mm256_set1_ps(f16(b1) * kTop), s1, acc1);
  }
  for (; i < n; i += 32, b += q8_0::kBytes) {
    const __m256 s0 = dot32(bcast16(b + 2), bcast16(b + 18), x + i);
    acc0 = _mm256_fmadd_ps(_mm256_set1_ps(f16(b) * kTop), s0, acc0);
  }
  return hsum(_mm256_add_ps(acc0, acc1));
}

HOSTLM_AVX2 void row_q8_0(const void* w, float* y, int64_t n) {
  const auto* b = static_cast<const uint8_t*>(w);
  for (int64_t i = 0; i < n; i += 32, b += q8_0::kBytes) {
    const __m256 d = _mm256_set1_ps(f16(b) * kTop);
    store16(bcast16(b + 2), d, y + i);
    store16(bcast16(b + 18), d, y + i + 16);
  }
}

// ---- K-quants. Per super-block scales are expanded into small float arrays first.

// Stores d * v[k] for the 8 integers in the low 8 bytes of v (unsigned or signed).
HOSTLM_AVX2 inline void scale_u8x8(__m128i v, float d, float* out) {
  _mm256_storeu_ps(out,
                   _mm256_mul_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(v))));
}
HOSTLM_AVX2 inline void scale_i8x8(__m128i v, float d, float* out) {
  _mm256_storeu_ps(out,
                   _mm256_mul_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(v))));
}

// Q2_K: dl[g] = d*(sc&15) (with the 2^-24), ml[g] = dmin*(sc>>4) for the 16 groups of 16.
HOSTLM_AVX2 inline void q2k_scales(const uint8_t* b, float* dl, float* ml) {
  const float d = f16(b + q2_k::kD) * kTop, dmin = f16(b + q2_k::kDmin);
  const __m128i sc = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + q2_k::kScales));
  const __m128i sc_lo = _mm_and_si128(sc, _mm_set1_epi8(15));
  const __m128i sc_hi = _mm_and_si128(_mm_srli_epi16(sc, 4), _mm_set1_epi8(15));
  scale_u8x8(sc_lo, d, dl);
  scale_u8x8(_mm_srli_si128(sc_lo, 8), d, dl + 8);
  scale_u8x8(sc_hi, dmin, ml);
  scale_u8x8(_mm_srli_si128(sc_hi, 8), dmin, ml + 8);
}

// Group g = 8*half + 2*j + k of Q2_K is bits 2j..2j+1 of qs[32*half + 16*k + 0..15]; v holds
// those 16 bytes already shifted right by 2j (bits from the neighbouring byte land in bits
// 6-7 and never reach bits 0-1 within the three shifts).
HOSTLM_AVX2 inline __m256i two_bits(__m256i v) { return _mm256_and_si256(v, _mm256_set1_epi8(3)); }

HOSTLM_AVX2 float dot_q2_k(const void* w, const float* x, int64_t n) {
  const auto* b = static_cast<const uint8_t*>(w);
  __m256 acc = _mm256_setzero_ps(), accm = _mm256_setzero_ps();
  alignas(32) float dl[16], ml[16];
  for (int64_t i = 0; i < n; i += 256, b += q2_k::kBytes) {
    prefetch_block<q2_k::kBytes>(b);
    q2k_scales(b, dl, ml);
    const float* xb = x + i;
    for (int half = 0; half < 2; ++half) {
      __m256i v0 = bcast16(b + q2_k::kQs + 32 * half);
      __m256i v1 = bcast16(b + q2_k::kQs + 32 * half + 16);
      for (int j = 0; j < 4; ++j) {
        const int g = 8 * half + 2 * j;
        const float* xg = xb + 16 * g;
        acc = _mm256_fmadd_ps(_mm256_broadcast_ss(dl + g), dot16(two_bits(v0), xg), acc);
        acc = _mm256_fmadd_ps(_mm256_broadcast_ss(dl + g + 1), dot16(two_bits(v1), xg + 16), acc);
        const __m256 x0 = _mm256_add_ps(_mm256_loadu_ps(xg), _mm256_loadu_ps(xg + 8));
        const __m256 x1 = _mm256_add_ps(_mm256_loadu_ps(xg + 16), _mm256_loadu_ps(xg + 24));
        accm = _mm256_fmadd_ps(_mm256_broadcast_ss(ml + g), x0, accm);
        accm = _mm256_fmadd_ps(_mm256_broadcast_ss(ml + g + 1), x1, accm);
        v0 = _mm256_srli_epi16(v0, 2);
        v1 = _mm256_srli_epi16(v1, 2);
      }
    }
  }
  return hsum(_mm256_sub_ps(acc, accm));
}

HOSTLM_AVX2 void row_q2_k(const void* w, float* y, int64_t n) {
  const auto* b = static_cast<const uint8_t*>(w);
  alignas(32) float dl[16], ml[16];
  for (int64_t i = 0; i < n; i += 256, b += q2_k::kBytes) {
    q2k_scales(b, dl, ml);
    for (int half = 0; half < 2; ++half) {
      __m256i v0 = bcast16(b + q2_k::kQs + 32 * half);
      __m256i v1 = bcast16(b + q2_k::kQs + 32 * half + 16);
      for (int j = 0; j < 4; ++j) {
        const int g = 8 * half + 2 * j;
        store16_minus(two_bits(v0), _mm256_broadcast_ss(dl + g), _mm256_broadcast_ss(ml + g),
                      y + i + 16 * g);
        store16_minus(two_bits(v1), _mm256_broadcast_ss(dl + g + 1),
                      _mm256_broadcast_ss(ml + g + 1), y + i + 16 * g + 16);
        v0 = _mm256_srli_epi16(v0, 2);
        v1 = _mm256_srli_epi16(v1, 2);
      }
    }
  }
}

// Q3_K: dl[s] = d * scale_s (with the 2^-24). Scale s takes its low 4 bits from nibble s of
// bytes 0..7 (low nibbles first) and its top 2 bits from bits 2*(s/4) of byte 8 + s%4.
HOSTLM_AVX2 inline void q3k_scales(const uint8_t* b, float* dl) {
  const float d = f16(b + q3_k::kD) * kTop;
  const uint8_t* sb = b + q3_k::kScales;
  const __m128i l8 = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(sb));
  const __m128i lo4 = _mm_unpacklo_epi64(_mm_and_si128(l8, _mm_set1_epi8(15)),
                                         _mm_and_si128(_mm_srli_epi16(l8, 4), _mm_set1_epi8(15)));
  const uint32_t h = load_u32(sb + 8);
  const __m128i hi2 =
      _mm_and_si128(_mm_set_epi32(static_cast<int>(h >> 6), static_cast<int>(h >> 4),
                                  static_cast<int>(h >> 2), static_cast<int>(h)),
                    _mm_set1_epi8(3));
  const __m128i s = _mm_sub_epi8(_mm_or_si128(lo4, _mm_slli_epi16(hi2, 4)), _mm_set1_epi8(32));
  scale_i8x8(s, d, dl);
  scale_i8x8(_mm_srli_si128(s, 8), d, dl + 8);
}

// The 16 values of a Q3_K group: two bits of v (pre-shifted as for Q2_K), minus 4 where the
// group's hmask bit (`bit`, one set bit per byte) is clear.
HOSTLM_AVX2 inline __m256i q3k_values(__m256i v, __m256i hm, __m256i bit) {
  const __m256i clear = _mm256_cmpeq_epi8(_mm256_and_si256(hm, bit), _mm256_setzero_si256());
  return _mm256_sub_epi8(two_bits(v), _mm256_and_si256(clear, _mm256_set1_epi8(4)));
}

HOSTLM_AVX2 float dot_q3_k(const void* w, const float* x, int64_t n) {
  const auto* b = static_cast<const uint8_t*>(w);
  __m256 acc = _mm256_setzero_ps();
  alignas(32) float dl[16];
  for (int64_t i = 0; i < n; i += 256, b += q3_k::kBytes) {
    prefetch_block<q3_k::kBytes>(b);
    q3k_scales(b, dl);
    const __m256i hm0 = bcast16(b + q3_k::kHmask), hm1 = bcast16(b + q3_k::kHmask + 16);
    __m256i bit = _mm256_set1_epi8(1);
    const float* xb = x + i;
    for (int half = 0; half < 2; ++half) {
      __m256i v0 = bcast16(b + q3_k::kQs + 32 * half);
      __m256i v1 = bcast16(b + q3_k::kQs + 32 * half + 16);
      for (int j = 0; j < 4; ++j) {
        const int g = 8 * half + 2 * j;
        acc = _mm256_fmadd_ps(_mm256_broadcast_ss(dl + g),
                              dot16(q3k_values(v0, hm0, bit), xb + 16 * g), acc);
        acc = _mm256_fmadd_ps(_mm256_broadcast_ss(dl + g + 1),
                              dot16(q3k_values(v1, hm1, bit), xb + 16 * g + 16), acc);
        v0 = _mm256_srli_epi16(v0, 2);
        v1 = _mm256_srli_epi16(v1, 2);
        bit = _mm256_add_epi8(bit, bit);
      }
    }
  }
  return hsum(acc);
}

HOSTLM_AVX2 void row_q3_k(const void* w, float* y, int64_t n) {
  const auto* b = static_cast<const uint8_t*>(w);
  alignas(32) float dl[16];
  for (int64_t i = 0; i < n; i += 256, b += q3_k::kBytes) {
    q3k_scales(b, dl);
    const __m256i hm0 = bcast16(b + q3_k::kHmask), hm1 = bcast16(b + q3_k::kHmask + 16);
    __m256i bit = _mm256_set1_epi8(1);
    for (int half = 0; half < 2; ++half) {
      __m256i v0 = bcast16(b + q3_k::kQs + 32 * half);
      __m256i v1 = bcast16(b + q3_k::kQs + 32 * half + 16);
      for (int j = 0; j < 4; ++j) {
        const int g = 8 * half + 2 * j;
        store16(q3k_values(v0, hm0, bit), _mm256_broadcast_ss(dl + g), y + i + 16 * g);
        store16(q3k_values(v1, hm1, bit), _mm256_broadcast_ss(dl + g + 1), y + i + 16 * g + 16);
        v0 = _mm256_srli_epi16(v0, 2);
        v1 = _mm256_srli_epi16(v1, 2);
        bit = _mm256_add_epi8(bit, bit);
      }
    }
  }
}

// Q4_K/Q5_K: dsc[j] = d*sc (with the 2^-24), dmn[j] = dmin*mn for the 8 sub-blocks.
HOSTLM_AVX2 inline void k4_scales(const uint8_t* b, float* dsc, float* dmn) {
  const float d = f16(b + q4_k::kD) * kTop, dmin = f16(b + q4_k::kDmin);
  const uint8_t* s = b + q4_k::kScales;
  const uint32_t s0 = load_u32(s), s1 = load_u32(s + 4), s2 = load_u32(s + 8);
  const uint32_t sc_lo = s0 & 0x3f3f3f3fu, mn_lo = s1 & 0x3f3f3f3fu;
  const uint32_t sc_hi = (s2 & 0x0f0f0f0fu) | ((s0 >> 2) & 0x30303030u);
  const uint32_t mn_hi = ((s2 >> 4) & 0x0f0f0f0fu) | ((s1 >> 2) & 0x30303030u);
  scale_u8x8(_mm_set_epi32(0, 0, static_cast<int>(sc_hi), static_cast<int>(sc_lo)), d, dsc);
  scale_u8x8(_mm_set_epi32(0, 0, static_cast<int>(mn_hi), static_cast<int>(mn_lo)), dmin, dmn);
}

// Chunk c (64 elements) of a Q4_K/Q5_K block: lo0/lo1 are sub-block 2c, hi0/hi1 sub-block
// 2c+1. For Q5_K, h0/h1 hold qh and advance by one chunk: bits 2c and 2c+1 of qh are bits 0
// and 1 of h after c shifts by 2 (bits shifted in from the neighbouring byte never reach bit 1
// within 3 shifts).
template <bool kFifthBit>
struct K4Chunk {
  __m256i lo0, lo1, hi0, hi1;
  HOSTLM_AVX2 K4Chunk(const uint8_t* qs, __m256i& h0, __m256i& h1) {
    const __m256i v0 = bcast16(qs), v1 = bcast16(qs + 16);
    lo0 = low_nibbles(v0);
    lo1 = low_nibbles(v1);
    hi0 = high_nibbles(v0);
    hi1 = high_nibbles(v1);
    if constexpr (kFifthBit) {
      const __m256i sixteen = _mm256_set1_epi8(16);
      lo0 = _mm256_or_si256(lo0, _mm256_and_si256(_mm256_slli_epi16(h0, 4), sixteen));
      lo1 = _mm256_or_si256(lo1, _mm256_and_si256(_mm256_slli_epi16(h1, 4), sixteen));
      hi0 = _mm256_or_si256(hi0, _mm256_and_si256(_mm256_slli_epi16(h0, 3), sixteen));
      hi1 = _mm256_or_si256(hi1, _mm256_and_si256(_mm256_slli_epi16(h1, 3), sixteen));
      h0 = _mm256_srli_epi16(h0, 2);
      h1 = _mm256_srli_epi16(h1, 2);
    }
  }
};

template <bool kFifthBit>
struct K4Layout {
  static constexpr int kBytes = kFifthBit ? q5_k::kBytes : q4_k::kBytes;
  static constexpr int kQs = kFifthBit ? q5_k::kQs : q4_k::kQs;
  HOSTLM_AVX2 static void load_qh(const uint8_t* b, __m256i& h0, __m256i& h1) {
    if constexpr (kFifthBit) {
      h0 = bcast16(b + q5_k::kQh);
      h1 = bcast16(b + q5_k::kQh + 16);
    } else {
      h0 = h1 = _mm256_setzero_si256();
    }
  }
};

// Sum over sub-blocks of d*sc * (q . x) - dmin*mn * sum(x).
template <bool kFifthBit>
HOSTLM_AVX2 inline float dot_k4(const uint8_t* b, const float* x, int64_t n) {
  using L = K4Layout<kFifthBit>;
  __m256 acc = _mm256_setzero_ps(), accm = _mm256_setzero_ps();
  alignas(32) float dsc[8], dmn[8];
  for (int64_t i = 0; i < n; i += 256, b += L::kBytes) {
    prefetch_block<L::kBytes>(b);
    k4_scales(b, dsc, dmn);
    __m256i h0, h1;
    L::load_qh(b, h0, h1);
    for (int c = 0; c < 4; ++c) {
      const K4Chunk<kFifthBit> q(b + L::kQs + 32 * c, h0, h1);
      const float* xc = x + i + 64 * c;
      acc = _mm256_fmadd_ps(_mm256_broadcast_ss(dsc + 2 * c), dot32(q.lo0, q.lo1, xc), acc);
      acc =
          _mm256_fmadd_ps(_mm256_broadcast_ss(dsc + 2 * c + 1), dot32(q.hi0, q.hi1, xc + 32), acc);
      accm = _mm256_fmadd_ps(_mm256_broadcast_ss(dmn + 2 * c), sum32(xc), accm);
      accm = _mm256_fmadd_ps(_mm256_broadcast_ss(dmn + 2 * c + 1), sum32(xc + 32), accm);
    }
  }
  return hsum(_mm256_sub_ps(acc, accm));
}

template <bool kFifthBit>
HOSTLM_AVX2 inline void row_k4(const uint8_t* b, float* y, int64_t n) {
  using L = K4Layout<kFifthBit>;
  alignas(32) float dsc[8], dmn[8];
  for (int64_t i = 0; i < n; i += 256, b += L::kBytes) {
    k4_scales(b, dsc, dmn);
    __m256i h0, h1;
    L::load_qh(b, h0, h1);
    for (int c = 0; c < 4; ++c) {
      const K4Chunk<kFifthBit> q(b + L::kQs + 32 * c, h0, h1);
      float* yc = y + i + 64 * c;
      const __m256 d0 = _mm256_broadcast_ss(dsc + 2 * c), m0 = _mm256_broadcast_ss(dmn + 2 * c);
      const __m256 d1 = _mm256_broadcast_ss(dsc + 2 * c + 1);
      const __m256 m1 = _mm256_broadcast_ss(dmn + 2 * c + 1);
      store16_minus(q.lo0, d0, m0, yc);
      store16_minus(q.lo1, d0, m0, yc + 16);
      store16_minus(q.hi0, d1, m1, yc + 32);
      store16_minus(q.hi1, d1, m1, yc + 48);
    }
  }
}

HOSTLM_AVX2 float dot_q4_k(const void* w, const float* x, int64_t n) {
  return dot_k4<false>(static_cast<const uint8_t*>(w), x, n);
}
HOSTLM_AVX2 float dot_q5_k(const void* w, const float* x, int64_t n) {
  return dot_k4<true>(static_cast<const uint8_t*>(w), x, n);
}
HOSTLM_AVX2 void row_q4_k(const void* w, float* y, int64_t n) {
  row_k4<false>(static_cast<const uint8_t*>(w), y, n);
}
HOSTLM_AVX2 void row_q5_k(const void* w, float* y, int64_t n) {
  row_k4<true>(static_cast<const uint8_t*>(w), y, n);
}

// Q6_K: ds[s] = d * scales[s] (with the 2^-24).
HOSTLM_AVX2 inline void q6k_scales(const uint8_t* b, float* ds) {
  const float d = f16(b + q6_k::kD) * kTop;
  const __m128i sc = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + q6_k::kScales));
  scale_i8x8(sc, d, ds);
  scale_i8x8(_mm_srli_si128(sc, 8), d, ds + 8);
}

// Elements l0..l0+15 plus 0, 32, 64 and 96 of one Q6_K half, each group under one scale.
HOSTLM_AVX2 inline void q6k_values(const uint8_t* ql, const uint8_t* qh, __m256i q[4]) {
  const __m256i m4 = _mm256_set1_epi8(15), m2 = _mm256_set1_epi8(0x30);
  const __m256i bias = _mm256_set1_epi8(32);
  const __m256i a = bcast16(ql), c = bcast16(ql + 32), h = bcast16(qh);
  q[0] = _mm256_sub_epi8(
      _mm256_or_si256(_mm256_and_si256(a, m4), _mm256_and_si256(_mm256_slli_epi16(h, 4), m2)),
      bias);
  q[1] = _mm256_sub_epi8(
      _mm256_or_si256(_mm256_and_si256(c, m4), _mm256_and_si256(_mm256_slli_epi16(h, 2), m2)),
      bias);
  q[2] = _mm256_sub_epi8(
      _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(a, 4), m4), _mm256_and_si256(h, m2)),
      bias);
  q[3] = _mm256_sub_epi8(_mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(c, 4), m4),
                                         _mm256_and_si256(_mm256_srli_epi16(h, 2), m2)),
                         bias);
}

HOSTLM_AVX2 float dot_q6_k(const void* w, const float* x, int64_t n) {
  const auto* b = static_cast<const uint8_t*>(w);
  __m256 acc = _mm256_setzero_ps();
  alignas(32) float ds[16];
  for (int64_t i = 0; i < n; i += 256, b += q6_k::kBytes) {
    prefetch_block<q6_k::kBytes>(b);
    q6k_scales(b, ds);
    for (int half = 0; half < 2; ++half) {
      for (int l0 = 0; l0 < 32; l0 += 16) {
        __m256i q[4];
        q6k_values(b + q6_k::kQl + 64 * half + l0, b + q6_k::kQh + 32 * half + l0, q);
        const float* s = ds + 8 * half + l0 / 16;
        const float* xl = x + i + 128 * half + l0;
        for (int k = 0; k < 4; ++k)
          acc = _mm256_fmadd_ps(_mm256_broadcast_ss(s + 2 * k), dot16(q[k], xl + 32 * k), acc);
      }
    }
  }
  return hsum(acc);
}

HOSTLM_AVX2 void row_q6_k(const void* w, float* y, int64_t n) {
  const auto* b = static_cast<const uint8_t*>(w);
  alignas(32) float ds[16];
  for (int64_t i = 0; i < n; i += 256, b += q6_k::kBytes) {
    q6k_scales(b, ds);
    for (int half = 0; half < 2; ++half) {
      for (int l0 = 0; l0 < 32; l0 += 16) {
        __m256i q[4];
        q6k_values(b + q6_k::kQl + 64 * half + l0, b + q6_k::kQh + 32 * half + l0, q);
        const float* s = ds + 8 * half + l0 / 16;
        float* yl = y + i + 128 * half + l0;
        for (int k = 0; k < 4; ++k) store16(q[k], _mm256_broadcast_ss(s + 2 * k), yl + 32 * k);
      }
    }
  }
}

// IQ4_XS: dl[ib] = d * (ls - 32) (with the 2^-24). The low 4 bits of ls are nibble ib of
// scales_l (low nibble first), the top 2 bits 2*ib of scales_h.
HOSTLM_AVX2 inline void iq4xs_scales(const uint8_t* b, float* dl) {
  const float d = f16(b + iq4_xs::kD) * kTop;
  const __m128i l = _mm_cvtsi32_si128(static_cast<int>(load_u32(b + iq4_xs::kScalesL)));
  const __m128i lo = _mm_unpacklo_epi8(_mm_and_si128(l, _mm_set1_epi8(15)),
                                       _mm_and_si128(_mm_srli_epi16(l, 4), _mm_set1_epi8(15)));
  const __m256i hi =
      _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(load_u16(b + iq4_xs::kScalesH)),
                                         _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14)),
                       _mm256_set1_epi32(3));
  const __m256i ls = _mm256_sub_epi32(
      _mm256_or_si256(_mm256_cvtepu8_epi32(lo), _mm256_slli_epi32(hi, 4)), _mm256_set1_epi32(32));
  _mm256_storeu_ps(dl, _mm256_mul_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(ls)));
}

HOSTLM_AVX2 float dot_iq4_xs(const void* w, const float* x, int64_t n) {
  const auto* b = static_cast<const uint8_t*>(w);
  const __m256i table = table16(kIq4Values);
  __m256 acc = _mm256_setzero_ps();
  alignas(32) float dl[8];
  for (int64_t i = 0; i < n; i += 256, b += iq4_xs::kBytes) {
    prefetch_block<iq4_xs::kBytes>(b);
    iq4xs_scales(b, dl);
    for (int ib = 0; ib < 8; ++ib) {
      const __m256i v = bcast16(b + iq4_xs::kQs + 16 * ib);
      const __m256 s = dot32(_mm256_shuffle_epi8(table, low_nibbles(v)),
                             _mm256_shuffle_epi8(table, high_nibbles(v)), x + i + 32 * ib);
      acc = _mm256_fmadd_ps(_mm256_broadcast_ss(dl + ib), s, acc);
    }
  }
  return hsum(acc);
}

HOSTLM_AVX2 void row_iq4_xs(const void* w, float* y, int64_t n) {
  const auto* b = static_cast<const uint8_t*>(w);
  const __m256i table = table16(kIq4Values);
  alignas(32) float dl[8];
  for (int64_t i = 0; i < n; i += 256, b += iq4_xs::kBytes) {
    iq4xs_scales(b, dl);
    for (int ib = 0; ib < 8; ++ib) {
      const __m256i v = bcast16(b + iq4_xs::kQs + 16 * ib);
      const __m256 s = _mm256_broadcast_ss(dl + ib);
      store16(_mm256_shuffle_epi8(table, low_nibbles(v)), s, y + i + 32 * ib);
      store16(_mm256_shuffle_epi8(table, high_nibbles(v)), s, y + i + 32 * ib + 16);
    }
  }
}

}  // namespace

bool cpu_has_avx2() {
  static const bool yes = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                          __builtin_cpu_supports("f16c");
  return yes;
}

DotFn dot_avx2(DType type) {
  switch (type) {
    case DType::Q4_0:
      return dot_q4_0;
    case DType::Q4_1:
      return dot_q4_1;
    case DType::Q5_0:
      return dot_q5_0;
    case DType::Q5_1:
      return dot_q5_1;
    case DType::Q8_0:
      return dot_q8_0;
    case DType::IQ4_NL:
      return dot_iq4_nl;
    case DType::Q2_K:
      return dot_q2_k;
    case DType::Q3_K:
      return dot_q3_k;
    case DType::Q4_K:
      return dot_q4_k;
    case DType::Q5_K:
      return dot_q5_k;
    case DType::Q6_K:
      return dot_q6_k;
    case DType::IQ4_XS:
      return dot_iq4_xs;
    default:
      return nullptr;
  }
}

RowToF32Fn row_to_f32_avx2(DType type) {
  switch (type) {
    case DType::Q4_0:
      return row_q4_0;
    case DType::Q4_1:
      return row_q4_1;
    case DType::Q5_0:
      return row_q5_0;
    case DType::Q5_1:
      return row_q5_1;
    case DType::Q8_0:
      return row_q8_0;
    case DType::IQ4_NL:
      return row_iq4_nl;
    case DType::Q2_K:
      return row_q2_k;
    case DType::Q3_K:
      return row_q3_k;
    case DType::Q4_K:
      return row_q4_k;
    case DType::Q5_K:
      return row_q5_k;
    case DType::Q6_K:
      return row_q6_k;
    case DType::IQ4_XS:
      return row_iq4_xs;
    default:
      return nullptr;
  }
}

}  // namespace hostlm::cpu::quants
