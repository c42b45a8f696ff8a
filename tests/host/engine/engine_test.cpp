// Given a tiny Qwen3.5 model, the engine serves several requests at once with the same
// results each would get alone, bounds its queue, and cancels cleanly.
#include "hostlm/engine.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "hostlm/error.h"
#include "hostlm/model_loader.h"

namespace hostlm {
namespace {

std::filesystem::path model_dir() {
  const char* src = std::getenv("HOSTLM_SOURCE_DIR");
  return std::filesystem::path(src ? src : ".") / "tests/data/models/tiny-tied-f32";
}

// Greedy generation through the plain single-sequence path: the reference.
std::vector<int32_t> greedy_alone(Model& model, const std::vector<int32_t>& prompt, int n) {
  auto seq = model.new_sequence(static_cast<int64_t>(prompt.size()) + n);
  std::vector<float> logits(static_cast<size_t>(model.info().n_vocab));
  model.eval(*seq, prompt, false, logits);
  std::vector<int32_t> out;
  for (int i = 0; i < n; ++i) {
    const int32_t t =
        static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
    out.push_back(t);
    if (i + 1 < n) model.eval(*seq, std::span<const int32_t>(&t, 1), false, logits);
  }
  return out;
}

GenerationRequest greedy(std::vector<int32_t> prompt, int n) {
  GenerationRequest r;
  r.prompt = std::move(prompt);
  r.sampling.temperature = 0;
  r.max_tokens = n;
  return r;
}

class EngineTest : public ::testing::Test {
 protected:
  PluginRegistry registry;
  LoadedModel loaded{registry, model_dir(), [] {
                       ModelLoadOptions o;
                       o.max_batch = 64;  // forces prompts to be prefilled in several steps
                       return o;
                     }()};
};

TEST_F(EngineTest, ConcurrentRequestsMatchRunningAlone) {
  const std::vector<std::vector<int32_t>> prompts = {
      {1, 17, 42, 1999, 5, 5, 300}, {7}, std::vector<int32_t>(150, 33), {100, 200, 300, 400}};
  std::vector<std::vector<int32_t>> expected;
  for (const auto& p : prompts) expected.push_back(greedy_alone(loaded.model(), p, 12));

  EngineOptions options;
  options.max_sequences = 3;  // the fourth waits in the queue
  options.prefill_chunk = 40;
  options.kv_type = DType::F32;  // the reference path keeps float32 keys and values
  Engine engine(loaded.model(), options);
  std::mutex m;
  std::condition_variable cv;
  std::vector<GenerationResult> results(prompts.size());
  int done = 0;
  for (size_t i = 0; i < prompts.size(); ++i)
    engine.submit(greedy(prompts[i], 12), nullptr, [&, i](const GenerationResult& r) {
      std::lock_guard<std::mutex> lock(m);
      results[i] = r;
      ++done;
      cv.notify_one();
    });
  std::unique_lock<std::mutex> lock(m);
  ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(60), [&] { return done == 4; }));
  for (size_t i = 0; i < prompts.size(); ++i) {
    EXPECT_EQ(results[i].tokens, expected[i]) << "request " << i;
    EXPECT_EQ(results[i].done_reason, "length");
    EXPECT_EQ(results[i].prompt_tokens, static_cast<int64_t>(prompts[i].size()));
  }
}

TEST_F(EngineTest, StopTokenEndsGeneration) {
  Engine engine(loaded.model(), {});
  const auto alone = greedy_alone(loaded.model(), {1, 17, 42, 1999, 5, 5, 300}, 12);
  auto request = greedy({1, 17, 42, 1999, 5, 5, 300}, 12);
  request.stop_tokens = {alone[8]};
  const GenerationResult r = engine.generate(request);
  EXPECT_EQ(r.done_reason, "stop");
  const auto first_stop = std::find(alone.begin(), alone.end(), alone[8]) - alone.begin();
  EXPECT_EQ(r.tokens.size(), static_cast<size_t>(first_stop + 1));
}

