// The row movements of a mixture-of-experts block (Backend::gather_rows and
// Backend::weighted_row_sums): each token's row copied to its experts' places, and the
// experts' output rows weighted and summed back per token. Row and weight tables come from
// the host through staging (elementwise_ops.cpp).
#include <algorithm>
#include <cstdint>

#include "common.cuh"
#include "kernels.h"
#include "launch.cuh"

namespace hostlm::cuda {
namespace {

constexpr int kThreads = 256;

unsigned column_blocks(int64_t width) {
  return static_cast<unsigned>(std::min<int64_t>((width + kThreads - 1) / kThreads, 64));
}

__global__ void gather_rows_kernel(float* dst, const float* src, int64_t width,
                                   const int32_t* rows) {
  pdl_begin();
  const int64_t i = blockIdx.y;
  const float* from = src + int64_t{rows[i]} * width;
  float* to = dst + i * width;
  for (int64_t c = blockIdx.x * kThreads + threadIdx.x; c < width; c += gridDim.x * kThreads)
    to[c] = from[c];
}

// Summed from zero in j order, multiply then add (no fused multiply-add), as the CPU backend
// and the host path before it do.
__global__ void weighted_row_sums_kernel(float* out, const float* src, int64_t width, int64_t m,
                                         const int32_t* rows, const float* weights) {
  pdl_begin();
  const int64_t t = blockIdx.y;
  for (int64_t c = blockIdx.x * kThreads + threadIdx.x; c < width; c += gridDim.x * kThreads) {
    float sum = 0.f;
    for (int64_t j = 0; j < m; ++j)
      sum =
          __fadd_rn(sum, __fmul_rn(weights[t * m + j], src[int64_t{rows[t * m + j]} * width + c]));
    out[t * width + c] = sum;
  }
}

}  // namespace

cudaError_t gather_rows(float* dst, const float* src, int64_t width, const int32_t* rows,
                        int64_t n_rows, cudaStream_t stream) {
  for (int64_t first = 0; first < n_rows && width > 0; first += kMaxGridY) {
    const int64_t n = std::min(kMaxGridY, n_rows - first);
    launch_kernel(gather_rows_kernel, dim3(column_blocks(width), static_cast<unsigned>(n)),
                  kThreads, 0, stream, dst + first * width, src, width, rows + first);
  }
  return cudaGetLastError();
}

cudaError_t weighted_row_sums(float* out, const float* src, int64_t width, int64_t T, int64_t m,
                              const int32_t* rows, const float* weights, cudaStream_t stream) {
  for (int64_t first = 0; first < T && width > 0; first += kMaxGridY) {
    const int64_t n = std::min(kMaxGridY, T - first);
    launch_kernel(weighted_row_sums_kernel, dim3(column_blocks(width), static_cast<unsigned>(n)),
                  kThreads, 0, stream, out + first * width, src, width, m, rows + first * m,
                  weights + first * m);
  }
  return cudaGetLastError();
}

}  // namespace hostlm::cuda
