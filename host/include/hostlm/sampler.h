// Picks the next token from logits: greedy at temperature 0, else temperature, top-k and
// top-p sampling from a seeded generator (same seed, same logits -> same tokens).
#pragma once
#include <cstdint>
#include <random>
#include <span>
#include <vector>

namespace hostlm {

struct SamplerParams {
  float temperature = 0.8f;
  int top_k = 40;       // 0: off
  float top_p = 0.95f;  // 1: off
  uint64_t seed = 0;
};

class Sampler {
 public:
  explicit Sampler(const SamplerParams& params);
  int32_t sample(std::span<const float> logits);

 private:
  SamplerParams params_;
  std::mt19937_64 rng_;
  std::vector<std::pair<float, int32_t>> candidates_;  // reused between calls
};

}  // namespace hostlm
