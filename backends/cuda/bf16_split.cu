// Float32 activations as a sum of bfloat16 parts, for prefill products with BF16 weights on
// tensor cores (CudaBackend::matmul). BF16 keeps float32's exponent range, so no scaling is
// needed: part p is the round-to-nearest BF16 of what the earlier parts left, and each part
// adds 8 bits of mantissa (two parts carry x to about 2^-17 relative, three to float32's
// full 24 bits). The weights are exact BF16 and cuBLAS accumulates in float32, so the only
// rounding beyond float32 arithmetic is the activations' remainder after the last part.
#include <cuda_bf16.h>

#include "common.cuh"
#include "kernels.h"
#include "launch.cuh"

namespace hostlm::cuda {
namespace {

constexpr int kThreads = 256;

__global__ void split_bf16_kernel(const float* x, size_t n, int parts, __nv_bfloat16* out) {
  pdl_begin();
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < n;
       i += size_t{gridDim.x} * blockDim.x) {
    float rest = x[i];
    for (int p = 0; p < parts; ++p) {
      const __nv_bfloat16 b = __float2bfloat16_rn(rest);
      out[p * n + i] = b;
      rest -= __bfloat162float(b);
    }
  }
}

}  // namespace

cudaError_t split_bf16(const float* x, size_t n, int parts, void* out, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  if (parts < 1 || parts > 3) return cudaErrorInvalidValue;
  const size_t blocks = (n + kThreads - 1) / kThreads;
  launch_kernel(split_bf16_kernel, static_cast<unsigned>(blocks < 65536 ? blocks : 65536), kThreads,
                0, stream, x, n, parts, static_cast<__nv_bfloat16*>(out));
  return cudaGetLastError();
}

}  // namespace hostlm::cuda
