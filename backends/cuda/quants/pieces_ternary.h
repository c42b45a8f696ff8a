// Piece decoders (pieces.h) of the ternary types TQ1_0 and TQ2_0: weights in {-1, 0, 1} times
// one f16 scale per 256 (spec 7.2, cpu/quants/blocks.h). A piece's q bytes are the stored
// digits 0, 1, 2 and kOffset = -1, so  value = d * (q - 1)  is the reference's product.
#pragma once
#include <cstdint>

#include "cuda/quants/pieces.h"

namespace hostlm::cuda::quants {

// TQ2_0: two bits a weight. Piece k = (half h, group g) holds qs[32h + 16g ..][16]; bits 2j of
// its byte l are element 128h + 32j + 16g + l (the layout of Q2_K's quants).
struct TQ2_0 {
  static constexpr DType kType = DType::TQ2_0;
  static constexpr int kBlockElems = 256, kPieces = 4, kRanges = 4, kOffset = -1;
  static constexpr bool kHasMin = false;
  using P = Piece<kRanges>;
  template <bool kStream = true>
  static HQ_HD P load(const QuantMatrix& w, int64_t n, int k) {
    P p;
    const int h = k >> 1, g = k & 1;
    const Words4 v = load_main16<kStream>(w.region[0] + n * 64 + 16 * k);
    const float d = half_to_float(load2(w.region[1] + n * 2));
    HQ_UNROLL for (int j = 0; j < 4; ++j) {
      HQ_UNROLL for (int i = 0; i < 4; ++i) p.q[4 * j + i] = (v.w[i] >> (2 * j)) & 0x03030303u;
      p.a[j] = d;
      p.m[j] = 0.f;
      p.off[j] = 128 * h + 32 * j + 16 * g;
    }
    return p;
  }
};

// Digit `n` (the weight of 3^n in the byte's fixed-point base-3 form) of each byte of `w`:
// (byte * 3^n mod 256) * 3 / 256, computed on two bytes at a time in 16-bit lanes that never
// overflow into each other.
HQ_HD uint32_t ternary_digits(uint32_t w, uint32_t pow3) {
  uint32_t even = ((w & 0x00ff00ffu) * pow3) & 0x00ff00ffu;
  uint32_t odd = (((w >> 8) & 0x00ff00ffu) * pow3) & 0x00ff00ffu;
  even = ((even * 3u) >> 8) & 0x00030003u;
  odd = ((odd * 3u) >> 8) & 0x00030003u;
  return even | odd << 8;
}

// TQ1_0: five base-3 digits per qs byte and four per qh byte. Its 16 runs of 16 weights:
// runs 0-9 are digit r / 2 of qs bytes 16 (r % 2) .. + 15 (elements 32 (r / 2) + 16 (r % 2)),
// runs 10-14 digit r - 10 of qs bytes 32 .. 47 (elements 160 + 16 (r - 10)), run 15 is the qh
// bytes (element 240 + 4n + b is digit n of qh byte b). Piece k holds runs 4k .. 4k + 3.
struct TQ1_0 {
  static constexpr DType kType = DType::TQ1_0;
  static constexpr int kBlockElems = 256, kPieces = 4, kRanges = 4, kOffset = -1;
  static constexpr bool kHasMin = false;
  using P = Piece<kRanges>;
  // 3^n for n = 0..4, a byte each.
  static constexpr uint64_t kPow3 = 0x51'1b'09'03'01ull;
  static HQ_HD uint32_t pow3(int n) { return static_cast<uint32_t>(kPow3 >> (8 * n)) & 255u; }

  template <bool kStream = true>
  static HQ_HD P load(const QuantMatrix& w, int64_t n, int k) {
    P p;
    const uint8_t* qs = w.region[0] + n * 48;
    const Words4 part[3] = {load_main16<kStream>(qs), load_main16<kStream>(qs + 16),
                            load_main16<kStream>(qs + 32)};
    const uint32_t qh = load4(w.region[1] + n * 4);
    const float d = half_to_float(load2(w.region[2] + n * 2));
    HQ_UNROLL for (int g = 0; g < kRanges; ++g) {
      const int r = 4 * k + g;
      p.a[g] = d;
      p.m[g] = 0.f;
      if (r == 15) {
        HQ_UNROLL for (int i = 0; i < 4; ++i) p.q[4 * g + i] = ternary_digits(qh, pow3(i));
        p.off[g] = 240;
        continue;
      }
      const bool tail = r >= 10;
      const int digit = tail ? r - 10 : r / 2;
      // Selected word by word: a runtime index into `part` would put it in local memory.
      HQ_UNROLL for (int i = 0; i < 4; ++i) {
        const uint32_t src = tail ? part[2].w[i] : (r % 2 != 0 ? part[1].w[i] : part[0].w[i]);
        p.q[4 * g + i] = ternary_digits(src, pow3(digit));
      }
      p.off[g] = tail ? 160 + 16 * digit : 32 * digit + 16 * (r % 2);
    }
    return p;
  }
};

}  // namespace hostlm::cuda::quants
