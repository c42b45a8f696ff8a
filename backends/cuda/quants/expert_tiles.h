// Many experts' tile products in one launch (tile_matmul_experts): a prompt's mixture-of-experts
// block routes a few rows to most of its experts, and one launch per expert and role made
// those products launch-bound (35B-A3B pp512 on an H100: 57,900 launches of about 9 us, two
// thirds of the GPU time, session 37). Each grid slice z is one expert: its matrix, and the
// rows of the launch's activations and outputs routed to it. Passed by value as a kernel
// parameter (8 KiB: sm_70 and later take up to 32 KiB). Device code includes this (C++17).
#pragma once
#include <cstdint>

namespace hostlm::cuda::quants {

// The most experts one launch takes; a caller with more launches again.
inline constexpr int kMaxExpertTiles = 512;

// The plain launch of one matrix (the kernels' template default).
struct NoExpertTiles {
  static constexpr bool kOn = false;
  static constexpr bool kGroup = false;  // not a MatrixGroup (tile_common.cuh)
  static constexpr int n = 0;
};

struct ExpertTiles {
  static constexpr bool kOn = true;
  static constexpr bool kGroup = false;
  const uint8_t* data[kMaxExpertTiles];  // expert z's matrix in split form
  int32_t row0[kMaxExpertTiles];         // its first row of x and y, from the launch's pointers
  int32_t count[kMaxExpertTiles];        // its rows
  int64_t region_offset[4];              // the split regions, the same for every expert
  int n;
};

}  // namespace hostlm::cuda::quants
