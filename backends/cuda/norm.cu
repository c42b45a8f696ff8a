// RMSNorm (with strided rows, in place allowed) and the gated RMSNorm of Gated DeltaNet.
// One block per row. The plain norm sums squares in double, as the CPU reference does.
#include "common.cuh"
#include "kernels.h"

namespace hostlm::cuda {
namespace {

constexpr int kThreads = 128;

__global__ void rms_norm_kernel(const float* x, size_t x_stride, float* out, size_t out_stride,
                                int64_t n, const float* weight, float eps) {
  __shared__ double scratch[kThreads / 32];
  const float* xr = x + blockIdx.x * x_stride;
  float* o = out + blockIdx.x * out_stride;
  double ss = 0.0;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) ss += double{xr[i]} * xr[i];
  ss = block_sum(ss, scratch);
  const float inv = 1.f / sqrtf(static_cast<float>(ss / static_cast<double>(n)) + eps);
  // Each thread rewrites only the elements it read, so out == x is safe.
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) o[i] = xr[i] * inv * weight[i];
}

// x += y and the norm of the sum, each thread reading back only what it wrote. The sum of
// squares runs in the same order as rms_norm_kernel's, so results equal the two ops'.
__global__ void add_rms_norm_kernel(float* x, const float* y, int64_t n, const float* weight,
                                    float eps, float* out) {
  __shared__ double scratch[kThreads / 32];
  float* xr = x + blockIdx.x * n;
  const float* yr = y + blockIdx.x * n;
  float* o = out + blockIdx.x * n;
  double ss = 0.0;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    const float v = xr[i] + yr[i];
    xr[i] = v;
    ss += double{v} * v;
  }
  ss = block_sum(ss, scratch);
  const float inv = 1.f / sqrtf(static_cast<float>(ss / static_cast<double>(n)) + eps);
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) o[i] = xr[i] * inv * weight[i];
}

__global__ void gated_rms_norm_kernel(const float* x, const float* z, const float* weight,
                                      int64_t dv, float eps, float* out) {
  __shared__ float scratch[kThreads / 32];
  const int64_t r = blockIdx.x;
  const float* xr = x + r * dv;
  const float* zr = z + r * dv;
  float ss = 0.f;
  for (int64_t i = threadIdx.x; i < dv; i += blockDim.x) ss += xr[i] * xr[i];
  ss = block_sum(ss, scratch);
  const float inv = 1.f / sqrtf(ss / static_cast<float>(dv) + eps);
  for (int64_t i = threadIdx.x; i < dv; i += blockDim.x)
    out[r * dv + i] = xr[i] * inv * weight[i] * silu(zr[i]);
}

}  // namespace

cudaError_t rms_norm(const float* x, size_t x_stride, float* out, size_t out_stride, int64_t rows,
                     int64_t n, const float* weight, float eps, cudaStream_t stream) {
  if (rows == 0) return cudaSuccess;
  rms_norm_kernel<<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(x, x_stride, out,
                                                                        out_stride, n, weight, eps);
  return cudaGetLastError();
}

cudaError_t add_rms_norm(float* x, const float* y, int64_t rows, int64_t n, const float* weight,
                         float eps, float* out, cudaStream_t stream) {
  if (rows == 0) return cudaSuccess;
  add_rms_norm_kernel<<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(x, y, n, weight, eps,
                                                                            out);
  return cudaGetLastError();
}

cudaError_t gated_rms_norm(const float* x, const float* z, const float* weight, int64_t rows,
                           int64_t dv, float eps, float* out, cudaStream_t stream) {
  if (rows == 0) return cudaSuccess;
  gated_rms_norm_kernel<<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(x, z, weight, dv, eps,
                                                                              out);
  return cudaGetLastError();
}

}  // namespace hostlm::cuda
