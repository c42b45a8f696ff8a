#include "serving/logprobs.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

namespace hostlm::serving {

void LogprobRecorder::on_logits(std::span<const float> logits) {
  logits_ = logits;
  float max = -std::numeric_limits<float>::infinity();
  for (const float x : logits) max = std::max(max, x);
  double sum = 0;
  for (const float x : logits) sum += std::exp(static_cast<double>(x - max));
  log_sum_exp_ = static_cast<double>(max) + std::log(sum);
  // The best top_n by a min-heap of that size: one pass, no copy of the vocabulary.
  top_.clear();
  if (top_n_ <= 0) return;
  const auto worse = std::greater<std::pair<float, int32_t>>();
  for (size_t i = 0; i < logits.size(); ++i) {
    const std::pair<float, int32_t> item{logits[i], static_cast<int32_t>(i)};
    if (static_cast<int>(top_.size()) < top_n_) {
      top_.push_back(item);
      std::push_heap(top_.begin(), top_.end(), worse);
    } else if (item.first > top_.front().first) {
      std::pop_heap(top_.begin(), top_.end(), worse);
      top_.back() = item;
      std::push_heap(top_.begin(), top_.end(), worse);
    }
  }
  std::sort_heap(top_.begin(), top_.end(), worse);  // best first
}

TokenLogprob LogprobRecorder::take(int32_t token) const {
  TokenLogprob out;
  out.id = token;
  if (token >= 0 && static_cast<size_t>(token) < logits_.size())
    out.logprob = static_cast<float>(logits_[static_cast<size_t>(token)] - log_sum_exp_);
  for (const auto& [logit, id] : top_) {
    TokenLogprob alt;
    alt.id = id;
    alt.logprob = static_cast<float>(logit - log_sum_exp_);
    out.top.push_back(std::move(alt));
  }
  return out;
}

}  // namespace hostlm::serving
