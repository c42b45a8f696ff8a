// The vector integer kernels, written once for two instruction sets: qgemm_avx2.cpp and
// qgemm_vnni.cpp include this file inside their own anonymous namespace, under their own
// `#pragma GCC target`, after including its headers and defining HOSTLM_QGEMM_VNNI to 0 or
// 1. (A pragma rather than -m flags for the whole file keeps the inline helpers shared with
// other files, such as those of blocks.h, compiled for the baseline ISA.) The byte and word
// dot-product steps differ: AVX2 multiplies bytes with vpmaddubsw and widens with vpmaddwd;
// VNNI does both in one vpdpbusd (or vpdpwssd for the word step). VNNI also has the packed
// batch kernels (below), which need vpdpbusd's 32-bit sums.
//
// Per-token kernels (decode and small batches): the weight rows are walked in tiles that
// stay in L1, the tokens in groups of up to kTile; each weight block is decoded once into
// registers (bytes in element order, as unsigned levels or, for the non-linear and Q8_0
// types, signed values) and then meets the activation block of each token of the group.
//
// Unsigned levels u stand for (u - offset) or d*u - m; the offset and min terms are applied
// through the activation sums: for the 32-element types in the integer lane sum, for the
// super-block types as sum_k off[k] * bsums[k] per 16 elements.
//
// Overflow: vpmaddubsw sums two u8*s8 products into int16, so unsigned levels stay below 64
// (63 * 127 * 2 < 32767); signed weights go through |w| and sign(a, w), where |w| <= 128.
//
// Headers it needs, included by the includer before its namespace opens: <immintrin.h>,
// <algorithm>, <cstring>, <type_traits>, <utility>, <vector>, "cpu/quants/blocks.h",
// "cpu/quants/iq_levels.h", "cpu/quants/qgemm.h".

#ifndef HOSTLM_QGEMM_VNNI
#error "define HOSTLM_QGEMM_VNNI before including qgemm_simd.h"
#endif

#define HOSTLM_INLINE inline __attribute__((always_inline))
#define HOSTLM_ALWAYS __attribute__((always_inline))

// Tokens per group: AVX-512 has 32 vector registers, AVX2 16.
#if HOSTLM_QGEMM_VNNI
constexpr int kTile = 6;
#else
constexpr int kTile = 4;
#endif

// Weight bytes per row tile: kept in L1 while every token group passes over it.
constexpr size_t kRowTileBytes = 16 * 1024;
constexpr int kPrefetchAhead = 1024;

HOSTLM_INLINE __m256i load256(const void* p) {
  return _mm256_loadu_si256(static_cast<const __m256i*>(p));
}
HOSTLM_INLINE __m128i load128(const void* p) {
  return _mm_loadu_si128(static_cast<const __m128i*>(p));
}

// acc + sum of 4 adjacent u8*s8 products per 32-bit lane.
HOSTLM_INLINE __m256i dot_u8s8(__m256i acc, __m256i u, __m256i s) {
#if HOSTLM_QGEMM_VNNI
  return _mm256_dpbusd_epi32(acc, u, s);
#else
  return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1)));
#endif
}
// acc + sum of 2 adjacent int16*int16 products per 32-bit lane.
HOSTLM_INLINE __m256i dot_s16(__m256i acc, __m256i a, __m256i b) {
#if HOSTLM_QGEMM_VNNI
  return _mm256_dpwssd_epi32(acc, a, b);
#else
  return _mm256_add_epi32(acc, _mm256_madd_epi16(a, b));
#endif
}

HOSTLM_INLINE float hsum(__m256 v) {
  __m128 lo = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  lo = _mm_add_ps(lo, _mm_movehl_ps(lo, lo));
  lo = _mm_add_ss(lo, _mm_shuffle_ps(lo, lo, 1));
  return _mm_cvtss_f32(lo);
}

HOSTLM_INLINE float f16(const uint8_t* p) { return _cvtsh_ss(load_u16(p)); }

HOSTLM_INLINE __m256i nibbles_lo(__m256i v) { return _mm256_and_si256(v, _mm256_set1_epi8(15)); }
HOSTLM_INLINE __m256i nibbles_hi(__m256i v) {
  return _mm256_and_si256(_mm256_srli_epi16(v, 4), _mm256_set1_epi8(15));
}
// 16 packed bytes -> 32 elements: low nibbles first, then high nibbles (the Q4_0 layout).
HOSTLM_INLINE __m256i nibbles32(const uint8_t* p) {
  const __m128i q = load128(p);
  const __m128i m = _mm_set1_epi8(15);
  return _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(q, 4), m), _mm_and_si128(q, m));
}
// Byte i is 0x10 where bit i of the 32 bits is set.
HOSTLM_INLINE __m256i bits_to_16(uint32_t bits) {
  const __m256i spread = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2,
                                          2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3);
  const __m256i sel = _mm256_set1_epi64x(static_cast<int64_t>(0x8040201008040201ull));
  const __m256i b = _mm256_shuffle_epi8(_mm256_set1_epi32(static_cast<int>(bits)), spread);
  return _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(b, sel), sel), _mm256_set1_epi8(16));
}
HOSTLM_INLINE __m256i iq4_table() { return _mm256_broadcastsi128_si256(load128(kIq4Values)); }

// ---------------------------------------------------------------- 32-element block types

// A decoded block: q holds the 32 levels in element order; value = d * (q - kOffset) + m.
struct Block32 {
  __m256i q;
  float d, m;
};

struct Q4_0K {
  static constexpr int kBytes = q4_0::kBytes, kOffset = 8;
  static constexpr bool kSigned = false, kMin = false;
  static HOSTLM_INLINE Block32 load(const uint8_t* b) {
    return {nibbles32(b + q4_0::kQs), f16(b + q4_0::kD), 0.f};
  }
};
struct Q4_1K {
  static constexpr int kBytes = q4_1::kBytes, kOffset = 0;
  static constexpr bool kSigned = false, kMin = true;
  static HOSTLM_INLINE Block32 load(const uint8_t* b) {
    return {nibbles32(b + q4_1::kQs), f16(b + q4_1::kD), f16(b + q4_1::kM)};
  }
};
struct Q5_0K {
  static constexpr int kBytes = q5_0::kBytes, kOffset = 16;
  static constexpr bool kSigned = false, kMin = false;
  static HOSTLM_INLINE Block32 load(const uint8_t* b) {
    const __m256i q =
        _mm256_or_si256(nibbles32(b + q5_0::kQs), bits_to_16(load_u32(b + q5_0::kQh)));
    return {q, f16(b + q5_0::kD), 0.f};
  }
};
struct Q5_1K {
  static constexpr int kBytes = q5_1::kBytes, kOffset = 0;
  static constexpr bool kSigned = false, kMin = true;
  static HOSTLM_INLINE Block32 load(const uint8_t* b) {
    const __m256i q =
        _mm256_or_si256(nibbles32(b + q5_1::kQs), bits_to_16(load_u32(b + q5_1::kQh)));
    return {q, f16(b + q5_1::kD), f16(b + q5_1::kM)};
  }
};
struct Q8_0K {
  static constexpr int kBytes = q8_0::kBytes, kOffset = 0;
  static constexpr bool kSigned = true, kMin = false;
  static HOSTLM_INLINE Block32 load(const uint8_t* b) {
    return {load256(b + q8_0::kQs), f16(b + q8_0::kD), 0.f};
  }
};
struct IQ4_NLK {
  static constexpr int kBytes = iq4_nl::kBytes, kOffset = 0;
  static constexpr bool kSigned = true, kMin = false;
  static HOSTLM_INLINE Block32 load(const uint8_t* b) {
    return {_mm256_shuffle_epi8(iq4_table(), nibbles32(b + iq4_nl::kQs)), f16(b + iq4_nl::kD), 0.f};
  }
};

