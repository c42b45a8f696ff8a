// best_logits picks a row's k best in the sampler's order, as a full sort would; a sampler
// given them draws what it draws from the whole row; Backend::best_logits_rows (the default
// and the CPU backend's) gives best_logits for every row.
#include "hostlm/best_logits.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <utility>
#include <vector>

#include "hostlm/error.h"
#include "hostlm/ops.h"
#include "hostlm/sampler.h"

namespace hostlm {
namespace {

using Pair = std::pair<float, int32_t>;

// The order by a full sort: value descending, id ascending among equals, NaN last by id.
std::vector<Pair> sorted_reference(const std::vector<float>& row) {
  std::vector<Pair> all;
  for (size_t i = 0; i < row.size(); ++i) all.emplace_back(row[i], static_cast<int32_t>(i));
  std::stable_sort(all.begin(), all.end(), [](const Pair& a, const Pair& b) {
    const bool an = std::isnan(a.first), bn = std::isnan(b.first);
    if (an || bn) return !an && bn;  // numbers before NaN; stable keeps ids in order
    return a.first > b.first;
  });
  return all;
}

// Random logits with the awkward cases: repeated values, infinities and NaN.
std::vector<float> awkward_row(size_t n, std::mt19937& rng, int flavour) {
  std::normal_distribution<float> normal(0.f, 3.f);
  std::vector<float> row(n);
  for (float& v : row) v = normal(rng);
  if (flavour % 4 == 1)  // few distinct values: many ties
    for (float& v : row) v = std::round(v);
  if (flavour % 4 == 2 && n > 3) {
    row[rng() % n] = std::numeric_limits<float>::quiet_NaN();
    row[rng() % n] = INFINITY;
    row[rng() % n] = -INFINITY;
  }
  if (flavour % 4 == 3)  // mostly NaN: fewer numbers than k
    for (size_t i = 0; i < n; ++i)
      if (i % 7 != 0) row[i] = std::numeric_limits<float>::quiet_NaN();
  return row;
}

TEST(BestLogits, MatchesAFullSortWithTiesInfinitiesAndNaN) {
  std::mt19937 rng(7);
  for (size_t n : {1, 5, 63, 64, 65, 200, 1000, 5003})
    for (size_t k : {1, 3, 40, 64, 256, 6000})
      for (int flavour = 0; flavour < 4; ++flavour) {
        const std::vector<float> row = awkward_row(n, rng, flavour);
        const std::vector<Pair> want = sorted_reference(row);
        const size_t m = std::min(k, n);
        std::vector<float> values(m, -1.f);
        std::vector<int32_t> ids(m, -1);
        best_logits(row, k, values.data(), ids.data());
        for (size_t i = 0; i < m; ++i) {
          ASSERT_EQ(ids[i], want[i].second)
              << "n " << n << " k " << k << " flavour " << flavour << " rank " << i;
          ASSERT_TRUE(values[i] == want[i].first ||
                      (std::isnan(values[i]) && std::isnan(want[i].first)));
        }
      }
}

// For every setting best_logits_needed accepts, sample_best given the best k draws exactly
// what sample draws from the whole row, seed for seed, over many rows.
TEST(BestLogits, SamplerDrawsTheSameFromTheBestAsFromTheWholeRow) {
  std::mt19937 rng(11);
  const size_t n = 3000;
  std::vector<SamplerParams> settings;
  for (int top_k : {1, 2, 40, 64, 256})
    for (float top_p : {1.f, 0.9f, 0.5f})
      for (float min_p : {0.f, 0.05f})
        for (float typical_p : {1.f, 0.7f}) {
          SamplerParams p;
          p.temperature = top_k == 2 ? 2.5f : 0.8f;
          p.top_k = top_k;
          p.top_p = top_p;
          p.min_p = min_p;
          p.typical_p = typical_p;
          p.seed = static_cast<uint64_t>(top_k * 31 + static_cast<int>(top_p * 10));
          settings.push_back(p);
        }
  for (int top_k : {0, 40}) {  // greedy, whatever top_k says
    SamplerParams p;
    p.temperature = 0;
    p.top_k = top_k;
    settings.push_back(p);
  }
  int compared = 0;
  for (const SamplerParams& p : settings) {
    Sampler whole(p), best(p);
    const int32_t k = whole.best_logits_needed(static_cast<int64_t>(n));
    ASSERT_EQ(k, p.temperature > 0 ? p.top_k : 1);
    std::vector<float> values(static_cast<size_t>(k));
    std::vector<int32_t> ids(static_cast<size_t>(k));
    for (int draw = 0; draw < 30; ++draw) {
      const std::vector<float> row = awkward_row(n, rng, draw % 4);
      best_logits(row, static_cast<size_t>(k), values.data(), ids.data());
      ASSERT_EQ(best.sample_best(values, ids), whole.sample(row))
          << "top_k " << p.top_k << " top_p " << p.top_p << " min_p " << p.min_p << " typical_p "
          << p.typical_p << " draw " << draw;
      ++compared;
    }
  }
  EXPECT_EQ(compared, 30 * static_cast<int>(settings.size()));
}

TEST(BestLogits, SamplersThatReadMoreThanTheBestSayWhole) {
  const int64_t n = 1000;
  SamplerParams p;
  p.top_k = 40;
  EXPECT_EQ(Sampler(p).best_logits_needed(n), 40);
  SamplerParams greedy = p;
  greedy.temperature = 0;  // the best logit alone
  EXPECT_EQ(Sampler(greedy).best_logits_needed(n), 1);
  greedy.top_k = 0;
  EXPECT_EQ(Sampler(greedy).best_logits_needed(n), 1);
  greedy.repeat_penalty = 1.1f;
  EXPECT_EQ(Sampler(greedy).best_logits_needed(n), 0);
  SamplerParams no_top_k = p;
  no_top_k.top_k = 0;
  EXPECT_EQ(Sampler(no_top_k).best_logits_needed(n), 0);
  SamplerParams wide = p;
  wide.top_k = 1000;
  EXPECT_EQ(Sampler(wide).best_logits_needed(n), 0);
  SamplerParams biased = p;
  biased.logit_bias[5] = 2.f;
  EXPECT_EQ(Sampler(biased).best_logits_needed(n), 0);
  SamplerParams penalised = p;
  penalised.repeat_penalty = 1.1f;
  EXPECT_EQ(Sampler(penalised).best_logits_needed(n), 0);
  SamplerParams present = p;
  present.presence_penalty = 0.5f;
  EXPECT_EQ(Sampler(present).best_logits_needed(n), 0);
  // A penalty over an empty window changes nothing, but the setting still says whole rows.
  SamplerParams no_window = penalised;
  no_window.repeat_last_n = 0;
  EXPECT_EQ(Sampler(no_window).best_logits_needed(n), 40);
  // Given fewer than it needs, sample_best refuses.
  std::vector<float> values(10, 0.f);
  std::vector<int32_t> ids(10, 0);
  Sampler s(p);
  EXPECT_THROW(s.sample_best(values, ids), Error);
}

TEST(BestLogits, BackendRowsGiveEachRowsBest) {
  std::unique_ptr<Backend> cpu = create_backend("cpu");
  std::mt19937 rng(3);
  const size_t n = 777, rows = 5, k = 50;
  std::vector<float> all;
  for (size_t r = 0; r < rows; ++r) {
    const std::vector<float> row = awkward_row(n, rng, static_cast<int>(r));
    all.insert(all.end(), row.begin(), row.end());
  }
  auto src = cpu->alloc(all.size());
  cpu->upload(src->data(), all.data(), all.size());
  std::vector<std::vector<float>> values(rows, std::vector<float>(k));
  std::vector<std::vector<int32_t>> ids(rows, std::vector<int32_t>(k));
  std::vector<float*> vp;
  std::vector<int32_t*> ip;
  for (size_t r = 0; r < rows; ++r) {
    vp.push_back(values[r].data());
    ip.push_back(ids[r].data());
  }
  // The CPU backend's own, then the default every backend has (download, then select).
  for (int pass = 0; pass < 2; ++pass) {
    for (auto& v : ids) std::fill(v.begin(), v.end(), -1);
    if (pass == 0)
      cpu->best_logits_rows(vp, ip, src->data(), n, k);
    else
      cpu->Backend::best_logits_rows(vp, ip, src->data(), n, k);
    for (size_t r = 0; r < rows; ++r) {
      std::vector<float> want_v(k);
      std::vector<int32_t> want_i(k);
      best_logits(std::span<const float>(all).subspan(r * n, n), k, want_v.data(), want_i.data());
      EXPECT_EQ(ids[r], want_i) << "pass " << pass << " row " << r;
    }
  }
  std::vector<int32_t*> short_ids(ip.begin(), ip.end() - 1);
  EXPECT_THROW(cpu->best_logits_rows(vp, short_ids, src->data(), n, k), Error);
}

}  // namespace
}  // namespace hostlm
