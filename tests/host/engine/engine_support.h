// Shared by the engine tests: the tiny model, greedy requests, and waiting for results.
#pragma once
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <vector>

#include "hostlm/engine.h"
#include "hostlm/model_loader.h"

namespace hostlm::testing {

inline std::filesystem::path tiny_model_dir() {
  const char* src = std::getenv("HOSTLM_SOURCE_DIR");
  return std::filesystem::path(src ? src : ".") / "tests/data/models/tiny-tied-f32";
}

inline ModelLoadOptions cpu_batches_of(int64_t max_batch) {
  ModelLoadOptions o;
  o.backend = "cpu";
  o.max_batch = max_batch;
  return o;
}

inline GenerationRequest greedy_request(std::vector<int32_t> prompt, int64_t n) {
  GenerationRequest r;
  r.prompt = std::move(prompt);
  r.sampling.temperature = 0;
  r.max_tokens = n;
  return r;
}

inline EngineOptions quiet_options() {
  EngineOptions o;
  o.log_memory = false;
  return o;
}

// Deterministic pseudo-random token ids in [1, 2000).
inline std::vector<int32_t> tokens(size_t n, uint32_t seed) {
  std::vector<int32_t> out(n);
  uint32_t x = seed * 2654435761u + 1;
  for (auto& t : out) {
    x = x * 1664525u + 1013904223u;
    t = static_cast<int32_t>(1 + (x >> 8) % 1999);
  }
  return out;
}

inline std::vector<int32_t> concat(std::vector<int32_t> a, const std::vector<int32_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// Results of requests submitted with done(i) as their OnDone, awaited together.
class Results {
 public:
  explicit Results(size_t n) : results_(n) {}
  Engine::OnDone done(size_t i) {
    return [this, i](const GenerationResult& r) {
      std::lock_guard<std::mutex> lock(mutex_);
      results_[i] = r;
      ++finished_;
      cv_.notify_all();
    };
  }
  // Waits for `n` results (all by default); false after a minute.
  bool wait(size_t n = SIZE_MAX) {
    std::unique_lock<std::mutex> lock(mutex_);
    const size_t want = std::min(n, results_.size());
    return cv_.wait_for(lock, std::chrono::seconds(60), [&] { return finished_ >= want; });
  }
  const GenerationResult& operator[](size_t i) const { return results_[i]; }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<GenerationResult> results_;
  size_t finished_ = 0;
};

}  // namespace hostlm::testing
