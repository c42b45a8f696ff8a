// A decode step's RMSNorm computed inside the one-token GEMV that reads its output
// (gemv_group_folded_norm in quant_kernels.h): every block of the product computes the norm
// itself from x and y, in the order of norm.cu's kernel, and quantizes it into shared memory
// for its lanes; after its products, the last block of the launch writes what the norm
// kernel would have written. The norm's own launch and chain of work leave the step.
#pragma once
#include <cstdint>

#include "cuda/arrive.cuh"
#include "cuda/common.cuh"
#include "cuda/quants/acts_quant.cuh"
#include "cuda/quants/pieces.h"
#include "cuda/quants/quant_kernels.h"

namespace hostlm::cuda::quants {

// A folded norm's threads (its warps: "virtual warps") are spread over the block's warps, at
// most this many each; each keeps its values and weights in registers between the two passes.
constexpr int kFoldPerWarp = 3;

// The fold's shared memory: the virtual warps' sums (double), then the quantized row in the
// layout of quantize_acts (n int8 values, n / 32 scales, n / 16 scaled sums).
inline size_t fold_bytes(int64_t n) {
  return 32 * sizeof(double) + static_cast<size_t>(n) + static_cast<size_t>(n / 32 + n / 16) * 4;
}

// The norm (norm.cu's norm_kernel for one row, in its order, so the same bits) computed by
// every block, its output quantized into `area` as the norm kernel writes it (quantize8_lanes);
// returns those activations and sets `inv` (the norm's 1 / rms) for fold_norm_writes. Every
// thread of the block calls it.
__device__ __forceinline__ QuantActs fold_norm(const FoldedNorm& f, int threads, uint8_t* area,
                                               float& inv) {
  auto* part = reinterpret_cast<double*>(area);
  auto* q = reinterpret_cast<int8_t*>(area + 32 * sizeof(double));
  auto* d = reinterpret_cast<float*>(area + 32 * sizeof(double) + f.n);
  float* s16 = d + f.n / 32;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  const int vwarps = threads / 32;
  float v[kFoldPerWarp][8], wv[kFoldPerWarp][8];
#pragma unroll
  for (int j = 0; j < kFoldPerWarp; ++j) {
    const int vw = warp + j * warps;
    if (vw < vwarps) {
      const int64_t i0 = (int64_t{vw} * 32 + lane) * 8;  // eight consecutive values a thread
#pragma unroll
      for (int k = 0; k < 8; ++k) {
        const int64_t i = i0 + k;
        v[j][k] = i < f.n ? (f.y != nullptr ? f.x[i] + f.y[i] : f.x[i]) : 0.f;
        wv[j][k] = i < f.n ? f.weight[i] : 0.f;
      }
      double ss = 0.0;
#pragma unroll
      for (int k = 0; k < 8; ++k) ss += double{v[j][k]} * v[j][k];
      ss = warp_sum(ss);
      if (lane == 0) part[vw] = ss;
    }
  }
  __syncthreads();
  double total = 0.0;
  for (int w = 0; w < vwarps; ++w) total += part[w];
  inv = 1.f / sqrtf(static_cast<float>(total / static_cast<double>(f.n)) + f.eps);
  const Int8ActsOut staged{q, d, s16};
#pragma unroll
  for (int j = 0; j < kFoldPerWarp; ++j) {
    const int vw = warp + j * warps;
    if (vw < vwarps) {
      const int64_t i0 = (int64_t{vw} * 32 + lane) * 8;
      if (i0 < f.n) {  // n % 32 == 0: whole groups of four lanes
        float r[8];
#pragma unroll
        for (int k = 0; k < 8; ++k) r[k] = v[j][k] * inv * wv[j][k];
        quantize8_lanes(r, i0, staged);
      }
    }
  }
  __syncthreads();  // the quantized row is complete
  return QuantActs{q, d, s16, f.n};
}

// After a block's products: the last block of the launch to get here (so every block has
// read x and y) writes what the norm kernel would have written: x + y back to x, the norm's
// output, and the quantized copy the block holds in shared memory (counted by arrive.cuh).
__device__ __forceinline__ void fold_norm_writes(const FoldedNorm& f, const QuantActs& staged,
                                                 float inv) {
  __shared__ bool last;
  __syncthreads();
  if (threadIdx.x == 0) {
    last = arrive(f.counter) == gridDim.x - 1;
    if (last) *f.counter = 0;
  }
  __syncthreads();
  if (!last) return;
  for (int64_t i = threadIdx.x; i < f.n; i += blockDim.x) {
    const float v = f.y != nullptr ? f.x[i] + f.y[i] : f.x[i];
    if (f.y != nullptr) f.x[i] = v;
    f.out[i] = v * inv * f.weight[i];
  }
  for (int64_t i = threadIdx.x; i < f.n / 16; i += blockDim.x)
    reinterpret_cast<uint4*>(f.acts.q)[i] = reinterpret_cast<const uint4*>(staged.q)[i];
  for (int64_t i = threadIdx.x; i < f.n / 32; i += blockDim.x) f.acts.d[i] = staged.d[i];
  for (int64_t i = threadIdx.x; i < f.n / 16; i += blockDim.x) f.acts.s16[i] = staged.s16[i];
}

}  // namespace hostlm::cuda::quants
