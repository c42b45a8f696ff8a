// CudaBackend's mixture-of-experts ops for blocks routed on the device (modules::MoeMlp): small
// decode steps pick their experts, copy the chosen matrices into combined ones and run them,
// all in stream order, so those steps are recorded like any other.
#include <cuda_runtime.h>

#include <algorithm>
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

// On since its first GPU run (session 37, H100: the CUDA suite's MoE cases passed, 35B-A3B
// Q4_K_M tg128 1.19x llama.cpp); HOSTLM_CUDA_MOE=0 sends a model with experts to the CPU
// (--backend auto) as before.
bool CudaBackend::runs_experts() const {
  static const bool on = [] {
    const char* env = std::getenv("HOSTLM_CUDA_MOE");
    return env == nullptr || env[0] != '0';
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
  w.data =
      weights_->allocate(bytes + quants::QuantMatmul::kTailBytes,
                         "combined experts (" + std::to_string(n) + " matrices of " +
                             std::to_string(like.rows) + " x " + std::to_string(like.cols) + ")");
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

// A prompt's MoE block (routed on the host): quantized experts run many to a launch. Other
// types, mixed stacks and recorded steps take the default, one matmul per expert.
void CudaBackend::matmul_experts(std::span<const Weight> experts, std::span<const int32_t> first,
                                 const float* x, float* y) {
  const bool uniform =
      !experts.empty() && quants::QuantMatmul::supports(experts.front().type) &&
      std::all_of(experts.begin(), experts.end(), [&](const Weight& w) {
        const Weight& like = experts.front();
        return w.type == like.type && w.rows == like.rows && w.cols == like.cols && w.data;
      });
  if (!uniform || !runs_live() || first.size() != experts.size() + 1)
    return Backend::matmul_experts(experts, first, x, y);
  const auto timed = profile_->scope("matmul (experts)");
  forget_acts();
  quant_->matmul_experts(experts, first, x, y);
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
