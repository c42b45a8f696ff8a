// How the CUDA backend keeps a quantized GGUF tensor in VRAM: the same bytes, still quantized,
// with each block field gathered into its own array ("region").
//
// Why not the blocks as stored: many GGUF blocks are only 2-byte aligned (Q8_0 is 34 bytes,
// Q4_0 18, Q6_K 210), so neighbouring lanes could not read them with 128-bit loads, and the
// decode GEMV is bound by how efficiently it streams weights. Split into regions, the quant
// bytes of every type form arrays of 16-byte multiples (perfectly coalesced uint4 loads) and
// the scales sit in small arrays of their own. Nothing is padded: the tensor keeps its size.
//
// A tensor of N blocks is stored as region 0 for all N blocks, then region 1, and so on;
// block n of region j lives at base + N * (sizes of regions < j) + n * size_j. Regions are
// ordered by decreasing alignment (16-byte multiples first), so every field is naturally
// aligned when the base is 16-byte aligned. Block n is block b of row r for n = r * nb + b.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "hostlm/dtype.h"

namespace hostlm::cuda::quants {

struct Field {
  int offset;  // in the GGUF block
  int size;
};

struct SplitLayout {
  int block_elems = 0;
  int block_bytes = 0;
  int n_regions = 0;
  Field regions[4] = {};
};

// The layout of a block type the CUDA backend computes with quantized, or one with
// n_regions == 0 for any other type. Offsets follow cpu/quants/blocks.h (spec 7.2).
constexpr SplitLayout split_layout(DType type) {
  switch (type) {
    case DType::Q4_0:  // d | qs[16]
      return {32, 18, 2, {{2, 16}, {0, 2}}};
    case DType::Q4_1:  // d m | qs[16]
      return {32, 20, 2, {{4, 16}, {0, 4}}};
    case DType::Q5_0:  // d | qh[4] | qs[16]
      return {32, 22, 3, {{6, 16}, {2, 4}, {0, 2}}};
    case DType::Q5_1:  // d m | qh[4] | qs[16]
      return {32, 24, 3, {{8, 16}, {4, 4}, {0, 4}}};
    case DType::Q8_0:  // d | qs[32]
      return {32, 34, 2, {{2, 32}, {0, 2}}};
    case DType::IQ4_NL:  // d | qs[16]
      return {32, 18, 2, {{2, 16}, {0, 2}}};
    case DType::MXFP4:  // e (E8M0) | qs[16]
      return {32, 17, 2, {{1, 16}, {0, 1}}};
    case DType::Q2_K:  // scales[16] | qs[64] | d dmin
      return {256, 84, 3, {{16, 64}, {0, 16}, {80, 4}}};
    case DType::Q3_K:  // hmask[32] | qs[64] | scales[12] | d
      return {256, 110, 4, {{0, 32}, {32, 64}, {96, 12}, {108, 2}}};
    case DType::Q4_K:  // d dmin scales[12] | qs[128]
      return {256, 144, 2, {{16, 128}, {0, 16}}};
    case DType::Q5_K:  // d dmin scales[12] | qh[32] | qs[128]
      return {256, 176, 3, {{48, 128}, {16, 32}, {0, 16}}};
    case DType::Q6_K:  // ql[128] | qh[64] | scales[16] | d
      return {256, 210, 4, {{0, 128}, {128, 64}, {192, 16}, {208, 2}}};
    case DType::IQ4_XS:  // d scales_h scales_l[4] | qs[128]
      return {256, 136, 2, {{8, 128}, {0, 8}}};
    case DType::IQ2_XXS:  // d | qs[64] (per 32: 4 grid indices, then signs and scale)
      return {256, 66, 2, {{2, 64}, {0, 2}}};
    case DType::IQ2_XS:  // d | qs[64] (16-bit: index, signs) | scales[8]
      return {256, 74, 3, {{2, 64}, {66, 8}, {0, 2}}};
    case DType::IQ2_S:  // d | qs[32] signs[32] | qh[8] | scales[8]
      return {256, 82, 4, {{2, 64}, {66, 8}, {74, 8}, {0, 2}}};
    case DType::IQ3_XXS:  // d | qs[64] | signs and scales[32]
      return {256, 98, 3, {{2, 64}, {66, 32}, {0, 2}}};
    case DType::IQ3_S:  // d | qs[64] | qh[8] signs[32] (one region) | scales[4]
      return {256, 110, 4, {{2, 64}, {66, 40}, {106, 4}, {0, 2}}};
    case DType::IQ1_S:  // d | qs[32] | qh[16]
      return {256, 50, 3, {{2, 32}, {34, 16}, {0, 2}}};
    case DType::IQ1_M:  // qs[32] | qh[16] | scales[8] (the f16 scale in their top nibbles)
      return {256, 56, 3, {{0, 32}, {32, 16}, {48, 8}}};
    case DType::TQ1_0:  // qs[48] | qh[4] | d
      return {256, 54, 3, {{0, 48}, {48, 4}, {52, 2}}};
    case DType::TQ2_0:  // qs[64] | d
      return {256, 66, 2, {{0, 64}, {64, 2}}};
    default:
      return {};
  }
}

constexpr bool is_split_quant(DType type) { return split_layout(type).n_regions > 0; }

// Start of region `j` for a tensor of n_blocks blocks, relative to the tensor's base.
constexpr size_t region_offset(const SplitLayout& l, int j, size_t n_blocks) {
  size_t bytes = 0;
  for (int i = 0; i < j; ++i) bytes += n_blocks * static_cast<size_t>(l.regions[i].size);
  return bytes;
}

// `count` GGUF blocks at `src` into split form at `dst` (count * block_bytes bytes).
inline void split_blocks(const SplitLayout& l, const uint8_t* src, size_t count, uint8_t* dst) {
  for (int j = 0; j < l.n_regions; ++j) {
    const Field f = l.regions[j];
    uint8_t* out = dst + region_offset(l, j, count);
    for (size_t n = 0; n < count; ++n)
      std::memcpy(out + n * f.size, src + n * l.block_bytes + f.offset,
                  static_cast<size_t>(f.size));
  }
}

}  // namespace hostlm::cuda::quants
