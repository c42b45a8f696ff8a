// AVX2 dot products of quantized weight rows with float32 activations.
//
// Each block is decoded to small integers in the byte domain, 16 at a time, held twice in a
// 256-bit register (both 128-bit lanes equal, so a broadcast load feeds them for free). One
// in-lane byte shuffle then spreads 8 of them into the top byte of eight 32-bit lanes in
// element order, which matches a plain load of x and sign-extends for free: the lane holds
// q * 2^24 exactly, converted to float without rounding. The 2^-24 is folded into the
// per-block scale. This keeps the cross-lane shuffle port free, which is what limits the
// usual vpmovsxbd-based widening.
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

// Q4_0 and IQ4_NL differ only in the map from nibble to value.
HOSTLM_AVX2 float dot_nibble_table(const uint8_t* b, const float* x, int64_t n, __m256i table) {
  __m256 acc = _mm256_setzero_ps();
  for (int64_t i = 0; i < n; i += 32, b += 18) {
    const __m256i v = bcast16(b + 2);
    const __m256i lo = _mm256_shuffle_epi8(table, low_nibbles(v));
    const __m256i hi = _mm256_shuffle_epi8(table, high_nibbles(v));
    acc = _mm256_fmadd_ps(_mm256_set1_ps(f16(b) * kTop), dot32(lo, hi, x + i), acc);
  }
  return hsum(acc);
}

constexpr int8_t kQ4_0Values[16] = {-8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7};

HOSTLM_AVX2 float dot_q4_0(const void* w, const float* x, int64_t n) {
  return dot_nibble_table(static_cast<const uint8_t*>(w), x, n, table16(kQ4_0Values));
}

HOSTLM_AVX2 float dot_iq4_nl(const void* w, const float* x, int64_t n) {
  return dot_nibble_table(static_cast<const uint8_t*>(w), x, n, table16(kIq4Values));
}

// Q4_1: sum (d*q + m) x = d * (q . x) + m * sum(x).
HOSTLM_AVX2 float dot_q4_1(const void* w, const float* x, int64_t n) {
  const auto* b = static_cast<const uint8_t*>(w);
  __m256 acc = _mm256_setzero_ps(), accm = _mm256_setzero_ps();
  for (int64_t i = 0; i < n; i += 32, b += q4_1::kBytes) {
    const __m256i v = bcast16(b + q4_1::kQs);
    const __m256 s = dot32(low_nibbles(v), high_nibbles(v), x + i);
    acc = _mm256_fmadd_ps(_mm256_set1_ps(f16(b + q4_1::kD) * kTop), s, acc);
    accm = _mm256_fmadd_ps(_mm256_set1_ps(f16(b + q4_1::kM)), sum32(x + i), accm);
  }
  return hsum(_mm256_add_ps(acc, accm));
}

HOSTLM_AVX2 float dot_q5_0(const void* w, const float* x, int64_t n) {
  const auto* b = static_cast<const uint8_t*>(w);
  const __m256i sixteen = _mm256_set1_epi8(16);
  __m256 acc = _mm256_setzero_ps();
  for (int64_t i = 0; i < n; i += 32, b += q5_0::kBytes) {
    const uint32_t qh = load_u32(b + q5_0::kQh);
    const __m256i v = bcast16(b + q5_0::kQs);
    // (nibble | bit << 4) - 16 == nibble - (bit ? 0 : 16)
    const __m256i lo =
        _mm256_sub_epi8(low_nibbles(v), _mm256_andnot_si256(bit_mask16(qh & 0xffff), sixteen));
    const __m256i hi =
        _mm256_sub_epi8(high_nibbles(v), _mm256_andnot_si256(bit_mask16(qh >> 16), sixteen));
    acc = _mm256_fmadd_ps(_mm256_set1_ps(f16(b + q5_0::kD) * kTop), dot32(lo, hi, x + i), acc);
  }
  return hsum(acc);
}

