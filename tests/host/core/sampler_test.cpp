// The sampler's filters on small hand-made logits: what each one keeps, that switching the new
// ones off changes nothing, and that the repeat penalty follows llama.cpp / Ollama.
#include "hostlm/sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "hostlm/error.h"

namespace hostlm {
namespace {

SamplerParams greedy() {
  SamplerParams p;
  p.temperature = 0.f;
  return p;
}

std::set<int32_t> tokens_drawn(const SamplerParams& params, const std::vector<float>& logits,
                               int draws = 2000) {
  Sampler sampler(params);
  std::set<int32_t> seen;
  for (int i = 0; i < draws; ++i) seen.insert(sampler.sample(logits));
  return seen;
}

TEST(Sampler, GreedyPicksTheLargestLogitAndTheLowestIdOnTies) {
  Sampler sampler(greedy());
  EXPECT_EQ(sampler.sample(std::vector<float>{0.f, 3.f, 1.f, 3.f}), 1);
}

TEST(Sampler, NewFiltersOffByDefaultGiveTheSameDraws) {
  // Same seed, same logits: a sampler with min_p and the penalty at their defaults draws the
  // same tokens as one that never had them (the penalty window filled or not).
  SamplerParams base;
  base.seed = 7;
  SamplerParams with_window = base;
  with_window.repeat_last_n = 8;
  Sampler a(base), b(with_window);
  std::vector<float> logits = {1.f, 1.5f, 0.2f, 2.f, -1.f, 0.7f};
  for (int i = 0; i < 200; ++i) ASSERT_EQ(a.sample(logits), b.sample(logits)) << i;
}

// An infinite logit holds all the probability: it is drawn whatever the filters (its softmax
// weight would be inf - inf = NaN; min_p with a NaN floor used to keep nothing and read
// before the candidates).
TEST(Sampler, AnInfiniteLogitIsAlwaysDrawn) {
  std::vector<float> logits(300);
  for (size_t i = 0; i < logits.size(); ++i) logits[i] = static_cast<float>(i % 17) * 0.1f;
  logits[123] = INFINITY;
  for (int top_k : {0, 40})
    for (float min_p : {0.f, 0.05f})
      for (float top_p : {1.f, 0.9f})
        for (float typical_p : {1.f, 0.5f}) {
          SamplerParams p;
          p.temperature = 0.8f;
          p.top_k = top_k;
          p.min_p = min_p;
          p.top_p = top_p;
          p.typical_p = typical_p;
          Sampler s(p);
          for (int draw = 0; draw < 5; ++draw)
            EXPECT_EQ(s.sample(logits), 123) << "top_k " << top_k << " min_p " << min_p << " top_p "
                                             << top_p << " typical_p " << typical_p;
        }
}

TEST(Sampler, MinPDropsTokensBelowTheShareOfTheBest) {
  // Probabilities at temperature 1: exp(0), exp(-1) = 0.37, exp(-3) = 0.05 of the best.
  const std::vector<float> logits = {0.f, -1.f, -3.f};
  SamplerParams p;
  p.temperature = 1.f;
  p.top_k = 0;
  p.top_p = 1.f;
  EXPECT_EQ(tokens_drawn(p, logits), (std::set<int32_t>{0, 1, 2}));
  p.min_p = 0.1f;
  EXPECT_EQ(tokens_drawn(p, logits), (std::set<int32_t>{0, 1}));
  p.min_p = 0.5f;
  EXPECT_EQ(tokens_drawn(p, logits), (std::set<int32_t>{0}));
  p.min_p = 1.f;  // only tokens as likely as the best
  EXPECT_EQ(tokens_drawn(p, std::vector<float>{2.f, 2.f, 1.f}), (std::set<int32_t>{0, 1}));
}

TEST(Sampler, MinPIsMeasuredAfterTemperature) {
  // At temperature 0.25 the second token is exp(-4) = 0.018 of the best: below min_p 0.05.
  SamplerParams p;
  p.temperature = 0.25f;
  p.top_k = 0;
  p.top_p = 1.f;
  p.min_p = 0.05f;
  EXPECT_EQ(tokens_drawn(p, {0.f, -1.f}), (std::set<int32_t>{0}));
  p.temperature = 1.f;  // exp(-1) = 0.37: kept
  EXPECT_EQ(tokens_drawn(p, {0.f, -1.f}), (std::set<int32_t>{0, 1}));
}

TEST(Sampler, RepeatPenaltyDividesPositiveAndMultipliesNegativeLogits) {
  SamplerParams p = greedy();
  p.repeat_penalty = 2.f;
  p.repeat_last_n = 4;
  {
    // 0 was seen: 3 / 2 = 1.5 < 2, so 1 wins.
    Sampler sampler(p);
    sampler.accept(0);
    EXPECT_EQ(sampler.sample(std::vector<float>{3.f, 2.f}), 1);
  }
  {
    // Negative logits go further down: -1 * 2 = -2 < -1.5.
    Sampler sampler(p);
    sampler.accept(0);
    EXPECT_EQ(sampler.sample(std::vector<float>{-1.f, -1.5f}), 1);
  }
  {
    // Seen several times, penalised once: 3 / 2 = 1.5 > 1.4 still wins.
    Sampler sampler(p);
    for (int i = 0; i < 4; ++i) sampler.accept(0);
    EXPECT_EQ(sampler.sample(std::vector<float>{3.f, 1.4f}), 0);
  }
}

TEST(Sampler, RepeatPenaltyOnlyLooksAtTheLastNTokens) {
  SamplerParams p = greedy();
  p.repeat_penalty = 10.f;
  p.repeat_last_n = 2;
  Sampler sampler(p);
  sampler.accept(std::vector<int32_t>{0, 2, 3});  // 0 has left the window of 2
  EXPECT_EQ(sampler.sample(std::vector<float>{1.f, 0.5f, 0.9f, 0.9f}), 0);
  // What the sampler picks is seen too: the window is now {3, 0}, so 2 is free again.
  EXPECT_EQ(sampler.sample(std::vector<float>{1.f, 0.5f, 0.9f, 0.9f}), 2);
  sampler.clear_history();
  EXPECT_EQ(sampler.sample(std::vector<float>{1.f, 0.5f, 0.9f, 0.9f}), 0);
}

TEST(Sampler, RepeatPenaltyAppliesWhenSampling) {
  // Token 0 dominates until it is penalised below the others.
  SamplerParams p;
  p.temperature = 1.f;
  p.top_k = 0;
  p.top_p = 1.f;
  p.min_p = 0.5f;
  p.repeat_penalty = 100.f;
  p.repeat_last_n = 1;
  Sampler sampler(p);
  const std::vector<float> logits = {5.f, 1.f};
  for (int i = 0; i < 50; ++i) {
    // Unpenalised, 1 is exp(-4) of 0 and min_p drops it; after 0 is picked, 0 falls to 0.05.
    const int32_t first = sampler.sample(logits);
    const int32_t second = sampler.sample(logits);
    ASSERT_EQ(first, 0);
    ASSERT_EQ(second, 1);
  }
}

TEST(Sampler, RepeatPenaltyOffWhenWindowIsZero) {
  SamplerParams p = greedy();
  p.repeat_penalty = 10.f;
  p.repeat_last_n = 0;
  Sampler sampler(p);
  sampler.accept(0);
  EXPECT_EQ(sampler.sample(std::vector<float>{1.f, 0.5f}), 0);
}

TEST(Sampler, SameSeedSameDraws) {
  SamplerParams p;
  p.seed = 42;
  p.min_p = 0.05f;
  p.repeat_penalty = 1.2f;
  Sampler a(p), b(p);
  std::vector<float> logits(50);
  for (size_t i = 0; i < logits.size(); ++i) logits[i] = static_cast<float>(i % 7) * 0.3f;
  for (int i = 0; i < 100; ++i) ASSERT_EQ(a.sample(logits), b.sample(logits));
}

TEST(Sampler, DirectTopKDrawsAsTheFullSort) {
  // Without biases the k best come from one pass over the logits; a zero bias sends the same
  // draw through the sort of every candidate. Both must pick the same tokens, ties included
  // (logits on a coarse grid), with and without a grammar's mask.
  std::mt19937 rng(5);
  std::uniform_int_distribution<int> grid(-40, 40);
  std::vector<std::vector<float>> pool(6, std::vector<float>(5000));
  for (auto& logits : pool)
    for (float& x : logits) x = 0.25f * static_cast<float>(grid(rng));
  std::vector<std::string> bytes(5000);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = i % 3 == 0 ? "a" : i % 3 == 1 ? "b" : "ab";
  bytes[4999].clear();   // the end token
  GrammarConstraint ab;  // "a" and "ab" tokens only, then "b" or "ab" after an "a"
  ab.grammar = std::make_shared<const Grammar>(Grammar::from_gbnf(R"G(root ::= ("a" "b"?)+)G"));
  ab.vocab = std::make_shared<const GrammarVocab>(bytes, std::vector<int32_t>{4999});
  for (const int top_k : {1, 7, 40, 600}) {
    for (const bool constrained : {false, true}) {
      SamplerParams direct;
      direct.top_k = top_k;
      direct.seed = 11;
      SamplerParams sorted = direct;
      sorted.logit_bias[0] = 0.f;
      Sampler a(direct, constrained ? ab : GrammarConstraint{});
      Sampler b(sorted, constrained ? ab : GrammarConstraint{});
      for (int i = 0; i < 300; ++i) {
        const auto& logits = pool[static_cast<size_t>(i) % pool.size()];
        ASSERT_EQ(a.sample(logits), b.sample(logits))
            << "top_k " << top_k << (constrained ? " constrained" : "") << " draw " << i;
      }
    }
  }
}

TEST(Sampler, PenaltiesAndBiasesDrawAsLogitsAdjustedByHand) {
  // A sampler with a bias and penalties must draw what one without them draws from logits the
  // test adjusted itself (bias added, then the repeat penalty once and the presence and
  // frequency penalties per the counts in the window): with top_k below the vocabulary (the
  // one-pass top-k, which offers the adjusted ids apart) and above it (every candidate
  // sorted), ties included (a coarse grid).
  std::mt19937 rng(13);
  std::uniform_int_distribution<int> grid(-40, 40);
  const size_t n = 3000;
  std::vector<std::vector<float>> pool(4, std::vector<float>(n));
  for (auto& logits : pool)
    for (float& x : logits) x = 0.25f * static_cast<float>(grid(rng));
  for (const int top_k : {40, 5000}) {
    SamplerParams adjusting;
    adjusting.top_k = top_k;
    adjusting.seed = 21;
    adjusting.repeat_penalty = 1.3f;
    adjusting.presence_penalty = 0.4f;
    adjusting.frequency_penalty = 0.2f;
    adjusting.repeat_last_n = 8;
    adjusting.logit_bias = {{7, 3.f}, {100, -INFINITY}, {2999, 1.5f}, {4000, 9.f}};
    SamplerParams plain = adjusting;
    plain.repeat_penalty = 1.f;
    plain.presence_penalty = plain.frequency_penalty = 0.f;
    plain.logit_bias.clear();
    Sampler a(adjusting), b(plain);
    std::vector<int32_t> window;  // the last repeat_last_n drawn
    for (int i = 0; i < 300; ++i) {
      std::vector<float> by_hand = pool[static_cast<size_t>(i) % pool.size()];
      for (const auto& [t, bias] : adjusting.logit_bias)
        if (static_cast<size_t>(t) < n) by_hand[static_cast<size_t>(t)] += bias;
      std::map<int32_t, int> counts;
      for (int32_t t : window) ++counts[t];
      for (const auto& [t, count] : counts) {
        float& x = by_hand[static_cast<size_t>(t)];
        x = x > 0.f ? x / adjusting.repeat_penalty : x * adjusting.repeat_penalty;
        x = x - static_cast<float>(count) * adjusting.frequency_penalty -
            adjusting.presence_penalty;
      }
      const int32_t got = a.sample(pool[static_cast<size_t>(i) % pool.size()]);
      ASSERT_EQ(got, b.sample(by_hand)) << "top_k " << top_k << " draw " << i;
      window.push_back(got);
      if (window.size() > static_cast<size_t>(adjusting.repeat_last_n))
        window.erase(window.begin());
    }
  }
}

// Without top-k the sampler sorts only as many candidates as top_p, min_p and the draw look
// at. Its draws must be those of a plain full sort: this is that sort, for comparison.
int32_t draw_after_full_sort(const std::vector<float>& logits, const SamplerParams& p,
                             std::mt19937_64& rng) {
  std::vector<std::pair<float, int32_t>> c;
  for (size_t i = 0; i < logits.size(); ++i) c.emplace_back(logits[i], static_cast<int32_t>(i));
  std::sort(c.begin(), c.end(), [](const auto& a, const auto& b) {
    return a.first > b.first || (a.first == b.first && a.second < b.second);
  });
  const float max_logit = c[0].first;
  double total = 0.0;
  for (auto& x : c) total += x.first = std::exp((x.first - max_logit) / p.temperature);
  size_t keep = c.size();
  if (p.top_p < 1.f) {
    double mass = 0.0;
    for (size_t i = 0; i < keep; ++i)
      if ((mass += c[i].first / total) >= p.top_p) {
        keep = i + 1;
        break;
      }
    total = 0.0;
    for (size_t i = 0; i < keep; ++i) total += c[i].first;
  }
  if (p.min_p > 0.f) {
    size_t kept = 0;
    while (kept < keep && c[kept].first >= p.min_p * c[0].first) ++kept;
    if (kept < keep) {
      keep = kept;
      total = 0.0;
      for (size_t i = 0; i < keep; ++i) total += c[i].first;
    }
  }
  double r = std::uniform_real_distribution<double>(0.0, total)(rng);
  for (size_t i = 0; i < keep; ++i)
    if ((r -= c[i].first) <= 0.0) return c[i].second;
  return c[keep - 1].second;
}

TEST(Sampler, WithoutTopKDrawsAsAFullSort) {
  std::mt19937 rng(17);
  std::uniform_int_distribution<int> grid(-60, 60);
  std::vector<std::vector<float>> pool(4, std::vector<float>(3000));
  for (auto& logits : pool)
    for (float& x : logits) x = 0.125f * static_cast<float>(grid(rng));
  const std::pair<float, float> filters[] = {{0.9f, 0.f}, {1.f, 0.05f}, {0.95f, 0.02f}, {1.f, 0.f}};
  for (const auto& [top_p, min_p] : filters) {
    SamplerParams p;
    p.top_k = 0;
    p.top_p = top_p;
    p.min_p = min_p;
    p.temperature = 0.7f;
    p.seed = 5;
    Sampler sampler(p);
    std::mt19937_64 reference_rng(p.seed);
    for (int i = 0; i < 200; ++i) {
      const auto& logits = pool[static_cast<size_t>(i) % pool.size()];
      ASSERT_EQ(sampler.sample(logits), draw_after_full_sort(logits, p, reference_rng))
          << "top_p " << top_p << " min_p " << min_p << " draw " << i;
    }
  }
}

TEST(Sampler, GreedyPicksTheFirstOfTheLargestNumber) {
  // The greedy pick scans blocks of 64 logits and looks inside a block only when it holds
  // something at least as large as the best so far: ties (a coarse grid), a length that is
  // not a multiple of 64, infinities and NaN must all give std::max_element's answer over the
  // numbers (NaN passed over wherever it stands; id 0 when there is nothing else).
  std::mt19937 rng(9);
  std::uniform_int_distribution<int> grid(-20, 20);
  for (const size_t n : {size_t{1}, size_t{63}, size_t{64}, size_t{65}, size_t{5000}}) {
    for (int trial = 0; trial < 50; ++trial) {
      std::vector<float> logits(n);
      for (float& x : logits) x = 0.5f * static_cast<float>(grid(rng));
      if (trial % 5 == 1) logits[rng() % n] = std::numeric_limits<float>::quiet_NaN();
      if (trial % 5 == 2) logits[0] = std::numeric_limits<float>::quiet_NaN();
      if (trial % 5 == 3) logits[rng() % n] = -std::numeric_limits<float>::infinity();
      if (trial % 5 == 4) std::fill(logits.begin(), logits.end(), -INFINITY);
      if (trial % 10 == 7) std::fill(logits.begin(), logits.end(), NAN);
      Sampler sampler(greedy());
      const auto numbers_first = [](float a, float b) {
        return std::isnan(a) ? !std::isnan(b) : !std::isnan(b) && a < b;
      };
      const auto best = std::max_element(logits.begin(), logits.end(), numbers_first);
      const auto expected = std::isnan(*best) ? 0 : static_cast<int32_t>(best - logits.begin());
      ASSERT_EQ(sampler.sample(logits), expected) << "n " << n << " trial " << trial;
    }
  }
}

TEST(Sampler, RejectsValuesOutOfRange) {
  SamplerParams p;
  p.min_p = 1.5f;
  EXPECT_THROW(Sampler{p}, Error);
  p = {};
  p.repeat_penalty = 0.f;
  EXPECT_THROW(Sampler{p}, Error);
  p = {};
  p.repeat_last_n = -1;
  EXPECT_THROW(Sampler{p}, Error);
}

}  // namespace
}  // namespace hostlm
