// Quantizing a decode GEMV's input where it is produced: one warp's 32 consecutive values to
// int8 exactly as quantize_acts does (quantize_block32 in pieces.h: the same amax, scale and
// rounding), so a norm or an activation kernel can write its output both ways and the GEMV
// after it skips its own quantize launch.
#pragma once
#include <cstdint>

#include "cuda/kernels.h"

namespace hostlm::cuda {

// Lane l holds value i0 + l of the flat [T, cols] input (i0 a multiple of 32); every lane of
// the warp must call this together.
__device__ __forceinline__ void quantize32_warp(float v, int64_t i0, const Int8ActsOut& out) {
  const int lane = threadIdx.x % 32;
  float amax = fabsf(v);
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, o));
  const float inv = amax > 0.f ? 127.f / amax : 0.f;
  const int iq = __float2int_rn(v * inv);
  out.q[i0 + lane] = static_cast<int8_t>(iq);
  int sum = iq;
#pragma unroll
  for (int o = 8; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);  // per 16 lanes
  const float scale = amax / 127.f;
  if (lane % 16 == 0) out.s16[i0 / 16 + lane / 16] = scale * static_cast<float>(sum);
  if (lane == 0) out.d[i0 / 32] = scale;
}

// Eight consecutive values v of the flat input, starting at i (a multiple of 8), held by one
// thread; the four lanes 4g..4g+3 of a warp hold one 32-value block (i of lane 4g a multiple
// of 32) and call this together. Two shuffles find each amax where quantize32_warp needs
// five per 32 values and a thread. Same numbers as quantize32_warp.
__device__ __forceinline__ void quantize8_lanes(const float (&v)[8], int64_t i,
                                                const Int8ActsOut& out) {
  const int lane = threadIdx.x % 32;
  const unsigned four = 0xfu << (lane & 28);  // the lanes of this thread's 32 values
  float amax = 0.f;
#pragma unroll
  for (int k = 0; k < 8; ++k) amax = fmaxf(amax, fabsf(v[k]));
  amax = fmaxf(amax, __shfl_xor_sync(four, amax, 1));
  amax = fmaxf(amax, __shfl_xor_sync(four, amax, 2));
  const float inv = amax > 0.f ? 127.f / amax : 0.f;
  uint32_t packed[2] = {0, 0};
  int sum = 0;
#pragma unroll
  for (int k = 0; k < 8; ++k) {
    const int iq = __float2int_rn(v[k] * inv);
    sum += iq;
    packed[k / 4] |= static_cast<uint32_t>(static_cast<uint8_t>(static_cast<int8_t>(iq)))
                     << (8 * (k % 4));
  }
  sum += __shfl_xor_sync(four, sum, 1);  // the 16 values of this half
  *reinterpret_cast<uint2*>(out.q + i) = make_uint2(packed[0], packed[1]);
  const float scale = amax / 127.f;
  if (i % 16 == 0) out.s16[i / 16] = scale * static_cast<float>(sum);
  if (i % 32 == 0) out.d[i / 32] = scale;
}

}  // namespace hostlm::cuda
