// Where the single-token GEMV (gemv_one_token.cu) puts one segment of a row in a shared-memory
// stage: each region of the split layout (split_layout.h) for the segment's blocks, one after
// another on 16-byte boundaries, and the cp.async width that keeps every copy aligned.
#pragma once
#include <cstdint>

#include "cuda/quants/split_layout.h"

namespace hostlm::cuda::quants {

struct StageLayout {
  int n_regions;
  int size[4];    // bytes per block
  int offset[4];  // in the stage
  int chunk[4];   // copy width: 16, 8 or 4 bytes
  int bytes;      // per stage, a multiple of 16
};

// The layout for segments of `seg_blocks` blocks of rows of `nb` blocks, or bytes == 0 when
// some region cannot be copied in aligned pieces of at least 4 bytes. Each row's and each
// segment's start must be a multiple of the copy width (the region's own start depends on
// the tensor and is checked where it is launched).
inline StageLayout stage_layout(const SplitLayout& l, int64_t nb, int seg_blocks) {
  StageLayout s{};
  int offset = 0;
  for (int j = 0; j < l.n_regions; ++j) {
    const int64_t size = l.regions[j].size;
    int chunk = 16;
    while (chunk >= 4 && (size * nb % chunk != 0 || size * seg_blocks % chunk != 0)) chunk /= 2;
    if (chunk < 4) return StageLayout{};
    s.size[j] = static_cast<int>(size);
    s.offset[j] = offset;
    s.chunk[j] = chunk;
    offset += static_cast<int>((size * seg_blocks + 15) / 16 * 16);
  }
  s.n_regions = l.n_regions;
  s.bytes = offset;
  return s;
}

}  // namespace hostlm::cuda::quants