struct MXFP4K {
  static constexpr int kBytes = mxfp4::kBytes, kOffset = 0;
  static constexpr bool kSigned = true, kMin = false;
  static HOSTLM_INLINE Block32 load(const uint8_t* b) {
    return {_mm256_shuffle_epi8(_mm256_broadcastsi128_si256(load128(kMxfp4Values)),
                                nibbles32(b + mxfp4::kQs)),
            e8m0_half_to_f32(b[mxfp4::kE]), 0.f};
  }
};

template <class K, int NT>
void rows32(const uint8_t* w, size_t row_bytes, int64_t n_rows, const ActQ8_0* const* a,
            int64_t n_blocks, float* y, size_t y_stride) {
  for (int64_t r = 0; r < n_rows; ++r) {
    const uint8_t* row = w + r * row_bytes;
    __m256 acc[NT];
    float mins[NT];
    for (int t = 0; t < NT; ++t) {
      acc[t] = _mm256_setzero_ps();
      mins[t] = 0.f;
    }
    for (int64_t i = 0; i < n_blocks; ++i) {
      const uint8_t* b = row + i * K::kBytes;
      _mm_prefetch(reinterpret_cast<const char*>(b) + kPrefetchAhead, _MM_HINT_T0);
      const Block32 blk = K::load(b);
      const __m256i uq = K::kSigned ? _mm256_abs_epi8(blk.q) : blk.q;
      for (int t = 0; t < NT; ++t) {
        const ActQ8_0& at = a[t][i];
        __m256i av = load256(at.qs);
        if constexpr (K::kSigned) av = _mm256_sign_epi8(av, blk.q);
        __m256i p = dot_u8s8(_mm256_setzero_si256(), uq, av);
        if constexpr (K::kOffset != 0)
          p = _mm256_sub_epi32(p, _mm256_zextsi128_si256(_mm_cvtsi32_si128(K::kOffset * at.sum)));
        acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), _mm256_set1_ps(blk.d * at.d), acc[t]);
        if constexpr (K::kMin) mins[t] += blk.m * at.d * static_cast<float>(at.sum);
      }
    }
    for (int t = 0; t < NT; ++t) y[t * y_stride + r] = hsum(acc[t]) + mins[t];
  }
}

// ---------------------------------------------------------------- super-block types

// Per super-block: value = d * sc[k] * (u - off-term) ... as sum_k (d*sc[k]*dot_k -
// doff*off[k]*bsum_k).
struct HeadK {
  float d, doff;
  __m256i sc;   // 16 int16 scales, one per 16 elements
  __m256i off;  // 16 int16 offset coefficients, one per 16 elements
};

// The int16 scales of chunk j (32 elements): sc[2j] in the low lane, sc[2j+1] in the high.
HOSTLM_INLINE __m256i chunk_scales(__m256i sc16, int j) {
  const __m256i pair = _mm256_permutevar8x32_epi32(sc16, _mm256_set1_epi32(j));
  const __m256i spread = _mm256_setr_epi8(0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 2, 3, 2,
                                          3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3);
  return _mm256_shuffle_epi8(pair, spread);
}

// The 8 six-bit scales and 8 mins of Q4_K/Q5_K: bytes 0-7 scales, 8-15 mins.
HOSTLM_INLINE __m128i k4_scales_mins(const uint8_t* s) {
  uint32_t u[4];
  std::memcpy(u, s, 12);
  constexpr uint32_t m6 = 0x3f3f3f3f, m4 = 0x0f0f0f0f, m2 = 0x03030303;
  u[3] = ((u[2] >> 4) & m4) | (((u[1] >> 6) & m2) << 4);
  const uint32_t mins_lo = u[1] & m6;
  u[1] = (u[2] & m4) | (((u[0] >> 6) & m2) << 4);
  u[2] = mins_lo;
  u[0] &= m6;
  return _mm_loadu_si128(reinterpret_cast<const __m128i*>(u));
}
// Each of 8 bytes twice, widened to 16 int16.
HOSTLM_INLINE __m256i dup8_to_16(__m128i bytes8) {
  const __m128i dup = _mm_unpacklo_epi8(bytes8, bytes8);
  return _mm256_cvtepu8_epi16(dup);
}

struct Q4_KK {
  static constexpr int kGroup = 32;  // elements per scale
  static constexpr int kBytes = q4_k::kBytes;
  static constexpr bool kSigned = false, kOff = true, kOffSharesScale = false;
  static HOSTLM_INLINE HeadK head(const uint8_t* b) {
    const __m128i sm = k4_scales_mins(b + q4_k::kScales);
    return {f16(b + q4_k::kD), f16(b + q4_k::kDmin), dup8_to_16(sm),
            dup8_to_16(_mm_unpackhi_epi64(sm, sm))};
  }
  template <class F>
  static HOSTLM_INLINE void chunks(const uint8_t* b, F&& f) {
    for (int c = 0; c < 4; ++c) {
      const __m256i q = load256(b + q4_k::kQs + 32 * c);
      f(2 * c, nibbles_lo(q));
      f(2 * c + 1, nibbles_hi(q));
    }
  }
};

