// One channel's decode step of the causal depthwise conv1d + SiLU (conv1d.cu): the kernel
// that owns the channel loads its K-1 previous inputs and K taps, then, given the new input,
// writes the output and moves the state on. Shared by the conv's own decode kernel and the
// one-token product that applies it to its rows as it writes them, so both give equal bits.
#pragma once
#include <cstdint>

#include "cuda/common.cuh"

namespace hostlm::cuda {

// kMaxK: the most taps this holder keeps in registers (K <= kMaxK at run time).
template <int kMaxK>
struct ConvChannel {
  float window[kMaxK - 1];  // the previous inputs, oldest first
  float tap[kMaxK];

  // weight: [channels, K]; state: [K-1, channels], oldest first.
  __device__ __forceinline__ void load(const float* weight, const float* state, int64_t channels,
                                       int K, int64_t c) {
#pragma unroll
    for (int r = 0; r < kMaxK - 1; ++r)
      if (r < K - 1) window[r] = state[r * channels + c];
#pragma unroll
    for (int r = 0; r < kMaxK; ++r)
      if (r < K) tap[r] = weight[c * K + r];
  }

  // silu(sum of the taps times the window then xin), summed tap by tap from the oldest; the
  // state becomes the last K-1 inputs.
  __device__ __forceinline__ float step(float* state, int64_t channels, int K, int64_t c,
                                        float xin) const {
    const int hist = K - 1;
    float sum = 0.f;
#pragma unroll
    for (int r = 0; r < kMaxK; ++r)
      if (r < K) sum += tap[r] * (r < hist ? window[r] : xin);
#pragma unroll
    for (int r = 0; r + 1 < kMaxK; ++r)
      if (r < hist) state[r * channels + c] = r + 1 < hist ? window[r + 1] : xin;
    return silu(sum);
  }
};

}  // namespace hostlm::cuda
