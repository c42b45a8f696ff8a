// Where a CUDA step's time goes, without a system profiler (the lent GPU machines have no
// nsys): with HOSTLM_CUDA_PROFILE=1 every backend op records a pair of events around its
// launches, and when the backend is destroyed a table goes to stderr with, per op, the
// calls, the GPU time inside its launches and the host time spent issuing them, beside the
// wall time from the first op to the last. GPU time well below wall time means the step is
// bound by launches and host work, not by kernels. Off (one branch per op) otherwise.
// Each row's first call is reported apart and left out of its times: a first call loads its
// kernels (lazy module loading, cuBLAS's too) and can take a thousand times a later one,
// which made a warm-up run look like slow steady-state products (session 37).
#pragma once
#include <cuda_runtime.h>

#include <chrono>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace hostlm::cuda {

class OpProfile {
 public:
  explicit OpProfile(cudaStream_t stream);
  ~OpProfile();
  OpProfile(const OpProfile&) = delete;
  OpProfile& operator=(const OpProfile&) = delete;

  class Scope {
   public:
    Scope(OpProfile* profile, const char* op);
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    OpProfile* profile_;  // null when profiling is off
    const char* op_;
    cudaEvent_t begin_ = nullptr;
    std::chrono::steady_clock::time_point host_begin_;
  };
  // Times the launches made until the returned scope ends.
  Scope scope(const char* op) { return Scope(enabled_ ? this : nullptr, op); }
  // HOSTLM_CUDA_PROFILE=2: ops that can say more (a product's weight type and shape) get a
  // row of their own per detail, through label().
  bool detailed() const { return detailed_; }
  // `op` and `detail` as one label that lives as long as the profile.
  const char* label(const char* op, const std::string& detail);

 private:
  struct Totals {
    long long calls = 0;             // all, the first included
    double gpu_ms = 0, host_ms = 0;  // all calls but the first
    double first_gpu_ms = 0;
  };
  struct Recorded {
    const char* op;
    cudaEvent_t begin, end;
    bool first;
  };
  cudaEvent_t take_event();
  void record(const char* op, cudaEvent_t begin, double host_ms);
  void flush();  // waits for the recorded pairs and adds them up

  cudaStream_t stream_;
  bool enabled_ = false, detailed_ = false;
  std::set<std::string> labels_;
  std::vector<Recorded> recorded_;
  std::vector<cudaEvent_t> free_;
  std::map<std::string, Totals> totals_;
  cudaEvent_t first_ = nullptr, last_ = nullptr;
};

}  // namespace hostlm::cuda
