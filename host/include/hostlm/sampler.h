// Picks the next token from logits: greedy at temperature 0, else temperature, top-k, top-p
// and min-p sampling from a seeded generator (same seed, same logits -> same tokens). A
// repeat penalty, when on, first pushes down the logits of recently seen tokens.
//
// Order, as Ollama applies it: repeat penalty, top-k, temperature + softmax, top-p, min-p.
// The defaults of min_p and repeat_penalty switch them off, so a sampler made with only the
// first four fields picks exactly what it did before those two existed.
#pragma once
#include <cstdint>
#include <random>
#include <span>
#include <utility>
#include <vector>

namespace hostlm {

struct SamplerParams {
  float temperature = 0.8f;
  int top_k = 40;       // 0: off
  float top_p = 0.95f;  // 1: off
  uint64_t seed = 0;
  // Drops tokens whose probability is below min_p times the most likely token's. 0: off.
  float min_p = 0.f;
  // Tokens seen among the last repeat_last_n get their logit divided by repeat_penalty when
  // positive and multiplied by it when negative (llama.cpp / Ollama). 1: off.
  float repeat_penalty = 1.f;
  int repeat_last_n = 64;  // 0: off
};

class Sampler {
 public:
  // Throws hostlm::Error for min_p outside [0, 1], repeat_penalty <= 0 or a negative
  // repeat_last_n. Temperature <= 0 means greedy.
  explicit Sampler(const SamplerParams& params);

  // Also records the returned token as seen, for the repeat penalty.
  int32_t sample(std::span<const float> logits);

  // Records tokens the sampler did not pick (the prompt) as seen.
  void accept(int32_t token);
  void accept(std::span<const int32_t> tokens);
  // Forgets the seen tokens (a new conversation); the generator keeps its state.
  void clear_history();

  const SamplerParams& params() const { return params_; }

 private:
  bool penalizing() const { return params_.repeat_penalty != 1.f && params_.repeat_last_n > 0; }
  // The seen tokens, each once, sorted; in recent_sorted_.
  void unique_recent();

  SamplerParams params_;
  std::mt19937_64 rng_;
  // Reused between calls so that sampling allocates nothing once warmed up.
  std::vector<std::pair<float, int32_t>> candidates_;
  std::vector<float> penalized_;  // greedy with a penalty: the adjusted logits
  std::vector<int32_t> recent_;   // ring of the last repeat_last_n seen tokens
  std::vector<int32_t> recent_sorted_;
  size_t recent_next_ = 0;  // where the ring writes next
};

}  // namespace hostlm