struct Q5_KK {
  static constexpr int kGroup = 32;  // elements per scale
  static constexpr int kBytes = q5_k::kBytes;
  static constexpr bool kSigned = false, kOff = true, kOffSharesScale = false;
  static HOSTLM_INLINE HeadK head(const uint8_t* b) {
    const __m128i sm = k4_scales_mins(b + q5_k::kScales);
    return {f16(b + q5_k::kD), f16(b + q5_k::kDmin), dup8_to_16(sm),
            dup8_to_16(_mm_unpackhi_epi64(sm, sm))};
  }
  template <class F>
  static HOSTLM_INLINE void chunks(const uint8_t* b, F&& f) {
    const __m256i h = load256(b + q5_k::kQh);
    const __m256i one = _mm256_set1_epi8(1);
    for (int c = 0; c < 4; ++c) {
      const __m256i q = load256(b + q5_k::kQs + 32 * c);
      const __m256i h0 = _mm256_and_si256(_mm256_srli_epi16(h, 2 * c), one);
      const __m256i h1 = _mm256_and_si256(_mm256_srli_epi16(h, 2 * c + 1), one);
      f(2 * c, _mm256_or_si256(nibbles_lo(q), _mm256_slli_epi16(h0, 4)));
      f(2 * c + 1, _mm256_or_si256(nibbles_hi(q), _mm256_slli_epi16(h1, 4)));
    }
  }
};

struct Q6_KK {
  static constexpr int kGroup = 16;  // elements per scale
  static constexpr int kBytes = q6_k::kBytes;
  static constexpr bool kSigned = false, kOff = true, kOffSharesScale = true;
  static HOSTLM_INLINE HeadK head(const uint8_t* b) {
    const __m256i sc = _mm256_cvtepi8_epi16(load128(b + q6_k::kScales));
    return {f16(b + q6_k::kD), 0.f, sc, _mm256_slli_epi16(sc, 5)};  // offset 32
  }
  template <class F>
  static HOSTLM_INLINE void chunks(const uint8_t* b, F&& f) {
    const __m256i m4 = _mm256_set1_epi8(15), m3 = _mm256_set1_epi8(3), m30 = _mm256_set1_epi8(0x30);
    for (int half = 0; half < 2; ++half) {
      const __m256i l0 = load256(b + q6_k::kQl + 64 * half);
      const __m256i l1 = load256(b + q6_k::kQl + 64 * half + 32);
      const __m256i h = load256(b + q6_k::kQh + 32 * half);
      const int j = 4 * half;
      f(j,
        _mm256_or_si256(_mm256_and_si256(l0, m4), _mm256_slli_epi16(_mm256_and_si256(h, m3), 4)));
      f(j + 1,
        _mm256_or_si256(_mm256_and_si256(l1, m4),
                        _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h, 2), m3), 4)));
      f(j + 2, _mm256_or_si256(nibbles_hi(l0), _mm256_and_si256(h, m30)));
      f(j + 3, _mm256_or_si256(nibbles_hi(l1), _mm256_and_si256(_mm256_srli_epi16(h, 2), m30)));
    }
  }
};

struct Q3_KK {
  static constexpr int kGroup = 16;  // elements per scale
  static constexpr int kBytes = q3_k::kBytes;
  static constexpr bool kSigned = false, kOff = true, kOffSharesScale = true;
  static HOSTLM_INLINE HeadK head(const uint8_t* b) {
    uint32_t u[4];
    std::memcpy(u, b + q3_k::kScales, 12);
    constexpr uint32_t m4 = 0x0f0f0f0f, m2 = 0x03030303;
    const uint32_t t = u[2];
    u[2] = ((u[0] >> 4) & m4) | (((t >> 4) & m2) << 4);
    u[3] = ((u[1] >> 4) & m4) | (((t >> 6) & m2) << 4);
    u[0] = (u[0] & m4) | ((t & m2) << 4);
    u[1] = (u[1] & m4) | (((t >> 2) & m2) << 4);
    const __m128i s6 =
        _mm_sub_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(u)), _mm_set1_epi8(32));
    const __m256i sc = _mm256_cvtepi8_epi16(s6);
    return {f16(b + q3_k::kD), 0.f, sc, _mm256_slli_epi16(sc, 2)};  // offset 4
  }
  template <class F>
  static HOSTLM_INLINE void chunks(const uint8_t* b, F&& f) {
    const __m256i hm = load256(b + q3_k::kHmask);
    const __m256i m3 = _mm256_set1_epi8(3), one = _mm256_set1_epi8(1);
    for (int half = 0; half < 2; ++half) {
      const __m256i q = load256(b + q3_k::kQs + 32 * half);
      for (int s = 0; s < 4; ++s) {
        const __m256i low = _mm256_and_si256(_mm256_srli_epi16(q, 2 * s), m3);
        const __m256i hb = _mm256_and_si256(_mm256_srli_epi16(hm, 4 * half + s), one);
        f(4 * half + s, _mm256_or_si256(low, _mm256_slli_epi16(hb, 2)));
      }
    }
  }
};

struct Q2_KK {
  static constexpr int kGroup = 16;  // elements per scale
  static constexpr int kBytes = q2_k::kBytes;
  static constexpr bool kSigned = false, kOff = true, kOffSharesScale = false;
  static HOSTLM_INLINE HeadK head(const uint8_t* b) {
    const __m128i s = load128(b + q2_k::kScales);
    const __m128i m4 = _mm_set1_epi8(15);
    return {f16(b + q2_k::kD), f16(b + q2_k::kDmin), _mm256_cvtepu8_epi16(_mm_and_si128(s, m4)),
            _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(s, 4), m4))};
  }
  template <class F>
  static HOSTLM_INLINE void chunks(const uint8_t* b, F&& f) {
    const __m256i m3 = _mm256_set1_epi8(3);
    for (int half = 0; half < 2; ++half) {
      const __m256i q = load256(b + q2_k::kQs + 32 * half);
      for (int s = 0; s < 4; ++s)
        f(4 * half + s, _mm256_and_si256(_mm256_srli_epi16(q, 2 * s), m3));
    }
  }
};

struct IQ4_XSK {
  static constexpr int kGroup = 32;  // elements per scale
  static constexpr int kBytes = iq4_xs::kBytes;
  static constexpr bool kSigned = true, kOff = false, kOffSharesScale = false;
  static HOSTLM_INLINE HeadK head(const uint8_t* b) {
    alignas(16) int8_t ls[16];
    for (int ib = 0; ib < 8; ++ib) ls[ib] = static_cast<int8_t>(iq4xs_scale(b, ib));
    const __m128i v = _mm_load_si128(reinterpret_cast<const __m128i*>(ls));
    return {f16(b + iq4_xs::kD), 0.f, _mm256_cvtepi8_epi16(_mm_unpacklo_epi8(v, v)),
            _mm256_setzero_si256()};
  }
  template <class F>
  static HOSTLM_INLINE void chunks(const uint8_t* b, F&& f) {
    const __m256i table = iq4_table();
    for (int p = 0; p < 4; ++p) {
      const __m256i q = load256(b + iq4_xs::kQs + 32 * p);
      const __m256i lo = nibbles_lo(q), hi = nibbles_hi(q);
      f(2 * p, _mm256_shuffle_epi8(table, _mm256_permute2x128_si256(lo, hi, 0x20)));
      f(2 * p + 1, _mm256_shuffle_epi8(table, _mm256_permute2x128_si256(lo, hi, 0x31)));
    }
  }
};