HOSTLM_AVX2 float dot_q5_1(const void* w, const float* x, int64_t n) {
  const auto* b = static_cast<const uint8_t*>(w);
  const __m256i sixteen = _mm256_set1_epi8(16);
  __m256 acc = _mm256_setzero_ps(), accm = _mm256_setzero_ps();
  for (int64_t i = 0; i < n; i += 32, b += q5_1::kBytes) {
    const uint32_t qh = load_u32(b + q5_1::kQh);
    const __m256i v = bcast16(b + q5_1::kQs);
    const __m256i lo =
        _mm256_or_si256(low_nibbles(v), _mm256_and_si256(bit_mask16(qh & 0xffff), sixteen));
    const __m256i hi =
        _mm256_or_si256(high_nibbles(v), _mm256_and_si256(bit_mask16(qh >> 16), sixteen));
    acc = _mm256_fmadd_ps(_mm256_set1_ps(f16(b + q5_1::kD) * kTop), dot32(lo, hi, x + i), acc);
    accm = _mm256_fmadd_ps(_mm256_set1_ps(f16(b + q5_1::kM)), sum32(x + i), accm);
  }
  return hsum(_mm256_add_ps(acc, accm));
}

HOSTLM_AVX2 float dot_q8_0(const void* w, const float* x, int64_t n) {
  const auto* b = static_cast<const uint8_t*>(w);
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  int64_t i = 0;
  // Two blocks per step keep two independent accumulation chains in flight.
  for (; i + 64 <= n; i += 64, b += 2 * q8_0::kBytes) {
    const uint8_t* b1 = b + q8_0::kBytes;
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

// Stores d * v[k] for the 8 integers in the low 8 bytes of v (unsigned or signed).
HOSTLM_AVX2 inline void scale_u8x8(__m128i v, float d, float* out) {
  _mm256_storeu_ps(out,
                   _mm256_mul_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(v))));
}
HOSTLM_AVX2 inline void scale_i8x8(__m128i v, float d, float* out) {
  _mm256_storeu_ps(out,
                   _mm256_mul_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(v))));
}

