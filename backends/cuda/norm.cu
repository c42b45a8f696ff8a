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

// Eight consecutive floats from p + i (zeros past n): two 16-byte loads when vec (p 16-byte
// aligned) and all eight lie within n.
__device__ __forceinline__ void load8(const float* p, int64_t i, int64_t n, bool vec,
                                      float (&v)[kPerThread]) {
  if (vec && i + kPerThread <= n) {
    const float4 a = *reinterpret_cast<const float4*>(p + i);
    const float4 b = *reinterpret_cast<const float4*>(p + i + 4);
    v[0] = a.x, v[1] = a.y, v[2] = a.z, v[3] = a.w, v[4] = b.x, v[5] = b.y, v[6] = b.z, v[7] = b.w;
    return;
  }
#pragma unroll
  for (int k = 0; k < kPerThread; ++k) v[k] = i + k < n ? p[i + k] : 0.f;
}

__device__ __forceinline__ void store8(float* p, int64_t i, int64_t n, bool vec,
                                       const float (&v)[kPerThread]) {
  if (vec && i + kPerThread <= n) {
    *reinterpret_cast<float4*>(p + i) = make_float4(v[0], v[1], v[2], v[3]);
    *reinterpret_cast<float4*>(p + i + 4) = make_float4(v[4], v[5], v[6], v[7]);
    return;
  }
#pragma unroll
  for (int k = 0; k < kPerThread; ++k)
    if (i + k < n) p[i + k] = v[k];
}

__device__ __forceinline__ bool aligned16(const void* p) {
  return (reinterpret_cast<uintptr_t>(p) & 15) == 0;
}

// out = rms_norm(x (+ y)) with, for kAdd, x += y written back. Rows of up to 8,192 values
// (kPerThread * kMaxThreads) live in registers, eight consecutive ones a thread: each thread
// reads, and then rewrites, only its own elements (out == x is safe). The squares are summed
// in double, per thread in index order and then across the block (block_sum), the same way
// for both forms, so the fused form equals add followed by rms_norm; the folded norm
// (quants/fold_norm.cuh) sums in this order too. With acts.q set (n a multiple of 32) the
// output is also written quantized for the GEMV, straight from the registers: a 32-value
// block is four lanes' values.
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
  if (n <= int64_t{kPerThread} * blockDim.x) {
    const int64_t i0 = int64_t{threadIdx.x} * kPerThread;
    const bool vec = aligned16(xr) && (!kAdd || aligned16(yr)) && aligned16(o) && aligned16(weight);
    // The weights are model constants (kernels.h): they are loaded before the wait for the
    // kernel before, so their trip to DRAM overlaps its tail instead of following it.
    float wv[kPerThread], v[kPerThread];
    load8(weight, i0, n, vec, wv);
    if (kAdd && early_x) load8(xr, i0, n, vec, v);
    if (early) pdl_begin();
    if (!(kAdd && early_x)) load8(xr, i0, n, vec, v);
    if (kAdd) {
      float yv[kPerThread];
      load8(yr, i0, n, vec, yv);
#pragma unroll
      for (int k = 0; k < kPerThread; ++k) v[k] += yv[k];
      store8(xr, i0, n, vec, v);
    }
    double ss = 0.0;
#pragma unroll
    for (int k = 0; k < kPerThread; ++k) ss += double{v[k]} * v[k];
    ss = block_sum(ss, scratch);
    const float inv = 1.f / sqrtf(static_cast<float>(ss / static_cast<double>(n)) + eps);
#pragma unroll
    for (int k = 0; k < kPerThread; ++k) v[k] = v[k] * inv * wv[k];
    store8(o, i0, n, vec, v);
    if (acts.q != nullptr && i0 < n) quantize8_lanes(v, int64_t{blockIdx.x} * n + i0, acts);
    return;
  }
  if (early) pdl_begin();
  const int64_t step = blockDim.x;
  double ss = 0.0;
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

// The same norm with one warp per row, kRowWarps rows a block, for rows of at most
// kWarpRowMax values: a 2,048-token prefill step of the 9B has 65,536 rows of 128, and a block
// per row (half its threads idle at 128 values) took 81 us against ~27 us for the bytes (now
// 37 us; H200, the 64-stream prefill's op profile).
// Bit-identical to gated_rms_norm_kernel (which the fused decode norm of delta_rule.cu also
// matches): lane l plays that kernel's threads 32w + l for each warp w of its block, summing
// its squares in the same order, each warp's part is reduced by the same shuffles, and the
// parts are added in warp order starting from zero.
constexpr int kRowWarps = 8;
constexpr int kWarpRowMax = 256;
constexpr int kPerLane = kWarpRowMax / 32;