// The codebook types: signed byte levels and integer scales (iq_levels.h), the scales read by
// the portable code, the levels built in vectors: codebook rows gathered by index, signs
// applied with vpsignb.
template <class L, int Bytes>
struct IqHeadK {
  static constexpr int kGroup = 16;  // elements per scale
  static constexpr int kBytes = Bytes;
  static constexpr bool kSigned = true, kOff = false, kOffSharesScale = false;
  static HOSTLM_INLINE HeadK head(const uint8_t* b) {
    alignas(16) int8_t sc[16];
    const float d = L::scales(b, sc);
    return {d, 0.f, _mm256_cvtepi8_epi16(_mm_load_si128(reinterpret_cast<const __m128i*>(sc))),
            _mm256_setzero_si256()};
  }
};

// +1 or -1 per byte for 32 values from four sign bytes: value 8k + i takes bit i of byte k.
HOSTLM_INLINE __m256i sign_bytes32(uint32_t s) {
  const __m256i spread = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2,
                                          2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3);
  const __m256i sel = _mm256_set1_epi64x(static_cast<int64_t>(0x8040201008040201ull));
  const __m256i bytes = _mm256_shuffle_epi8(_mm256_set1_epi32(static_cast<int>(s)), spread);
  return _mm256_or_si256(_mm256_cmpeq_epi8(_mm256_and_si256(bytes, sel), sel), _mm256_set1_epi8(1));
}
// Four sign bytes from four seven-bit groups of `aux` (the eighth sign is their parity).
HOSTLM_INLINE uint32_t signs_of_sevens(uint32_t aux) {
  return static_cast<uint32_t>(kIqSigns.v[aux & 127u]) |
         static_cast<uint32_t>(kIqSigns.v[(aux >> 7) & 127u]) << 8 |
         static_cast<uint32_t>(kIqSigns.v[(aux >> 14) & 127u]) << 16 |
         static_cast<uint32_t>(kIqSigns.v[(aux >> 21) & 127u]) << 24;
}
HOSTLM_INLINE int64_t row8(const int8_t (&r)[8]) {
  int64_t v;
  std::memcpy(&v, r, 8);
  return v;
}
HOSTLM_INLINE int row4(const int8_t (&r)[4]) {
  int v;
  std::memcpy(&v, r, 4);
  return v;
}

struct IQ2_XXSK : IqHeadK<Iq2XxsLevels, iq2_xxs::kBytes> {
  template <class F>
  static HOSTLM_INLINE void chunks(const uint8_t* b, F&& f) {
    for (int ib = 0; ib < 8; ++ib) {
      const uint8_t* p = b + iq2_xxs::kQs + 8 * ib;
      const __m256i g = _mm256_setr_epi64x(row8(kIq2xxsGrid[p[0]]), row8(kIq2xxsGrid[p[1]]),
                                           row8(kIq2xxsGrid[p[2]]), row8(kIq2xxsGrid[p[3]]));
      f(ib, _mm256_sign_epi8(g, sign_bytes32(signs_of_sevens(load_u32(p + 4)))));
    }
  }
};

struct IQ2_XSK : IqHeadK<Iq2XsLevels, iq2_xs::kBytes> {
  template <class F>
  static HOSTLM_INLINE void chunks(const uint8_t* b, F&& f) {
    for (int ib = 0; ib < 8; ++ib) {
      uint16_t e[4];
      std::memcpy(e, b + iq2_xs::kQs + 8 * ib, 8);
      const __m256i g =
          _mm256_setr_epi64x(row8(kIq2xsGrid[e[0] & 511]), row8(kIq2xsGrid[e[1] & 511]),
                             row8(kIq2xsGrid[e[2] & 511]), row8(kIq2xsGrid[e[3] & 511]));
      const uint32_t s = static_cast<uint32_t>(kIqSigns.v[e[0] >> 9]) |
                         static_cast<uint32_t>(kIqSigns.v[e[1] >> 9]) << 8 |
                         static_cast<uint32_t>(kIqSigns.v[e[2] >> 9]) << 16 |
                         static_cast<uint32_t>(kIqSigns.v[e[3] >> 9]) << 24;
      f(ib, _mm256_sign_epi8(g, sign_bytes32(s)));
    }
  }
};

struct IQ2_SK : IqHeadK<Iq2SLevels, iq2_s::kBytes> {
  template <class F>
  static HOSTLM_INLINE void chunks(const uint8_t* b, F&& f) {
    for (int ib = 0; ib < 8; ++ib) {
      const uint8_t* qs = b + iq2_s::kQs + 4 * ib;
      const int qh = b[iq2_s::kQh + ib];
      auto index = [&](int l) { return qs[l] | (((qh >> (2 * l)) & 3) << 8); };
      const __m256i g = _mm256_setr_epi64x(row8(kIq2sGrid[index(0)]), row8(kIq2sGrid[index(1)]),
                                           row8(kIq2sGrid[index(2)]), row8(kIq2sGrid[index(3)]));
      f(ib, _mm256_sign_epi8(g, sign_bytes32(load_u32(b + iq2_s::kSigns + 4 * ib))));
    }
  }
};

struct IQ3_XXSK : IqHeadK<Iq3XxsLevels, iq3_xxs::kBytes> {
  template <class F>
  static HOSTLM_INLINE void chunks(const uint8_t* b, F&& f) {
    for (int ib = 0; ib < 8; ++ib) {
      const uint8_t* p = b + iq3_xxs::kQs + 8 * ib;
      const __m256i g = _mm256_setr_epi32(row4(kIq3xxsGrid[p[0]]), row4(kIq3xxsGrid[p[1]]),
                                          row4(kIq3xxsGrid[p[2]]), row4(kIq3xxsGrid[p[3]]),
                                          row4(kIq3xxsGrid[p[4]]), row4(kIq3xxsGrid[p[5]]),
                                          row4(kIq3xxsGrid[p[6]]), row4(kIq3xxsGrid[p[7]]));
      const uint32_t aux = load_u32(b + iq3_xxs::kScales + 4 * ib);
      f(ib, _mm256_sign_epi8(g, sign_bytes32(signs_of_sevens(aux))));
    }
  }
};

struct IQ3_SK : IqHeadK<Iq3SLevels, iq3_s::kBytes> {
  template <class F>
  static HOSTLM_INLINE void chunks(const uint8_t* b, F&& f) {
    for (int ib = 0; ib < 8; ++ib) {
      const uint8_t* qs = b + iq3_s::kQs + 8 * ib;
      const int qh = b[iq3_s::kQh + ib];
      auto row = [&](int m) { return row4(kIq3sGrid[qs[m] | (((qh >> m) & 1) << 8)]); };
      const __m256i g =
          _mm256_setr_epi32(row(0), row(1), row(2), row(3), row(4), row(5), row(6), row(7));
      f(ib, _mm256_sign_epi8(g, sign_bytes32(load_u32(b + iq3_s::kSigns + 4 * ib))));
    }
  }
};

