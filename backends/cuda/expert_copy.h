// How combine_experts (moe_ops.cpp, moe_rows.cu) copies the chosen experts of a stack into one
// combined matrix: a plan the host works out (expert_copy_plan.h) and a per-piece copy that
// the kernel and the host tests share. Device code includes this (C++17, no ops.h).
//
// A weight on the CUDA backend is a quantized type in split form (split_layout.h: region after
// region, block n of row r at n = r * nb + b) or rows of floats (one region of whole rows).
// In region j each row of an expert is one run of nb * size_j bytes; the combined matrix takes
// expert ids[slot]'s run r at place slot * rows + r (stacked by rows: [n * rows, cols]) or
// r * n + slot (side by side: [rows, n * cols], whose row r is the experts' rows r in turn).
// Runs move in pieces of the largest of 16, 8, 4, 2 or 1 bytes that every offset allows.
#pragma once
#include <cstdint>
#include <cstring>

#include "cuda/quants/portable.h"

namespace hostlm::cuda {

// The most experts a stack may have (their addresses go to the kernel as a parameter).
inline constexpr int kMaxRoutedExperts = 512;

struct ExpertCopy {
  const uint8_t* experts[kMaxRoutedExperts];
  int64_t src_region[4], dst_region[4], run[4];
  int unit[4];
  int n_regions;
  int64_t rows;
  int n;
  bool side_by_side;
};

// Pieces of one slot's region: rows * run / unit.
HQ_HD int64_t expert_copy_pieces(const ExpertCopy& c, int region) {
  return c.rows * (c.run[region] / c.unit[region]);
}

// Piece i of region `region` of slot `slot` (expert ids[slot]) into the combined matrix at dst.
HQ_HD void copy_expert_piece(const ExpertCopy& c, const int32_t* ids, int slot, int region,
                             int64_t i, uint8_t* dst) {
  const int64_t run = c.run[region];
  const int unit = c.unit[region];
  const int64_t per_run = run / unit;
  const int64_t r = i / per_run, w = i % per_run;
  const int64_t place = c.side_by_side ? r * c.n + slot : int64_t{slot} * c.rows + r;
  const uint8_t* from = c.experts[ids[slot]] + c.src_region[region] + r * run + w * unit;
  uint8_t* to = dst + c.dst_region[region] + place * run + w * unit;
#ifdef __CUDA_ARCH__
  switch (unit) {
    case 16:
      *reinterpret_cast<uint4*>(to) = *reinterpret_cast<const uint4*>(from);
      break;
    case 8:
      *reinterpret_cast<uint2*>(to) = *reinterpret_cast<const uint2*>(from);
      break;
    case 4:
      *reinterpret_cast<uint32_t*>(to) = *reinterpret_cast<const uint32_t*>(from);
      break;
    case 2:
      *reinterpret_cast<uint16_t*>(to) = *reinterpret_cast<const uint16_t*>(from);
      break;
    default:
      *to = *from;
  }
#else
  std::memcpy(to, from, static_cast<size_t>(unit));
#endif
}

}  // namespace hostlm::cuda
