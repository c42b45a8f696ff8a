// Logits far out in a long prompt, evaluated in chunks (optionally its last stretch one token
// at a time): shared by the CPU and CUDA checks that chunking never changes the numbers.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <span>
#include <vector>

#include "hostlm/plugin_api.h"

namespace hostlm::testing {

struct FarWindow {
  int64_t far;       // first position whose logits are kept
  int64_t tokens;    // prompt length
  int64_t stepwise;  // how many of the last tokens go one at a time (when asked)
};

// Logits of positions [w.far, w.tokens) when the prompt goes through in chunks of `chunk`,
// the last w.stepwise tokens one by one when `stepwise`.
inline std::vector<float> far_logits(Model& model, const std::vector<int32_t>& tokens,
                                     const FarWindow& w, int64_t chunk, bool stepwise) {
  const int64_t V = model.info().n_vocab;
  auto seq = model.new_sequence(w.tokens);
  std::vector<float> out(static_cast<size_t>((w.tokens - w.far) * V)), logits;
  const int64_t chunked_end = stepwise ? w.tokens - w.stepwise : w.tokens;
  for (int64_t at = 0; at < w.tokens;) {
    const int64_t n = at < chunked_end ? std::min(chunk, chunked_end - at) : 1;
    const bool wanted = at + n > w.far;
    logits.resize(static_cast<size_t>((wanted ? n : 1) * V));
    model.eval(*seq, std::span(tokens).subspan(static_cast<size_t>(at), static_cast<size_t>(n)),
               wanted, logits);
    for (int64_t t = std::max(at, w.far); wanted && t < at + n; ++t)
      std::copy_n(logits.begin() + (t - at) * V, V, out.begin() + (t - w.far) * V);
    at += n;
  }
  return out;
}

// Largest |a - b| over the largest |a|.
inline double max_relative_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double scale = 0, worst = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    scale = std::max(scale, static_cast<double>(std::abs(a[i])));
    worst = std::max(worst, static_cast<double>(std::abs(a[i] - b[i])));
  }
  return scale > 0 ? worst / scale : INFINITY;
}

}  // namespace hostlm::testing
