// Device helpers shared by the kernel files: reductions and loads of stored weight types.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace hostlm::cuda {

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__device__ __forceinline__ double warp_sum(double v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// Sum over the block; every thread gets the result. `scratch` holds one value per warp.
template <typename T>
__device__ __forceinline__ T block_sum(T v, T* scratch) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int n_warps = (blockDim.x + 31) / 32;
  v = warp_sum(v);
  __syncthreads();  // scratch may still be read by a previous call
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  T total = 0;
  for (int w = 0; w < n_warps; ++w) total += scratch[w];
  return total;
}

__device__ __forceinline__ float silu(float x) { return x / (1.f + expf(-x)); }
__device__ __forceinline__ float sigmoid(float x) { return 1.f / (1.f + expf(-x)); }

// Element i of a row of stored weights, as float32 (exact for all three types).
struct F32Elem {
  static __device__ __forceinline__ float load(const void* row, int64_t i) {
    return static_cast<const float*>(row)[i];
  }
};
struct F16Elem {
  static __device__ __forceinline__ float load(const void* row, int64_t i) {
    return __half2float(static_cast<const __half*>(row)[i]);
  }
};
struct BF16Elem {
  static __device__ __forceinline__ float load(const void* row, int64_t i) {
    return __bfloat162float(static_cast<const __nv_bfloat16*>(row)[i]);
  }
};

// The largest grid.y (and grid.z) of a launch; grid.x goes to 2^31 - 1.
constexpr int64_t kMaxGridY = 65535;

inline unsigned blocks_for(int64_t n, int threads) {
  return static_cast<unsigned>((n + threads - 1) / threads);
}

}  // namespace hostlm::cuda
