// The codebook (IQ1/IQ2/IQ3) and TQ2_0 weight types in integer form, for the CPU's integer
// matrix kernels (qgemm_scalar.cpp, qgemm_simd.h): what the float decoders of iq_blocks.h
// compute as products, split into signed byte levels and small integer scales.
#pragma once
#include <cstdint>

#include "cpu/quants/iq_blocks.h"

namespace hostlm::cpu::quants {

// The integer form of the codebook types, for the integer kernels: value = d * sc * q with q
// a signed byte and one sc per 16 values (IQ2_XS, IQ2_S, IQ1_M) or per 32 (given twice); d is
// the f16 scale times the power of two the type's scale formula carries: IQ2 (0.5 + l) / 4 =
// (2l + 1) / 8, IQ3_XXS (0.5 + l) / 2 = (2l + 1) / 4, IQ3_S 1 + 2l, IQ1 (2l + 1) / 8 with the
// +-1/8 delta folded into q = 8 * grid + sign(delta). Each type: scales() returns d and fills
// the 16 scales, quants() writes the 256 q.
inline void put_signed(const int8_t* g, int n, uint8_t signs, int first_bit, int8_t* q) {
  for (int k = 0; k < n; ++k)
    q[k] = static_cast<int8_t>((signs >> (first_bit + k)) & 1 ? -g[k] : g[k]);
}
// IQ1: 8 * grid value + (1 or -1 as the delta's sign).
inline void put_iq1(int index, bool minus, int8_t* q) {
  for (int k = 0; k < 8; ++k)
    q[k] = static_cast<int8_t>(8 * kIq1sGrid[index][k] + (minus ? -1 : 1));
}
// Scale nibble k of the IQ2_XS / IQ2_S scale bytes, as 2n + 1.
inline int8_t iq2_scale16(const uint8_t* scales, int k) {
  return static_cast<int8_t>(2 * ((scales[k / 2] >> (4 * (k % 2))) & 15) + 1);
}

struct Iq2XxsLevels {
  static float scales(const uint8_t* b, int8_t* sc) {
    for (int ib = 0; ib < 8; ++ib)
      sc[2 * ib] = sc[2 * ib + 1] =
          static_cast<int8_t>(2 * (load_u32(b + iq2_xxs::kQs + 8 * ib + 4) >> 28) + 1);
    return load_f16(b + iq2_xxs::kD) * 0.125f;
  }
  static void quants(const uint8_t* b, int8_t* q) {
    for (int ib = 0; ib < 8; ++ib) {
      const uint8_t* idx = b + iq2_xxs::kQs + 8 * ib;
      const uint32_t aux = load_u32(idx + 4);
      for (int l = 0; l < 4; ++l)
        put_signed(kIq2xxsGrid[idx[l]], 8, kIqSigns.v[(aux >> (7 * l)) & 127u], 0,
                   q + 32 * ib + 8 * l);
    }
  }
};

struct Iq2XsLevels {
  static float scales(const uint8_t* b, int8_t* sc) {
    for (int k = 0; k < 16; ++k) sc[k] = iq2_scale16(b + iq2_xs::kScales, k);
    return load_f16(b + iq2_xs::kD) * 0.125f;
  }
  static void quants(const uint8_t* b, int8_t* q) {
    for (int j = 0; j < 32; ++j) {
      const uint16_t e = load_u16(b + iq2_xs::kQs + 2 * j);
      put_signed(kIq2xsGrid[e & 511], 8, kIqSigns.v[e >> 9], 0, q + 8 * j);
    }
  }
};

struct Iq2SLevels {
  static float scales(const uint8_t* b, int8_t* sc) {
    for (int k = 0; k < 16; ++k) sc[k] = iq2_scale16(b + iq2_s::kScales, k);
    return load_f16(b + iq2_s::kD) * 0.125f;
  }
  static void quants(const uint8_t* b, int8_t* q) {
    for (int j = 0; j < 32; ++j) {
      const int high = (b[iq2_s::kQh + j / 4] >> (2 * (j % 4))) & 3;
      put_signed(kIq2sGrid[b[iq2_s::kQs + j] | (high << 8)], 8, b[iq2_s::kSigns + j], 0, q + 8 * j);
    }
  }
};

struct Iq3XxsLevels {
  static float scales(const uint8_t* b, int8_t* sc) {
    for (int ib = 0; ib < 8; ++ib)
      sc[2 * ib] = sc[2 * ib + 1] =
          static_cast<int8_t>(2 * (load_u32(b + iq3_xxs::kScales + 4 * ib) >> 28) + 1);
    return load_f16(b + iq3_xxs::kD) * 0.25f;
  }
  static void quants(const uint8_t* b, int8_t* q) {
    for (int ib = 0; ib < 8; ++ib) {
      const uint32_t aux = load_u32(b + iq3_xxs::kScales + 4 * ib);
      for (int l = 0; l < 4; ++l) {
        const uint8_t signs = kIqSigns.v[(aux >> (7 * l)) & 127u];
        const uint8_t* idx = b + iq3_xxs::kQs + 8 * ib + 2 * l;
        put_signed(kIq3xxsGrid[idx[0]], 4, signs, 0, q + 32 * ib + 8 * l);
        put_signed(kIq3xxsGrid[idx[1]], 4, signs, 4, q + 32 * ib + 8 * l + 4);
      }
    }
  }
};

struct Iq3SLevels {
  static float scales(const uint8_t* b, int8_t* sc) {
    for (int ib = 0; ib < 8; ++ib)
      sc[2 * ib] = sc[2 * ib + 1] =
          static_cast<int8_t>(1 + 2 * ((b[iq3_s::kScales + ib / 2] >> (4 * (ib % 2))) & 15));
    return load_f16(b + iq3_s::kD);
  }
  static void quants(const uint8_t* b, int8_t* q) {
    for (int ib = 0; ib < 8; ++ib)
      for (int l = 0; l < 4; ++l)
        for (int h = 0; h < 2; ++h) {
          const int j = 8 * ib + 2 * l + h;
          const int index = b[iq3_s::kQs + j] | (((b[iq3_s::kQh + j / 8] >> (j % 8)) & 1) << 8);
          put_signed(kIq3sGrid[index], 4, b[iq3_s::kSigns + 4 * ib + l], 4 * h,
                     q + 32 * ib + 8 * l + 4 * h);
        }
  }
};

struct Iq1SLevels {
  static float scales(const uint8_t* b, int8_t* sc) {
    for (int ib = 0; ib < 8; ++ib)
      sc[2 * ib] = sc[2 * ib + 1] =
          static_cast<int8_t>(2 * ((load_u16(b + iq1_s::kQh + 2 * ib) >> 12) & 7) + 1);
    return load_f16(b + iq1_s::kD) * 0.125f;
  }
  static void quants(const uint8_t* b, int8_t* q) {
    for (int ib = 0; ib < 8; ++ib) {
      const uint16_t qh = load_u16(b + iq1_s::kQh + 2 * ib);
      for (int l = 0; l < 4; ++l)
        put_iq1(b[iq1_s::kQs + 4 * ib + l] | (((qh >> (3 * l)) & 7) << 8), (qh & 0x8000) != 0,
                q + 32 * ib + 8 * l);
    }
  }
};

struct Iq1MLevels {
  static float scales(const uint8_t* b, int8_t* sc) {
    uint16_t w[4];
    for (int i = 0; i < 4; ++i) w[i] = load_u16(b + iq1_m::kScales + 2 * i);
    for (int s = 0; s < 16; ++s)
      sc[s] = static_cast<int8_t>(2 * ((w[s / 4] >> (3 * (s % 4))) & 7) + 1);
    const auto d_bits = static_cast<uint16_t>((w[0] >> 12) | ((w[1] >> 8) & 0x00F0) |
                                              ((w[2] >> 4) & 0x0F00) | (w[3] & 0xF000));
    return f16_to_f32(d_bits) * 0.125f;
  }
  static void quants(const uint8_t* b, int8_t* q) {
    for (int j = 0; j < 32; ++j) {
      const int nib = (b[iq1_m::kQh + j / 2] >> (4 * (j % 2))) & 15;
      put_iq1(b[iq1_m::kQs + j] | ((nib & 7) << 8), (nib & 8) != 0, q + 8 * j);
    }
  }
};

// TQ2_0 in the same form: q = code - 1, one scale.
struct Tq2Levels {
  static float scales(const uint8_t* b, int8_t* sc) {
    for (int k = 0; k < 16; ++k) sc[k] = 1;
    return load_f16(b + tq2_0::kD);
  }
  static void quants(const uint8_t* b, int8_t* q) {
    for (int half = 0; half < 2; ++half)
      for (int k = 0; k < 4; ++k)
        for (int j = 0; j < 32; ++j)
          q[128 * half + 32 * k + j] =
              static_cast<int8_t>(((b[tq2_0::kQs + 32 * half + j] >> (2 * k)) & 3) - 1);
  }
};

}  // namespace hostlm::cpu::quants
