// What the kernels of the backend's last op wrote, when that op says so. A kernel may read a
// buffer before its programmatic wait (launch.cuh) only when the kernel launched just before
// it cannot have written that buffer; this is how CudaBackend knows. Ops whose writes are
// simple to state (products, convolutions, the delta rule, the paged attention) record them
// with start/add; every other op calls forget, so "unknown" is the default and a reader then
// waits as before.
#pragma once
#include <array>
#include <cstddef>
#include <utility>

#include "cuda/kernels.h"

namespace hostlm::cuda {

class LastWrites {
 public:
  // Nothing is known about the last op's writes.
  void forget() { known_ = false; }
  // A new op: its writes follow (trackable false: they cannot be stated, so stay unknown).
  void start(bool trackable) {
    known_ = trackable;
    n_ = 0;
  }
  // [p, p + floats) is written by the op. Past kMaxRanges ranges the writes become unknown.
  void add(const float* p, size_t floats) {
    if (n_ == kMaxRanges) {
      known_ = false;
      return;
    }
    ranges_[n_++] = {p, p + floats};
  }
  // Whether [p, p + floats) is known to be untouched by the last op's kernels.
  bool untouched(const float* p, size_t floats) const {
    if (!known_ || p == nullptr) return false;
    for (int i = 0; i < n_; ++i)
      if (p < ranges_[i].second && ranges_[i].first < p + floats) return false;
    return true;
  }

  // Two ranges per sequence of a recurrent launch (its rows and its state), and two more.
  static constexpr int kMaxRanges = 2 * kRecurrentSeqsPerLaunch + 2;

 private:
  std::array<std::pair<const float*, const float*>, kMaxRanges> ranges_{};
  int n_ = 0;
  bool known_ = false;
};

}  // namespace hostlm::cuda
