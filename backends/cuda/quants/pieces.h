// Per-lane arithmetic of the quantized CUDA kernels, for weights in split form
// (split_layout.h): host and device code alike (portable.h), so the tests check it on the CPU.
//
// A "piece" is what one lane decodes in one step: 16 consecutive bytes of a block's main quant
// array (one 128-bit load) plus the scale fields those bytes need. It covers kRanges runs of
// 16 consecutive elements; element i of range g is off[g] + i within the block and has the
// value  a[g] * (q + kOffset) + m[g],  q being byte i of q[4g..4g+3] (a signed byte). Lanes
// take consecutive pieces of a row, so a warp's main loads are contiguous 512-byte spans.
//
// Dequantization (decode_range) is bit-identical to cpu/quants/blocks.h: a[g] is computed as
// the reference computes its scale, every a*q product is exact except Q6_K's (which has no
// add), so fused or unfused evaluation rounds the same way (see blocks.h).
//
// The decode GEMV (lane_dot) multiplies pieces with activations quantized to int8 per 32
// values (QuantActs): x_i ~= dx * xq_i. The integer dot of a range is exact (__dp4a), and
//   sum_i value_i * x_i ~= a * dx * sum_i q_i xq_i  +  (a * kOffset + m) * s16,
// where s16 = dx * sum of xq over the range's 16 values (precomputed once per activation).
#pragma once
#include <cmath>
#include <cstdint>

#include "cuda/quants/portable.h"
#include "cuda/quants/split_layout.h"
#include "hostlm/dtype.h"

