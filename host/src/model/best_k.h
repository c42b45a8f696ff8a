// The sampler's ranking of logits and the scan that finds the k best of a row, shared by the
// sampler and best_logits (best_logits.h), which must agree pair for pair.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace hostlm::detail {

using Candidate = std::pair<float, int32_t>;

// The sampling order: the higher logit first, the lower id first among equals, NaN after
// everything (so that it is a strict order the sorts may rely on even then). An object, not a
// function, so that the heap and sort algorithms inline it.
struct Better {
  bool operator()(const Candidate& a, const Candidate& b) const {
    if (a.first > b.first) return true;
    if (a.first == b.first) return a.second < b.second;
    if (a.first < b.first) return false;
    return std::isnan(a.first) ? std::isnan(b.first) && a.second < b.second : true;
  }
};
inline constexpr Better better;

// The k best (logit, id) pairs of those offered, best first: the same pairs in the same order
// as a partial sort of all of them. A heap whose top is the worst pair kept, so the floor that
// turns logits away is always the k-th best so far (over a 248K vocabulary, a few hundred
// logits reach it; top-k over the whole vocabulary is most of a sampling step otherwise).
class BestK {
 public:
  BestK(std::vector<Candidate>& out, size_t k) : out_(out), k_(k) { out_.clear(); }
  // Nothing below this logit can enter: the caller's cheap test before offer().
  float floor() const {
    if (out_.size() < k_ || std::isnan(out_.front().first)) return -INFINITY;
    return out_.front().first;
  }
  void offer(float logit, int32_t id) {
    if (out_.size() < k_) {
      out_.emplace_back(logit, id);
      std::push_heap(out_.begin(), out_.end(), better);
    } else if (better({logit, id}, out_.front())) {
      std::pop_heap(out_.begin(), out_.end(), better);
      out_.back() = {logit, id};
      std::push_heap(out_.begin(), out_.end(), better);
    }
  }
  void finish() { std::sort_heap(out_.begin(), out_.end(), better); }

 private:
  std::vector<Candidate>& out_;
  const size_t k_;
};

// Calls f(i) for each i < n with x[i] >= floor(), in increasing order, where only f may
// raise the floor. Most blocks of 64 logits hold nothing at the floor once it has risen
// (top-k over a 248K vocabulary: about 200 of its 3,880 blocks do), and a block's test is a
// comparison the compiler vectorises, so the scan runs near memory speed instead of taking
// a branch per logit. NaN never passes, as with the plain comparison.
template <class Floor, class F>
void for_each_at_least(const float* x, int32_t n, Floor&& floor, F&& f) {
  constexpr int32_t kBlock = 64;
  float at = floor();
  int32_t i = 0;
  for (; i + kBlock <= n; i += kBlock) {
    int hits = 0;
    for (int32_t j = 0; j < kBlock; ++j) hits += x[i + j] >= at;
    if (hits == 0) continue;
    for (int32_t j = i; j < i + kBlock; ++j)
      if (x[j] >= at) {
        f(j);
        at = floor();
      }
  }
  for (; i < n; ++i)
    if (x[i] >= at) {
      f(i);
      at = floor();
    }
}

}  // namespace hostlm::detail
