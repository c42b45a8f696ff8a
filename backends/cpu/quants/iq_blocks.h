// Dequantization of the codebook ("i-quant") types IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS, IQ2_S,
// IQ3_XXS and IQ3_S: groups of 4 or 8 weights stored as an index into a fixed table of small
// integer vectors (iq_grids.inc), with signs and scales per group. Each function reproduces
// gguf.quants.dequantize bit for bit, so the float operations follow its order: the group
// scale first, then scale * grid value, then the sign.
#pragma once
#include <bit>
#include <cstdint>

#include "cpu/quants/blocks.h"

namespace hostlm::cpu::quants {

#include "cpu/quants/iq_grids.inc"

namespace iq2_xxs {
inline constexpr int kElems = 256, kBytes = 66, kD = 0, kQs = 2;
}
namespace iq2_xs {
inline constexpr int kElems = 256, kBytes = 74, kD = 0, kQs = 2, kScales = 66;
}
namespace iq2_s {
inline constexpr int kElems = 256, kBytes = 82, kD = 0, kQs = 2, kSigns = 34, kQh = 66,
                     kScales = 74;
}
namespace iq3_xxs {
inline constexpr int kElems = 256, kBytes = 98, kD = 0, kQs = 2, kScales = 66;
}
namespace iq3_s {
inline constexpr int kElems = 256, kBytes = 110, kD = 0, kQs = 2, kQh = 66, kSigns = 74,
                     kScales = 106;
}
namespace iq1_s {
inline constexpr int kElems = 256, kBytes = 50, kD = 0, kQs = 2, kQh = 34;
}
namespace iq1_m {
inline constexpr int kElems = 256, kBytes = 56, kQs = 0, kQh = 32, kScales = 48;
}

// Eight signs in seven bits: the eighth makes the count of minus signs even.
inline constexpr uint8_t iq_signs8(uint32_t seven) {
  return static_cast<uint8_t>(seven | ((std::popcount(seven) & 1u) << 7));
}

// iq_signs8 of every seven-bit value, for the integer kernels' lookups.
struct IqSignTable {
  uint8_t v[128];
};
inline constexpr IqSignTable kIqSigns = [] {
  IqSignTable t{};
  for (uint32_t i = 0; i < 128; ++i) t.v[i] = iq_signs8(i);
  return t;
}();

inline float iq_sign(uint8_t signs, int bit) { return (signs >> bit) & 1 ? -1.f : 1.f; }

// 8 values of grid row `g` times db, signed by the bits of `signs`.
template <int kWidth>
inline void iq_put(const int8_t (&g)[kWidth], float db, uint8_t signs, int first_bit, float* y) {
  for (int k = 0; k < kWidth; ++k)
    y[k] = db * static_cast<float>(g[k]) * iq_sign(signs, first_bit + k);
}

inline void decode_iq2_xxs(const uint8_t* b, float* y) {
  const float d = load_f16(b + iq2_xxs::kD);
  for (int ib = 0; ib < 8; ++ib) {
    const uint8_t* idx = b + iq2_xxs::kQs + 8 * ib;
    const uint32_t aux = load_u32(idx + 4);
    const float db = d * (0.5f + static_cast<float>(aux >> 28)) * 0.25f;
    for (int l = 0; l < 4; ++l)
      iq_put(kIq2xxsGrid[idx[l]], db, iq_signs8((aux >> (7 * l)) & 127u), 0, y + 32 * ib + 8 * l);
  }
}

inline void decode_iq2_xs(const uint8_t* b, float* y) {
  const float d = load_f16(b + iq2_xs::kD);
  for (int j = 0; j < 32; ++j) {  // 32 lookups of 8; scale nibble j / 2
    const uint16_t q = load_u16(b + iq2_xs::kQs + 2 * j);
    const int nibble = (b[iq2_xs::kScales + j / 4] >> (4 * ((j / 2) % 2))) & 15;
    const float db = d * (0.5f + static_cast<float>(nibble)) * 0.25f;
    iq_put(kIq2xsGrid[q & 511], db, iq_signs8(q >> 9), 0, y + 8 * j);
  }
}

inline void decode_iq2_s(const uint8_t* b, float* y) {
  const float d = load_f16(b + iq2_s::kD);
  for (int j = 0; j < 32; ++j) {
    const int high = (b[iq2_s::kQh + j / 4] >> (2 * (j % 4))) & 3;
    const int index = b[iq2_s::kQs + j] | (high << 8);
    const int nibble = (b[iq2_s::kScales + j / 4] >> (4 * ((j / 2) % 2))) & 15;
    const float db = d * (0.5f + static_cast<float>(nibble)) * 0.25f;
    iq_put(kIq2sGrid[index], db, b[iq2_s::kSigns + j], 0, y + 8 * j);
  }
}

inline void decode_iq3_xxs(const uint8_t* b, float* y) {
  const float d = load_f16(b + iq3_xxs::kD);
  for (int ib = 0; ib < 8; ++ib) {
    const uint32_t aux = load_u32(b + iq3_xxs::kScales + 4 * ib);
    const float db = d * (0.5f + static_cast<float>(aux >> 28)) * 0.5f;
    for (int l = 0; l < 4; ++l) {
      const uint8_t signs = iq_signs8((aux >> (7 * l)) & 127u);
      const uint8_t* idx = b + iq3_xxs::kQs + 8 * ib + 2 * l;
      iq_put(kIq3xxsGrid[idx[0]], db, signs, 0, y + 32 * ib + 8 * l);
      iq_put(kIq3xxsGrid[idx[1]], db, signs, 4, y + 32 * ib + 8 * l + 4);
    }
  }
}

inline void decode_iq3_s(const uint8_t* b, float* y) {
  const float d = load_f16(b + iq3_s::kD);
  for (int ib = 0; ib < 8; ++ib) {
    const int nibble = (b[iq3_s::kScales + ib / 2] >> (4 * (ib % 2))) & 15;
    const float db = d * static_cast<float>(1 + 2 * nibble);
    for (int l = 0; l < 4; ++l) {
      const uint8_t signs = b[iq3_s::kSigns + 4 * ib + l];
      for (int h = 0; h < 2; ++h) {
        const int j = 8 * ib + 2 * l + h;  // the lookup
        const int index = b[iq3_s::kQs + j] | (((b[iq3_s::kQh + j / 8] >> (j % 8)) & 1) << 8);
        iq_put(kIq3sGrid[index], db, signs, 4 * h, y + 32 * ib + 8 * l + 4 * h);
      }
    }
  }
}

inline constexpr float kIq1Delta = 0.125f;

// dl * (grid value + delta) for the 8 values of one lookup.
inline void iq1_put(int index, float dl, float delta, float* y) {
  for (int k = 0; k < 8; ++k) y[k] = dl * (static_cast<float>(kIq1sGrid[index][k]) + delta);
}

inline void decode_iq1_s(const uint8_t* b, float* y) {
  const float d = load_f16(b + iq1_s::kD);
  for (int ib = 0; ib < 8; ++ib) {
    const uint16_t qh = load_u16(b + iq1_s::kQh + 2 * ib);
    const float dl = d * static_cast<float>(2 * ((qh >> 12) & 7) + 1);
    const float delta = qh & 0x8000 ? -kIq1Delta : kIq1Delta;
    for (int l = 0; l < 4; ++l) {
      const int index = b[iq1_s::kQs + 4 * ib + l] | (((qh >> (3 * l)) & 7) << 8);
      iq1_put(index, dl, delta, y + 32 * ib + 8 * l);
    }
  }
}

inline void decode_iq1_m(const uint8_t* b, float* y) {
  uint16_t sc[4];
  for (int i = 0; i < 4; ++i) sc[i] = load_u16(b + iq1_m::kScales + 2 * i);
  // The f16 super-block scale is spread over the top nibbles of the four scale words.
  const auto d_bits = static_cast<uint16_t>((sc[0] >> 12) | ((sc[1] >> 8) & 0x00F0) |
                                            ((sc[2] >> 4) & 0x0F00) | (sc[3] & 0xF000));
  const float d = f16_to_f32(d_bits);
  for (int j = 0; j < 32; ++j) {  // 32 lookups of 8; the scale of lookups j is number j / 2
    const int s = j / 2;
    const float dl = d * static_cast<float>(2 * ((sc[s / 4] >> (3 * (s % 4))) & 7) + 1);
    const int nib = (b[iq1_m::kQh + j / 2] >> (4 * (j % 2))) & 15;
    const int index = b[iq1_m::kQs + j] | ((nib & 7) << 8);
    iq1_put(index, dl, nib & 8 ? -kIq1Delta : kIq1Delta, y + 8 * j);
  }
}

}  // namespace hostlm::cpu::quants
