// Given the tiny model served from a pool of KV pages: concurrent requests give what each
// gives alone, pages come back the moment a request ends, requests that cannot fit are
// refused or truncated as asked, and the memory accounting balances after thousands of
// random submits and cancels.
#include <gtest/gtest.h>

#include <atomic>
#include <random>
#include <sstream>
#include <thread>

#include "engine_support.h"

namespace hostlm {
namespace {

using testing::Results;

class PagedEngine : public ::testing::Test {
 protected:
  PluginRegistry registry;
  LoadedModel loaded{registry, testing::tiny_model_dir(), testing::cpu_batches_of(64)};
};

TEST_F(PagedEngine, ConcurrentGreedySequencesEqualEachAlone) {
  const std::vector<std::vector<int32_t>> prompts = {
      testing::tokens(7, 1),  testing::tokens(1, 2),  testing::tokens(150, 3),
      testing::tokens(33, 4), testing::tokens(64, 5), testing::tokens(95, 6)};
  EngineOptions options = testing::quiet_options();
  options.max_sequences = 4;  // two wait in the queue and join as others finish
  options.prefill_chunk = 40;
  options.prefix_cache = false;
  std::vector<std::vector<int32_t>> together(prompts.size());
  {
    Engine engine(loaded.model(), options);
    Results results(prompts.size());
    for (size_t i = 0; i < prompts.size(); ++i)
      engine.submit(testing::greedy_request(prompts[i], 20 + static_cast<int64_t>(i)), nullptr,
                    results.done(i));
    ASSERT_TRUE(results.wait());
    for (size_t i = 0; i < prompts.size(); ++i) together[i] = results[i].tokens;
  }
  for (size_t i = 0; i < prompts.size(); ++i) {
    Engine alone(loaded.model(), options);
    const auto r =
        alone.generate(testing::greedy_request(prompts[i], 20 + static_cast<int64_t>(i)));
    EXPECT_EQ(r.tokens, together[i]) << "request " << i;
  }
}

TEST_F(PagedEngine, CancelGivesThePagesBackAtOnce) {
  for (bool cache : {false, true}) {
    EngineOptions options = testing::quiet_options();
    options.prefix_cache = cache;
    Engine engine(loaded.model(), options);
    std::atomic<int> seen{0};
    std::mutex m;
    std::condition_variable cv;
    bool done = false;
    EngineMetrics at_done;
    const auto id = engine.submit(
        testing::greedy_request(testing::tokens(100, 9), 3000),
        [&](int32_t) {
          ++seen;
          return true;
        },
        [&](const GenerationResult& r) {
          EXPECT_EQ(r.done_reason, "cancelled");
          at_done = engine.metrics();  // inside the callback: nothing else ran since
          std::lock_guard<std::mutex> lock(m);
          done = true;
          cv.notify_all();
        });
    while (seen < 40) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    EXPECT_GE(engine.metrics().kv_pages_used, 5);  // 140 tokens and growing
    engine.cancel(id);
    std::unique_lock<std::mutex> lock(m);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(30), [&] { return done; }));
    EXPECT_EQ(at_done.kv_pages_reserved, 0);
    EXPECT_EQ(at_done.kv_pages_used, at_done.kv_pages_cached) << "cache " << cache;
    if (!cache) {
      EXPECT_EQ(at_done.kv_pages_used, 0);
    }
  }
}

TEST_F(PagedEngine, RequestsBeyondTheMemoryAreRefusedClearly) {
  EngineOptions options = testing::quiet_options();
  options.context = 4096;
  const size_t page =
      Engine(loaded.model(), options).memory_plan().kv_bytes_per_token * kKvPageTokens;
  options.kv_pool_bytes = page * 8;  // 256 tokens
  options.context = 200;
  Engine engine(loaded.model(), options);
  EXPECT_EQ(engine.memory_plan().kv_pages, 8);
  try {
    engine.submit(testing::greedy_request(testing::tokens(150, 1), 100), nullptr, nullptr);
    FAIL() << "a request beyond the context was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("exceed the context"), std::string::npos) << e.what();
  }
  options.context = 1000;
  EXPECT_THROW(Engine(loaded.model(), options), Error);  // a context the pool cannot hold
  // Many small requests wait for pages instead of failing.
  Results results(12);
  for (size_t i = 0; i < 12; ++i)
    engine.submit(testing::greedy_request(testing::tokens(90, static_cast<uint32_t>(i)), 60),
                  nullptr, results.done(i));
  ASSERT_TRUE(results.wait());
  for (size_t i = 0; i < 12; ++i) EXPECT_EQ(results[i].done_reason, "length") << i;
}

