// Where a block of a grouped tile launch works (MatrixGroup, tile_common.cuh): grid x runs over
// every member's row blocks times splits, member m's from first_block[m], its row blocks
// fastest. Plain C++ too, so that the tests check the mapping on machines without a GPU.
#pragma once
#include <cstdint>

#include "cuda/quants/portable.h"

namespace hostlm::cuda::quants {

struct GroupPlace {
  int member;
  unsigned row_block;
  int split;
  unsigned counter;  // the member's split counter: one per (token block, row block)
};

// first_block has n + 1 entries (the last: every member's blocks); block < first_block[n].
HQ_HD GroupPlace group_place(const unsigned* first_block, const unsigned* row_blocks, int n,
                             unsigned block, unsigned token_block) {
  int m = 0;
  while (m + 1 < n && block >= first_block[m + 1]) ++m;
  const unsigned local = block - first_block[m];
  GroupPlace p;
  p.member = m;
  p.row_block = local % row_blocks[m];
  p.split = static_cast<int>(local / row_blocks[m]);
  p.counter = token_block * row_blocks[m] + p.row_block;
  return p;
}

// Fills first_block (members + 1 entries) for members with these row blocks and splits, in
// this order; returns the launch's blocks along x.
inline unsigned lay_out_group(const unsigned* row_blocks, const int* splits, int members,
                              unsigned* first_block) {
  unsigned blocks = 0;
  for (int k = 0; k < members; ++k) {
    first_block[k] = blocks;
    blocks += row_blocks[k] * static_cast<unsigned>(splits[k]);
  }
  first_block[members] = blocks;
  return blocks;
}

}  // namespace hostlm::cuda::quants
