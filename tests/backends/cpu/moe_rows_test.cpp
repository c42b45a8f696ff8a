// The row movements of a mixture-of-experts block on the CPU backend: gather_rows and
// weighted_row_sums against sums written out here, and against Backend's own default bodies
// (which a backend without its own uses).
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "hostlm/error.h"
#include "hostlm/ops.h"
#include "hostlm/tensor_view.h"

namespace hostlm {
namespace {

std::vector<float> random_rows(int64_t rows, int64_t width, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-2.f, 2.f);
  std::vector<float> v(static_cast<size_t>(rows * width));
  for (float& x : v) x = dist(rng);
  return v;
}

TEST(MoeRows, GatherRowsCopiesTheNamedRowsInOrder) {
  auto cpu = create_backend("cpu");
  const int64_t width = 7;
  const std::vector<float> src = random_rows(5, width, 1);
  const std::vector<int32_t> rows = {4, 0, 4, 2};
  std::vector<float> dst(rows.size() * width, -1.f);
  cpu->gather_rows(dst.data(), src.data(), width, rows);
  for (size_t i = 0; i < rows.size(); ++i)
    for (int64_t d = 0; d < width; ++d)
      EXPECT_EQ(dst[i * width + d], src[static_cast<size_t>(rows[i] * width + d)]) << i << " " << d;
}

TEST(MoeRows, WeightedRowSumsAddInTheGivenOrderFromZero) {
  auto cpu = create_backend("cpu");
  const int64_t width = 33, T = 3, m = 4;
  const std::vector<float> src = random_rows(10, width, 2);
  const std::vector<int32_t> rows = {9, 0, 3, 3, 1, 2, 8, 5, 7, 6, 4, 0};
  const std::vector<float> weights = {0.5f, 0.25f, 0.125f, 0.125f, 1.f,  -2.f,
                                      3.f,  0.f,   0.7f,   0.1f,   0.1f, 0.1f};
  std::vector<float> out(static_cast<size_t>(T * width), 99.f);
  cpu->weighted_row_sums(out.data(), src.data(), width, T, m, rows, weights);
  for (int64_t t = 0; t < T; ++t)
    for (int64_t d = 0; d < width; ++d) {
      float want = 0.f;
      for (int64_t j = 0; j < m; ++j) {
        const auto i = static_cast<size_t>(t * m + j);
        want += src[static_cast<size_t>(rows[i] * width + d)] * weights[i];
      }
      EXPECT_FLOAT_EQ(out[static_cast<size_t>(t * width + d)], want) << t << " " << d;
    }
  // Backend's default body (download, sum on the host, upload) gives the same.
  std::vector<float> by_default(out.size(), 99.f);
  cpu->Backend::weighted_row_sums(by_default.data(), src.data(), width, T, m, rows, weights);
  for (size_t i = 0; i < out.size(); ++i) EXPECT_FLOAT_EQ(by_default[i], out[i]) << i;
}

TEST(MoeRows, WeightedRowSumsRefuseTablesOfTheWrongLength) {
  auto cpu = create_backend("cpu");
  const std::vector<float> src(8, 1.f);
  std::vector<float> out(4);
  const std::vector<int32_t> rows = {0, 1, 0};
  const std::vector<float> weights = {1.f, 1.f, 1.f, 1.f};
  EXPECT_THROW(cpu->weighted_row_sums(out.data(), src.data(), 4, 1, 4, rows, weights), Error);
}

TEST(MoeRows, RoutingMoreExpertsThanThereAreIsAnError) {
  auto cpu = create_backend("cpu");
  const std::vector<float> logits(4, 0.f);
  std::vector<int32_t> ids(5);
  std::vector<float> weights(5);
  EXPECT_THROW(cpu->moe_route(logits.data(), 1, 4, 5, ids.data(), weights.data()), Error);
  cpu->moe_route(logits.data(), 1, 4, 2, ids.data(), weights.data());  // equal: lower ids
  EXPECT_EQ(ids[0], 0);
  EXPECT_EQ(ids[1], 1);
  EXPECT_FLOAT_EQ(weights[0], 0.5f);
}

// Each expert over its own rows, as one matmul per expert gives them (the default body every
// backend without its own runs); experts without rows write nothing.
TEST(MoeRows, MatmulExpertsMultipliesEachExpertsRows) {
  auto cpu = create_backend("cpu");
  const int64_t rows = 5, cols = 8;
  const std::vector<int32_t> first = {0, 3, 3, 4, 9};
  std::vector<std::vector<float>> data;
  std::vector<Weight> experts;
  for (uint32_t e = 0; e < 4; ++e) {
    data.push_back(random_rows(rows, cols, 10 + e));
    TensorView view;
    view.name = "expert";
    view.type = DType::F32;
    view.shape = {rows, cols};
    view.data = data.back().data();
    view.nbytes = data.back().size() * sizeof(float);
    experts.push_back(cpu->load_weight(view));
  }
  const std::vector<float> x = random_rows(first.back(), cols, 3);
  std::vector<float> y(static_cast<size_t>(first.back() * rows), 99.f);
  cpu->matmul_experts(experts, first, x.data(), y.data());
  for (size_t e = 0; e < experts.size(); ++e) {
    const int64_t r0 = first[e], n = first[e + 1] - r0;
    std::vector<float> want(static_cast<size_t>(n * rows));
    if (n > 0) cpu->matmul(experts[e], x.data() + r0 * cols, n, want.data());
    for (size_t i = 0; i < want.size(); ++i)
      EXPECT_EQ(y[static_cast<size_t>(r0 * rows) + i], want[i]) << "expert " << e << " " << i;
  }
  const std::vector<int32_t> short_first = {0, 3};
  EXPECT_THROW(cpu->matmul_experts(experts, short_first, x.data(), y.data()), Error);
}

}  // namespace
}  // namespace hostlm