// IQ1: 8 * grid + delta; 8 * g is vpsignb of 8 by g, since g is -1, 0 or 1.
struct IQ1_SK : IqHeadK<Iq1SLevels, iq1_s::kBytes> {
  template <class F>
  static HOSTLM_INLINE void chunks(const uint8_t* b, F&& f) {
    const __m256i eight = _mm256_set1_epi8(8);
    for (int ib = 0; ib < 8; ++ib) {
      const uint8_t* qs = b + iq1_s::kQs + 4 * ib;
      const int qh = load_u16(b + iq1_s::kQh + 2 * ib);
      auto index = [&](int l) { return qs[l] | (((qh >> (3 * l)) & 7) << 8); };
      const __m256i g = _mm256_setr_epi64x(row8(kIq1sGrid[index(0)]), row8(kIq1sGrid[index(1)]),
                                           row8(kIq1sGrid[index(2)]), row8(kIq1sGrid[index(3)]));
      const __m256i delta = _mm256_set1_epi8(static_cast<char>(qh & 0x8000 ? -1 : 1));
      f(ib, _mm256_add_epi8(_mm256_sign_epi8(eight, g), delta));
    }
  }
};

struct IQ1_MK : IqHeadK<Iq1MLevels, iq1_m::kBytes> {
  template <class F>
  static HOSTLM_INLINE void chunks(const uint8_t* b, F&& f) {
    const __m256i eight = _mm256_set1_epi8(8);
    constexpr int64_t kPlus = 0x0101010101010101, kMinus = -1;
    for (int ib = 0; ib < 8; ++ib) {
      const uint8_t* qs = b + iq1_m::kQs + 4 * ib;
      const int nibs = load_u16(b + iq1_m::kQh + 2 * ib);  // a nibble per lookup
      auto nib = [&](int l) { return (nibs >> (4 * l)) & 15; };
      auto index = [&](int l) { return qs[l] | ((nib(l) & 7) << 8); };
      auto delta = [&](int l) { return nib(l) & 8 ? kMinus : kPlus; };
      const __m256i g = _mm256_setr_epi64x(row8(kIq1sGrid[index(0)]), row8(kIq1sGrid[index(1)]),
                                           row8(kIq1sGrid[index(2)]), row8(kIq1sGrid[index(3)]));
      const __m256i d = _mm256_setr_epi64x(delta(0), delta(1), delta(2), delta(3));
      f(ib, _mm256_add_epi8(_mm256_sign_epi8(eight, g), d));
    }
  }
};

// TQ2_0: the two-bit layout of Q2_K's quants (chunk 4h + s is bits 2s of bytes 32h ..),
// unsigned codes u with value d * (u - 1). Unsigned with an offset rather than signed:
// the batch kernels' signed form (u + 128, less 128 * the activation sums) would lose the
// small ternary sums to cancellation.
struct TQ2_0K {
  static constexpr int kGroup = 16;  // elements per scale
  static constexpr int kBytes = tq2_0::kBytes;
  static constexpr bool kSigned = false, kOff = true, kOffSharesScale = true;
  static HOSTLM_INLINE HeadK head(const uint8_t* b) {
    const __m256i one = _mm256_set1_epi16(1);
    return {f16(b + tq2_0::kD), 0.f, one, one};
  }
  template <class F>
  static HOSTLM_INLINE void chunks(const uint8_t* b, F&& f) {
    const __m256i m3 = _mm256_set1_epi8(3);
    for (int half = 0; half < 2; ++half) {
      const __m256i q = load256(b + tq2_0::kQs + 32 * half);
      for (int s = 0; s < 4; ++s)
        f(4 * half + s, _mm256_and_si256(_mm256_srli_epi16(q, 2 * s), m3));
    }
  }
};

template <class K, int NT>
void rowsk(const uint8_t* w, size_t row_bytes, int64_t n_rows, const ActQ8_K* const* a,
           int64_t n_blocks, float* y, size_t y_stride) {
  for (int64_t r = 0; r < n_rows; ++r) {
    const uint8_t* row = w + r * row_bytes;
    __m256 acc[NT];
    for (int t = 0; t < NT; ++t) acc[t] = _mm256_setzero_ps();
    for (int64_t i = 0; i < n_blocks; ++i) {
      const uint8_t* b = row + i * K::kBytes;
      for (int off = 0; off < K::kBytes; off += 64)
        _mm_prefetch(reinterpret_cast<const char*>(b) + kPrefetchAhead + off, _MM_HINT_T0);
      const HeadK h = K::head(b);
      __m256i isum[NT];
      for (int t = 0; t < NT; ++t) isum[t] = _mm256_setzero_si256();
      K::chunks(b, [&](int j, __m256i q) HOSTLM_ALWAYS {
        const __m256i s = chunk_scales(h.sc, j);
        const __m256i u = K::kSigned ? _mm256_abs_epi8(q) : q;
        for (int t = 0; t < NT; ++t) {
          __m256i av = load256(a[t][i].qs + 32 * j);
          if constexpr (K::kSigned) av = _mm256_sign_epi8(av, q);
          isum[t] = dot_s16(isum[t], _mm256_maddubs_epi16(u, av), s);
        }
      });
      for (int t = 0; t < NT; ++t) {
        const ActQ8_K& at = a[t][i];
        if constexpr (K::kOff) {
          const __m256i o = _mm256_madd_epi16(load256(at.bsums), h.off);
          if constexpr (K::kOffSharesScale) {
            isum[t] = _mm256_sub_epi32(isum[t], o);
          } else {
            acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(o), _mm256_set1_ps(-h.doff * at.d), acc[t]);
          }
        }
        acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[t]), _mm256_set1_ps(h.d * at.d), acc[t]);
      }
    }
    for (int t = 0; t < NT; ++t) y[t * y_stride + r] = hsum(acc[t]);
  }
}

// ---------------------------------------------------------------- packed batches (VNNI)
//
// Eight tokens per 32-bit lane group (see PackedQ8_0/PackedQ8_K): a broadcast 4-byte group of
// a weight row meets the same 4 elements of 8 tokens in one vpdpbusd, so the integer sums of
// a row hold one token per lane, and the scales apply as vectors over the tokens. kPackRows
// rows share each activation load. Signed weights enter as w + 128 (unsigned), corrected by
// 128 times the activation sums, like the offsets of the unsigned types.
#if HOSTLM_QGEMM_VNNI
constexpr int kPackRows = 4;

