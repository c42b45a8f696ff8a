// The block mapping of grouped tile launches (cuda/quants/group_place.h), run on the host:
// every block of the grid lands on one (member, row block, split) and each of those gets
// exactly one block per token block, and all the splits of a tile count on the same counter,
// a different one for every tile of a member. Runs without a GPU.
#include "cuda/quants/group_place.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <tuple>
#include <vector>

namespace hostlm::cuda::quants {
namespace {

TEST(GroupPlace, EveryTileAndSplitOnceWithOneCounterPerTile) {
  std::mt19937 rng(5);
  for (int round = 0; round < 200; ++round) {
    const int members = 1 + static_cast<int>(rng() % 8);
    const unsigned token_blocks = 1 + rng() % 3;
    std::vector<unsigned> row_blocks(static_cast<size_t>(members));
    std::vector<int> splits(static_cast<size_t>(members));
    for (int m = 0; m < members; ++m) {
      row_blocks[static_cast<size_t>(m)] = 1 + rng() % 150;
      splits[static_cast<size_t>(m)] = 1 + static_cast<int>(rng() % 16);
    }
    std::vector<unsigned> first(static_cast<size_t>(members) + 1);
    const unsigned blocks = lay_out_group(row_blocks.data(), splits.data(), members, first.data());
    unsigned want = 0;
    for (int m = 0; m < members; ++m)
      want += row_blocks[static_cast<size_t>(m)] *
              static_cast<unsigned>(splits[static_cast<size_t>(m)]);
    ASSERT_EQ(blocks, want);
    std::map<std::tuple<int, unsigned, int, unsigned>, int> seen;  // member, row block, split, y
    std::map<std::pair<int, unsigned>, int> per_counter;           // member, counter
    for (unsigned y = 0; y < token_blocks; ++y)
      for (unsigned x = 0; x < blocks; ++x) {
        const GroupPlace p = group_place(first.data(), row_blocks.data(), members, x, y);
        ASSERT_GE(p.member, 0);
        ASSERT_LT(p.member, members);
        const auto m = static_cast<size_t>(p.member);
        ASSERT_LT(p.row_block, row_blocks[m]) << "round " << round;
        ASSERT_GE(p.split, 0);
        ASSERT_LT(p.split, splits[m]) << "round " << round;
        ASSERT_LT(p.counter, row_blocks[m] * token_blocks);
        ASSERT_EQ(p.counter, y * row_blocks[m] + p.row_block);
        ++seen[{p.member, p.row_block, p.split, y}];
        ++per_counter[{p.member, p.counter}];
      }
    size_t tiles = 0;
    for (int m = 0; m < members; ++m)
      tiles += size_t{row_blocks[static_cast<size_t>(m)]} * token_blocks *
               static_cast<size_t>(splits[static_cast<size_t>(m)]);
    ASSERT_EQ(seen.size(), tiles) << "round " << round;
    for (const auto& [key, n] : seen) ASSERT_EQ(n, 1);
    for (const auto& [key, n] : per_counter)
      ASSERT_EQ(n, splits[static_cast<size_t>(key.first)]) << "round " << round;
  }
}

}  // namespace
}  // namespace hostlm::cuda::quants
