// Eight 16-bit weights of one 16-byte load as float32 (exact), shared by the 16-bit decode
// products (gemv.cu, gemv16_staged.cu).
#pragma once
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "common.cuh"

namespace hostlm::cuda {

template <typename Elem>
__device__ __forceinline__ void widen8(const uint4& u, float (&w)[8]) {
  const uint32_t words[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    if constexpr (std::is_same_v<Elem, BF16Elem>) {
      w[2 * i] = __uint_as_float(words[i] << 16);
      w[2 * i + 1] = __uint_as_float(words[i] & 0xffff0000u);
    } else {
      const float2 f = __half22float2(*reinterpret_cast<const __half2*>(&words[i]));
      w[2 * i] = f.x;
      w[2 * i + 1] = f.y;
    }
  }
}

}  // namespace hostlm::cuda
