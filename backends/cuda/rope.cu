// NeoX rotary embedding on the first rot_dims of each head. One block per token; each
// thread owns one frequency, computes its angle once in double and rotates it in every head.
#include "common.cuh"
#include "kernels.h"
#include "launch.cuh"

namespace hostlm::cuda {
namespace {

constexpr int kThreads = 64;

__global__ void rope_neox_kernel(float* x, size_t token_stride, int64_t n_heads, size_t head_stride,
                                 int64_t rot_dims, const int32_t* positions, double theta) {
  pdl_begin();
  const int64_t t = blockIdx.x;
  const int64_t half = rot_dims / 2;
  for (int64_t i = threadIdx.x; i < half; i += blockDim.x) {
    // Angles in double: at positions near 262144 a float32 product loses whole radians.
    const double inv_freq = pow(theta, -2.0 * static_cast<double>(i) / rot_dims);
    const double angle = static_cast<double>(positions[t]) * inv_freq;
    const float c = static_cast<float>(cos(angle)), s = static_cast<float>(sin(angle));
    for (int64_t h = 0; h < n_heads; ++h) {
      float* v = x + t * token_stride + h * head_stride;
      const float x0 = v[i], x1 = v[i + half];
      v[i] = x0 * c - x1 * s;
      v[i + half] = x1 * c + x0 * s;
    }
  }
}

}  // namespace

cudaError_t rope_neox(float* x, size_t token_stride, int64_t T, int64_t n_heads, size_t head_stride,
                      int64_t rot_dims, const int32_t* positions, double theta,
                      cudaStream_t stream) {
  if (T == 0 || rot_dims < 2) return cudaSuccess;
  launch_kernel(rope_neox_kernel, static_cast<unsigned>(T), kThreads, 0, stream, x, token_stride,
                n_heads, head_stride, rot_dims, positions, theta);
  return cudaGetLastError();
}

}  // namespace hostlm::cuda
