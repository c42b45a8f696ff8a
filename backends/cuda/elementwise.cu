// Elementwise ops over flat float32 arrays: fill, add, SwiGLU, sigmoid gate.
#include <cmath>

#include "common.cuh"
#include "kernels.h"
#include "launch.cuh"
#include "quants/acts_quant.cuh"

namespace hostlm::cuda {
namespace {

constexpr int kThreads = 256;

__global__ void fill_kernel(float* dst, float value, size_t n) {
  pdl_begin();
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < n;
       i += size_t{gridDim.x} * blockDim.x)
    dst[i] = value;
}

__global__ void add_kernel(float* x, const float* y, size_t n) {
  pdl_begin();
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < n;
       i += size_t{gridDim.x} * blockDim.x)
    x[i] += y[i];
}

// With acts.q set (n a multiple of 32) the outputs are also written quantized for the GEMV:
// the loops' indices of a warp are 32 consecutive values, and all its lanes run alike.
__global__ void swiglu_kernel(const float* gate, const float* up, float* out, size_t n,
                              Int8ActsOut acts) {
  pdl_begin();
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < n;
       i += size_t{gridDim.x} * blockDim.x) {
    const float v = silu(gate[i]) * up[i];
    out[i] = v;
    if (acts.q != nullptr) quantize32_warp(v, static_cast<int64_t>(i - threadIdx.x % 32), acts);
  }
}

// early_gate: the kernel before did not write the gates (kernels.h), so each thread's first
// gate and its sigmoid are taken before the wait.
__global__ void mul_sigmoid_kernel(float* x, const float* gate, size_t gate_stride, int64_t T,
                                   int64_t n, Int8ActsOut acts, bool early_gate) {
  const size_t total = static_cast<size_t>(T * n);
  const size_t first = blockIdx.x * size_t{blockDim.x} + threadIdx.x;
  float first_sigmoid = 0.f;
  if (early_gate && first < total)
    first_sigmoid = sigmoid(gate[first / n * gate_stride + first % n]);
  pdl_begin();
  for (size_t i = first; i < total; i += size_t{gridDim.x} * blockDim.x) {
    const size_t t = i / n, c = i % n;
    const float v =
        x[i] * (early_gate && i == first ? first_sigmoid : sigmoid(gate[t * gate_stride + c]));
    x[i] = v;
    if (acts.q != nullptr) quantize32_warp(v, static_cast<int64_t>(i - threadIdx.x % 32), acts);
  }
}

// The host wrote src before the launch, so it is read before the wait; dst may still be read by
// the kernels before this one, so it is written after.
__global__ void copy_from_host_kernel(uint4* dst, const uint4* src, size_t n16) {
  const size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x;
  uint4 v{};
  if (i < n16) v = src[i];
  pdl_begin();
  if (i < n16) dst[i] = v;
}

// Grid-stride loops: cap the grid so huge arrays do not ask for billions of blocks.
unsigned grid_for(size_t n) {
  const size_t blocks = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks < 65536 ? (blocks == 0 ? 1 : blocks) : 65536);
}

}  // namespace

cudaError_t fill(float* dst, float value, size_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  // Zeros (new sequences' recurrent states) by the driver's memset: 17 us a call where the
  // kernel's 4-byte stores took 69 (H200, the 64-stream prefill's op profile).
  if (value == 0.f && !std::signbit(value))
    return cudaMemsetAsync(dst, 0, n * sizeof(float), stream);
  launch_kernel(fill_kernel, grid_for(n), kThreads, 0, stream, dst, value, n);
  return cudaGetLastError();
}

cudaError_t copy_from_host(void* dst, const void* src, size_t n16, cudaStream_t stream) {
  if (n16 == 0) return cudaSuccess;
  launch_kernel(copy_from_host_kernel, blocks_for(static_cast<int64_t>(n16), kThreads), kThreads, 0,
                stream, static_cast<uint4*>(dst), static_cast<const uint4*>(src), n16);
  return cudaGetLastError();
}

cudaError_t add(float* x, const float* y, size_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  launch_kernel(add_kernel, grid_for(n), kThreads, 0, stream, x, y, n);
  return cudaGetLastError();
}

cudaError_t swiglu(const float* gate, const float* up, float* out, size_t n, cudaStream_t stream,
                   Int8ActsOut acts) {
  if (n == 0) return cudaSuccess;
  if (acts.q != nullptr && n % 32 != 0) return cudaErrorInvalidValue;
  launch_kernel(swiglu_kernel, grid_for(n), kThreads, 0, stream, gate, up, out, n, acts);
  return cudaGetLastError();
}

cudaError_t mul_sigmoid(float* x, const float* gate, size_t gate_stride, int64_t T, int64_t n,
                        cudaStream_t stream, Int8ActsOut acts, bool early_gate) {
  const size_t total = static_cast<size_t>(T * n);
  if (total == 0) return cudaSuccess;
  if (acts.q != nullptr && total % 32 != 0) return cudaErrorInvalidValue;
  launch_kernel(mul_sigmoid_kernel, grid_for(total), kThreads, 0, stream, x, gate, gate_stride, T,
                n, acts, early_loads_enabled() && early_gate);
  return cudaGetLastError();
}

}  // namespace hostlm::cuda
