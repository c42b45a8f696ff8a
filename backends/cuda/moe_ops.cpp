// CudaBackend's mixture-of-experts ops for blocks routed on the device (modules::MoeMlp): small
// decode steps pick their experts, copy the chosen matrices into combined ones and run them,
// all in stream order, so those steps are recorded like any other.
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdlib>
#include <string>

#include "cuda/check.h"
#include "cuda/cuda_backend.h"
#include "cuda/expert_copy_plan.h"
#include "hostlm/error.h"

namespace hostlm::cuda {
namespace {

// HOSTLM_CUDA_MOE_ROUTING=0 routes every block on the host (for comparisons).
bool device_routing_enabled() {
  static const bool on = [] {
    const char* env = std::getenv("HOSTLM_CUDA_MOE_ROUTING");
    return env == nullptr || env[0] != '0';
  }();
  return on;
}

}  // namespace

// Opt-in (HOSTLM_CUDA_MOE=1) until this path has run on a GPU: written in session 36, when no
// GPU could be had; a model with experts loads on the CPU meanwhile (--backend auto).
bool CudaBackend::runs_experts() const {
  static const bool on = [] {
    const char* env = std::getenv("HOSTLM_CUDA_MOE");
    return env != nullptr && env[0] == '1';
  }();
  return on;
}

bool CudaBackend::offers_device_routing(int64_t n_experts) const {
  return device_routing_enabled() && n_experts >= 1 && n_experts <= kMaxRoutedExperts;
}

void CudaBackend::moe_route(const float* logits, int64_t T, int64_t E, int64_t n_used, int32_t* ids,
                            float* weights) {
  const auto timed = profile_->scope("moe_route");
  forget_acts();
  if (skip(kMoeRoute, logits, T, E, n_used, ids, weights)) return;
  check(cuda::moe_route(logits, T, E, n_used, ids, weights, stream_), "moe_route");
}

Weight CudaBackend::combined_weight(std::span<const Weight> experts, int64_t n, bool side_by_side) {
  if (experts.empty() || n < 1) throw Error("combined_weight: no experts");
  const Weight& like = experts.front();
  Weight w = like;
  if (side_by_side) {
    w.cols = like.cols * n;
    w.row_bytes = like.row_bytes * static_cast<size_t>(n);
  } else {
    w.rows = like.rows * n;
  }
  const size_t bytes = like.row_bytes * static_cast<size_t>(like.rows * n);
  w.data = weights_->allocate(bytes, "combined experts (" + std::to_string(n) + " matrices of " +
                                         std::to_string(like.rows) + " x " +
                                         std::to_string(like.cols) + ")");
  if (quants::QuantMatmul::supports(w.type)) quant_->reserve(w.type, w.rows, w.cols);
  return w;
}

void CudaBackend::combine_experts(std::span<const Weight> experts, const int32_t* ids, int64_t n,
                                  bool side_by_side, const Weight& combined) {
  const auto timed = profile_->scope("combine_experts");
  forget_acts();
  if (experts.empty() || static_cast<int64_t>(experts.size()) > kMaxRoutedExperts)
    throw Error("combine_experts: " + std::to_string(experts.size()) + " experts (1 to " +
                std::to_string(kMaxRoutedExperts) + " on the CUDA backend)");
  // A replayed step only walks its ops: the copy plan below is for launches.
  if (skip(kCombineExperts, experts.data(), experts.size(), ids, n, side_by_side, combined.data))
    return;
  const ExpertCopy copy = plan_expert_copy(experts, n, side_by_side, combined.data);
  check(cuda::combine_experts(copy, ids, const_cast<void*>(combined.data), stream_),
        "combine_experts");
}

void CudaBackend::scale_segments(float* x, const float* weights, int64_t n, int64_t width) {
  const auto timed = profile_->scope("scale_segments");
  forget_acts();
  if (skip(kScaleSegments, x, weights, n, width)) return;
  check(cuda::scale_segments(x, weights, n, width, stream_), "scale_segments");
}

void CudaBackend::add_sigmoid_gated(float* out, const float* y, const float* gate, int64_t T,
                                    int64_t n) {
  const auto timed = profile_->scope("add_sigmoid_gated");
  forget_acts();
  if (skip(kAddSigmoidGated, out, y, gate, T, n)) return;
  check(cuda::add_sigmoid_gated(out, y, gate, T, n, stream_), "add_sigmoid_gated");
}

}  // namespace hostlm::cuda