__global__ void __launch_bounds__(kRowWarps * 32)
    gated_rms_norm_rows_kernel(const float* x, const float* z, const float* weight, int64_t rows,
                               int64_t dv, float eps, float* out, Int8ActsOut acts, bool early,
                               bool early_z) {
  if (!early) pdl_begin();
  const int lane = threadIdx.x % 32;
  const int64_t r = int64_t{blockIdx.x} * kRowWarps + threadIdx.x / 32;
  const bool live = r < rows;
  const float* xr = x + r * dv;
  const float* zr = z + r * dv;
  float w[kPerLane], zv[kPerLane], xv[kPerLane];
  // Weights (a model constant) and, with early_z, gates before the wait (kernels.h).
#pragma unroll
  for (int m = 0; m < kPerLane; ++m) {
    const int64_t i = 32 * m + lane;
    w[m] = i < dv ? weight[i] : 0.f;
    zv[m] = early_z && live && i < dv ? zr[i] : 0.f;
  }
  if (early) pdl_begin();
  if (!live) return;  // whole warps
#pragma unroll
  for (int m = 0; m < kPerLane; ++m) {
    const int64_t i = 32 * m + lane;
    xv[m] = i < dv ? xr[i] : 0.f;
    if (!early_z && i < dv) zv[m] = zr[i];
  }
  float ss = 0.f;
#pragma unroll
  for (int wp = 0; wp < kThreads / 32; ++wp) {  // the block kernel's warps
    float part = 0.f;
#pragma unroll
    for (int k = 0; k < kWarpRowMax / kThreads; ++k) {  // that thread's values, in order
      const int m = wp + k * (kThreads / 32);
      if (32 * m + lane < dv) part += xv[m] * xv[m];
    }
    ss += warp_sum(part);
  }
  const float inv = 1.f / sqrtf(ss / static_cast<float>(dv) + eps);
#pragma unroll
  for (int m = 0; m < kPerLane; ++m) {
    if (32 * m >= dv) break;  // uniform in the warp, as quantize32_warp needs
    const int64_t i = 32 * m + lane;
    const float v = i < dv ? xv[m] * inv * w[m] * silu(zv[m]) : 0.f;
    if (i < dv) out[r * dv + i] = v;
    if (acts.q != nullptr) quantize32_warp(v, r * dv + 32 * m, acts);  // dv % 32 == 0
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
  launch_kernel(norm_kernel<false>, static_cast<unsigned>(rows), rms_norm_threads(n), 0, stream,
                const_cast<float*>(x), x_stride, nullptr, out, out_stride, n, weight, eps, acts,
                early_loads_enabled(), false);
  return cudaGetLastError();
}

cudaError_t add_rms_norm(float* x, const float* y, int64_t rows, int64_t n, const float* weight,
                         float eps, float* out, cudaStream_t stream, Int8ActsOut acts,
                         bool early_x) {
  if (rows == 0) return cudaSuccess;
  if (!can_quantize(acts, n, kNormQuantizeMax)) return cudaErrorInvalidValue;
  launch_kernel(norm_kernel<true>, static_cast<unsigned>(rows), rms_norm_threads(n), 0, stream, x,
                static_cast<size_t>(n), y, out, static_cast<size_t>(n), n, weight, eps, acts,
                early_loads_enabled(), early_loads_enabled() && early_x);
  return cudaGetLastError();
}

cudaError_t gated_rms_norm(const float* x, const float* z, const float* weight, int64_t rows,
                           int64_t dv, float eps, float* out, cudaStream_t stream, Int8ActsOut acts,
                           bool early_z) {
  if (rows == 0) return cudaSuccess;
  if (!can_quantize(acts, dv, dv)) return cudaErrorInvalidValue;
  if (dv <= kWarpRowMax) {
    launch_kernel(gated_rms_norm_rows_kernel, blocks_for(rows, kRowWarps), kRowWarps * 32, 0,
                  stream, x, z, weight, rows, dv, eps, out, acts, early_loads_enabled(),
                  early_loads_enabled() && early_z);
    return cudaGetLastError();
  }
  launch_kernel(gated_rms_norm_kernel, static_cast<unsigned>(rows), kThreads, 0, stream, x, z,
                weight, dv, eps, out, acts, early_loads_enabled(),
                early_loads_enabled() && early_z);
  return cudaGetLastError();
}

}  // namespace hostlm::cuda