TEST_F(PagedEngine, TruncationKeepsTheFrontAndTheEnd) {
  EngineOptions options = testing::quiet_options();
  options.context = 64;
  options.kv_type = DType::F32;
  Engine engine(loaded.model(), options);
  const auto prompt = testing::tokens(100, 77);
  auto request = testing::greedy_request(prompt, 8);
  EXPECT_THROW(engine.submit(request, nullptr, nullptr), Error);
  request.truncate = true;
  request.num_keep = 5;
  const GenerationResult r = engine.generate(request);
  EXPECT_EQ(r.prompt_tokens, 56);
  EXPECT_EQ(r.truncated_tokens, 44);
  std::vector<int32_t> kept(prompt.begin(), prompt.begin() + 5);
  kept.insert(kept.end(), prompt.end() - 51, prompt.end());
  Engine fresh(loaded.model(), options);
  EXPECT_EQ(fresh.generate(testing::greedy_request(kept, 8)).tokens, r.tokens);
  request.num_keep = 60;  // nothing left to drop
  EXPECT_THROW(engine.submit(request, nullptr, nullptr), Error);
}

TEST_F(PagedEngine, LongContextsTakePagesOnlyAsTheyGrow) {
  EngineOptions options = testing::quiet_options();
  options.context = 262144;
  options.max_sequences = 1;
  Engine engine(loaded.model(), options);
  const MemoryPlan& plan = engine.memory_plan();
  EXPECT_GE(plan.kv_pages, 262144 / kKvPageTokens);
  EXPECT_EQ(plan.total_bytes(),
            plan.weight_bytes + plan.scratch_bytes + plan.kv_pool_bytes + plan.state_bytes);
  const std::string text = plan.describe();
  for (const char* part : {"weights", "KV cache", "recurrent state", "scratch", "total"})
    EXPECT_NE(text.find(part), std::string::npos) << text;
  const GenerationResult r = engine.generate(testing::greedy_request(testing::tokens(40, 3), 5));
  EXPECT_EQ(r.done_reason, "length");
  const EngineMetrics m = engine.metrics();
  EXPECT_LE(m.kv_pages_used, 2);  // 45 tokens, not the whole context
}

TEST_F(PagedEngine, MetricsCountAndRenderAsPrometheusText) {
  EngineOptions options = testing::quiet_options();
  Engine engine(loaded.model(), options);
  const auto prompt = testing::tokens(80, 5);
  engine.generate(testing::greedy_request(prompt, 6));
  engine.generate(testing::greedy_request(testing::concat(prompt, testing::tokens(10, 6)), 6));
  const EngineMetrics m = engine.metrics();
  EXPECT_EQ(m.requests_total, 2u);
  EXPECT_EQ(m.generated_tokens_total, 12u);
  EXPECT_EQ(m.prompt_tokens_total, 170u);
  EXPECT_EQ(m.cached_tokens_total, 80u);  // the second prompt resumes after the first
  EXPECT_EQ(m.prompt_tokens_computed_total, 90u);
  EXPECT_EQ(m.prefix_cache_lookups, 2u);
  EXPECT_EQ(m.prefix_cache_hits, 1u);
  EXPECT_DOUBLE_EQ(m.prefix_cache_hit_rate, 80.0 / 170.0);
  EXPECT_GT(m.generate_tokens_per_second, 0);
  // A step per generated token at least (the last prompt step gives the first; a prompt may
  // take more than one, ending at a snapshot point), less the last, which a request's end
  // may outrun; the forward passes take time, and the host's share is counted apart.
  EXPECT_GE(m.steps_total, 11u);
  EXPECT_LE(m.steps_total, 16u);
  EXPECT_GT(m.step_model_seconds_total, 0);
  EXPECT_GT(m.step_host_seconds_total, 0);
  const std::string text = prometheus_text(m);
  for (const char* name : {"hostlm_steps_total ", "hostlm_step_model_seconds_total ",
                           "hostlm_step_host_seconds_total "})
    EXPECT_NE(text.find(std::string("\n") + name), std::string::npos) << name;
  std::istringstream lines(text);
  std::string line;
  int samples = 0;
  while (std::getline(lines, line)) {
    if (line.rfind("# ", 0) == 0) {
      EXPECT_TRUE(line.rfind("# HELP hostlm_", 0) == 0 || line.rfind("# TYPE hostlm_", 0) == 0)
          << line;
      continue;
    }
    std::istringstream fields(line);
    std::string name;
    double value = -1;
    ASSERT_TRUE(fields >> name >> value) << line;
    EXPECT_EQ(name.rfind("hostlm_", 0), 0u) << line;
    ++samples;
  }
  EXPECT_GE(samples, 18);
  EXPECT_NE(text.find("hostlm_generated_tokens_total 12\n"), std::string::npos) << text;
  EXPECT_NE(text.find("# TYPE hostlm_kv_pages_used gauge\n"), std::string::npos);
}

