// combine_experts' copy plan and per-piece copy (cuda/expert_copy.h), run on the host: the
// chosen experts of a stack, kept as the CUDA backend keeps them (split regions for quantized
// types, float rows otherwise), copied piece by piece as the kernel does, must give exactly
// the split form of the combined matrix built from the GGUF bytes: stacked by rows, and side
// by side. Runs without a GPU.
#include "cuda/expert_copy_plan.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "cuda/quants/split_layout.h"
#include "hostlm/dtype.h"
#include "hostlm/error.h"

namespace hostlm::cuda {
namespace {

struct Stack {
  std::vector<std::vector<uint8_t>> raw, kept;  // GGUF bytes and the backend's form per expert
  std::vector<Weight> weights;
};

Stack make_stack(DType type, int64_t experts, int64_t rows, int64_t cols) {
  std::mt19937 rng(static_cast<uint32_t>(type) * 31 + 7);
  const size_t row_bytes = *dtype_bytes(type, static_cast<uint64_t>(cols));
  const quants::SplitLayout layout = quants::split_layout(type);
  Stack s;
  for (int64_t e = 0; e < experts; ++e) {
    std::vector<uint8_t>& raw = s.raw.emplace_back(row_bytes * static_cast<size_t>(rows));
    for (uint8_t& b : raw) b = static_cast<uint8_t>(rng());
    std::vector<uint8_t>& kept = s.kept.emplace_back(raw.size());
    if (layout.n_regions > 0)
      quants::split_blocks(layout, raw.data(), raw.size() / layout.block_bytes, kept.data());
    else
      kept = raw;
  }
  for (auto& kept : s.kept) s.weights.push_back(Weight{type, rows, cols, kept.data(), row_bytes});
  return s;
}

// The combined matrix from the GGUF bytes, then in the backend's form.
std::vector<uint8_t> expected(const Stack& s, const std::vector<int32_t>& ids, bool side) {
  const Weight& like = s.weights.front();
  const size_t rb = like.row_bytes;
  const auto n = static_cast<int64_t>(ids.size());
  std::vector<uint8_t> raw(rb * static_cast<size_t>(like.rows * n));
  for (int64_t j = 0; j < n; ++j)
    for (int64_t r = 0; r < like.rows; ++r) {
      const int64_t place = side ? r * n + j : j * like.rows + r;
      std::memcpy(raw.data() + static_cast<size_t>(place) * rb,
                  s.raw[static_cast<size_t>(ids[static_cast<size_t>(j)])].data() +
                      static_cast<size_t>(r) * rb,
                  rb);
    }
  const quants::SplitLayout layout = quants::split_layout(like.type);
  if (layout.n_regions == 0) return raw;
  std::vector<uint8_t> split(raw.size());
  quants::split_blocks(layout, raw.data(), raw.size() / layout.block_bytes, split.data());
  return split;
}

class ExpertCopyTest : public ::testing::TestWithParam<DType> {};

TEST_P(ExpertCopyTest, PiecesGiveTheCombinedMatrixInSplitForm) {
  const DType type = GetParam();
  const int64_t cols = type == DType::F32 || type == DType::F16 ? 96 : 512;
  const Stack s = make_stack(type, 6, 5, cols);
  const std::vector<int32_t> ids = {4, 0, 5, 4};
  for (const bool side : {false, true}) {
    SCOPED_TRACE(side ? "side by side" : "stacked by rows");
    const std::vector<uint8_t> want = expected(s, ids, side);
    std::vector<uint8_t> got(want.size(), 0xAB);
    const ExpertCopy plan =
        plan_expert_copy(s.weights, static_cast<int64_t>(ids.size()), side, got.data());
    for (int slot = 0; slot < plan.n; ++slot)
      for (int region = 0; region < plan.n_regions; ++region)
        for (int64_t i = 0; i < expert_copy_pieces(plan, region); ++i)
          copy_expert_piece(plan, ids.data(), slot, region, i, got.data());
    EXPECT_EQ(got, want);
  }
}

INSTANTIATE_TEST_SUITE_P(Types, ExpertCopyTest,
                         ::testing::Values(DType::F32, DType::F16, DType::Q8_0, DType::Q4_0,
                                           DType::Q4_K, DType::Q5_K, DType::Q6_K, DType::IQ4_XS,
                                           DType::IQ2_XXS, DType::MXFP4),
                         [](const auto& p) { return std::string(dtype_name(p.param)); });

TEST(ExpertCopy, StacksThatDifferAreRefused) {
  Stack s = make_stack(DType::Q8_0, 2, 4, 64);
  s.weights[1].rows = 3;
  EXPECT_THROW(plan_expert_copy(s.weights, 1, false, nullptr), Error);
  std::vector<Weight> too_many(kMaxRoutedExperts + 1, s.weights[0]);
  EXPECT_THROW(plan_expert_copy(too_many, 1, false, nullptr), Error);
}

}  // namespace
}  // namespace hostlm::cuda