// HOSTLM_SAMPLER_THREADS sets the sampling helpers: 0 draws on the scheduler alone, with the
// same tokens; a value that is not a whole number from 0 to 63 is an error naming it.
TEST_F(EngineTest, SamplerThreadsComeFromTheEnvironmentOrAreAnError) {
  const char* before = std::getenv("HOSTLM_SAMPLER_THREADS");
  const std::string saved = before ? before : "";
  struct Restore {
    bool had;  // getenv's pointer may not outlive the setenv calls below
    std::string saved;
    ~Restore() {
      if (had)
        ::setenv("HOSTLM_SAMPLER_THREADS", saved.c_str(), 1);
      else
        ::unsetenv("HOSTLM_SAMPLER_THREADS");
    }
  } restore{before != nullptr, saved};
  for (const char* bad : {"abc", "4x", "-1", "64", " 3"}) {
    ::setenv("HOSTLM_SAMPLER_THREADS", bad, 1);
    try {
      Engine engine(loaded.model(), {});
      ADD_FAILURE() << "HOSTLM_SAMPLER_THREADS='" << bad << "' was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("HOSTLM_SAMPLER_THREADS"), std::string::npos)
          << e.what();
      EXPECT_NE(std::string(e.what()).find(bad), std::string::npos) << e.what();
    }
  }
  ::setenv("HOSTLM_SAMPLER_THREADS", "0", 1);
  EngineOptions options;
  options.kv_type = DType::F32;  // as the reference path
  Engine engine(loaded.model(), options);
  const std::vector<int32_t> prompt = {1, 17, 42, 1999, 5, 5, 300};
  EXPECT_EQ(engine.generate(greedy(prompt, 12)).tokens, greedy_alone(loaded.model(), prompt, 12));
}

// Requests whose sampler reads only its top-k get only the best few logits from the model
// (EngineOptions::best_logits; on the CPU backend off unless asked, since the logits are in
// host memory already): the same tokens as with whole rows, in steps whose rows want
// different numbers of best logits (greedy one, top-k 40 or 5) or whole rows (a penalised
// request), and the metric counts the draws that took the path.
TEST_F(EngineTest, BestLogitsDrawTheSameTokensAsWholeRows) {
  std::vector<GenerationRequest> requests;
  for (int i = 0; i < 5; ++i) {
    GenerationRequest r;
    r.prompt = {static_cast<int32_t>(1 + i), 17, 42, 1999, 5, static_cast<int32_t>(300 + i)};
    r.max_tokens = 10;
    r.sampling.temperature = 1.5f;  // a flat distribution, so the draws differ by seed
    r.sampling.top_k = 40;
    r.sampling.top_p = 0.9f;
    r.sampling.seed = static_cast<uint64_t>(100 + i);
    requests.push_back(r);
  }
  requests[2].sampling.top_k = 5;
  requests[3].sampling.temperature = 0;        // greedy: the best logit
  requests[4].sampling.repeat_penalty = 1.3f;  // a penalty: whole rows
  auto run = [&](int best_logits) {
    EngineOptions options;
    options.max_sequences = 5;
    options.kv_type = DType::F32;
    options.log_memory = false;
    options.best_logits = best_logits;
    Engine engine(loaded.model(), options);
    std::mutex m;
    std::condition_variable cv;
    std::vector<std::vector<int32_t>> tokens(requests.size());
    size_t done = 0;
    for (size_t i = 0; i < requests.size(); ++i)
      engine.submit(requests[i], nullptr, [&, i](const GenerationResult& r) {
        std::lock_guard<std::mutex> lock(m);
        tokens[i] = r.tokens;
        ++done;
        cv.notify_one();
      });
    std::unique_lock<std::mutex> lock(m);
    EXPECT_TRUE(
        cv.wait_for(lock, std::chrono::seconds(60), [&] { return done == requests.size(); }));
    return std::pair(tokens, engine.metrics().best_logits_draws_total);
  };
  const auto [whole, whole_draws] = run(0);
  const auto [best, best_draws] = run(1);
  const auto [automatic, automatic_draws] = run(-1);
  EXPECT_EQ(whole_draws, 0u);
  EXPECT_EQ(best_draws, 40u);  // 4 requests x 10 tokens
  EXPECT_EQ(automatic_draws, 0u);
  for (size_t i = 0; i < requests.size(); ++i) {
    EXPECT_EQ(whole[i].size(), 10u) << "request " << i;
    EXPECT_EQ(best[i], whole[i]) << "request " << i;
    EXPECT_EQ(automatic[i], whole[i]) << "request " << i;
  }
  // The seeds matter: not every sampled request drew the same tokens.
  EXPECT_TRUE(whole[0] != whole[1] || whole[1] != whole[2]);
}

