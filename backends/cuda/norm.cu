// RMSNorm (with strided rows, in place allowed) and the gated RMSNorm of Gated DeltaNet.
// One block per row. The plain norm sums squares in double, as the CPU reference does.
#include <algorithm>

#include "common.cuh"
#include "kernels.h"
#include "launch.cuh"
#include "quants/acts_quant.cuh"

namespace hostlm::cuda {
namespace {

constexpr int kThreads = 128;  // gated norm: rows of one head (128-256 values)

// Plain and residual norms: a row of n values in one block of enough threads that each holds
// at most kPerThread of them in registers. A decode step has one row per call, so the block's
// loads must all be in flight at once: with 128 threads looping over a 4,096-wide row, each
// iteration waited for its own loads and the norm took ~20 us.
constexpr int kPerThread = 8;
constexpr int kMaxThreads = 1024;

// out = rms_norm(x (+ y)) with, for kAdd, x += y written back. Each thread reads, and then
// rewrites, only its own elements (out == x is safe). The squares are summed in double, per
// thread in index order and then across the block, the same way for both forms, so the fused
// form equals add followed by rms_norm. With acts.q set (n a multiple of 32, within the
// register path) the output row is also staged in shared memory (n floats of dynamic shared
// memory) and written quantized for the GEMV.
// early: the weights are read before the programmatic wait; early_x (kAdd, with early): x too,
// which the caller knows the kernel before did not write (kernels.h).
template <bool kAdd>
__global__ void __launch_bounds__(kMaxThreads)
    norm_kernel(float* x, size_t x_stride, const float* y, float* out, size_t out_stride, int64_t n,
                const float* weight, float eps, Int8ActsOut acts, bool early, bool early_x) {
  if (!early) pdl_begin();
  __shared__ double scratch[kMaxThreads / 32];
  float* xr = x + blockIdx.x * x_stride;
  const float* yr = kAdd ? y + blockIdx.x * n : nullptr;
  float* o = out + blockIdx.x * out_stride;
  const int64_t step = blockDim.x;
  const bool in_registers = n <= kPerThread * step;
  // The weights are model constants (kernels.h): they are loaded before the wait for the
  // kernel before, so their trip to DRAM overlaps its tail instead of following it.
  float wv[kPerThread], xv[kPerThread];
  if (in_registers) {
#pragma unroll
    for (int k = 0; k < kPerThread; ++k) {
      const int64_t i = threadIdx.x + k * step;
      wv[k] = i < n ? weight[i] : 0.f;
      xv[k] = kAdd && early_x && i < n ? xr[i] : 0.f;
    }
  }
  if (early) pdl_begin();
  double ss = 0.0;
  if (in_registers) {
    float v[kPerThread];
#pragma unroll
    for (int k = 0; k < kPerThread; ++k) {
      const int64_t i = threadIdx.x + k * step;
      v[k] = i < n ? (kAdd ? (early_x ? xv[k] : xr[i]) + yr[i] : xr[i]) : 0.f;
    }
#pragma unroll
    for (int k = 0; k < kPerThread; ++k) ss += double{v[k]} * v[k];
    if (kAdd) {
#pragma unroll
      for (int k = 0; k < kPerThread; ++k)
        if (threadIdx.x + k * step < n) xr[threadIdx.x + k * step] = v[k];
    }
    ss = block_sum(ss, scratch);
    const float inv = 1.f / sqrtf(static_cast<float>(ss / static_cast<double>(n)) + eps);
    extern __shared__ float staged[];
#pragma unroll
    for (int k = 0; k < kPerThread; ++k) {
      const int64_t i = threadIdx.x + k * step;
      const float r = v[k] * inv * wv[k];
      if (i < n) {
        o[i] = r;
        if (acts.q != nullptr) staged[i] = r;
      }
    }
    if (acts.q != nullptr) {
      __syncthreads();
      quantize_row_from_shared(staged, n, int64_t{blockIdx.x} * n, acts);
    }
    return;
  }
  for (int64_t i = threadIdx.x; i < n; i += step) {  // rows wider than 8,192
    const float v = kAdd ? xr[i] + yr[i] : xr[i];
    if (kAdd) xr[i] = v;
    ss += double{v} * v;
  }
  ss = block_sum(ss, scratch);
  const float inv = 1.f / sqrtf(static_cast<float>(ss / static_cast<double>(n)) + eps);
  for (int64_t i = threadIdx.x; i < n; i += step) o[i] = xr[i] * inv * weight[i];
}

__global__ void gated_rms_norm_kernel(const float* x, const float* z, const float* weight,
                                      int64_t dv, float eps, float* out, Int8ActsOut acts,
                                      bool early, bool early_z) {
  if (!early) pdl_begin();
  __shared__ float scratch[kThreads / 32];
  const int64_t r = blockIdx.x;
  const float* xr = x + r * dv;
  const float* zr = z + r * dv;
  // Before the wait, each thread's first weight (a model constant, kernels.h) and, with
  // early_z, its first gate, which the caller knows the kernel before did not write: their
  // DRAM trips overlap that kernel's tail. Wider rows load the rest after.
  const float w0 = threadIdx.x < dv ? weight[threadIdx.x] : 0.f;
  const float z0 = early_z && threadIdx.x < dv ? zr[threadIdx.x] : 0.f;
  if (early) pdl_begin();
  float ss = 0.f;
  for (int64_t i = threadIdx.x; i < dv; i += blockDim.x) ss += xr[i] * xr[i];
  ss = block_sum(ss, scratch);
  const float inv = 1.f / sqrtf(ss / static_cast<float>(dv) + eps);
  for (int64_t i = threadIdx.x; i < dv; i += blockDim.x) {
    const bool first = i == threadIdx.x;
    const float v = xr[i] * inv * (first ? w0 : weight[i]) * silu(first && early_z ? z0 : zr[i]);
    out[r * dv + i] = v;
    if (acts.q != nullptr) quantize32_warp(v, r * dv + i - threadIdx.x % 32, acts);  // dv % 32 == 0
  }
}

bool can_quantize(const Int8ActsOut& acts, int64_t n, int64_t max_n) {
  return acts.q == nullptr || (n % 32 == 0 && n <= max_n);
}

}  // namespace

int rms_norm_threads(int64_t n) {
  const int64_t want = (n + kPerThread - 1) / kPerThread;
  return static_cast<int>(std::clamp<int64_t>((want + 31) / 32 * 32, 32, kMaxThreads));
}

cudaError_t rms_norm(const float* x, size_t x_stride, float* out, size_t out_stride, int64_t rows,
                     int64_t n, const float* weight, float eps, cudaStream_t stream,
                     Int8ActsOut acts) {
  if (rows == 0) return cudaSuccess;
  if (!can_quantize(acts, n, kNormQuantizeMax) || (acts.q != nullptr && out_stride != size_t(n)))
    return cudaErrorInvalidValue;
  launch_kernel(norm_kernel<false>, static_cast<unsigned>(rows), rms_norm_threads(n),
                acts.q != nullptr ? n * sizeof(float) : 0, stream, const_cast<float*>(x), x_stride,
                nullptr, out, out_stride, n, weight, eps, acts, early_loads_enabled(), false);
  return cudaGetLastError();
}

cudaError_t add_rms_norm(float* x, const float* y, int64_t rows, int64_t n, const float* weight,
                         float eps, float* out, cudaStream_t stream, Int8ActsOut acts,
                         bool early_x) {
  if (rows == 0) return cudaSuccess;
  if (!can_quantize(acts, n, kNormQuantizeMax)) return cudaErrorInvalidValue;
  launch_kernel(norm_kernel<true>, static_cast<unsigned>(rows), rms_norm_threads(n),
                acts.q != nullptr ? n * sizeof(float) : 0, stream, x, static_cast<size_t>(n), y,
                out, static_cast<size_t>(n), n, weight, eps, acts, early_loads_enabled(),
                early_loads_enabled() && early_x);
  return cudaGetLastError();
}

cudaError_t gated_rms_norm(const float* x, const float* z, const float* weight, int64_t rows,
                           int64_t dv, float eps, float* out, cudaStream_t stream, Int8ActsOut acts,
                           bool early_z) {
  if (rows == 0) return cudaSuccess;
  if (!can_quantize(acts, dv, dv)) return cudaErrorInvalidValue;
  launch_kernel(gated_rms_norm_kernel, static_cast<unsigned>(rows), kThreads, 0, stream, x, z,
                weight, dv, eps, out, acts, early_loads_enabled(),
                early_loads_enabled() && early_z);
  return cudaGetLastError();
}

}  // namespace hostlm::cuda