// One row's super-block, decoded once per call (see gemm_packed).
struct RowK {
  alignas(32) uint8_t u[256];  // levels; signed types: value + 128
  alignas(32) float sc[16];    // d * scale of each 16 elements
  alignas(32) float off[16];   // doff * offset coefficient of each 16 elements
};

HOSTLM_INLINE void store_i16_as_f32(float* out, __m256i v16, float mul) {
  const __m256 m = _mm256_set1_ps(mul);
  _mm256_store_ps(
      out,
      _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi16_epi32(_mm256_castsi256_si128(v16))), m));
  _mm256_store_ps(
      out + 8, _mm256_mul_ps(
                   _mm256_cvtepi32_ps(_mm256_cvtepi16_epi32(_mm256_extracti128_si256(v16, 1))), m));
}

template <class K>
HOSTLM_INLINE void decode_row(const uint8_t* b, RowK& r) {
  const HeadK h = K::head(b);
  K::chunks(b, [&](int j, __m256i q) HOSTLM_ALWAYS {
    if constexpr (K::kSigned) q = _mm256_xor_si256(q, _mm256_set1_epi8(static_cast<char>(0x80)));
    _mm256_store_si256(reinterpret_cast<__m256i*>(r.u + 32 * j), q);
  });
  store_i16_as_f32(r.sc, h.sc, h.d);
  if constexpr (K::kSigned) {
    store_i16_as_f32(r.off, _mm256_slli_epi16(h.sc, 7), h.d);
  } else {
    store_i16_as_f32(r.off, h.off, K::kOffSharesScale ? h.d : h.doff);
  }
}

HOSTLM_INLINE __m256i bcast4(const uint8_t* p) {
  return _mm256_set1_epi32(static_cast<int>(load_u32(p)));
}

// One 32-element row block, decoded once per call.
struct Row32 {
  alignas(32) uint8_t u[32];  // levels; signed types: value + 128
  float d, m;
};

template <class K>
HOSTLM_INLINE void decode_row(const uint8_t* b, Row32& r) {
  const Block32 blk = K::load(b);
  __m256i q = blk.q;
  if constexpr (K::kSigned) q = _mm256_xor_si256(q, _mm256_set1_epi8(static_cast<char>(0x80)));
  _mm256_store_si256(reinterpret_cast<__m256i*>(r.u), q);
  r.d = blk.d;
  r.m = blk.m;
}

template <int Off>
constexpr int log2_of() {
  int s = 0;
  while ((1 << s) < Off) ++s;
  return s;
}

// R decoded rows (row j's blocks at dec + j * n_blocks) times NG packed token groups:
// out[r][g][t]. Two groups share each weight broadcast and give each row two independent
// accumulator chains, which hides the latency of vpdpbusd.
template <class K, int R, int NG>
void packed_kernel_k(const RowK* dec, int64_t stride, int64_t n_blocks, const PackedQ8_K* const* p,
                     float out[][2][kPackTokens]) {
  constexpr int G = K::kGroup;
  __m256 total[R][NG];
  for (int r = 0; r < R; ++r)
    for (int g = 0; g < NG; ++g) total[r][g] = _mm256_setzero_ps();
  for (int64_t i = 0; i < n_blocks; ++i) {
    __m256 fsum[R][NG];
    for (int r = 0; r < R; ++r)
      for (int g = 0; g < NG; ++g) fsum[r][g] = _mm256_setzero_ps();
    for (int sg = 0; sg < 256 / G; ++sg) {
      __m256i acc[R][NG];
      for (int r = 0; r < R; ++r)
        for (int g = 0; g < NG; ++g) acc[r][g] = _mm256_setzero_si256();
      for (int k4 = 0; k4 < G / 4; ++k4) {
        const int i4 = sg * (G / 4) + k4;
        __m256i A[NG];
        for (int g = 0; g < NG; ++g) A[g] = load256(p[g][i].q[i4]);
        for (int r = 0; r < R; ++r) {
          const __m256i wb = bcast4(dec[r * stride + i].u + 4 * i4);
          for (int g = 0; g < NG; ++g) acc[r][g] = _mm256_dpbusd_epi32(acc[r][g], wb, A[g]);
        }
      }
      for (int r = 0; r < R; ++r) {
        const __m256 sc = _mm256_broadcast_ss(&dec[r * stride + i].sc[sg * G / 16]);
        for (int g = 0; g < NG; ++g)
          fsum[r][g] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(acc[r][g]), sc, fsum[r][g]);
      }
    }
    for (int k = 0; k < 16; ++k) {
      __m256 B[NG];
      for (int g = 0; g < NG; ++g) B[g] = _mm256_loadu_ps(p[g][i].bsum[k]);
      for (int r = 0; r < R; ++r) {
        const __m256 o = _mm256_broadcast_ss(&dec[r * stride + i].off[k]);
        for (int g = 0; g < NG; ++g) fsum[r][g] = _mm256_fnmadd_ps(o, B[g], fsum[r][g]);
      }
    }
    for (int g = 0; g < NG; ++g) {
      const __m256 D = _mm256_loadu_ps(p[g][i].d);
      for (int r = 0; r < R; ++r) total[r][g] = _mm256_fmadd_ps(fsum[r][g], D, total[r][g]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int g = 0; g < NG; ++g) _mm256_storeu_ps(out[r][g], total[r][g]);
}

template <class K, int R, int NG>
void packed_kernel_32(const Row32* dec, int64_t stride, int64_t n_blocks,
                      const PackedQ8_0* const* p, float out[][2][kPackTokens]) {
  constexpr int kOff = K::kSigned ? 128 : K::kOffset;
  __m256 total[R][NG];
  for (int r = 0; r < R; ++r)
    for (int g = 0; g < NG; ++g) total[r][g] = _mm256_setzero_ps();
  for (int64_t i = 0; i < n_blocks; ++i) {
    __m256i acc[R][NG];
    for (int r = 0; r < R; ++r)
      for (int g = 0; g < NG; ++g) acc[r][g] = _mm256_setzero_si256();
    for (int k4 = 0; k4 < 8; ++k4) {
      __m256i A[NG];
      for (int g = 0; g < NG; ++g) A[g] = load256(p[g][i].q[k4]);
      for (int r = 0; r < R; ++r) {
        const __m256i wb = bcast4(dec[r * stride + i].u + 4 * k4);
        for (int g = 0; g < NG; ++g) acc[r][g] = _mm256_dpbusd_epi32(acc[r][g], wb, A[g]);
      }
    }
    for (int g = 0; g < NG; ++g) {
      const PackedQ8_0& a = p[g][i];
      __m256i so = _mm256_setzero_si256();
      if constexpr (kOff != 0) so = _mm256_slli_epi32(load256(a.sum), log2_of<kOff>());
      const __m256 D = _mm256_loadu_ps(a.d);
      for (int r = 0; r < R; ++r) {
        const Row32& row = dec[r * stride + i];
        __m256i v = acc[r][g];
        if constexpr (kOff != 0) v = _mm256_sub_epi32(v, so);
        total[r][g] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(v),
                                      _mm256_mul_ps(_mm256_set1_ps(row.d), D), total[r][g]);
        if constexpr (K::kMin)
          total[r][g] =
              _mm256_fmadd_ps(_mm256_set1_ps(row.m), _mm256_loadu_ps(a.dsum), total[r][g]);
      }
    }
  }
  for (int r = 0; r < R; ++r)
    for (int g = 0; g < NG; ++g) _mm256_storeu_ps(out[r][g], total[r][g]);
}