namespace hostlm::cuda::quants {

// A quantized weight [rows, cols] in split form, as the kernels see it.
struct QuantMatrix {
  const uint8_t* region[4];
  int64_t rows, cols;
  int64_t nb;  // blocks per row
};

// The region pointers of a [rows, cols] tensor of `type` whose split copy starts at `base`.
inline QuantMatrix quant_matrix(DType type, const void* base, int64_t rows, int64_t cols) {
  const SplitLayout l = split_layout(type);
  QuantMatrix m{};
  m.rows = rows;
  m.cols = cols;
  m.nb = l.block_elems > 0 ? cols / l.block_elems : 0;
  const size_t n_blocks = static_cast<size_t>(rows * m.nb);
  for (int j = 0; j < l.n_regions; ++j)
    m.region[j] = static_cast<const uint8_t*>(base) + region_offset(l, j, n_blocks);
  return m;
}

// T rows of `cols` activations quantized to int8 per 32: q[t*cols + i], scale
// d[t*(cols/32) + i/32], and s16[t*(cols/16) + i/16] = scale * (sum of q over those 16).
struct QuantActs {
  const int8_t* q;
  const float* d;
  const float* s16;
  int64_t cols;
};

template <int kRanges>
struct Piece {
  uint32_t q[4 * kRanges];
  float a[kRanges];
  float m[kRanges];
  int off[kRanges];
};

// Low and high nibbles of the four bytes of `w` as bytes (elements 4i..4i+3 of two ranges).
HQ_HD uint32_t low_nibbles(uint32_t w) { return w & 0x0f0f0f0fu; }
HQ_HD uint32_t high_nibbles(uint32_t w) { return (w >> 4) & 0x0f0f0f0fu; }

// A 16-entry table of signed bytes as four little-endian words: the IQ4 codebook
// (cpu/quants/blocks.h kIq4Values) and MXFP4's doubled E2M1 values (kMxfp4Values).
HQ_HD constexpr uint32_t pack4(int a, int b, int c, int d) {
  return static_cast<uint32_t>(static_cast<uint8_t>(a)) |
         static_cast<uint32_t>(static_cast<uint8_t>(b)) << 8 |
         static_cast<uint32_t>(static_cast<uint8_t>(c)) << 16 |
         static_cast<uint32_t>(static_cast<uint8_t>(d)) << 24;
}
struct Table16 {
  uint32_t w0, w1, w2, w3;
};
// Functions, not variables: a table variable copied in device code would need a device copy.
HQ_HD Table16 iq4_table() {
  return {pack4(-127, -104, -83, -65), pack4(-49, -35, -22, -10), pack4(1, 13, 25, 38),
          pack4(53, 69, 89, 113)};
}
HQ_HD Table16 mxfp4_table() {
  return {pack4(0, 1, 2, 3), pack4(4, 6, 8, 12), pack4(0, -1, -2, -3), pack4(-4, -6, -8, -12)};
}

// Table values of the four 4-bit indices in the low 16 bits of `s` (index k in nibble k):
// one byte permute per half of the table, a third picks the half by bit 3 of each index. The
// table comes by value, so device code needs no copy of it in memory.
HQ_HD uint32_t lookup4(uint32_t s, Table16 t) {
  const uint32_t low = byte_perm(t.w0, t.w1, s & 0x7777u);
  const uint32_t high = byte_perm(t.w2, t.w3, s & 0x7777u);
  return byte_perm(low, high, 0x3210u | ((s & 0x8888u) >> 1));
}

// Table bytes of word w: `lo` gets the values of its low nibbles, `hi` of its high nibbles.
HQ_HD void table_decode(uint32_t w, Table16 t, uint32_t& lo, uint32_t& hi) {
  const uint32_t r1 = lookup4(w & 0xffffu, t);  // lo0 hi0 lo1 hi1
  const uint32_t r2 = lookup4(w >> 16, t);      // lo2 hi2 lo3 hi3
  lo = byte_perm(r1, r2, 0x6420u);
  hi = byte_perm(r1, r2, 0x7531u);
}
HQ_HD void iq4_decode(uint32_t w, uint32_t& lo, uint32_t& hi) {
  table_decode(w, iq4_table(), lo, hi);
}

// Types with 32-element blocks and one 16-byte nibble array (Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL):
// one piece per block, range 0 = low nibbles (elements 0-15), range 1 = high (16-31).
template <DType kT, int kOff, bool kMin>
struct Nibble32 {
  static constexpr DType kType = kT;
  static constexpr int kBlockElems = 32, kPieces = 1, kRanges = 2, kOffset = kOff;
  static constexpr bool kHasMin = kMin;
  using P = Piece<kRanges>;
  static HQ_HD void set_ranges(P& p, float a, float m) {
    p.a[0] = p.a[1] = a;
    p.m[0] = p.m[1] = m;
    p.off[0] = 0;
    p.off[1] = 16;
  }
};

struct Q4_0 : Nibble32<DType::Q4_0, -8, false> {
  template <bool kStream = true>
  static HQ_HD P load(const QuantMatrix& w, int64_t n, int) {
    P p;
    const Words4 v = load_main16<kStream>(w.region[0] + n * 16);
    HQ_UNROLL for (int i = 0; i < 4; ++i) {
      p.q[i] = low_nibbles(v.w[i]);
      p.q[4 + i] = high_nibbles(v.w[i]);
    }
    set_ranges(p, half_to_float(load2(w.region[1] + n * 2)), 0.f);
    return p;
  }
};

struct Q4_1 : Nibble32<DType::Q4_1, 0, true> {
  template <bool kStream = true>
  static HQ_HD P load(const QuantMatrix& w, int64_t n, int) {
    P p;
    const Words4 v = load_main16<kStream>(w.region[0] + n * 16);
    HQ_UNROLL for (int i = 0; i < 4; ++i) {
      p.q[i] = low_nibbles(v.w[i]);
      p.q[4 + i] = high_nibbles(v.w[i]);
    }
    const uint32_t dm = load4(w.region[1] + n * 4);
    set_ranges(p, half_to_float(dm & 0xffffu), half_to_float(dm >> 16));
    return p;
  }
};

// Q5_0 / Q5_1: bit j of qh is bit 4 of element j.
HQ_HD void add_fifth_bits(uint32_t (&q)[8], uint32_t qh) {
  HQ_UNROLL for (int i = 0; i < 4; ++i) {
    q[i] |= spread4((qh >> (4 * i)) & 15u) << 4;
    q[4 + i] |= spread4((qh >> (16 + 4 * i)) & 15u) << 4;
  }
}

struct Q5_0 : Nibble32<DType::Q5_0, -16, false> {
  template <bool kStream = true>
  static HQ_HD P load(const QuantMatrix& w, int64_t n, int) {
    P p;
    const Words4 v = load_main16<kStream>(w.region[0] + n * 16);
    HQ_UNROLL for (int i = 0; i < 4; ++i) {
      p.q[i] = low_nibbles(v.w[i]);
      p.q[4 + i] = high_nibbles(v.w[i]);
    }
    add_fifth_bits(p.q, load4(w.region[1] + n * 4));
    set_ranges(p, half_to_float(load2(w.region[2] + n * 2)), 0.f);
    return p;
  }
};

struct Q5_1 : Nibble32<DType::Q5_1, 0, true> {
  template <bool kStream = true>
  static HQ_HD P load(const QuantMatrix& w, int64_t n, int) {
    P p;
    const Words4 v = load_main16<kStream>(w.region[0] + n * 16);
    HQ_UNROLL for (int i = 0; i < 4; ++i) {
      p.q[i] = low_nibbles(v.w[i]);
      p.q[4 + i] = high_nibbles(v.w[i]);
    }
    add_fifth_bits(p.q, load4(w.region[1] + n * 4));
    const uint32_t dm = load4(w.region[2] + n * 4);
    set_ranges(p, half_to_float(dm & 0xffffu), half_to_float(dm >> 16));
    return p;
  }
};

struct IQ4_NL : Nibble32<DType::IQ4_NL, 0, false> {
  template <bool kStream = true>
  static HQ_HD P load(const QuantMatrix& w, int64_t n, int) {
    P p;
    const Words4 v = load_main16<kStream>(w.region[0] + n * 16);
    HQ_UNROLL for (int i = 0; i < 4; ++i) iq4_decode(v.w[i], p.q[i], p.q[4 + i]);
    set_ranges(p, half_to_float(load2(w.region[1] + n * 2)), 0.f);
    return p;
  }
};

// MXFP4: one piece per block, the E2M1 codes looked up as doubled integers, a = 2^(e - 128)
// (the E8M0 byte read as gguf reads it, hostlm/half.h e8m0_half_to_f32).
struct MXFP4 : Nibble32<DType::MXFP4, 0, false> {
  template <bool kStream = true>
  static HQ_HD P load(const QuantMatrix& w, int64_t n, int) {
    P p;
    const Words4 v = load_main16<kStream>(w.region[0] + n * 16);
    HQ_UNROLL for (int i = 0; i < 4; ++i) table_decode(v.w[i], mxfp4_table(), p.q[i], p.q[4 + i]);
    set_ranges(p, e8m0_half_to_float(w.region[1][n]), 0.f);
    return p;
  }
};

// Q8_0: two pieces per block, each 16 signed bytes.
struct Q8_0 {
  static constexpr DType kType = DType::Q8_0;
  static constexpr int kBlockElems = 32, kPieces = 2, kRanges = 1, kOffset = 0;
  static constexpr bool kHasMin = false;
  using P = Piece<kRanges>;
  template <bool kStream = true>
  static HQ_HD P load(const QuantMatrix& w, int64_t n, int k) {
    P p;
    const Words4 v = load_main16<kStream>(w.region[0] + n * 32 + 16 * k);
    HQ_UNROLL for (int i = 0; i < 4; ++i) p.q[i] = v.w[i];
    p.a[0] = half_to_float(load2(w.region[1] + n * 2));
    p.m[0] = 0.f;
    p.off[0] = 16 * k;
    return p;
  }
};

// Q2_K: piece k = (half h, group g) holds qs[32h + 16g ..][16]; its byte l carries element
// 128h + 32j + 16g + l in bits 2j..2j+1 (j = 0..3), with scale byte 8h + 2j + g.
struct Q2_K {
  static constexpr DType kType = DType::Q2_K;
  static constexpr int kBlockElems = 256, kPieces = 4, kRanges = 4, kOffset = 0;
  static constexpr bool kHasMin = true;
  using P = Piece<kRanges>;
  template <bool kStream = true>
  static HQ_HD P load(const QuantMatrix& w, int64_t n, int k) {
    P p;
    const int h = k >> 1, g = k & 1;
    const Words4 v = load_main16<kStream>(w.region[0] + n * 64 + 16 * k);
    const uint64_t sc8 = load8(w.region[1] + n * 16 + 8 * h);
    const uint32_t dm = load4(w.region[2] + n * 4);
    const float d = half_to_float(dm & 0xffffu), dmin = half_to_float(dm >> 16);
    HQ_UNROLL for (int j = 0; j < 4; ++j) {
      HQ_UNROLL for (int i = 0; i < 4; ++i) p.q[4 * j + i] = (v.w[i] >> (2 * j)) & 0x03030303u;
      const uint32_t sc = static_cast<uint32_t>(sc8 >> (16 * j + 8 * g)) & 0xffu;
      p.a[j] = d * static_cast<float>(sc & 15u);
      p.m[j] = -(dmin * static_cast<float>(sc >> 4));
      p.off[j] = 128 * h + 32 * j + 16 * g;
    }
    return p;
  }
};

// Q3_K: as Q2_K, plus bit 4h + j of hmask[16g + l] as bit 2 (set means no -4).
struct Q3_K {
  static constexpr DType kType = DType::Q3_K;
  static constexpr int kBlockElems = 256, kPieces = 4, kRanges = 4, kOffset = -4;
  static constexpr bool kHasMin = false;
  using P = Piece<kRanges>;
  template <bool kStream = true>
  static HQ_HD P load(const QuantMatrix& w, int64_t n, int k) {
    P p;
    const int h = k >> 1, g = k & 1;
    const Words4 v = load_main16<kStream>(w.region[1] + n * 64 + 16 * k);
    const Words4 hm = load_main16<kStream>(w.region[0] + n * 32 + 16 * g);
    const uint8_t* sc = w.region[2] + n * 12;
    const uint32_t s0 = load4(sc), s1 = load4(sc + 4), s2 = load4(sc + 8);
    const float d = half_to_float(load2(w.region[3] + n * 2));
    HQ_UNROLL for (int j = 0; j < 4; ++j) {
      HQ_UNROLL for (int i = 0; i < 4; ++i) p.q[4 * j + i] =
          ((v.w[i] >> (2 * j)) & 0x03030303u) | (((hm.w[i] >> (4 * h + j)) & 0x01010101u) << 2);
      // Scale 8h + 2j + g: low 4 bits from byte 2j + g (nibble h), high 2 bits from byte
      // 8 + 2(j % 2) + g at bit 2(2h + j/2).
      const uint32_t lo_byte = ((j < 2 ? s0 : s1) >> (8 * ((2 * j) % 4) + 8 * g)) & 0xffu;
      const uint32_t hi_byte = (s2 >> (16 * (j % 2) + 8 * g)) & 0xffu;
      const int scale = static_cast<int>(((lo_byte >> (4 * h)) & 15u) |
                                         (((hi_byte >> (2 * (2 * h + j / 2))) & 3u) << 4)) -
                        32;
      p.a[j] = d * static_cast<float>(scale);
      p.m[j] = 0.f;
      p.off[j] = 128 * h + 32 * j + 16 * g;
    }
    return p;
  }
};

// The 6-bit scales and mins of Q4_K/Q5_K sub-blocks 2c and 2c+1 from the 12 scale bytes
// (words s[0..2]): the reference's k4_scale_min for both sub-blocks at once, on the byte pair
// (2c % 4, 2c % 4 + 1) of each word held in one 16-bit lane.
HQ_HD void k4_scales(const uint32_t (&s)[3], int c, int (&sc)[2], int (&mn)[2]) {
  const int shift = 16 * (c % 2);
  const uint32_t b0 = (s[0] >> shift) & 0xffffu, b1 = (s[1] >> shift) & 0xffffu;
  const uint32_t b2 = (s[2] >> shift) & 0xffffu;
  uint32_t scs, mns;
  if (c < 2) {
    scs = b0 & 0x3f3fu;
    mns = b1 & 0x3f3fu;
  } else {
    scs = (b2 & 0x0f0fu) | ((b0 >> 2) & 0x3030u);
    mns = ((b2 >> 4) & 0x0f0fu) | ((b1 >> 2) & 0x3030u);
  }
  sc[0] = static_cast<int>(scs & 0xffu);
  sc[1] = static_cast<int>(scs >> 8);
  mn[0] = static_cast<int>(mns & 0xffu);
  mn[1] = static_cast<int>(mns >> 8);
}

// Q4_K / Q5_K: piece k = (chunk c, half e) holds qs[32c + 16e ..][16]: low nibbles are
// elements 64c + 16e + l of sub-block 2c, high nibbles 64c + 32 + 16e + l of sub-block 2c+1.
template <DType kT>
struct K45 {
  static constexpr DType kType = kT;
  static constexpr int kBlockElems = 256, kPieces = 8, kRanges = 2, kOffset = 0;
  static constexpr bool kHasMin = true;
  using P = Piece<kRanges>;
  template <bool kStream = true>
  static HQ_HD P load(const QuantMatrix& w, int64_t n, int k) {
    constexpr bool kQ5 = kT == DType::Q5_K;
    P p;
    const int c = k >> 1, e = k & 1;
    const Words4 v = load_main16<kStream>(w.region[0] + n * 128 + 16 * k);
    HQ_UNROLL for (int i = 0; i < 4; ++i) {
      p.q[i] = low_nibbles(v.w[i]);
      p.q[4 + i] = high_nibbles(v.w[i]);
    }
    if constexpr (kQ5) {
      const Words4 qh = load_main16<kStream>(w.region[1] + n * 32 + 16 * e);
      HQ_UNROLL for (int i = 0; i < 4; ++i) {
        p.q[i] |= ((qh.w[i] >> (2 * c)) & 0x01010101u) << 4;
        p.q[4 + i] |= ((qh.w[i] >> (2 * c + 1)) & 0x01010101u) << 4;
      }
    }
    const Words4 head = load16(w.region[kQ5 ? 2 : 1] + n * 16);
    const float d = half_to_float(head.w[0] & 0xffffu), dmin = half_to_float(head.w[0] >> 16);
    const uint32_t s[3] = {head.w[1], head.w[2], head.w[3]};
    int sc[2], mn[2];
    k4_scales(s, c, sc, mn);
    HQ_UNROLL for (int r = 0; r < 2; ++r) {
      p.a[r] = d * static_cast<float>(sc[r]);
      p.m[r] = -(dmin * static_cast<float>(mn[r]));
      p.off[r] = 64 * c + 32 * r + 16 * e;
    }
    return p;
  }
};
using Q4_K = K45<DType::Q4_K>;
using Q5_K = K45<DType::Q5_K>;

// Q6_K: piece k = (half h, quarter kk) holds ql[64h + 16kk ..][16]. Low nibbles are elements
// 128h + 16kk + l (qh bits 2(kk/2)), high nibbles 128h + 64 + 16kk + l (qh bits 4 + 2(kk/2)),
// qh byte 32h + 16(kk % 2) + l; scales 8h + kk and 8h + kk + 4.
struct Q6_K {
  static constexpr DType kType = DType::Q6_K;
  static constexpr int kBlockElems = 256, kPieces = 8, kRanges = 2, kOffset = -32;
  static constexpr bool kHasMin = false;
  using P = Piece<kRanges>;
  template <bool kStream = true>
  static HQ_HD P load(const QuantMatrix& w, int64_t n, int k) {
    P p;
    const int h = k >> 2, kk = k & 3;
    const Words4 v = load_main16<kStream>(w.region[0] + n * 128 + 16 * k);
    const Words4 qh = load_main16<kStream>(w.region[1] + n * 64 + 32 * h + 16 * (kk & 1));
    const int shift = 2 * (kk >> 1);
    HQ_UNROLL for (int i = 0; i < 4; ++i) {
      p.q[i] = low_nibbles(v.w[i]) | (((qh.w[i] >> shift) & 0x03030303u) << 4);
      p.q[4 + i] = high_nibbles(v.w[i]) | (((qh.w[i] >> (shift + 4)) & 0x03030303u) << 4);
    }
    const uint64_t sc8 = load8(w.region[2] + n * 16 + 8 * h);
    const float d = half_to_float(load2(w.region[3] + n * 2));
    HQ_UNROLL for (int r = 0; r < 2; ++r) {
      const int8_t sc = static_cast<int8_t>(static_cast<uint8_t>(sc8 >> (8 * kk + 32 * r)));
      p.a[r] = d * static_cast<float>(sc);
      p.m[r] = 0.f;
      p.off[r] = 128 * h + 64 * r + 16 * kk;
    }
    return p;
  }
};

// IQ4_XS: piece k is sub-block k (qs[16k ..][16]), low nibbles elements 32k + l, high
// 32k + 16 + l, with the signed 6-bit scale k of the 8-byte header.
struct IQ4_XS {
  static constexpr DType kType = DType::IQ4_XS;
  static constexpr int kBlockElems = 256, kPieces = 8, kRanges = 2, kOffset = 0;
  static constexpr bool kHasMin = false;
  using P = Piece<kRanges>;
  template <bool kStream = true>
  static HQ_HD P load(const QuantMatrix& w, int64_t n, int k) {
    P p;
    const Words4 v = load_main16<kStream>(w.region[0] + n * 128 + 16 * k);
    HQ_UNROLL for (int i = 0; i < 4; ++i) iq4_decode(v.w[i], p.q[i], p.q[4 + i]);
    const uint64_t head = load8(w.region[1] + n * 8);
    const int scale =
        static_cast<int>(((head >> (32 + 4 * k)) & 15u) | (((head >> (16 + 2 * k)) & 3u) << 4)) -
        32;
    const float a =
        half_to_float(static_cast<uint32_t>(head & 0xffffu)) * static_cast<float>(scale);
    HQ_UNROLL for (int r = 0; r < 2; ++r) {
      p.a[r] = a;
      p.m[r] = 0.f;
      p.off[r] = 32 * k + 16 * r;
    }
    return p;
  }
};

// The piece decoders must agree with the region table.
static_assert(split_layout(DType::Q8_0).regions[0].size == 32 * Q8_0::kPieces / 2);
static_assert(split_layout(DType::Q6_K).regions[0].size == 16 * Q6_K::kPieces);
static_assert(split_layout(DType::Q4_K).regions[0].size == 16 * Q4_K::kPieces);
static_assert(split_layout(DType::Q2_K).regions[0].size == 16 * Q2_K::kPieces);
static_assert(split_layout(DType::Q3_K).regions[1].size == 16 * Q3_K::kPieces);
static_assert(split_layout(DType::IQ4_XS).regions[0].size == 16 * IQ4_XS::kPieces);

// The 16 values of range g of a piece, bit-identical to the CPU decoders.
template <class Q>
HQ_HD void decode_range(const typename Q::P& p, int g, float (&v)[16]) {
  HQ_UNROLL for (int i = 0; i < 16; ++i) {
    const int q = byte_of(p.q[4 * g + i / 4], i % 4) + Q::kOffset;
    float f = p.a[g] * static_cast<float>(q);
    if constexpr (Q::kHasMin) f += p.m[g];
    v[i] = f;
  }
}

HQ_HD int64_t min_i64(int64_t a, int64_t b) { return a < b ? a : b; }

// The pieces `piece` of rows row0 .. row0 + kR - 1 (rows past the end repeat the last row).
template <class Q, int kR>
HQ_HD void load_rows(const QuantMatrix& w, int64_t row0, uint32_t piece, typename Q::P (&p)[kR]) {
  const uint32_t b = piece / Q::kPieces;
  const int k = static_cast<int>(piece % Q::kPieces);
  HQ_UNROLL for (int r = 0; r < kR; ++r) p[r] =
      Q::load(w, min_i64(row0 + r, w.rows - 1) * w.nb + b, k);
}

// acc[r][t] += piece `piece` of row row0 + r times the activations of token t. Activation
// offsets are 32-bit (T * cols is far below 2^32), which keeps the address arithmetic short.
template <class Q, int kT, int kR>
HQ_HD void accumulate(const QuantActs& x, uint32_t piece, const typename Q::P (&p)[kR], int T,
                      float (&acc)[kR][kT]) {
  const uint32_t block_start = piece / Q::kPieces * Q::kBlockElems;
  const auto cols = static_cast<uint32_t>(x.cols);
  HQ_UNROLL for (int t = 0; t < kT; ++t) {
    if (t >= T) continue;  // (a break here makes ptxas spill)
    HQ_UNROLL for (int g = 0; g < Q::kRanges; ++g) {
      // The same element offsets in every row.
      const uint32_t e =
          static_cast<uint32_t>(t) * cols + block_start + static_cast<uint32_t>(p[0].off[g]);
      const Words4 xv = load16(x.q + e);
      const float dx = x.d[e >> 5];
      const float s16 = x.s16[e >> 4];
      HQ_UNROLL for (int r = 0; r < kR; ++r) {
        int sumi = 0;
        HQ_UNROLL for (int i = 0; i < 4; ++i) sumi = dp4a(p[r].q[4 * g + i], xv.w[i], sumi);
        float acc_rt = acc[r][t] + p[r].a[g] * (dx * static_cast<float>(sumi));
        if constexpr (Q::kOffset != 0) acc_rt += p[r].a[g] * static_cast<float>(Q::kOffset) * s16;
        if constexpr (Q::kHasMin) acc_rt += p[r].m[g] * s16;
        acc[r][t] = acc_rt;
      }
    }
  }
}

// One lane's share of y[t, row0 + r] (r < kR, t < T <= kT): pieces lane, lane + 32, ... of
// each row, accumulated into acc. Software-pipelined: the next step's weight loads are issued
// before this step's arithmetic, so every warp keeps two steps of weight bytes in flight (at
// the end of a row they re-read its last piece: no branch, never used).
template <class Q, int kT, int kR>
HQ_HD void lane_dot(const QuantMatrix& w, const QuantActs& x, int64_t row0, int lane, int T,
                    float (&acc)[kR][kT]) {
  const uint32_t n_pieces = static_cast<uint32_t>(w.nb) * Q::kPieces;
  uint32_t piece = static_cast<uint32_t>(lane);
  if (piece >= n_pieces) return;
  typename Q::P cur[kR];
  load_rows<Q, kR>(w, row0, piece, cur);
  for (; piece < n_pieces; piece += 32) {
    typename Q::P next[kR];
    load_rows<Q, kR>(w, row0, piece + 32 < n_pieces ? piece + 32 : n_pieces - 1, next);
    accumulate<Q, kT, kR>(x, piece, cur, T, acc);
    HQ_UNROLL for (int r = 0; r < kR; ++r) cur[r] = next[r];
  }
}

// Quantizes 32 activations: q = round(x * 127 / amax) (ties to even), d = amax / 127,
// s16 = d * (sum of q over each half). An all-zero block gets d = 0 and q = 0. The device
// kernel computes the same numbers with one lane per value.
HQ_HD void quantize_block32(const float* x, int8_t* q, float* d, float* s16) {
  float amax = 0.f;
  for (int i = 0; i < 32; ++i) amax = fmaxf(amax, fabsf(x[i]));
  const float inv = amax > 0.f ? 127.f / amax : 0.f;
  int sums[2] = {0, 0};
  for (int i = 0; i < 32; ++i) {
    const int v = static_cast<int>(nearbyintf(x[i] * inv));
    q[i] = static_cast<int8_t>(v);
    sums[i / 16] += v;
  }
  *d = amax / 127.f;
  s16[0] = *d * static_cast<float>(sums[0]);
  s16[1] = *d * static_cast<float>(sums[1]);
}

}  // namespace hostlm::cuda::quants