HOSTLM_AVX2 float dot_q2_k(const void* w, const float* x, int64_t n) {
  const auto* b = static_cast<const uint8_t*>(w);
  const __m256i three = _mm256_set1_epi8(3);
  __m256 acc = _mm256_setzero_ps(), accm = _mm256_setzero_ps();
  alignas(32) float dl[16], ml[16];
  for (int64_t i = 0; i < n; i += 256, b += q2_k::kBytes) {
    const float d = f16(b + q2_k::kD) * kTop, dmin = f16(b + q2_k::kDmin);
    const __m128i sc = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + q2_k::kScales));
    const __m128i sc_lo = _mm_and_si128(sc, _mm_set1_epi8(15));
    const __m128i sc_hi = _mm_and_si128(_mm_srli_epi16(sc, 4), _mm_set1_epi8(15));
    scale_u8x8(sc_lo, d, dl);
    scale_u8x8(_mm_srli_si128(sc_lo, 8), d, dl + 8);
    scale_u8x8(sc_hi, dmin, ml);
    scale_u8x8(_mm_srli_si128(sc_hi, 8), dmin, ml + 8);
    const float* xb = x + i;
    for (int half = 0; half < 2; ++half) {
      __m256i v0 = bcast16(b + q2_k::kQs + 32 * half);
      __m256i v1 = bcast16(b + q2_k::kQs + 32 * half + 16);
      for (int j = 0; j < 4; ++j) {
        const int g = 8 * half + 2 * j;
        const float* xg = xb + 16 * g;
        const __m256 s0 = dot16(_mm256_and_si256(v0, three), xg);
        const __m256 s1 = dot16(_mm256_and_si256(v1, three), xg + 16);
        acc = _mm256_fmadd_ps(_mm256_broadcast_ss(dl + g), s0, acc);
        acc = _mm256_fmadd_ps(_mm256_broadcast_ss(dl + g + 1), s1, acc);
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

HOSTLM_AVX2 float dot_q3_k(const void* w, const float* x, int64_t n) {
  const auto* b = static_cast<const uint8_t*>(w);
  const __m256i three = _mm256_set1_epi8(3), four = _mm256_set1_epi8(4);
  __m256 acc = _mm256_setzero_ps();
  alignas(32) float dl[16];
  for (int64_t i = 0; i < n; i += 256, b += q3_k::kBytes) {
    const float d = f16(b + q3_k::kD) * kTop;
    // Scale s takes its low 4 bits from nibble s of bytes 0..7 (low nibbles first) and its
    // top 2 bits from bits 2*(s/4) of byte 8 + s%4.
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

    const __m256i hm0 = bcast16(b + q3_k::kHmask), hm1 = bcast16(b + q3_k::kHmask + 16);
    __m256i bit = _mm256_set1_epi8(1);
    const float* xb = x + i;
    for (int half = 0; half < 2; ++half) {
      __m256i v0 = bcast16(b + q3_k::kQs + 32 * half);
      __m256i v1 = bcast16(b + q3_k::kQs + 32 * half + 16);
      for (int j = 0; j < 4; ++j) {
        const int g = 8 * half + 2 * j;
        // A clear hmask bit subtracts 4.
        const __m256i off0 = _mm256_and_si256(
            _mm256_cmpeq_epi8(_mm256_and_si256(hm0, bit), _mm256_setzero_si256()), four);
        const __m256i off1 = _mm256_and_si256(
            _mm256_cmpeq_epi8(_mm256_and_si256(hm1, bit), _mm256_setzero_si256()), four);
        const __m256i q0 = _mm256_sub_epi8(_mm256_and_si256(v0, three), off0);
        const __m256i q1 = _mm256_sub_epi8(_mm256_and_si256(v1, three), off1);
        acc = _mm256_fmadd_ps(_mm256_broadcast_ss(dl + g), dot16(q0, xb + 16 * g), acc);
        acc = _mm256_fmadd_ps(_mm256_broadcast_ss(dl + g + 1), dot16(q1, xb + 16 * g + 16), acc);
        v0 = _mm256_srli_epi16(v0, 2);
        v1 = _mm256_srli_epi16(v1, 2);
        bit = _mm256_add_epi8(bit, bit);
      }
    }
  }
  return hsum(acc);
}

// Scales and mins of the 8 sub-blocks of Q4_K/Q5_K: d*sc into dsc, dmin*mn into dmn.
HOSTLM_AVX2 inline void k4_scales(const uint8_t* s, float d, float dmin, float* dsc, float* dmn) {
  const uint32_t s0 = load_u32(s), s1 = load_u32(s + 4), s2 = load_u32(s + 8);
  const uint32_t sc_lo = s0 & 0x3f3f3f3fu, mn_lo = s1 & 0x3f3f3f3fu;
  const uint32_t sc_hi = (s2 & 0x0f0f0f0fu) | ((s0 >> 2) & 0x30303030u);
  const uint32_t mn_hi = ((s2 >> 4) & 0x0f0f0f0fu) | ((s1 >> 2) & 0x30303030u);
  scale_u8x8(_mm_set_epi32(0, 0, static_cast<int>(sc_hi), static_cast<int>(sc_lo)), d, dsc);
  scale_u8x8(_mm_set_epi32(0, 0, static_cast<int>(mn_hi), static_cast<int>(mn_lo)), dmin, dmn);
}

// Q4_K/Q5_K: sum over sub-blocks of d*sc * (q . x) - dmin*mn * sum(x).
template <bool kFifthBit>
HOSTLM_AVX2 inline float dot_k4(const uint8_t* b, const float* x, int64_t n) {
  constexpr int kBytes = kFifthBit ? q5_k::kBytes : q4_k::kBytes;
  constexpr int kQs = kFifthBit ? q5_k::kQs : q4_k::kQs;
  const __m256i sixteen = _mm256_set1_epi8(16);
  __m256 acc = _mm256_setzero_ps(), accm = _mm256_setzero_ps();
  alignas(32) float dsc[8], dmn[8];
  for (int64_t i = 0; i < n; i += 256, b += kBytes) {
    k4_scales(b + q4_k::kScales, f16(b + q4_k::kD) * kTop, f16(b + q4_k::kDmin), dsc, dmn);
    __m256i h0 = _mm256_setzero_si256(), h1 = _mm256_setzero_si256();
    if constexpr (kFifthBit) {
      h0 = bcast16(b + q5_k::kQh);
      h1 = bcast16(b + q5_k::kQh + 16);
    }
    const float* xb = x + i;
    for (int c = 0; c < 4; ++c) {
      const __m256i v0 = bcast16(b + kQs + 32 * c), v1 = bcast16(b + kQs + 32 * c + 16);
      __m256i lo0 = low_nibbles(v0), lo1 = low_nibbles(v1);
      __m256i hi0 = high_nibbles(v0), hi1 = high_nibbles(v1);
      if constexpr (kFifthBit) {
        // Bits 2c and 2c+1 of qh are bits 0 and 1 of h after c shifts by 2; bits shifted in
        // from the neighbouring byte never reach bit 1 within 3 shifts.
        lo0 = _mm256_or_si256(lo0, _mm256_and_si256(_mm256_slli_epi16(h0, 4), sixteen));
        lo1 = _mm256_or_si256(lo1, _mm256_and_si256(_mm256_slli_epi16(h1, 4), sixteen));
        hi0 = _mm256_or_si256(hi0, _mm256_and_si256(_mm256_slli_epi16(h0, 3), sixteen));
        hi1 = _mm256_or_si256(hi1, _mm256_and_si256(_mm256_slli_epi16(h1, 3), sixteen));
        h0 = _mm256_srli_epi16(h0, 2);
        h1 = _mm256_srli_epi16(h1, 2);
      }
      const float* xc = xb + 64 * c;
      acc = _mm256_fmadd_ps(_mm256_broadcast_ss(dsc + 2 * c), dot32(lo0, lo1, xc), acc);
      acc = _mm256_fmadd_ps(_mm256_broadcast_ss(dsc + 2 * c + 1), dot32(hi0, hi1, xc + 32), acc);
      accm = _mm256_fmadd_ps(_mm256_broadcast_ss(dmn + 2 * c), sum32(xc), accm);
      accm = _mm256_fmadd_ps(_mm256_broadcast_ss(dmn + 2 * c + 1), sum32(xc + 32), accm);
    }
  }
  return hsum(_mm256_sub_ps(acc, accm));
}

HOSTLM_AVX2 float dot_q4_k(const void* w, const float* x, int64_t n) {
  return dot_k4<false>(static_cast<const uint8_t*>(w), x, n);
}
HOSTLM_AVX2 float dot_q5_k(const void* w, const float* x, int64_t n) {
  return dot_k4<true>(static_cast<const uint8_t*>(w), x, n);
}

HOSTLM_AVX2 float dot_q6_k(const void* w, const float* x, int64_t n) {
  const auto* b = static_cast<const uint8_t*>(w);
  const __m256i m4 = _mm256_set1_epi8(15), m2 = _mm256_set1_epi8(0x30);
  const __m256i bias = _mm256_set1_epi8(32);
  __m256 acc = _mm256_setzero_ps();
  alignas(32) float ds[16];
  for (int64_t i = 0; i < n; i += 256, b += q6_k::kBytes) {
    const float d = f16(b + q6_k::kD) * kTop;
    const __m128i sc = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + q6_k::kScales));
    scale_i8x8(sc, d, ds);
    scale_i8x8(_mm_srli_si128(sc, 8), d, ds + 8);
    for (int half = 0; half < 2; ++half) {
      const uint8_t* ql = b + q6_k::kQl + 64 * half;
      const uint8_t* qh = b + q6_k::kQh + 32 * half;
      const float* xh = x + i + 128 * half;
      for (int l0 = 0; l0 < 32; l0 += 16) {
        const __m256i a = bcast16(ql + l0), c = bcast16(ql + 32 + l0), h = bcast16(qh + l0);
        const __m256i q1 = _mm256_sub_epi8(
            _mm256_or_si256(_mm256_and_si256(a, m4), _mm256_and_si256(_mm256_slli_epi16(h, 4), m2)),
            bias);
        const __m256i q2 = _mm256_sub_epi8(
            _mm256_or_si256(_mm256_and_si256(c, m4), _mm256_and_si256(_mm256_slli_epi16(h, 2), m2)),
            bias);
        const __m256i q3 = _mm256_sub_epi8(
            _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(a, 4), m4), _mm256_and_si256(h, m2)),
            bias);
        const __m256i q4 =
            _mm256_sub_epi8(_mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(c, 4), m4),
                                            _mm256_and_si256(_mm256_srli_epi16(h, 2), m2)),
                            bias);
        const float* s = ds + 8 * half + l0 / 16;
        acc = _mm256_fmadd_ps(_mm256_broadcast_ss(s), dot16(q1, xh + l0), acc);
        acc = _mm256_fmadd_ps(_mm256_broadcast_ss(s + 2), dot16(q2, xh + l0 + 32), acc);
        acc = _mm256_fmadd_ps(_mm256_broadcast_ss(s + 4), dot16(q3, xh + l0 + 64), acc);
        acc = _mm256_fmadd_ps(_mm256_broadcast_ss(s + 6), dot16(q4, xh + l0 + 96), acc);
      }
    }
  }
  return hsum(acc);
}

