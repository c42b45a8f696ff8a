#include "hostlm/sampler.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstddef>
#include <limits>
#include <string>
#include <utility>

#include "best_k.h"
#include "hostlm/error.h"

namespace hostlm {
namespace {

using detail::BestK;
using detail::better;
using detail::Candidate;
using detail::for_each_at_least;

// Calls f(id) for every id below n that the mask allows, in increasing order: a word at a
// time, so a mask of a few tokens costs a pass over 4K words, not over 248K ids.
template <class F>
void for_each_allowed(const TokenBitmask& mask, int32_t n, F&& f) {
  for (size_t w = 0; w < mask.words.size(); ++w) {
    for (uint64_t bits = mask.words[w]; bits != 0; bits &= bits - 1) {
      const auto id = static_cast<int32_t>(w * 64 + static_cast<size_t>(std::countr_zero(bits)));
      if (id >= n) return;
      f(id);
    }
  }
}

}  // namespace

Sampler::Sampler(const SamplerParams& params, GrammarConstraint constraint)
    : params_(params), rng_(params.seed), constraint_(std::move(constraint)) {
  if (!(params.min_p >= 0.f && params.min_p <= 1.f))
    throw Error("min_p must be between 0 and 1, not " + std::to_string(params.min_p));
  if (!(params.repeat_penalty > 0.f))
    throw Error("repeat_penalty must be above 0, not " + std::to_string(params.repeat_penalty));
  if (params.repeat_last_n < 0)
    throw Error("repeat_last_n must not be negative, not " + std::to_string(params.repeat_last_n));
  if (!(params.typical_p > 0.f && params.typical_p <= 1.f))
    throw Error("typical_p must be above 0 and at most 1, not " + std::to_string(params.typical_p));
  if (std::isnan(params.presence_penalty) || std::isnan(params.frequency_penalty))
    throw Error("presence_penalty and frequency_penalty must be numbers");
  for (const auto& [token, bias] : params.logit_bias)
    if (token < 0 || std::isnan(bias))
      throw Error("logit_bias: token " + std::to_string(token) + " with bias " +
                  std::to_string(bias) + " (ids are not negative, biases are numbers)");
  recent_.reserve(static_cast<size_t>(params.repeat_last_n));
  recent_sorted_.reserve(static_cast<size_t>(params.repeat_last_n));
  if (constraint_.grammar) {
    if (!constraint_.vocab) throw Error("a grammar constraint needs the grammar vocabulary");
    matcher_.emplace(*constraint_.grammar, constraint_.vocab);
    constraint_started_ = constraint_.start_after < 0;
  }
}

void Sampler::restart_constraint() {
  if (!matcher_) return;
  matcher_->reset();
  constraint_started_ = constraint_.start_after < 0;
}

bool Sampler::constraint_can_end() const { return !matcher_ || matcher_->can_end(); }

bool Sampler::grammar_accepts(int32_t token) {
  // Ids past the tokenizer's vocabulary (padding rows of the output matrix) have no bytes.
  return token >= 0 && token < constraint_.vocab->size() && matcher_->accept_token(token);
}

void Sampler::accept(int32_t token) {
  if (params_.repeat_last_n <= 0) return;
  if (recent_.size() < static_cast<size_t>(params_.repeat_last_n)) {
    recent_.push_back(token);
    return;
  }
  recent_[recent_next_] = token;
  recent_next_ = (recent_next_ + 1) % recent_.size();
}

void Sampler::accept(std::span<const int32_t> tokens) {
  // Only the tail can still be in the window.
  const size_t n = static_cast<size_t>(std::max(params_.repeat_last_n, 0));
  if (tokens.size() > n) tokens = tokens.subspan(tokens.size() - n);
  for (int32_t t : tokens) accept(t);
}

void Sampler::clear_history() {
  recent_.clear();
  recent_next_ = 0;
}

void Sampler::count_recent() {
  recent_sorted_.assign(recent_.begin(), recent_.end());
  std::sort(recent_sorted_.begin(), recent_sorted_.end());
  seen_.clear();
  for (int32_t t : recent_sorted_) {
    if (!seen_.empty() && seen_.back().first == t)
      ++seen_.back().second;
    else
      seen_.emplace_back(t, 1);
  }
}

int Sampler::seen_count(int32_t token) const {
  auto it = std::lower_bound(seen_.begin(), seen_.end(), std::pair<int32_t, int>(token, 0));
  return it != seen_.end() && it->first == token ? it->second : 0;
}

float Sampler::adjusted(float logit, int count) const {
  if (count == 0) return logit;
  // A token seen several times is repeat-penalised once, as llama.cpp's repeat penalty does.
  if (params_.repeat_penalty != 1.f)
    logit = logit > 0.f ? logit / params_.repeat_penalty : logit * params_.repeat_penalty;
  return logit - static_cast<float>(count) * params_.frequency_penalty - params_.presence_penalty;
}

size_t Sampler::typical_filter(size_t keep, double total) {
  // Entropy of the kept candidates' distribution, then each token's distance from it.
  double entropy = 0.0;
  for (size_t i = 0; i < keep; ++i) {
    const double p = candidates_[i].first / total;
    if (p > 0.0) entropy -= p * std::log(p);
  }
  typical_.clear();
  for (size_t i = 0; i < keep; ++i) {
    const double p = candidates_[i].first / total;
    typical_.emplace_back(p > 0.0 ? std::abs(-std::log(p) - entropy) : INFINITY, i);
  }
  std::stable_sort(typical_.begin(), typical_.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  // The most typical first until their mass reaches typical_p; at least one.
  double mass = 0.0;
  size_t taken = 0;
  while (taken < keep && (taken == 0 || mass < params_.typical_p)) {
    mass += candidates_[typical_[taken].second].first / total;
    ++taken;
  }
  // Keep those, in their original (most likely first) order.
  std::sort(typical_.begin(), typical_.begin() + static_cast<std::ptrdiff_t>(taken),
            [](const auto& a, const auto& b) { return a.second < b.second; });
  for (size_t i = 0; i < taken; ++i) candidates_[i] = candidates_[typical_[i].second];
  return taken;
}

void Sampler::collect_adjusted(std::span<const float> logits, int32_t n, bool penalize) {
  adjusted_.clear();
  // Both lists are sorted by id: merge them. The bias first, then the penalties, as the sort
  // path applies them.
  auto seen = seen_.begin();
  const auto seen_end = penalize ? seen_.end() : seen_.begin();
  auto bias = params_.logit_bias.begin();
  while (seen != seen_end || bias != params_.logit_bias.end()) {
    int32_t t = seen != seen_end ? seen->first : std::numeric_limits<int32_t>::max();
    if (bias != params_.logit_bias.end()) t = std::min(t, bias->first);
    const bool in_range = t >= 0 && t < n;
    float logit = in_range ? logits[static_cast<size_t>(t)] : 0.f;
    if (bias != params_.logit_bias.end() && bias->first == t) logit += (bias++)->second;
    int count = 0;
    if (seen != seen_end && seen->first == t) count = (seen++)->second;
    if (in_range) adjusted_.emplace_back(t, adjusted(logit, count));
  }
}

int32_t Sampler::pick(std::span<const float> logits, const TokenBitmask* mask) {
  const int32_t n = mask ? std::min(static_cast<int32_t>(logits.size()), mask->size)
                         : static_cast<int32_t>(logits.size());
  const bool penalize = penalizing() && !recent_.empty();
  if (penalize) count_recent();
  const bool adjusting = penalize || !params_.logit_bias.empty();
  int32_t picked = 0;
  // Top-k (hostlm serve's defaults): the k best straight from the logits, sorted. Without a
  // mask also with biases and penalties: the few ids they change are offered with their
  // adjusted logits, and passed over in the scan (with a penalty over a 248K vocabulary, the
  // sort of every candidate took over a millisecond per token).
  const bool direct_top_k =
      (!adjusting || !mask) && params_.temperature > 0.f && params_.top_k > 0 && params_.top_k < n;
  if (direct_top_k) {
    BestK best(candidates_, static_cast<size_t>(params_.top_k));
    if (mask) {
      for_each_allowed(*mask, n, [&](int32_t i) {
        if (logits[i] >= best.floor()) best.offer(logits[i], i);
      });
    } else if (adjusting) {
      collect_adjusted(logits, n, penalize);
      for (const auto& [id, logit] : adjusted_)
        if (!std::isnan(logit)) best.offer(logit, id);  // as the scan never offers NaN
      const float* x = logits.data();
      const auto is_adjusted = [&](int32_t i) {
        const auto it = std::lower_bound(adjusted_.begin(), adjusted_.end(), i,
                                         [](const auto& a, int32_t id) { return a.first < id; });
        return it != adjusted_.end() && it->first == i;
      };
      for_each_at_least(
          x, n, [&] { return best.floor(); },
          [&](int32_t i) {
            if (!is_adjusted(i)) best.offer(x[i], i);
          });
    } else {
      const float* x = logits.data();
      for_each_at_least(
          x, n, [&] { return best.floor(); }, [&](int32_t i) { best.offer(x[i], i); });
    }
    best.finish();
  } else if (mask) {
    // Only the allowed tokens become candidates, so the rest cannot be picked even by
    // rounding in the draw below. Biases and penalties are looked up per candidate.
    auto score = [&](int32_t i) {
      float logit = logits[i];
      if (!params_.logit_bias.empty())
        if (auto b = params_.logit_bias.find(i); b != params_.logit_bias.end()) logit += b->second;
      return penalize ? adjusted(logit, seen_count(i)) : logit;
    };
    if (params_.temperature <= 0.f) {
      picked = -1;
      float best = 0.f;
      for_each_allowed(*mask, n, [&](int32_t i) {
        if (picked < 0 || score(i) > best) {
          picked = i;
          best = score(i);
        }
      });
      return picked;
    }
    candidates_.clear();
    for_each_allowed(*mask, n, [&](int32_t i) { candidates_.emplace_back(score(i), i); });
  } else if (params_.temperature <= 0.f) {
    std::span<const float> scores = logits;
    if (adjusting) {
      penalized_.assign(logits.begin(), logits.end());
      for (const auto& [t, bias] : params_.logit_bias)
        if (t < n) penalized_[t] += bias;
      if (penalize)
        for (const auto& [t, count] : seen_)
          if (t >= 0 && t < n) penalized_[t] = adjusted(penalized_[t], count);
      scores = penalized_;
    }
    // The first of the largest number (NaN only when every logit is NaN, then id 0: the
    // order of best_logits.h, so a device that sends back only the best logit agrees): only a
    // block holding something at least as large as the best so far is looked at one by one.
    const float* x = scores.data();
    const auto size = static_cast<int32_t>(scores.size());
    if (size == 0) return 0;
    int32_t best = 0;
    while (best < size && std::isnan(x[best])) ++best;
    if (best == size) return 0;
    float best_score = x[best];
    for_each_at_least(
        x, size, [&] { return best_score; },
        [&](int32_t i) {
          if (x[i] > best_score) {
            best = i;
            best_score = x[i];
          }
        });
    return best;
  } else {
    candidates_.resize(static_cast<size_t>(n));
    for (int32_t i = 0; i < n; ++i) candidates_[i] = {logits[i], i};
    for (const auto& [t, bias] : params_.logit_bias)
      if (t < n) candidates_[t].first += bias;
    if (penalize)
      for (const auto& [t, count] : seen_)
        if (t >= 0 && t < n) candidates_[t].first = adjusted(candidates_[t].first, count);
  }
  if (candidates_.empty()) return -1;
  size_t keep = candidates_.size();
  if (direct_top_k) return draw(keep, keep, 0, -1.0);  // BestK left them sorted
  if (params_.top_k > 0 && static_cast<size_t>(params_.top_k) < keep) {
    keep = static_cast<size_t>(params_.top_k);
    std::partial_sort(candidates_.begin(), candidates_.begin() + keep, candidates_.end(), better);
    if (params_.typical_p >= 1.f) return draw(keep, keep, 0, -1.0);
  } else if (params_.typical_p >= 1.f) {
    return draw(keep, 0, 0, -1.0);
  } else {
    std::sort(candidates_.begin(), candidates_.end(), better);
  }
  // Typical sampling needs every kept weight and their entropy first.
  const float max_logit = candidates_[0].first;
  if (max_logit == -INFINITY) return candidates_[0].second;  // everything banned by a bias
  // An infinite logit holds all the probability (its weight would be inf - inf = NaN).
  if (max_logit == INFINITY) return candidates_[0].second;
  double total = 0.0;
  for (size_t i = 0; i < keep; ++i) {
    candidates_[i].first = std::exp((candidates_[i].first - max_logit) / params_.temperature);
    total += candidates_[i].first;
  }
  keep = typical_filter(keep, total);
  total = 0.0;
  for (size_t i = 0; i < keep; ++i) total += candidates_[i].first;
  return draw(keep, keep, keep, total);
}

int32_t Sampler::draw(size_t n, size_t sorted, size_t weighted, double total) {
  const auto begin = candidates_.begin();
  const auto end = begin + static_cast<std::ptrdiff_t>(n);
  auto sort_to = [&](size_t want) {
    if (want <= sorted) return;
    want = std::min(n, std::max({want, 4 * sorted, size_t{256}}));
    if (want < n && want - sorted > 4096) {
      std::nth_element(begin + static_cast<std::ptrdiff_t>(sorted),
                       begin + static_cast<std::ptrdiff_t>(want), end, better);
    } else if (want < n) {
      // A few best by one pass through a heap (a few times faster than nth_element over
      // pairs), then a partition at the worst of them.
      BestK best(next_best_, want - sorted);
      for (size_t i = sorted; i < n; ++i)
        if (candidates_[i].first >= best.floor() || std::isnan(candidates_[i].first))
          best.offer(candidates_[i].first, candidates_[i].second);
      const Candidate last = next_best_.front();
      std::partition(begin + static_cast<std::ptrdiff_t>(sorted), end,
                     [&](const Candidate& c) { return !better(last, c); });
    }
    std::sort(begin + static_cast<std::ptrdiff_t>(sorted),
              begin + static_cast<std::ptrdiff_t>(want), better);
    sorted = want;
  };
  // With weights given (weighted == n), logits are never read again.
  float max_logit = 0.f;
  if (weighted == 0) {
    sort_to(1);
    max_logit = candidates_[0].first;
    if (max_logit == -INFINITY) return candidates_[0].second;  // everything banned by a bias
    // An infinite logit holds all the probability (its weight would be inf - inf = NaN).
    if (max_logit == INFINITY) return candidates_[0].second;
  }
  const float temperature = params_.temperature;
  auto weight_of = [&](float logit) { return std::exp((logit - max_logit) / temperature); };
  // Candidate i's weight, in sorted order.
  auto weight = [&](size_t i) {
    sort_to(i + 1);
    for (; weighted <= i; ++weighted)
      candidates_[weighted].first = weight_of(candidates_[weighted].first);
    return candidates_[i].first;
  };
  // The sum of every weight, which top_p needs and the draw needs when nothing is dropped.
  auto sum_of_all = [&] {
    double sum = 0.0;
    for (size_t i = 0; i < n; ++i)
      sum += i < weighted ? candidates_[i].first : weight_of(candidates_[i].first);
    return sum;
  };
  size_t keep = n;
  if (params_.top_p < 1.f) {
    if (total < 0.0) total = sum_of_all();
    double mass = 0.0;
    for (size_t i = 0; i < keep; ++i) {
      mass += weight(i) / total;
      if (mass >= params_.top_p) {
        keep = i + 1;
        break;
      }
    }
    total = 0.0;
    for (size_t i = 0; i < keep; ++i) total += weight(i);
  }
  if (params_.min_p > 0.f) {
    // The weights fall along the sorted order (typical sampling keeps it): the first is the
    // best left, and min_p keeps a prefix.
    const float floor = params_.min_p * weight(0);
    size_t kept = 1;  // the best always stays, whatever rounding does to the floor
    while (kept < keep && weight(kept) >= floor) ++kept;
    if (kept < keep) {
      keep = kept;
      total = 0.0;
      for (size_t i = 0; i < keep; ++i) total += weight(i);
    }
  }
  if (total < 0.0) total = sum_of_all();
  std::uniform_real_distribution<double> uniform(0.0, total);
  double r = uniform(rng_);
  for (size_t i = 0; i < keep; ++i) {
    r -= weight(i);
    if (r <= 0.0) return candidates_[i].second;
  }
  return candidates_[keep - 1].second;
}

int32_t Sampler::best_logits_needed(int64_t n_vocab) const {
  if (matcher_ || penalizing() || !params_.logit_bias.empty()) return 0;
  // Greedy reads the best logit alone; pick()'s direct top-k path the top_k best.
  if (!(params_.temperature > 0.f)) return n_vocab > 0 ? 1 : 0;
  if (params_.top_k <= 0 || params_.top_k >= n_vocab) return 0;
  return params_.top_k;
}

int32_t Sampler::sample_best(std::span<const float> values, std::span<const int32_t> ids) {
  const bool greedy = !(params_.temperature > 0.f);
  const size_t k = greedy ? 1 : static_cast<size_t>(std::max(params_.top_k, 0));
  if (matcher_ || values.size() < k || ids.size() < k)
    throw Error("sample_best: the sampler needs the whole row, or more than the " +
                std::to_string(values.size()) + " best logits given");
  if (greedy) {
    // The best of the row, NaN or not (all NaN: id 0 comes first), as the whole-row pick.
    const int32_t picked = ids[0];
    accept(picked);
    return picked;
  }
  // pick()'s direct top-k path keeps the top_k best numbers in this order (NaN never enters:
  // the rows' NaNs, which best_logits puts last, are left out as its scan leaves them out).
  candidates_.clear();
  for (size_t i = 0; i < k && !std::isnan(values[i]); ++i)
    candidates_.emplace_back(values[i], ids[i]);
  const int32_t picked =
      candidates_.empty() ? -1 : draw(candidates_.size(), candidates_.size(), 0, -1.0);
  accept(picked);
  return picked;
}

int32_t Sampler::sample(std::span<const float> logits) {
  int32_t picked = pick(logits, nullptr);
  if (matcher_ && !constraint_started_) {
    constraint_started_ = picked == constraint_.start_after;
  } else if (matcher_ && !grammar_accepts(picked)) {
    matcher_->allowed_tokens(mask_);
    picked = pick(logits, &mask_);
    if (picked < 0) {
      // Nothing in the vocabulary continues the grammar (a grammar needing text no token
      // spells): end the answer rather than break the grammar.
      if (constraint_.vocab->end_tokens().empty())
        throw Error("the grammar allows no token and the vocabulary has no end token");
      picked = constraint_.vocab->end_tokens().front();
    } else {
      grammar_accepts(picked);
    }
  }
  accept(picked);
  return picked;
}

}  // namespace hostlm
