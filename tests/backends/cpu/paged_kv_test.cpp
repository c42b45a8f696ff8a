// Given keys and values stored in scattered KV pages of each type, the CPU backend's paged
// attention matches plain attention over the same (rounded) keys and values, and one query's
// result does not depend on which other queries share its call.
#include <gtest/gtest.h>

#include <cstring>

#include "backends/paged_kv_cases.h"
#include "hostlm/error.h"
#include "hostlm/kv_cache.h"

namespace hostlm {
namespace {

using testing::PagedCase;

class CpuPagedKv : public ::testing::TestWithParam<PagedCase> {
 protected:
  std::unique_ptr<Backend> cpu = create_backend("cpu");
};

TEST_P(CpuPagedKv, AttentionMatchesPlainAttention) {
  const auto sc = testing::make_scenario(GetParam(), 7);
  KvPagePool pool(*cpu, sc.layout, sc.c.type, testing::kScenarioPages);
  const auto batch = testing::fill_pages(*cpu, pool, sc);
  const int64_t width = sc.c.n_head * sc.c.head_dim;
  std::vector<float> out(static_cast<size_t>(sc.rows * width));
  cpu->paged_attention(batch, sc.q.data(), static_cast<size_t>(width), sc.c.n_head,
                       1.f / std::sqrt(static_cast<float>(sc.c.head_dim)), out.data());
  const std::vector<double> want = testing::reference_attention(sc);
  double worst = 0;
  for (size_t i = 0; i < out.size(); ++i) worst = std::max(worst, std::abs(out[i] - want[i]));
  EXPECT_LT(worst, 1e-5) << GetParam().name;
}

TEST_P(CpuPagedKv, QueryResultsDoNotDependOnTheirCallMates) {
  const auto sc = testing::make_scenario(GetParam(), 11);
  KvPagePool pool(*cpu, sc.layout, sc.c.type, testing::kScenarioPages);
  const auto batch = testing::fill_pages(*cpu, pool, sc);
  const int64_t width = sc.c.n_head * sc.c.head_dim;
  const float scale = 1.f / std::sqrt(static_cast<float>(sc.c.head_dim));
  std::vector<float> together(static_cast<size_t>(sc.rows * width));
  cpu->paged_attention(batch, sc.q.data(), static_cast<size_t>(width), sc.c.n_head, scale,
                       together.data());
  // Each sequence alone, its queries split unevenly into single rows and chunks.
  std::vector<float> apart(together.size());
  for (const PagedSequence& s : batch)
    for (int64_t t0 = 0; t0 < s.T;) {
      const int64_t n = std::min<int64_t>(t0 % 2 == 0 ? 1 : 19, s.T - t0);
      PagedSequence part = s;
      part.row = 0;
      part.n_past = s.n_past + t0;
      part.T = n;
      cpu->paged_attention(std::span(&part, 1), sc.q.data() + (s.row + t0) * width,
                           static_cast<size_t>(width), sc.c.n_head, scale,
                           apart.data() + (s.row + t0) * width);
      t0 += n;
    }
  EXPECT_EQ(0, std::memcmp(together.data(), apart.data(), together.size() * sizeof(float)))
      << GetParam().name;
}

INSTANTIATE_TEST_SUITE_P(Types, CpuPagedKv, ::testing::ValuesIn(testing::paged_cases()),
                         [](const auto& p) { return p.param.name; });

TEST(KvPagePool, CopyOnWriteKeepsTheSharedPageIntact) {
  auto cpu = create_backend("cpu");
  CacheLayout layout;
  layout.n_kv_layers = 2;
  layout.n_head_kv = 1;
  layout.head_dim = 32;
  KvPagePool pool(*cpu, layout, DType::F32, 4);
  RecurrentStateSlots slots(*cpu, layout, 2);
  KvSequence first(pool, slots, 64);
  first.prepare_append(40);
  first.advance(40);
  // A second sequence resumes after 40 tokens and appends: the shared page 1 must be copied.
  KvSequence second(pool, slots, 64);
  second.adopt_prefix(first.pages(), 40);
  EXPECT_EQ(pool.refcount(first.pages()[1]), 2);
  second.prepare_append(1);
  EXPECT_EQ(second.pages()[0], first.pages()[0]);  // full pages stay shared
  EXPECT_NE(second.pages()[1], first.pages()[1]);
  EXPECT_EQ(pool.refcount(first.pages()[1]), 1);
  EXPECT_EQ(pool.used(), 3);
}

TEST(KvPagePool, RunningDryIsAnErrorAndReservationsHold) {
  auto cpu = create_backend("cpu");
  CacheLayout layout;
  layout.n_kv_layers = 1;
  layout.n_head_kv = 1;
  layout.head_dim = 32;
  KvPagePool pool(*cpu, layout, DType::Q8_0, 3);
  RecurrentStateSlots slots(*cpu, layout, 2);
  KvSequence promised(pool, slots, 96);
  ASSERT_TRUE(promised.reserve(2));
  EXPECT_FALSE(pool.reserve(2));
  KvSequence greedy(pool, slots, 96);
  greedy.prepare_append(32);  // the one page nobody was promised
  greedy.advance(32);
  EXPECT_THROW(greedy.prepare_append(1), Error);
  promised.prepare_append(64);  // its two pages are there
  EXPECT_EQ(pool.free_pages(), 0);
  EXPECT_THROW(parse_kv_type("q4_0"), Error);
  EXPECT_EQ(parse_kv_type("Q8_0"), DType::Q8_0);
}

}  // namespace
}  // namespace hostlm