HOSTLM_AVX2 float dot_iq4_xs(const void* w, const float* x, int64_t n) {
  const auto* b = static_cast<const uint8_t*>(w);
  const __m256i table = table16(kIq4Values);
  __m256 acc = _mm256_setzero_ps();
  alignas(32) float dl[8];
  for (int64_t i = 0; i < n; i += 256, b += iq4_xs::kBytes) {
    const float d = f16(b + iq4_xs::kD) * kTop;
    // Low 4 bits of scale ib: nibble ib of scales_l (low nibble first); top 2: bits 2*ib of
    // scales_h.
    const __m128i l = _mm_cvtsi32_si128(static_cast<int>(load_u32(b + iq4_xs::kScalesL)));
    const __m128i lo = _mm_unpacklo_epi8(_mm_and_si128(l, _mm_set1_epi8(15)),
                                         _mm_and_si128(_mm_srli_epi16(l, 4), _mm_set1_epi8(15)));
    const __m256i hi =
        _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(load_u16(b + iq4_xs::kScalesH)),
                                           _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14)),
                         _mm256_set1_epi32(3));
    const __m256i ls = _mm256_sub_epi32(
        _mm256_or_si256(_mm256_cvtepu8_epi32(lo), _mm256_slli_epi32(hi, 4)), _mm256_set1_epi32(32));
    _mm256_store_ps(dl, _mm256_mul_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(ls)));
    for (int ib = 0; ib < 8; ++ib) {
      const __m256i v = bcast16(b + iq4_xs::kQs + 16 * ib);
      const __m256 s = dot32(_mm256_shuffle_epi8(table, low_nibbles(v)),
                             _mm256_shuffle_epi8(table, high_nibbles(v)), x + i + 32 * ib);
      acc = _mm256_fmadd_ps(_mm256_broadcast_ss(dl + ib), s, acc);
    }
  }
  return hsum(acc);
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

}  // namespace hostlm::cpu::quants
