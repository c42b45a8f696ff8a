// The kernels of a mixture-of-experts block. Routed on the host: each token's row copied to
// its experts' places and the experts' output rows weighted and summed back per token
// (Backend::gather_rows, weighted_row_sums; their tables come through staging). Routed on the
// device (moe_ops.cpp): the top-k routing, the chosen experts' matrices copied into one
// combined matrix, the SwiGLU segments scaled by their weights, the shared expert's gated add.
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

namespace {

__global__ void moe_route_kernel(const float* logits, int64_t E, int k, int32_t* ids,
                                 float* weights) {
  pdl_begin();
  extern __shared__ float p[];  // [E] probabilities, chosen ones struck out
  const int64_t t = blockIdx.x;
  const int lane = static_cast<int>(threadIdx.x);
  const float* l = logits + t * E;
  float top = -INFINITY;
  for (int64_t e = lane; e < E; e += 32) top = fmaxf(top, l[e]);
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) top = fmaxf(top, __shfl_xor_sync(~0u, top, o));
  float sum = 0.f;
  for (int64_t e = lane; e < E; e += 32) {
    p[e] = expf(l[e] - top);
    sum += p[e];
  }
  sum = warp_sum(sum);
  for (int64_t e = lane; e < E; e += 32) {
    const float q = p[e] / sum;
    p[e] = isnan(q) ? -1.f : q;  // a NaN ranks last, as on the host
  }
  __syncwarp();
  for (int j = 0; j < k; ++j) {
    float best = -INFINITY;
    int64_t at = E;
    for (int64_t e = lane; e < E; e += 32)
      if (p[e] > best) best = p[e], at = e;  // lanes walk up, so ties keep the lower index
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
      const float b = __shfl_xor_sync(~0u, best, o);
      const int64_t a = __shfl_xor_sync(~0u, at, o);
      if (b > best || (b == best && a < at)) best = b, at = a;
    }
    if (lane == 0) {
      ids[t * k + j] = static_cast<int32_t>(at);
      weights[t * k + j] = best;
      p[at] = -INFINITY;
    }
    __syncwarp();
  }
  if (lane == 0) {
    float chosen = 0.f;
    for (int j = 0; j < k; ++j) chosen += weights[t * k + j];
    for (int j = 0; j < k; ++j) weights[t * k + j] /= chosen;
  }
}

__global__ void combine_experts_kernel(const ExpertCopy c, const int32_t* ids, uint8_t* dst) {
  pdl_begin();
  const int slot = static_cast<int>(blockIdx.y), region = static_cast<int>(blockIdx.z);
  const int64_t pieces = expert_copy_pieces(c, region);
  for (int64_t i = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < pieces;
       i += int64_t{gridDim.x} * blockDim.x)
    copy_expert_piece(c, ids, slot, region, i, dst);
}

__global__ void scale_segments_kernel(float* x, const float* weights, int64_t width, int64_t n) {
  pdl_begin();
  for (int64_t i = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n * width;
       i += int64_t{gridDim.x} * blockDim.x)
    x[i] *= weights[i / width];
}

__global__ void add_sigmoid_gated_kernel(float* out, const float* y, const float* gate, int64_t n,
                                         int64_t total) {
  pdl_begin();
  for (int64_t i = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < total;
       i += int64_t{gridDim.x} * blockDim.x) {
    const float g = 1.f / (1.f + expf(-gate[i / n]));
    out[i] = __fadd_rn(out[i], __fmul_rn(g, y[i]));
  }
}

unsigned blocks_over(int64_t n) {
  return static_cast<unsigned>(std::clamp<int64_t>((n + kThreads - 1) / kThreads, 1, 1024));
}

}  // namespace

cudaError_t moe_route(const float* logits, int64_t T, int64_t E, int64_t k, int32_t* ids,
                      float* weights, cudaStream_t stream) {
  if (T == 0) return cudaSuccess;
  if (E < 1 || k < 1 || k > E || T > 2147483647) return cudaErrorInvalidValue;
  launch_kernel(moe_route_kernel, static_cast<unsigned>(T), 32, sizeof(float) * E, stream, logits,
                E, static_cast<int>(k), ids, weights);
  return cudaGetLastError();
}

cudaError_t combine_experts(const ExpertCopy& copy, const int32_t* ids, void* dst,
                            cudaStream_t stream) {
  if (copy.n == 0) return cudaSuccess;
  if (copy.n > 65535 || copy.n_regions < 1 || copy.n_regions > 4) return cudaErrorInvalidValue;
  int64_t most = 0;
  for (int j = 0; j < copy.n_regions; ++j) most = std::max(most, expert_copy_pieces(copy, j));
  launch_kernel(
      combine_experts_kernel,
      dim3(blocks_over(most), static_cast<unsigned>(copy.n), static_cast<unsigned>(copy.n_regions)),
      kThreads, 0, stream, copy, ids, static_cast<uint8_t*>(dst));
  return cudaGetLastError();
}

cudaError_t scale_segments(float* x, const float* weights, int64_t n, int64_t width,
                           cudaStream_t stream) {
  if (n * width == 0) return cudaSuccess;
  launch_kernel(scale_segments_kernel, blocks_over(n * width), kThreads, 0, stream, x, weights,
                width, n);
  return cudaGetLastError();
}

cudaError_t add_sigmoid_gated(float* out, const float* y, const float* gate, int64_t T, int64_t n,
                              cudaStream_t stream) {
  if (T * n == 0) return cudaSuccess;
  launch_kernel(add_sigmoid_gated_kernel, blocks_over(T * n), kThreads, 0, stream, out, y, gate, n,
                T * n);
  return cudaGetLastError();
}

}  // namespace hostlm::cuda
