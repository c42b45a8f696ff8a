// Given an earlier request, a new one that starts with the same tokens computes only the rest
// and gets exactly the logits a cold run gets: through a snapshot at a page boundary, at the
// end of a prompt (inside a page that must then be copied before it is written), and at a
// position the request named. The cache's pages and snapshots stay balanced under random use.
#include "engine/prefix_cache.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

#include "engine_support.h"

namespace hostlm {
namespace {

struct Outcome {
  GenerationResult result;
  std::vector<std::vector<float>> logits;  // what each generated token was drawn from
};

Outcome run(Engine& engine, GenerationRequest request) {
  Outcome out;
  request.on_logits = [&out](std::span<const float> l) {
    out.logits.emplace_back(l.begin(), l.end());
  };
  out.result = engine.generate(std::move(request));
  return out;
}

void expect_bit_identical(const Outcome& warm, const Outcome& cold, const std::string& what) {
  ASSERT_EQ(warm.logits.size(), cold.logits.size()) << what;
  for (size_t i = 0; i < warm.logits.size(); ++i)
    ASSERT_EQ(0, std::memcmp(warm.logits[i].data(), cold.logits[i].data(),
                             warm.logits[i].size() * sizeof(float)))
        << what << ": logits of generated token " << i << " differ";
  EXPECT_EQ(warm.result.tokens, cold.result.tokens) << what;
}

class PrefixCacheEngine : public ::testing::TestWithParam<DType> {
 protected:
  EngineOptions options(bool cache) const {
    EngineOptions o = testing::quiet_options();
    o.kv_type = GetParam();
    o.prefix_cache = cache;
    o.snapshot_interval = 64;
    o.prefill_chunk = 48;
    return o;
  }
  Outcome cold(const GenerationRequest& request) {
    Engine engine(loaded.model(), options(false));
    return run(engine, request);
  }
  PluginRegistry registry;
  LoadedModel loaded{registry, testing::tiny_model_dir(), testing::cpu_batches_of(64)};
};

TEST_P(PrefixCacheEngine, HitsComputeOnlyTheSuffixAndMatchAColdRunBitForBit) {
  Engine engine(loaded.model(), options(true));
  const auto first = testing::tokens(150, 1);
  run(engine, testing::greedy_request(first, 4));

  // Shares 100 tokens: resumes at the page-boundary snapshot at 64.
  const auto branch = testing::greedy_request(
      testing::concat(std::vector<int32_t>(first.begin(), first.begin() + 100),
                      testing::tokens(40, 2)),
      6);
  const Outcome warm = run(engine, branch);
  EXPECT_EQ(warm.result.cached_tokens, 64);
  EXPECT_EQ(warm.result.prompt_eval_count, 140 - 64);
  expect_bit_identical(warm, cold(branch), "branch at 100");

  // Extends the first prompt: resumes at its end (150, inside page 4, which is copied).
  const auto longer = testing::greedy_request(testing::concat(first, testing::tokens(20, 3)), 6);
  const Outcome warm2 = run(engine, longer);
  EXPECT_EQ(warm2.result.cached_tokens, 150);
  EXPECT_EQ(warm2.result.prompt_eval_count, 20);
  expect_bit_identical(warm2, cold(longer), "extension of 150");

  // Another extension of the same prompt: the shared partial page was not disturbed.
  const auto other = testing::greedy_request(testing::concat(first, testing::tokens(9, 4)), 6);
  const Outcome warm3 = run(engine, other);
  EXPECT_EQ(warm3.result.cached_tokens, 150);
  expect_bit_identical(warm3, cold(other), "second extension of 150");
}

TEST_P(PrefixCacheEngine, SnapshotsWhereTheRequestAsked) {
  Engine engine(loaded.model(), options(true));
  const auto first = testing::tokens(90, 5);
  auto request = testing::greedy_request(first, 3);
  request.snapshot_at = {50};
  run(engine, request);
  const auto second = testing::greedy_request(
      testing::concat(std::vector<int32_t>(first.begin(), first.begin() + 55),
                      testing::tokens(12, 6)),
      5);
  const Outcome warm = run(engine, second);
  EXPECT_EQ(warm.result.cached_tokens, 50);
  EXPECT_EQ(warm.result.prompt_eval_count, 17);
  expect_bit_identical(warm, cold(second), "resumed at 50");
}

TEST_P(PrefixCacheEngine, ConcurrentRequestsShareTheirPrefix) {
  Engine engine(loaded.model(), options(true));
  const auto system = testing::tokens(128, 8);
  run(engine, testing::greedy_request(system, 1));  // warms the cache: snapshots at 64, 128
  testing::Results results(4);
  std::vector<GenerationRequest> requests;
  for (uint32_t i = 0; i < 4; ++i) {
    requests.push_back(
        testing::greedy_request(testing::concat(system, testing::tokens(10 + i, 20 + i)), 8));
    engine.submit(requests.back(), nullptr, results.done(i));
  }
  ASSERT_TRUE(results.wait());
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(results[i].cached_tokens, 128) << i;
    EXPECT_EQ(results[i].tokens, cold(requests[i]).result.tokens) << i;
  }
}

INSTANTIATE_TEST_SUITE_P(KvTypes, PrefixCacheEngine,
                         ::testing::Values(DType::F32, DType::F16, DType::Q8_0),
                         [](const auto& p) { return std::string(dtype_name(p.param)); });

// Recurrent states stored as 16 bits (--state-type f16): snapshots are half the size of the
// recurrent part and a hit still computes only the suffix. The logits are close to a cold
// run's rather than equal: a 16-bit state is rounded wherever a forward call ends, and the
// cold run's calls end elsewhere.
TEST(PrefixCacheSixteenBitStates, HitsComputeOnlyTheSuffixCloseToAColdRun) {
  PluginRegistry registry;
  ModelLoadOptions load = testing::cpu_batches_of(64);
  load.recurrent_state = DType::F16;
  LoadedModel half{registry, testing::tiny_model_dir(), load};
  LoadedModel full{registry, testing::tiny_model_dir(), testing::cpu_batches_of(64)};
  EngineOptions o = testing::quiet_options();
  o.prefix_cache = true;
  o.snapshot_interval = 64;
  o.prefill_chunk = 48;
  Engine engine(half.model(), o);
  const CacheLayout hl = half.model().cache_layout(), fl = full.model().cache_layout();
  EXPECT_EQ(hl.recurrent_state * 2, fl.recurrent_state);
  EXPECT_EQ(engine.memory_plan().state_bytes_per_sequence,
            static_cast<size_t>(hl.n_state_layers * (hl.conv_state + hl.recurrent_state)) * 4);
  EXPECT_EQ(hl.recurrent_type, DType::F16);
  EXPECT_NE(engine.memory_plan().describe().find("stored as f16"), std::string::npos)
      << engine.memory_plan().describe();

  const auto first = testing::tokens(150, 1);
  run(engine, testing::greedy_request(first, 4));
  const auto longer = testing::greedy_request(testing::concat(first, testing::tokens(20, 3)), 6);
  const Outcome warm = run(engine, longer);
  EXPECT_EQ(warm.result.cached_tokens, 150);
  EXPECT_EQ(warm.result.prompt_eval_count, 20);
  o.prefix_cache = false;
  Engine cold_engine(half.model(), o);
  const Outcome cold = run(cold_engine, longer);
  ASSERT_EQ(warm.logits.size(), cold.logits.size());
  double worst = 0, scale = 0;
  for (size_t i = 0; i < warm.logits.size(); ++i)
    for (size_t v = 0; v < warm.logits[i].size(); ++v) {
      scale = std::max(scale, static_cast<double>(std::abs(cold.logits[i][v])));
      worst = std::max(worst, static_cast<double>(std::abs(warm.logits[i][v] - cold.logits[i][v])));
    }
  EXPECT_LT(worst, 1e-2 * scale) << "worst |warm - cold| " << worst << " of " << scale;
}

// The cache alone, against a model of what it must hold: random blocks and snapshots over a
// small pool, lookups checked against the longest registered prefix, every reference
// returned at the end.
TEST(PrefixCacheUnit, RandomUseKeepsReferencesBalanced) {
  auto cpu = create_backend("cpu");
  CacheLayout layout;
  layout.n_kv_layers = 1;
  layout.n_head_kv = 1;
  layout.head_dim = 32;
  layout.n_state_layers = 1;
  layout.conv_state = 3;
  layout.recurrent_state = 5;
  KvPagePool pool(*cpu, layout, DType::F16, 40);
  RecurrentStateSlots running(*cpu, layout, 2), snapshots(*cpu, layout, 5);
  std::mt19937 rng(7);
  {
    engine::PrefixCache cache(pool, snapshots);
    const std::vector<std::vector<int32_t>> stems = {testing::tokens(300, 1),
                                                     testing::tokens(300, 2)};
    for (int op = 0; op < 4000; ++op) {
      // A sequence over a random prefix of a stem, registered like the engine does.
      const auto& stem = stems[rng() % 2];
      const int64_t n = 1 + static_cast<int64_t>(rng() % 200);
      const std::span<const int32_t> prompt(stem.data(), static_cast<size_t>(n));
      KvSequence seq(pool, running, 256);
      const auto hit = cache.lookup(prompt, n - 1);
      ASSERT_LT(hit.tokens, n);
      if (hit.tokens > 0) {
        ASSERT_EQ(static_cast<int64_t>(hit.pages.size()), (hit.tokens + 31) / 32);
        seq.adopt_prefix(hit.pages, hit.tokens);
      }
      if (!seq.reserve((n + 31) / 32 - hit.tokens / 32)) continue;  // pool busy: skip
      std::vector<engine::BlockKey> keys = hit.keys;
      seq.prepare_append(n - hit.tokens);
      seq.advance(n - hit.tokens);
      while (static_cast<int64_t>(keys.size() + 1) * 32 <= n) {
        const size_t i = keys.size();
        keys.push_back(cache.add_block(i ? keys[i - 1] : engine::BlockKey{},
                                       prompt.subspan(i * 32, 32), seq.pages()[i]));
      }
      const int64_t full = n / 32;
      cache.add_snapshot(full ? keys[static_cast<size_t>(full - 1)] : engine::BlockKey{},
                         prompt.subspan(static_cast<size_t>(full * 32)),
                         n % 32 ? seq.pages()[static_cast<size_t>(full)] : -1, running,
                         seq.state_slot());
      ASSERT_LE(cache.snapshots(), snapshots.total());
      ASSERT_EQ(
          pool.used() - static_cast<int64_t>(seq.pages().size()) +
              [&] {  // pages this sequence holds alone would be counted twice
                int64_t shared = 0;
                for (int32_t p : seq.pages()) shared += pool.refcount(p) > 1;
                return shared;
              }(),
          cache.held_pages());
    }
    // Now every page is the cache's alone, and it can give every one back.
    EXPECT_EQ(cache.reclaimable_pages(), cache.held_pages());
    EXPECT_EQ(pool.used(), cache.held_pages());
    while (cache.reclaim_page()) {
    }
    EXPECT_EQ(pool.used(), 0);
    EXPECT_EQ(cache.held_pages(), 0);
  }
  EXPECT_EQ(pool.free_pages(), pool.total());
  EXPECT_EQ(snapshots.free_slots(), snapshots.total());
}

TEST(PrefixCacheUnit, ChainKeysNameWholePrefixes) {
  const auto a = testing::tokens(32, 1), b = testing::tokens(32, 2);
  const auto ka = engine::chain_key({}, a), kb = engine::chain_key({}, b);
  EXPECT_FALSE(ka == kb);
  EXPECT_TRUE(engine::chain_key(ka, b) == engine::chain_key(ka, b));
  EXPECT_FALSE(engine::chain_key(ka, b) == engine::chain_key(kb, b));  // same block, other past
}

}  // namespace
}  // namespace hostlm