template <class K, class P, class Dec, int R, int NG>
HOSTLM_INLINE void packed_kernel(const Dec* dec, int64_t stride, int64_t n_blocks,
                                 const P* const* p, float out[][2][kPackTokens]) {
  if constexpr (std::is_same_v<P, PackedQ8_K>) {
    packed_kernel_k<K, R, NG>(dec, stride, n_blocks, p, out);
  } else {
    packed_kernel_32<K, R, NG>(dec, stride, n_blocks, p, out);
  }
}

template <class K, class P, class Dec, int NG>
void packed_rows(const Dec* dec, int64_t stride, int64_t n_blocks, int nr, const P* const* p,
                 float out[][2][kPackTokens]) {
  switch (nr) {
    case 4:
      packed_kernel<K, P, Dec, 4, NG>(dec, stride, n_blocks, p, out);
      break;
    case 3:
      packed_kernel<K, P, Dec, 3, NG>(dec, stride, n_blocks, p, out);
      break;
    case 2:
      packed_kernel<K, P, Dec, 2, NG>(dec, stride, n_blocks, p, out);
      break;
    default:
      packed_kernel<K, P, Dec, 1, NG>(dec, stride, n_blocks, p, out);
      break;
  }
}

// Cache blocking: the rows are decoded tile by tile into a per-thread buffer (which grows
// once), and the columns are walked in chunks, so that the slice of a decoded tile and the
// two token groups it meets (each about 24 KiB) stay in L1 while every row quad of the
// tile passes over them. Chunks after the first add to y.
constexpr size_t kL1Slice = 24 * 1024;

template <class K, class P>
void gemm_packed(const uint8_t* w, size_t row_bytes, int64_t n_rows, const void* packed,
                 int64_t n_tok, int64_t n_blocks, float* y, size_t y_stride) {
  using Dec = std::conditional_t<std::is_same_v<P, PackedQ8_K>, RowK, Row32>;
  thread_local std::vector<Dec> dec_buffer;
  const auto* base = static_cast<const P*>(packed);
  const int64_t n_groups = (n_tok + kPackTokens - 1) / kPackTokens;
  const int64_t chunk =
      std::clamp<int64_t>(static_cast<int64_t>(kL1Slice / (2 * sizeof(P))), 1, n_blocks);
  int64_t tile_rows = static_cast<int64_t>(kL1Slice / (sizeof(Dec) * static_cast<size_t>(chunk)));
  tile_rows = std::min(n_rows, std::max<int64_t>(kPackRows, tile_rows / kPackRows * kPackRows));
  if (dec_buffer.size() < static_cast<size_t>(tile_rows * n_blocks))
    dec_buffer.resize(static_cast<size_t>(tile_rows * n_blocks));
  // The tile's results, token-major, copied to y whole lines at a time at the end of the
  // tile: writing each row quad's results straight into y touches a cache line per token
  // per quad, which evicts y between quads once it outgrows L2.
  thread_local std::vector<float> tile_y_buffer;
  if (tile_y_buffer.size() < static_cast<size_t>(tile_rows * n_tok))
    tile_y_buffer.resize(static_cast<size_t>(tile_rows * n_tok));
  // Plain pointers from here on: in a shared library every use of a thread_local is a call
  // (__tls_get_addr), which inside these loops cost 1-2% of a prompt.
  Dec* const dec = dec_buffer.data();
  float* const tile_y = tile_y_buffer.data();
  alignas(32) float out[kPackRows][2][kPackTokens];
  for (int64_t r0 = 0; r0 < n_rows; r0 += tile_rows) {
    const int64_t nr = std::min(tile_rows, n_rows - r0);
    for (int64_t r = 0; r < nr; ++r)
      for (int64_t i = 0; i < n_blocks; ++i)
        decode_row<K>(w + (r0 + r) * row_bytes + i * K::kBytes, dec[r * n_blocks + i]);
    for (int64_t c0 = 0; c0 < n_blocks; c0 += chunk) {
      const int64_t nc = std::min(chunk, n_blocks - c0);
      for (int64_t g = 0; g < n_groups; g += 2) {
        const int ng = static_cast<int>(std::min<int64_t>(2, n_groups - g));
        const P* p[2] = {base + g * n_blocks + c0, base + (g + ng - 1) * n_blocks + c0};
        for (int64_t r = 0; r < nr; r += kPackRows) {
          const int nrr = static_cast<int>(std::min<int64_t>(kPackRows, nr - r));
          const Dec* d = dec + r * n_blocks + c0;
          if (ng == 2) {
            packed_rows<K, P, Dec, 2>(d, n_blocks, nc, nrr, p, out);
          } else {
            packed_rows<K, P, Dec, 1>(d, n_blocks, nc, nrr, p, out);
          }
          for (int gg = 0; gg < ng; ++gg) {
            const int64_t t0 = (g + gg) * kPackTokens;
            const int n_valid = static_cast<int>(std::min<int64_t>(kPackTokens, n_tok - t0));
            for (int rr = 0; rr < nrr; ++rr) {
              float* yo = tile_y + t0 * nr + r + rr;
              if (c0 == 0) {
                for (int t = 0; t < n_valid; ++t) yo[t * nr] = out[rr][gg][t];
              } else {
                for (int t = 0; t < n_valid; ++t) yo[t * nr] += out[rr][gg][t];
              }
            }
          }
        }
      }
    }
    for (int64_t t = 0; t < n_tok; ++t)
      std::memcpy(y + t * y_stride + r0, tile_y + t * nr, sizeof(float) * static_cast<size_t>(nr));
  }
}
#define HOSTLM_PACKED32(K) (gemm_packed<K, PackedQ8_0>)
#define HOSTLM_PACKEDK(K) (gemm_packed<K, PackedQ8_K>)
#else
#define HOSTLM_PACKED32(K) nullptr
#define HOSTLM_PACKEDK(K) nullptr
#endif

// ---------------------------------------------------------------- tiling over rows and tokens

