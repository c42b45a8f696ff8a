// Logit bias, presence and frequency penalties and typical sampling on hand-made logits.
#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <vector>

#include "hostlm/error.h"
#include "hostlm/sampler.h"

namespace hostlm {
namespace {

SamplerParams greedy() {
  SamplerParams p;
  p.temperature = 0.f;
  return p;
}

SamplerParams plain(uint64_t seed = 3) {
  SamplerParams p;
  p.temperature = 1.f;
  p.top_k = 0;
  p.top_p = 1.f;
  p.seed = seed;
  return p;
}

std::set<int32_t> drawn(const SamplerParams& params, const std::vector<float>& logits,
                        int draws = 3000) {
  Sampler sampler(params);
  std::set<int32_t> seen;
  for (int i = 0; i < draws; ++i) {
    seen.insert(sampler.sample(logits));
    sampler.clear_history();
  }
  return seen;
}

TEST(SamplerBias, BiasMovesAndBansTokensGreedyOrNot) {
  const std::vector<float> logits = {0.f, 3.f, 1.f};
  SamplerParams p = greedy();
  p.logit_bias = {{1, -INFINITY}};
  EXPECT_EQ(Sampler(p).sample(logits), 2);
  p.logit_bias = {{0, 10.f}};
  EXPECT_EQ(Sampler(p).sample(logits), 0);
  SamplerParams s = plain();
  s.logit_bias = {{1, -INFINITY}, {7, 5.f}};  // ids past the logits are ignored
  EXPECT_EQ(drawn(s, logits), (std::set<int32_t>{0, 2}));
}

TEST(SamplerPenalties, PresenceCountsOnceFrequencyPerOccurrence) {
  const std::vector<float> logits = {2.f, 1.5f, 1.2f};
  SamplerParams p = greedy();
  p.presence_penalty = 0.6f;
  Sampler presence(p);
  presence.accept(0);
  EXPECT_EQ(presence.sample(logits), 1);  // 2 - 0.6 = 1.4 < 1.5

  p = greedy();
  p.frequency_penalty = 0.3f;
  Sampler once(p), twice(p);
  once.accept(0);
  EXPECT_EQ(once.sample(logits), 0);  // 2 - 0.3 = 1.7
  twice.accept(std::vector<int32_t>{0, 0});
  EXPECT_EQ(twice.sample(logits), 1);  // 2 - 0.6 = 1.4
}

TEST(SamplerPenalties, OnlyTheWindowCounts) {
  const std::vector<float> logits = {2.f, 1.5f, 1.2f};
  SamplerParams p = greedy();
  p.frequency_penalty = 1.f;
  p.repeat_last_n = 2;
  Sampler sampler(p);
  sampler.accept(std::vector<int32_t>{0, 5, 6});  // 0 has left the window
  EXPECT_EQ(sampler.sample(logits), 0);
  p.repeat_last_n = 0;  // the window switched off: no penalty at all
  Sampler off(p);
  off.accept(0);
  EXPECT_EQ(off.sample(logits), 0);
}

TEST(SamplerPenalties, PenaltiesShapeSamplingToo) {
  SamplerParams p = plain();
  p.presence_penalty = 100.f;
  Sampler sampler(p);
  const std::vector<float> logits = {1.f, 1.f, 1.f};
  std::set<int32_t> seen;
  for (int i = 0; i < 3; ++i) seen.insert(sampler.sample(logits));  // each pick is penalised
  EXPECT_EQ(seen, (std::set<int32_t>{0, 1, 2}));
}

TEST(SamplerTypical, KeepsTheTokensClosestToTheEntropy) {
  // p = 0.6, 0.2, 0.1, 0.1: entropy 1.089 nats; surprise 0.51, 1.61, 2.30, 2.30, so token 1
  // is the most typical, then token 0, then 2 and 3.
  const std::vector<float> logits = {std::log(0.6f), std::log(0.2f), std::log(0.1f),
                                     std::log(0.1f)};
  SamplerParams p = plain();
  EXPECT_EQ(drawn(p, logits), (std::set<int32_t>{0, 1, 2, 3}));
  p.typical_p = 0.15f;
  EXPECT_EQ(drawn(p, logits), (std::set<int32_t>{1}));
  p.typical_p = 0.5f;
  EXPECT_EQ(drawn(p, logits), (std::set<int32_t>{0, 1}));
  p.typical_p = 0.85f;
  EXPECT_EQ(drawn(p, logits), (std::set<int32_t>{0, 1, 2}));
}

TEST(SamplerTypical, OffByDefaultAndValidated) {
  SamplerParams a = plain(9), b = plain(9);
  b.typical_p = 1.f;
  b.logit_bias = {};
  Sampler sa(a), sb(b);
  const std::vector<float> logits = {0.3f, 1.f, -0.5f, 0.8f};
  for (int i = 0; i < 100; ++i) ASSERT_EQ(sa.sample(logits), sb.sample(logits));
  SamplerParams bad = plain();
  bad.typical_p = 0.f;
  EXPECT_THROW(Sampler{bad}, Error);
  bad.typical_p = 1.5f;
  EXPECT_THROW(Sampler{bad}, Error);
  bad = plain();
  bad.logit_bias = {{-1, 1.f}};
  EXPECT_THROW(Sampler{bad}, Error);
}

}  // namespace
}  // namespace hostlm
