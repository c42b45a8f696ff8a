// Causal depthwise conv1d + SiLU with a rolling state of the last K-1 inputs.
// x, out: [T, channels]; conv_state: [K-1, channels], oldest first; weight: [channels, K].
// Two launches in stream order: every output reads the old state, then the state moves on.
#include "common.cuh"
#include "kernels.h"

namespace hostlm::cuda {
namespace {

constexpr int kThreads = 256;

__global__ void conv1d_silu_kernel(const float* x, int64_t T, int64_t channels, int64_t K,
                                   const float* weight, const float* conv_state, float* out) {
  const int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x;
  if (i >= T * channels) return;
  const int64_t t = i / channels, c = i % channels, hist = K - 1;
  float s = 0.f;
  for (int64_t r = 0; r < K; ++r) {
    const int64_t src = t - hist + r;  // negative: from the state, which holds -hist..-1
    const float in = src < 0 ? conv_state[(hist + src) * channels + c] : x[src * channels + c];
    s += weight[c * K + r] * in;
  }
  out[i] = silu(s);
}

// One thread per channel reads its whole new window before writing, so the shift in place is
// race-free.
__global__ void conv_state_kernel(const float* x, int64_t T, int64_t channels, int64_t hist,
                                  float* conv_state) {
  const int64_t c = blockIdx.x * int64_t{blockDim.x} + threadIdx.x;
  if (c >= channels) return;
  float window[kConvMaxKernel - 1];
#pragma unroll
  for (int64_t i = 0; i < kConvMaxKernel - 1; ++i) {
    if (i < hist) {
      const int64_t src = T - hist + i;
      window[i] = src < 0 ? conv_state[(hist + src) * channels + c] : x[src * channels + c];
    }
  }
#pragma unroll
  for (int64_t i = 0; i < kConvMaxKernel - 1; ++i)
    if (i < hist) conv_state[i * channels + c] = window[i];
}

}  // namespace

cudaError_t conv1d_silu(const float* x, int64_t T, int64_t channels, int64_t K, const float* weight,
                        float* conv_state, float* out, cudaStream_t stream) {
  if (K < 1 || K > kConvMaxKernel) return cudaErrorInvalidValue;
  if (T == 0 || channels == 0) return cudaSuccess;
  conv1d_silu_kernel<<<blocks_for(T * channels, kThreads), kThreads, 0, stream>>>(
      x, T, channels, K, weight, conv_state, out);
  if (K > 1)
    conv_state_kernel<<<blocks_for(channels, kThreads), kThreads, 0, stream>>>(x, T, channels,
                                                                               K - 1, conv_state);
  return cudaGetLastError();
}

}  // namespace hostlm::cuda