template <class Act, class Rows>
void tiled(Rows rows_for, size_t block_bytes, const uint8_t* w, size_t row_bytes, int64_t n_rows,
           const void* act, size_t act_stride, int64_t n_tok, int64_t n_blocks, float* y,
           size_t y_stride) {
  const int64_t tile_rows =
      std::max<int64_t>(1, static_cast<int64_t>(kRowTileBytes / std::max<size_t>(1, row_bytes)));
  (void)block_bytes;
  const auto* base = static_cast<const uint8_t*>(act);
  for (int64_t r0 = 0; r0 < n_rows; r0 += tile_rows) {
    const int64_t nr = std::min(tile_rows, n_rows - r0);
    for (int64_t t0 = 0; t0 < n_tok; t0 += kTile) {
      const int nt = static_cast<int>(std::min<int64_t>(kTile, n_tok - t0));
      const Act* a[kTile];
      for (int t = 0; t < nt; ++t)
        a[t] = reinterpret_cast<const Act*>(base + (t0 + t) * act_stride);
      rows_for(nt)(w + r0 * row_bytes, row_bytes, nr, a, n_blocks, y + t0 * y_stride + r0,
                   y_stride);
    }
  }
}

template <class Act>
using RowsFn = void (*)(const uint8_t*, size_t, int64_t, const Act* const*, int64_t, float*,
                        size_t);

template <class K, template <class, int> class Fn, class Act, int... N>
constexpr RowsFn<Act> pick_rows(int nt, std::integer_sequence<int, N...>) {
  RowsFn<Act> fn = nullptr;
  ((nt == N + 1 ? (fn = &Fn<K, N + 1>::run, 0) : 0), ...);
  return fn;
}

template <class K, int NT>
struct Rows32 {
  static void run(const uint8_t* w, size_t rb, int64_t nr, const ActQ8_0* const* a, int64_t nb,
                  float* y, size_t ys) {
    rows32<K, NT>(w, rb, nr, a, nb, y, ys);
  }
};
template <class K, int NT>
struct RowsK {
  static void run(const uint8_t* w, size_t rb, int64_t nr, const ActQ8_K* const* a, int64_t nb,
                  float* y, size_t ys) {
    rowsk<K, NT>(w, rb, nr, a, nb, y, ys);
  }
};

template <class K>
void gemm32(const uint8_t* w, size_t row_bytes, int64_t n_rows, const void* act, size_t act_stride,
            int64_t n_tok, int64_t n_blocks, float* y, size_t y_stride) {
  tiled<ActQ8_0>(
      [](int nt) {
        return pick_rows<K, Rows32, ActQ8_0>(nt, std::make_integer_sequence<int, kTile>{});
      },
      K::kBytes, w, row_bytes, n_rows, act, act_stride, n_tok, n_blocks, y, y_stride);
}

template <class K>
void gemmk(const uint8_t* w, size_t row_bytes, int64_t n_rows, const void* act, size_t act_stride,
           int64_t n_tok, int64_t n_blocks, float* y, size_t y_stride) {
  tiled<ActQ8_K>(
      [](int nt) {
        return pick_rows<K, RowsK, ActQ8_K>(nt, std::make_integer_sequence<int, kTile>{});
      },
      K::kBytes, w, row_bytes, n_rows, act, act_stride, n_tok, n_blocks, y, y_stride);
}

struct Entry {
  DType type;
  QGemm k;
};

inline const Entry kEntries[] = {
    {DType::Q4_0, {ActKind::Q8_0, gemm32<Q4_0K>, HOSTLM_PACKED32(Q4_0K)}},
    {DType::Q4_1, {ActKind::Q8_0, gemm32<Q4_1K>, HOSTLM_PACKED32(Q4_1K)}},
    {DType::Q5_0, {ActKind::Q8_0, gemm32<Q5_0K>, HOSTLM_PACKED32(Q5_0K)}},
    {DType::Q5_1, {ActKind::Q8_0, gemm32<Q5_1K>, HOSTLM_PACKED32(Q5_1K)}},
    {DType::Q8_0, {ActKind::Q8_0, gemm32<Q8_0K>, HOSTLM_PACKED32(Q8_0K)}},
    {DType::IQ4_NL, {ActKind::Q8_0, gemm32<IQ4_NLK>, HOSTLM_PACKED32(IQ4_NLK)}},
    {DType::Q2_K, {ActKind::Q8_K, gemmk<Q2_KK>, HOSTLM_PACKEDK(Q2_KK)}},
    {DType::Q3_K, {ActKind::Q8_K, gemmk<Q3_KK>, HOSTLM_PACKEDK(Q3_KK)}},
    {DType::Q4_K, {ActKind::Q8_K, gemmk<Q4_KK>, HOSTLM_PACKEDK(Q4_KK)}},
    {DType::Q5_K, {ActKind::Q8_K, gemmk<Q5_KK>, HOSTLM_PACKEDK(Q5_KK)}},
    {DType::Q6_K, {ActKind::Q8_K, gemmk<Q6_KK>, HOSTLM_PACKEDK(Q6_KK)}},
    {DType::IQ4_XS, {ActKind::Q8_K, gemmk<IQ4_XSK>, HOSTLM_PACKEDK(IQ4_XSK)}},
    {DType::MXFP4, {ActKind::Q8_0, gemm32<MXFP4K>, HOSTLM_PACKED32(MXFP4K)}},
    {DType::IQ2_XXS, {ActKind::Q8_K, gemmk<IQ2_XXSK>, HOSTLM_PACKEDK(IQ2_XXSK)}},
    {DType::IQ2_XS, {ActKind::Q8_K, gemmk<IQ2_XSK>, HOSTLM_PACKEDK(IQ2_XSK)}},
    {DType::IQ2_S, {ActKind::Q8_K, gemmk<IQ2_SK>, HOSTLM_PACKEDK(IQ2_SK)}},
    {DType::IQ3_XXS, {ActKind::Q8_K, gemmk<IQ3_XXSK>, HOSTLM_PACKEDK(IQ3_XXSK)}},
    {DType::IQ3_S, {ActKind::Q8_K, gemmk<IQ3_SK>, HOSTLM_PACKEDK(IQ3_SK)}},
    {DType::IQ1_S, {ActKind::Q8_K, gemmk<IQ1_SK>, HOSTLM_PACKEDK(IQ1_SK)}},
    {DType::IQ1_M, {ActKind::Q8_K, gemmk<IQ1_MK>, HOSTLM_PACKEDK(IQ1_MK)}},
    {DType::TQ2_0, {ActKind::Q8_K, gemmk<TQ2_0K>, HOSTLM_PACKEDK(TQ2_0K)}},
};

inline const QGemm* find_entry(DType type) {
  for (const Entry& e : kEntries)
    if (e.type == type) return &e.k;
  return nullptr;
}
