// Piece decoders (pieces.h) of the codebook types IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS, IQ2_S,
// IQ3_XXS and IQ3_S: each group of 8 (or 4) weights is a codebook vector (iq_codebooks.h)
// with per-weight signs and a scale per 16 or 32 weights (spec 7.2, cpu/quants/iq_blocks.h).
//
// Every type here has 256-element blocks and four pieces per block: piece k is sub-blocks
// 2k and 2k+1 (elements 64k .. 64k + 63), range g its elements 64k + 16g + 0..15. A piece's
// q bytes are the signed codebook values, so that  value = a[g] * q  is the reference's
// product: scale times codebook value, then the sign (negation is exact). IQ1's values are
// scale * (v + delta) with v in {-1, 0, 1} and delta = +-1/8; its bytes hold 8v + 8 delta and
// a[g] = scale / 8 (exact), which is the same real product rounded once.
//
// These pieces do not take the one-token staged GEMV (it needs at most two ranges); decode runs
// the lane GEMV, batches the tile product, prefill the dequantize-then-GEMM path.
#pragma once
#include <cstdint>

#include "cuda/quants/iq_codebooks.h"
#include "cuda/quants/pieces.h"

namespace hostlm::cuda::quants {

// The bytes of `w` negated where bit k of `bits` (bits 0-3) is set, for byte k.
HQ_HD uint32_t with_signs(uint32_t w, uint32_t bits) {
  const uint32_t mask = spread4(bits & 15u) * 0xffu;
  return vsub4(w ^ mask, mask);
}

// Eight signs stored in seven bits: the eighth makes the number of minus signs even.
HQ_HD uint32_t signs_of_seven(uint32_t seven) { return seven | (parity(seven) << 7); }

// An 8-wide codebook vector with its eight signs as q words `at` and `at + 1`.
template <int kN>
HQ_HD void put_vector8(uint32_t (&q)[kN], int at, uint64_t vector, uint32_t signs) {
  q[at] = with_signs(static_cast<uint32_t>(vector), signs);
  q[at + 1] = with_signs(static_cast<uint32_t>(vector >> 32), signs >> 4);
}

// An IQ1 vector (values -1, 0, 1) as its bytes 8v + 1, or 8v - 1 where `minus`: two words.
template <int kN>
HQ_HD void put_iq1_vector(uint32_t (&q)[kN], int at, uint64_t vector, bool minus) {
  const uint32_t delta = minus ? 0xffffffffu : 0x01010101u;
  // Shifting the whole word moves each byte's top bits into the next byte's low three bits,
  // which the mask clears.
  q[at] = vadd4((static_cast<uint32_t>(vector) << 3) & 0xf8f8f8f8u, delta);
  q[at + 1] = vadd4((static_cast<uint32_t>(vector >> 32) << 3) & 0xf8f8f8f8u, delta);
}

// The shape every codebook type shares.
template <DType kT>
struct Codebook {
  static constexpr DType kType = kT;
  static constexpr int kBlockElems = 256, kPieces = 4, kRanges = 4, kOffset = 0;
  static constexpr bool kHasMin = false;
  using P = Piece<kRanges>;
  static HQ_HD void set_offsets(P& p, int k) {
    HQ_UNROLL for (int g = 0; g < kRanges; ++g) {
      p.m[g] = 0.f;
      p.off[g] = 64 * k + 16 * g;
    }
  }
  // The IQ2 scale of a nibble, in the reference's order of operations.
  static HQ_HD float iq2_scale(float d, uint32_t nibble) {
    return d * (0.5f + static_cast<float>(nibble)) * 0.25f;
  }
};

// IQ2_XXS: per sub-block 8 bytes: four 8-bit indices, then a word of four 7-bit sign groups
// and the 4-bit scale on top. Piece k: qs bytes 16k .. 16k + 15.
struct IQ2_XXS : Codebook<DType::IQ2_XXS> {
  template <bool kStream = true>
  static HQ_HD P load(const QuantMatrix& w, int64_t n, int k) {
    P p;
    const Words4 v = load_main16<kStream>(w.region[0] + n * 64 + 16 * k);
    const float d = half_to_float(load2(w.region[1] + n * 2));
    HQ_UNROLL for (int s = 0; s < 2; ++s) {
      const uint32_t index = v.w[2 * s], aux = v.w[2 * s + 1];
      HQ_UNROLL for (int l = 0; l < 4; ++l)
          put_vector8(p.q, 8 * s + 2 * l, HQ_LOOKUP(kIq2xxsWords, (index >> (8 * l)) & 255u),
                      signs_of_seven((aux >> (7 * l)) & 127u));
      p.a[2 * s] = p.a[2 * s + 1] = iq2_scale(d, aux >> 28);
    }
    set_offsets(p, k);
    return p;
  }
};

// IQ2_XS: 16-bit entries (9-bit index, 7 sign bits); a scale nibble per two entries. Piece k:
// entries 8k .. 8k + 7 and scale bytes 2k, 2k + 1 (nibble g for range g).
struct IQ2_XS : Codebook<DType::IQ2_XS> {
  template <bool kStream = true>
  static HQ_HD P load(const QuantMatrix& w, int64_t n, int k) {
    P p;
    const Words4 v = load_main16<kStream>(w.region[0] + n * 64 + 16 * k);
    const uint32_t scales = load2(w.region[1] + n * 8 + 2 * k);
    const float d = half_to_float(load2(w.region[2] + n * 2));
    HQ_UNROLL for (int j = 0; j < 8; ++j) {
      const uint32_t entry = (v.w[j / 2] >> (16 * (j % 2))) & 0xffffu;
      put_vector8(p.q, 2 * j, HQ_LOOKUP(kIq2xsWords, entry & 511u), signs_of_seven(entry >> 9));
    }
    HQ_UNROLL for (int g = 0; g < 4; ++g) p.a[g] = iq2_scale(d, (scales >> (4 * g)) & 15u);
    set_offsets(p, k);
    return p;
  }
};

// IQ2_S: 8-bit index bytes, then eight sign bits per entry; 2 high index bits per entry in
// qh; scales as IQ2_XS. Piece k: entries 8k .. 8k + 7.
struct IQ2_S : Codebook<DType::IQ2_S> {
  template <bool kStream = true>
  static HQ_HD P load(const QuantMatrix& w, int64_t n, int k) {
    P p;
    const uint64_t index = load8(w.region[0] + n * 64 + 8 * k);
    const uint64_t signs = load8(w.region[0] + n * 64 + 32 + 8 * k);
    const uint32_t high = load2(w.region[1] + n * 8 + 2 * k);
    const uint32_t scales = load2(w.region[2] + n * 8 + 2 * k);
    const float d = half_to_float(load2(w.region[3] + n * 2));
    HQ_UNROLL for (int j = 0; j < 8; ++j) {
      const auto i = static_cast<uint32_t>((index >> (8 * j)) & 255u) | ((high >> (2 * j)) & 3u)
                                                                            << 8;
      put_vector8(p.q, 2 * j, HQ_LOOKUP(kIq2sWords, i),
                  static_cast<uint32_t>(signs >> (8 * j)) & 255u);
    }
    HQ_UNROLL for (int g = 0; g < 4; ++g) p.a[g] = iq2_scale(d, (scales >> (4 * g)) & 15u);
    set_offsets(p, k);
    return p;
  }
};

// IQ3_XXS: 8-bit indices into 4-wide vectors (two per 8 weights); per sub-block a word of four
// 7-bit sign groups and the 4-bit scale. Piece k: index bytes 16k .. 16k + 15, words 2k, 2k+1.
struct IQ3_XXS : Codebook<DType::IQ3_XXS> {
  template <bool kStream = true>
  static HQ_HD P load(const QuantMatrix& w, int64_t n, int k) {
    P p;
    const Words4 v = load_main16<kStream>(w.region[0] + n * 64 + 16 * k);
    const uint64_t aux2 = load8(w.region[1] + n * 32 + 8 * k);
    const float d = half_to_float(load2(w.region[2] + n * 2));
    HQ_UNROLL for (int s = 0; s < 2; ++s) {
      const auto aux = static_cast<uint32_t>(aux2 >> (32 * s));
      HQ_UNROLL for (int l = 0; l < 4; ++l) {
        const uint32_t signs = signs_of_seven((aux >> (7 * l)) & 127u);
        const uint32_t pair = v.w[2 * s + l / 2] >> (16 * (l % 2));
        p.q[8 * s + 2 * l] = with_signs(HQ_LOOKUP(kIq3xxsWords, pair & 255u), signs);
        p.q[8 * s + 2 * l + 1] =
            with_signs(HQ_LOOKUP(kIq3xxsWords, (pair >> 8) & 255u), signs >> 4);
      }
      p.a[2 * s] = p.a[2 * s + 1] = d * (0.5f + static_cast<float>(aux >> 28)) * 0.5f;
    }
    set_offsets(p, k);
    return p;
  }
};

// IQ3_S: 9-bit indices into 4-wide vectors (the ninth bit in qh, a byte per sub-block), a
// sign byte per 8 weights, an odd scale 1 + 2 * nibble per sub-block. Piece k: index bytes
// 16k .. 16k + 15, qh bytes 2k, 2k+1, sign bytes 8k .. 8k + 7, scale byte k.
struct IQ3_S : Codebook<DType::IQ3_S> {
  template <bool kStream = true>
  static HQ_HD P load(const QuantMatrix& w, int64_t n, int k) {
    P p;
    const Words4 v = load_main16<kStream>(w.region[0] + n * 64 + 16 * k);
    const uint32_t high = load2(w.region[1] + n * 40 + 2 * k);
    const uint64_t signs = load8(w.region[1] + n * 40 + 8 + 8 * k);
    const uint32_t scales = w.region[2][n * 4 + k];
    const float d = half_to_float(load2(w.region[3] + n * 2));
    HQ_UNROLL for (int s = 0; s < 2; ++s) {
      const uint32_t qh = high >> (8 * s);
      HQ_UNROLL for (int l = 0; l < 4; ++l) {
        const auto sign = static_cast<uint32_t>(signs >> (8 * (4 * s + l)));
        HQ_UNROLL for (int h = 0; h < 2; ++h) {
          const int j = 2 * l + h;  // the lookup within the sub-block
          const uint32_t i = ((v.w[2 * s + j / 4] >> (8 * (j % 4))) & 255u) | ((qh >> j) & 1u) << 8;
          p.q[8 * s + j] = with_signs(HQ_LOOKUP(kIq3sWords, i), sign >> (4 * h));
        }
      }
      p.a[2 * s] = p.a[2 * s + 1] =
          d * static_cast<float>(1 + 2 * static_cast<int>((scales >> (4 * s)) & 15u));
    }
    set_offsets(p, k);
    return p;
  }
};

// IQ1_S: 8-bit index bytes, per sub-block a 16-bit word of four 3-bit high index parts, the
// 3-bit scale (2s + 1) and the delta's sign. Piece k: index bytes 8k .. 8k + 7, words 2k, 2k+1.
struct IQ1_S : Codebook<DType::IQ1_S> {
  template <bool kStream = true>
  static HQ_HD P load(const QuantMatrix& w, int64_t n, int k) {
    P p;
    const uint64_t index = load8(w.region[0] + n * 32 + 8 * k);
    const uint32_t qh2 = load4(w.region[1] + n * 16 + 4 * k);
    const float d = half_to_float(load2(w.region[2] + n * 2));
    HQ_UNROLL for (int s = 0; s < 2; ++s) {
      const uint32_t qh = (qh2 >> (16 * s)) & 0xffffu;
      HQ_UNROLL for (int l = 0; l < 4; ++l) {
        const uint32_t i = static_cast<uint32_t>((index >> (8 * (4 * s + l))) & 255u) |
                           ((qh >> (3 * l)) & 7u) << 8;
        put_iq1_vector(p.q, 8 * s + 2 * l, HQ_LOOKUP(kIq1sWords, i), (qh & 0x8000u) != 0);
      }
      const float dl = d * static_cast<float>(2 * static_cast<int>((qh >> 12) & 7u) + 1);
      p.a[2 * s] = p.a[2 * s + 1] = dl * 0.125f;
    }
    set_offsets(p, k);
    return p;
  }
};

// IQ1_M: 8-bit index bytes, a nibble per entry (3 high index bits, the delta's sign), a 3-bit
// scale per 16 weights, and the f16 block scale spread over the top nibbles of the four
// 16-bit scale words. Piece k: index bytes 8k .. 8k + 7, nibble bytes 4k .. 4k + 3, scale word k.
struct IQ1_M : Codebook<DType::IQ1_M> {
  static HQ_HD uint32_t scale_word(uint64_t sc, int i) {
    return static_cast<uint32_t>(sc >> (16 * i)) & 0xffffu;
  }
  template <bool kStream = true>
  static HQ_HD P load(const QuantMatrix& w, int64_t n, int k) {
    P p;
    const uint64_t index = load8(w.region[0] + n * 32 + 8 * k);
    const uint32_t nibbles = load4(w.region[1] + n * 16 + 4 * k);
    const uint64_t sc = load8(w.region[2] + n * 8);
    const uint32_t d_bits = (scale_word(sc, 0) >> 12) | ((scale_word(sc, 1) >> 8) & 0x00f0u) |
                            ((scale_word(sc, 2) >> 4) & 0x0f00u) | (scale_word(sc, 3) & 0xf000u);
    const float d = half_to_float(d_bits);
    HQ_UNROLL for (int j = 0; j < 8; ++j) {
      const uint32_t nib = (nibbles >> (4 * j)) & 15u;
      const uint32_t i = static_cast<uint32_t>((index >> (8 * j)) & 255u) | (nib & 7u) << 8;
      put_iq1_vector(p.q, 2 * j, HQ_LOOKUP(kIq1sWords, i), (nib & 8u) != 0);
    }
    const uint32_t scales = scale_word(sc, k);
    HQ_UNROLL for (int g = 0; g < 4; ++g) {
      const float dl = d * static_cast<float>(2 * static_cast<int>((scales >> (3 * g)) & 7u) + 1);
      p.a[g] = dl * 0.125f;
    }
    set_offsets(p, k);
    return p;
  }
};

}  // namespace hostlm::cuda::quants
