// The single-token decode GEMV (gemv_one_token.cu): y = W x for one token, with each lane's
// activations loaded once and kept in registers for every row its warp computes, and those
// rows streamed through a ring of shared-memory stages per warp.
#pragma once
#include <cuda_runtime_api.h>

#include "cuda/quants/pieces.h"
#include "cuda/quants/quant_kernels.h"

namespace hostlm::cuda::quants {

// Up to kGemvGroupMax matrices of one type and cols that read the same activations.
struct OneTokenTargets {
  QuantMatrix w[kGemvGroupMax];
  float* y[kGemvGroupMax];
  int n = 0;
};

// Launches y[j] = w[j] x for one token of activations `x` (quantize_acts) and returns true,
// or returns false without launching when this kernel does not take the type or the width
// (the caller then uses the general GEMV). HOSTLM_CUDA_GEMV_ONE_TOKEN=0 makes it always
// decline; HOSTLM_CUDA_GEMV_ROWS=N (1-16) fixes the rows each warp computes.
// With `norm`, the activations are not read from `x` but computed by every block from the
// norm's input (gemv_group_folded_norm in quant_kernels.h). With `conv` (not with `norm`), the
// first matrix's rows go through the convolution instead of into y[0] (ConvStep).
bool launch_gemv_one_token(DType type, const OneTokenTargets& targets, const QuantActs& x,
                           cudaStream_t stream, const FoldedNorm* norm = nullptr,
                           const ConvStep* conv = nullptr);

}  // namespace hostlm::cuda::quants