// Random traffic over a small pool: prompts sharing prefixes (so the prefix cache holds and
// evicts pages), cancels of queued and running requests, a full queue. Afterwards nothing
// may be held but what the cache keeps, and the engine must shut down cleanly (under ASan
// too).
TEST_F(PagedEngine, MemoryAccountingBalancesAfterRandomSubmitsAndCancels) {
  EngineOptions options = testing::quiet_options();
  options.max_sequences = 3;
  options.max_queue = 6;
  options.context = 160;
  options.snapshot_interval = 32;
  options.state_cache_bytes = 6 * 16896;  // a handful of snapshots: they get evicted
  options.kv_type = DType::Q8_0;
  Engine probe(loaded.model(), options);
  options.kv_pool_bytes = probe.memory_plan().kv_bytes_per_token * kKvPageTokens * 14;
  Engine engine(loaded.model(), options);
  std::mt19937 rng(2024);
  const std::vector<std::vector<int32_t>> stems = {testing::tokens(40, 1), testing::tokens(50, 2),
                                                   testing::tokens(5, 3)};
  constexpr int kOps = 800;
  Results results(kOps);
  std::vector<Engine::RequestId> ids;
  std::atomic<int> callbacks{0};
  int submitted = 0, busy = 0;
  for (int op = 0; op < kOps; ++op) {
    const int what = static_cast<int>(rng() % 10);
    if (what < 6) {
      auto prompt = stems[rng() % stems.size()];
      prompt.resize(1 + rng() % prompt.size());
      const auto tail = testing::tokens(rng() % 12, static_cast<uint32_t>(rng()));
      prompt.insert(prompt.end(), tail.begin(), tail.end());
      auto request = testing::greedy_request(prompt, 1 + static_cast<int64_t>(rng() % 4));
      if (rng() % 4 == 0) request.snapshot_at = {static_cast<int64_t>(rng() % prompt.size())};
      try {
        ids.push_back(engine.submit(
            request,
            [&callbacks, stop = rng() % 8 == 0](int32_t) {
              ++callbacks;
              return !stop;
            },
            results.done(static_cast<size_t>(submitted))));
        ++submitted;
      } catch (const EngineBusy&) {
        ++busy;  // then let the queue drain a little, as a client backing off would
        while (engine.queued() >= options.max_queue)
          std::this_thread::sleep_for(std::chrono::microseconds(200));
      }
    } else if (what < 9 && !ids.empty()) {
      engine.cancel(ids[rng() % ids.size()]);
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(rng() % 2000));
    }
  }
  ASSERT_TRUE(results.wait(static_cast<size_t>(submitted)));
  for (int i = 0; i < submitted; ++i)
    EXPECT_NE(results[static_cast<size_t>(i)].done_reason, "error")
        << results[static_cast<size_t>(i)].error;
  // Settle: the last finish has published the gauges.
  while (engine.running() > 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  const EngineMetrics m = engine.metrics();
  EXPECT_EQ(m.running, 0u);
  EXPECT_EQ(m.queued, 0u);
  EXPECT_EQ(m.kv_pages_reserved, 0);
  EXPECT_EQ(m.kv_pages_used, m.kv_pages_cached);
  EXPECT_LE(m.kv_pages_used, m.kv_pages_total);
  EXPECT_LE(m.state_snapshots, m.state_snapshot_slots);
  EXPECT_GT(m.prefix_cache_hits, 0u);
  EXPECT_GT(submitted, 200) << busy << " busy";
  EXPECT_GT(busy, 0);
  RecordProperty("submitted", submitted);
  RecordProperty("busy", busy);
}

}  // namespace
}  // namespace hostlm
