// Log probabilities of generated tokens (OpenAI logprobs / top_logprobs, Ollama logprobs),
// taken from the logits each token is drawn from, before biases and penalties.
//
// on_logits() and take() run on the engine's scheduler thread, one after the other for each
// token (Engine's on_logits hook, then its on_token): the logits stay valid in between.
#pragma once
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "hostlm/text_generation.h"

namespace hostlm::serving {

class LogprobRecorder {
 public:
  explicit LogprobRecorder(int top_n) : top_n_(top_n) {}
  void on_logits(std::span<const float> logits);
  // The entry of the token drawn from the last logits; texts are left to the reader.
  TokenLogprob take(int32_t token) const;

 private:
  int top_n_;
  std::span<const float> logits_;
  double log_sum_exp_ = 0;
  std::vector<std::pair<float, int32_t>> top_;  // best first
};

}  // namespace hostlm::serving
