// Causal attention of T new queries against a KV cache of n_kv rows (the last T are the new
// tokens), grouped-query heads. A simple correct kernel, not yet a fast one: one block per
// (head, query), keys in tiles of kTile with an online softmax, so any n_kv fits.
//
// q: [T, n_head, head_dim] rows of q_stride; k, v: [n_kv, n_head_kv * head_dim];
// out: [T, n_head * head_dim]. Head h reads kv head h / (n_head / n_head_kv).
#include <cmath>

#include "common.cuh"
#include "kernels.h"

namespace hostlm::cuda {
namespace {

constexpr int kThreads = 128;
constexpr int kWarps = kThreads / 32;
constexpr int kTile = 64;
constexpr int kDimsPerThread = kAttentionMaxHeadDim / kThreads;

__global__ void __launch_bounds__(kThreads)
    attention_kernel(const float* q, size_t q_stride, const float* k_cache, const float* v_cache,
                     int64_t T, int64_t n_kv, int64_t n_head, int64_t n_head_kv, int64_t head_dim,
                     float scale, float* out) {
  __shared__ float qs[kAttentionMaxHeadDim];
  __shared__ float scores[kTile];
  const int64_t h = blockIdx.x, t = blockIdx.y;
  const int64_t kvh = h / (n_head / n_head_kv);
  const int64_t kv_stride = n_head_kv * head_dim;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  for (int64_t d = threadIdx.x; d < head_dim; d += kThreads)
    qs[d] = q[t * q_stride + h * head_dim + d];
  __syncthreads();

  const int64_t visible = n_kv - T + t + 1;
  float running_max = -INFINITY, denom = 0.f;
  float acc[kDimsPerThread] = {};
  for (int64_t j0 = 0; j0 < visible; j0 += kTile) {
    const int n = static_cast<int>(min(int64_t{kTile}, visible - j0));
    for (int jj = warp; jj < n; jj += kWarps) {
      const float* kr = k_cache + (j0 + jj) * kv_stride + kvh * head_dim;
      float s = 0.f;
      for (int64_t d = lane; d < head_dim; d += 32) s += qs[d] * kr[d];
      s = warp_sum(s);
      if (lane == 0) scores[jj] = s * scale;
    }
    __syncthreads();
    float tile_max = -INFINITY;
    for (int jj = 0; jj < n; ++jj) tile_max = fmaxf(tile_max, scores[jj]);
    const float new_max = fmaxf(running_max, tile_max);
    const float correction = expf(running_max - new_max);  // 0 on the first tile
    denom *= correction;
#pragma unroll
    for (int i = 0; i < kDimsPerThread; ++i) acc[i] *= correction;
    for (int jj = 0; jj < n; ++jj) {
      const float p = expf(scores[jj] - new_max);
      denom += p;
      const float* vr = v_cache + (j0 + jj) * kv_stride + kvh * head_dim;
#pragma unroll
      for (int i = 0; i < kDimsPerThread; ++i) {
        const int64_t d = threadIdx.x + int64_t{i} * kThreads;
        if (d < head_dim) acc[i] += p * vr[d];
      }
    }
    running_max = new_max;
    __syncthreads();  // scores are rewritten by the next tile
  }
  float* o = out + t * n_head * head_dim + h * head_dim;
#pragma unroll
  for (int i = 0; i < kDimsPerThread; ++i) {
    const int64_t d = threadIdx.x + int64_t{i} * kThreads;
    if (d < head_dim) o[d] = acc[i] / denom;
  }
}

}  // namespace

cudaError_t attention(const float* q, size_t q_stride, const float* k_cache, const float* v_cache,
                      int64_t T, int64_t n_kv, int64_t n_head, int64_t n_head_kv, int64_t head_dim,
                      float scale, float* out, cudaStream_t stream) {
  if (T == 0 || n_head == 0) return cudaSuccess;
  if (head_dim > kAttentionMaxHeadDim || T > 65535 || n_head_kv <= 0 || n_head % n_head_kv != 0 ||
      n_kv < T)
    return cudaErrorInvalidValue;
  const dim3 grid(static_cast<unsigned>(n_head), static_cast<unsigned>(T));
  attention_kernel<<<grid, kThreads, 0, stream>>>(q, q_stride, k_cache, v_cache, T, n_kv, n_head,
                                                  n_head_kv, head_dim, scale, out);
  return cudaGetLastError();
}

}  // namespace hostlm::cuda
