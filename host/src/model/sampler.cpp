#include "hostlm/sampler.h"

#include <algorithm>
#include <cmath>

namespace hostlm {

Sampler::Sampler(const SamplerParams& params) : params_(params), rng_(params.seed) {}

int32_t Sampler::sample(std::span<const float> logits) {
  const int32_t n = static_cast<int32_t>(logits.size());
  if (params_.temperature <= 0.f)
    return static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
  candidates_.resize(static_cast<size_t>(n));
  for (int32_t i = 0; i < n; ++i) candidates_[i] = {logits[i], i};
  auto by_logit = [](const auto& a, const auto& b) {
    return a.first > b.first || (a.first == b.first && a.second < b.second);
  };
  size_t keep = candidates_.size();
  if (params_.top_k > 0 && static_cast<size_t>(params_.top_k) < keep) {
    keep = static_cast<size_t>(params_.top_k);
    std::partial_sort(candidates_.begin(), candidates_.begin() + keep, candidates_.end(), by_logit);
  } else {
    std::sort(candidates_.begin(), candidates_.end(), by_logit);
  }
  const float max_logit = candidates_[0].first;
  double total = 0.0;
  for (size_t i = 0; i < keep; ++i) {
    candidates_[i].first = std::exp((candidates_[i].first - max_logit) / params_.temperature);
    total += candidates_[i].first;
  }
  if (params_.top_p < 1.f) {
    double mass = 0.0;
    for (size_t i = 0; i < keep; ++i) {
      mass += candidates_[i].first / total;
      if (mass >= params_.top_p) {
        keep = i + 1;
        break;
      }
    }
    total = 0.0;
    for (size_t i = 0; i < keep; ++i) total += candidates_[i].first;
  }
  std::uniform_real_distribution<double> uniform(0.0, total);
  double r = uniform(rng_);
  for (size_t i = 0; i < keep; ++i) {
    r -= candidates_[i].first;
    if (r <= 0.0) return candidates_[i].second;
  }
  return candidates_[keep - 1].second;
}

}  // namespace hostlm
