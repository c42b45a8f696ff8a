// Block layouts of the quantized GGUF types (spec 7.2) and exact scalar decoders of one block.
//
// The decoders reproduce gguf.quants.dequantize bit for bit. Every scale product is exact in
// float32 (an f16 scale has 11 significant bits, the integers it meets at most 14), except
// Q6_K's d*sc*q which rounds once whatever the association; so only that product and the
// final add of a min or offset round, and any evaluation order, fused or not, gives the same
// bits. The decoders still follow the reference's order, (d*sc)*q - dmin*mn, and the files of
// this folder are built with -ffp-contract=off, so that this never rests on luck.
//
// Blocks are read byte-wise (memcpy for multi-byte fields) because GGUF data is only 1-byte
// aligned inside a row and all fields are little-endian, as on every host we build for.
#pragma once
#include <cstdint>
#include <cstring>

#include "hostlm/half.h"

namespace hostlm::cpu::quants {

inline float load_f16(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return f16_to_f32(h);
}
inline uint32_t load_u32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
inline uint16_t load_u16(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}

// The IQ4 non-linear codebook.
inline constexpr int8_t kIq4Values[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                          1,    13,   25,  38,  53,  69,  89,  113};

// Byte offsets of each block's fields.
namespace q4_0 {
inline constexpr int kElems = 32, kBytes = 18, kD = 0, kQs = 2;
}
namespace q4_1 {
inline constexpr int kElems = 32, kBytes = 20, kD = 0, kM = 2, kQs = 4;
}
namespace q5_0 {
inline constexpr int kElems = 32, kBytes = 22, kD = 0, kQh = 2, kQs = 6;
}
namespace q5_1 {
inline constexpr int kElems = 32, kBytes = 24, kD = 0, kM = 2, kQh = 4, kQs = 8;
}
namespace q8_0 {
inline constexpr int kElems = 32, kBytes = 34, kD = 0, kQs = 2;
}
namespace iq4_nl {
inline constexpr int kElems = 32, kBytes = 18, kD = 0, kQs = 2;
}
namespace q2_k {
inline constexpr int kElems = 256, kBytes = 84, kScales = 0, kQs = 16, kD = 80, kDmin = 82;
}
namespace q3_k {
inline constexpr int kElems = 256, kBytes = 110, kHmask = 0, kQs = 32, kScales = 96, kD = 108;
}
namespace q4_k {
inline constexpr int kElems = 256, kBytes = 144, kD = 0, kDmin = 2, kScales = 4, kQs = 16;
}
namespace q5_k {
inline constexpr int kElems = 256, kBytes = 176, kD = 0, kDmin = 2, kScales = 4, kQh = 16, kQs = 48;
}
namespace q6_k {
inline constexpr int kElems = 256, kBytes = 210, kQl = 0, kQh = 128, kScales = 192, kD = 208;
}
namespace iq4_xs {
inline constexpr int kElems = 256, kBytes = 136, kD = 0, kScalesH = 2, kScalesL = 4, kQs = 8;
}
// The ternary types: weights in {-1, 0, 1} times one f16 scale per 256.
namespace tq1_0 {
inline constexpr int kElems = 256, kBytes = 54, kQs = 0, kQh = 48, kD = 52;
}
namespace tq2_0 {
inline constexpr int kElems = 256, kBytes = 66, kQs = 0, kD = 64;
}
// MXFP4 (OCP microscaling): 32 FP4 (E2M1) values under one E8M0 power-of-two scale.
namespace mxfp4 {
inline constexpr int kElems = 32, kBytes = 17, kE = 0, kQs = 1;
}

// The 6-bit scale and min of sub-block j (0..7) of Q4_K/Q5_K, from the 12 packed bytes.
inline void k4_scale_min(const uint8_t* s, int j, int& sc, int& mn) {
  if (j < 4) {
    sc = s[j] & 63;
    mn = s[j + 4] & 63;
  } else {
    sc = (s[j + 4] & 15) | ((s[j - 4] >> 6) << 4);
    mn = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
  }
}

// The signed 6-bit scale s (0..15) of Q3_K, from the 12 packed bytes.
inline int q3k_scale(const uint8_t* b, int s) {
  const int lo4 = s < 8 ? (b[s] & 15) : (b[s - 8] >> 4);
  const int hi2 = (b[8 + s % 4] >> (2 * (s / 4))) & 3;
  return (lo4 | (hi2 << 4)) - 32;
}

// The signed 6-bit scale of IQ4_XS sub-block ib (0..7).
inline int iq4xs_scale(const uint8_t* b, int ib) {
  const int lo = (b[iq4_xs::kScalesL + ib / 2] >> (4 * (ib % 2))) & 15;
  const int hi = (load_u16(b + iq4_xs::kScalesH) >> (2 * ib)) & 3;
  return (lo | (hi << 4)) - 32;
}

inline void decode_q4_0(const uint8_t* b, float* y) {
  const float d = load_f16(b + q4_0::kD);
  const uint8_t* qs = b + q4_0::kQs;
  for (int j = 0; j < 16; ++j) {
    y[j] = d * static_cast<float>((qs[j] & 15) - 8);
    y[j + 16] = d * static_cast<float>((qs[j] >> 4) - 8);
  }
}

inline void decode_q4_1(const uint8_t* b, float* y) {
  const float d = load_f16(b + q4_1::kD);
  const float m = load_f16(b + q4_1::kM);
  const uint8_t* qs = b + q4_1::kQs;
  for (int j = 0; j < 16; ++j) {
    y[j] = d * static_cast<float>(qs[j] & 15) + m;
    y[j + 16] = d * static_cast<float>(qs[j] >> 4) + m;
  }
}

inline void decode_q5_0(const uint8_t* b, float* y) {
  const float d = load_f16(b + q5_0::kD);
  const uint32_t h = load_u32(b + q5_0::kQh);
  const uint8_t* qs = b + q5_0::kQs;
  for (int j = 0; j < 16; ++j) {
    const int lo = (qs[j] & 15) | static_cast<int>(((h >> j) & 1) << 4);
    const int hi = (qs[j] >> 4) | static_cast<int>(((h >> (j + 16)) & 1) << 4);
    y[j] = d * static_cast<float>(lo - 16);
    y[j + 16] = d * static_cast<float>(hi - 16);
  }
}

inline void decode_q5_1(const uint8_t* b, float* y) {
  const float d = load_f16(b + q5_1::kD);
  const float m = load_f16(b + q5_1::kM);
  const uint32_t h = load_u32(b + q5_1::kQh);
  const uint8_t* qs = b + q5_1::kQs;
  for (int j = 0; j < 16; ++j) {
    const int lo = (qs[j] & 15) | static_cast<int>(((h >> j) & 1) << 4);
    const int hi = (qs[j] >> 4) | static_cast<int>(((h >> (j + 16)) & 1) << 4);
    y[j] = d * static_cast<float>(lo) + m;
    y[j + 16] = d * static_cast<float>(hi) + m;
  }
}

inline void decode_q8_0(const uint8_t* b, float* y) {
  const float d = load_f16(b + q8_0::kD);
  const uint8_t* qs = b + q8_0::kQs;
  for (int j = 0; j < 32; ++j) y[j] = static_cast<float>(static_cast<int8_t>(qs[j])) * d;
}

inline void decode_iq4_nl(const uint8_t* b, float* y) {
  const float d = load_f16(b + iq4_nl::kD);
  const uint8_t* qs = b + iq4_nl::kQs;
  for (int j = 0; j < 16; ++j) {
    y[j] = d * static_cast<float>(kIq4Values[qs[j] & 15]);
    y[j + 16] = d * static_cast<float>(kIq4Values[qs[j] >> 4]);
  }
}

inline void decode_q2_k(const uint8_t* b, float* y) {
  const float d = load_f16(b + q2_k::kD);
  const float dmin = load_f16(b + q2_k::kDmin);
  const uint8_t* scales = b + q2_k::kScales;
  int is = 0;
  for (int half = 0; half < 2; ++half) {
    const uint8_t* qs = b + q2_k::kQs + 32 * half;
    for (int shift = 0; shift < 8; shift += 2) {
      for (int g = 0; g < 2; ++g, ++is) {
        const float dl = d * static_cast<float>(scales[is] & 15);
        const float ml = dmin * static_cast<float>(scales[is] >> 4);
        for (int l = 0; l < 16; ++l)
          *y++ = dl * static_cast<float>((qs[16 * g + l] >> shift) & 3) - ml;
      }
    }
  }
}

inline void decode_q3_k(const uint8_t* b, float* y) {
  const float d = load_f16(b + q3_k::kD);
  const uint8_t* hmask = b + q3_k::kHmask;
  const uint8_t* scales = b + q3_k::kScales;
  int is = 0;
  uint8_t m = 1;
  for (int half = 0; half < 2; ++half) {
    const uint8_t* qs = b + q3_k::kQs + 32 * half;
    for (int shift = 0; shift < 8; shift += 2, m = static_cast<uint8_t>(m << 1)) {
      for (int g = 0; g < 2; ++g, ++is) {
        const float dl = d * static_cast<float>(q3k_scale(scales, is));
        for (int l = 0; l < 16; ++l) {
          const int q = ((qs[16 * g + l] >> shift) & 3) - ((hmask[16 * g + l] & m) ? 0 : 4);
          *y++ = dl * static_cast<float>(q);
        }
      }
    }
  }
}

inline void decode_q4_k(const uint8_t* b, float* y) {
  const float d = load_f16(b + q4_k::kD);
  const float dmin = load_f16(b + q4_k::kDmin);
  const uint8_t* scales = b + q4_k::kScales;
  for (int c = 0; c < 4; ++c) {
    const uint8_t* q = b + q4_k::kQs + 32 * c;
    int sc0, mn0, sc1, mn1;
    k4_scale_min(scales, 2 * c, sc0, mn0);
    k4_scale_min(scales, 2 * c + 1, sc1, mn1);
    const float d0 = d * static_cast<float>(sc0), m0 = dmin * static_cast<float>(mn0);
    const float d1 = d * static_cast<float>(sc1), m1 = dmin * static_cast<float>(mn1);
    for (int l = 0; l < 32; ++l) {
      y[64 * c + l] = d0 * static_cast<float>(q[l] & 15) - m0;
      y[64 * c + 32 + l] = d1 * static_cast<float>(q[l] >> 4) - m1;
    }
  }
}

inline void decode_q5_k(const uint8_t* b, float* y) {
  const float d = load_f16(b + q5_k::kD);
  const float dmin = load_f16(b + q5_k::kDmin);
  const uint8_t* scales = b + q5_k::kScales;
  const uint8_t* qh = b + q5_k::kQh;
  for (int c = 0; c < 4; ++c) {
    const uint8_t* q = b + q5_k::kQs + 32 * c;
    int sc0, mn0, sc1, mn1;
    k4_scale_min(scales, 2 * c, sc0, mn0);
    k4_scale_min(scales, 2 * c + 1, sc1, mn1);
    const float d0 = d * static_cast<float>(sc0), m0 = dmin * static_cast<float>(mn0);
    const float d1 = d * static_cast<float>(sc1), m1 = dmin * static_cast<float>(mn1);
    for (int l = 0; l < 32; ++l) {
      const int lo = (q[l] & 15) | (((qh[l] >> (2 * c)) & 1) << 4);
      const int hi = (q[l] >> 4) | (((qh[l] >> (2 * c + 1)) & 1) << 4);
      y[64 * c + l] = d0 * static_cast<float>(lo) - m0;
      y[64 * c + 32 + l] = d1 * static_cast<float>(hi) - m1;
    }
  }
}

inline void decode_q6_k(const uint8_t* b, float* y) {
  const float d = load_f16(b + q6_k::kD);
  for (int half = 0; half < 2; ++half) {
    const uint8_t* ql = b + q6_k::kQl + 64 * half;
    const uint8_t* qh = b + q6_k::kQh + 32 * half;
    const auto* sc = reinterpret_cast<const int8_t*>(b + q6_k::kScales + 8 * half);
    float* out = y + 128 * half;
    for (int l = 0; l < 32; ++l) {
      const int is = l / 16;
      const int q1 = ((ql[l] & 15) | (((qh[l] >> 0) & 3) << 4)) - 32;
      const int q2 = ((ql[l + 32] & 15) | (((qh[l] >> 2) & 3) << 4)) - 32;
      const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
      const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
      out[l] = (d * static_cast<float>(sc[is])) * static_cast<float>(q1);
      out[l + 32] = (d * static_cast<float>(sc[is + 2])) * static_cast<float>(q2);
      out[l + 64] = (d * static_cast<float>(sc[is + 4])) * static_cast<float>(q3);
      out[l + 96] = (d * static_cast<float>(sc[is + 6])) * static_cast<float>(q4);
    }
  }
}

inline void decode_iq4_xs(const uint8_t* b, float* y) {
  const float d = load_f16(b + iq4_xs::kD);
  for (int ib = 0; ib < 8; ++ib) {
    const float dl = d * static_cast<float>(iq4xs_scale(b, ib));
    const uint8_t* qs = b + iq4_xs::kQs + 16 * ib;
    for (int j = 0; j < 16; ++j) {
      y[32 * ib + j] = dl * static_cast<float>(kIq4Values[qs[j] & 15]);
      y[32 * ib + j + 16] = dl * static_cast<float>(kIq4Values[qs[j] >> 4]);
    }
  }
}

// TQ1_0 packs five ternary digits in a byte as a fixed-point fraction of 243: the digit k of
// byte q is the top of (q * 3^k mod 256) * 3 / 256 (0, 1, 2 for -1, 0, 1). Bytes 0-31 hold
// values 0-159 (digit k of byte j is value 32k + j), bytes 32-47 values 160-239 (160 + 16k + j)
// and the four qh bytes, four digits each, values 240-255 (240 + 4k + j).
inline float tq1_trit(uint8_t q, int k) {
  static constexpr uint8_t kPow3[5] = {1, 3, 9, 27, 81};
  const auto shifted = static_cast<uint8_t>(q * kPow3[k]);  // mod 256, as the format wraps
  return static_cast<float>(static_cast<int>((shifted * 3) >> 8) - 1);
}

inline void decode_tq1_0(const uint8_t* b, float* y) {
  const float d = load_f16(b + tq1_0::kD);
  for (int k = 0; k < 5; ++k) {
    for (int j = 0; j < 32; ++j) y[32 * k + j] = d * tq1_trit(b[tq1_0::kQs + j], k);
    for (int j = 0; j < 16; ++j) y[160 + 16 * k + j] = d * tq1_trit(b[tq1_0::kQs + 32 + j], k);
  }
  for (int k = 0; k < 4; ++k)
    for (int j = 0; j < 4; ++j) y[240 + 4 * k + j] = d * tq1_trit(b[tq1_0::kQh + j], k);
}

// TQ2_0: two bits a value (0, 1, 2 for -1, 0, 1; 3 reads as 2). Each half of 32 bytes holds
// 128 values: bits 2k of byte j are value 32k + j.
inline void decode_tq2_0(const uint8_t* b, float* y) {
  const float d = load_f16(b + tq2_0::kD);
  for (int half = 0; half < 2; ++half)
    for (int k = 0; k < 4; ++k)
      for (int j = 0; j < 32; ++j) {
        const int q = (b[tq2_0::kQs + 32 * half + j] >> (2 * k)) & 3;
        y[128 * half + 32 * k + j] = d * static_cast<float>(q - 1);
      }
}

// MXFP4: E2M1 codes as gguf reads them, doubled to integers (0, 0.5, 1, 1.5, 2, 3, 4, 6 and
// their negatives times 2), under half of the E8M0 scale: 2^(e - 128), a subnormal float for
// e < 2. Low nibbles are values 0-15, high nibbles 16-31. Every product is exact.
inline constexpr int8_t kMxfp4Values[16] = {0, 1,  2,  3,  4,  6,  8,  12,
                                            0, -1, -2, -3, -4, -6, -8, -12};

inline void decode_mxfp4(const uint8_t* b, float* y) {
  const float d = e8m0_half_to_f32(b[mxfp4::kE]);
  const uint8_t* qs = b + mxfp4::kQs;
  for (int j = 0; j < 16; ++j) {
    y[j] = d * static_cast<float>(kMxfp4Values[qs[j] & 15]);
    y[j + 16] = d * static_cast<float>(kMxfp4Values[qs[j] >> 4]);
  }
}

}  // namespace hostlm::cpu::quants