TEST_F(EngineTest, FullQueueIsBusyAndBadRequestsAreErrors) {
  EngineOptions options;
  options.max_sequences = 1;
  options.max_queue = 1;
  options.context = 256;
  Engine engine(loaded.model(), options);
  std::atomic<bool> release{false};
  std::atomic<int> finished{0};
  auto hold = [&](int32_t) {
    while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return true;
  };
  auto count = [&](const GenerationResult&) { ++finished; };
  engine.submit(greedy({1, 2, 3}, 4), hold, count);  // runs, held in its callback
  while (engine.running() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  engine.submit(greedy({1, 2, 3}, 4), nullptr, count);  // waits in the queue
  EXPECT_THROW(engine.submit(greedy({1, 2, 3}, 4), nullptr, count), EngineBusy);
  EXPECT_THROW(engine.submit(greedy({}, 4), nullptr, count), Error);
  EXPECT_THROW(engine.submit(greedy({1, 2}, 1000), nullptr, count), Error);
  EXPECT_THROW(engine.submit(greedy({1, 99999}, 4), nullptr, count), Error);
  release = true;
  while (finished < 2) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

TEST_F(EngineTest, CancelStopsRunningAndQueuedRequests) {
  EngineOptions options;
  options.max_sequences = 1;
  Engine engine(loaded.model(), options);
  std::mutex m;
  std::condition_variable cv;
  std::vector<std::string> reasons;
  auto record = [&](const GenerationResult& r) {
    std::lock_guard<std::mutex> lock(m);
    reasons.push_back(r.done_reason);
    cv.notify_one();
  };
  std::atomic<int> seen{0};
  const auto running = engine.submit(
      greedy({1, 2, 3}, 500),
      [&](int32_t) {
        ++seen;
        return true;
      },
      record);
  const auto queued = engine.submit(greedy({4, 5, 6}, 500), nullptr, record);
  while (seen < 3) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  engine.cancel(queued);
  engine.cancel(running);
  std::unique_lock<std::mutex> lock(m);
  ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(30), [&] { return reasons.size() == 2; }));
  EXPECT_EQ(reasons, (std::vector<std::string>{"cancelled", "cancelled"}));
}

TEST_F(EngineTest, CallbackReturningFalseCancels) {
  Engine engine(loaded.model(), {});
  int calls = 0;
  std::mutex m;
  std::condition_variable cv;
  GenerationResult out;
  bool done = false;
  engine.submit(
      greedy({1, 2, 3}, 100), [&](int32_t) { return ++calls < 3; },
      [&](const GenerationResult& r) {
        std::lock_guard<std::mutex> lock(m);
        out = r;
        done = true;
        cv.notify_one();
      });
  std::unique_lock<std::mutex> lock(m);
  cv.wait(lock, [&] { return done; });
  EXPECT_EQ(out.done_reason, "cancelled");
  EXPECT_EQ(out.tokens.size(), 3u);
}

}  // namespace
}  // namespace hostlm
