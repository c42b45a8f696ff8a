// The query and key preparation of gated attention in one kernel (Backend::qk_norm_rope): per
// head, the RMSNorm of norm.cu's norm_kernel and the rotation of rope.cu's rope_neox_kernel,
// with their arithmetic in their order, so the results are the separate ops' bits. A decode
// step's attention layer had five launches for this (two norms, two rotations, a copy of the
// queries), each a few microseconds of latency on one token's few kilobytes.
//
// One block per (token, head) row, of the norm's thread count for head_dim; the normed row is
// staged in shared memory so that the rotation's pairs (i, i + rot_dims / 2) can be read
// whichever threads normed them.
//
// With a paged batch (qk_norm_rope_store) the key blocks also write each finished value into
// the key's page, and n_head_kv more blocks a token copy its values into theirs: kv_store's
// launch, a graph node per attention layer, is gone.
#include <algorithm>

#include "common.cuh"
#include "kernels.h"
#include "kv_rows.cuh"
#include "launch.cuh"

namespace hostlm::cuda {
namespace {

constexpr int kPerThread = 8;  // as norm.cu
constexpr int kMaxThreads = 128;
constexpr int kMaxHeadDim = kPerThread * kMaxThreads;
static_assert(kMaxHeadDim == kQkNormRopeMaxHeadDim);

struct QkArgs {
  float* qg;
  size_t q_head_stride;
  int64_t n_head;
  float* k;
  int64_t n_head_kv;
  int64_t head_dim;
  const float *q_weight, *k_weight;
  float q_eps, k_eps;
  int64_t rot_dims;
  const int32_t* positions;
  double theta;
  float* q_out;
  bool early;  // early_loads_enabled()
  // qk_norm_rope_store: the pages (F32 or F16) and the values; store false otherwise.
  bool store;
  PagedBatch batch;
  const float* v;
};

// Where token t's values of KV head h start in the keys' (or values') pages; null for a row
// of no sequence. F32 and F16 pages: head h's values follow the h heads before it.
__device__ __forceinline__ char* head_row(const PagedBatch& b, int64_t t, int64_t h, bool keys) {
  char* row = kv_row(b, t, keys);
  return row == nullptr ? nullptr : row + h * b.head_dim * (b.type == DType::F16 ? 2 : 4);
}

__global__ void __launch_bounds__(kMaxThreads) qk_norm_rope_kernel(const QkArgs a) {
  if (!a.early) pdl_begin();
  __shared__ double scratch[kMaxThreads / 32];
  __shared__ float row[kMaxHeadDim];
  const int64_t t = blockIdx.x, h = blockIdx.y, n = a.head_dim;
  if (a.store && h >= a.n_head + a.n_head_kv) {  // a value row: copied into its page
    const int64_t hv = h - a.n_head - a.n_head_kv;
    pdl_begin();
    char* row = head_row(a.batch, t, hv, false);
    if (row == nullptr) return;
    const float* src = a.v + (t * a.n_head_kv + hv) * n;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
      store_kv_value(a.batch.type, row, i, src[i]);
    return;
  }
  const bool query = h < a.n_head;
  const float* x = query ? a.qg + (t * a.n_head + h) * static_cast<int64_t>(a.q_head_stride)
                         : a.k + (t * a.n_head_kv + (h - a.n_head)) * n;
  float* dst =
      query ? a.q_out + (t * a.n_head + h) * n : a.k + (t * a.n_head_kv + (h - a.n_head)) * n;
  const float* weight = query ? a.q_weight : a.k_weight;
  const float eps = query ? a.q_eps : a.k_eps;
  const int64_t step = blockDim.x;
  const int64_t half = a.rot_dims / 2;
  // Before the wait for the kernel before: what depends on nothing it writes. The norm
  // weights are model constants (kernels.h) and the first rotation frequency of a thread
  // needs only the shapes; the positions may have been uploaded by that kernel
  // (staging.h: uploads are kernels), so they are read after.
  float wv[kPerThread];
#pragma unroll
  for (int j = 0; j < kPerThread; ++j) {
    const int64_t i = threadIdx.x + j * step;
    wv[j] = i < n ? weight[i] : 0.f;
  }
  const double inv_freq0 =
      threadIdx.x < half ? pow(a.theta, -2.0 * static_cast<double>(threadIdx.x) / a.rot_dims) : 0.0;
  if (a.early) pdl_begin();
  char* page = a.store && !query ? head_row(a.batch, t, h - a.n_head, true) : nullptr;
  float v[kPerThread];
#pragma unroll
  for (int j = 0; j < kPerThread; ++j) {
    const int64_t i = threadIdx.x + j * step;
    v[j] = i < n ? x[i] : 0.f;
  }
  double ss = 0.0;
#pragma unroll
  for (int j = 0; j < kPerThread; ++j) ss += double{v[j]} * v[j];
  ss = block_sum(ss, scratch);
  const float inv = 1.f / sqrtf(static_cast<float>(ss / static_cast<double>(n)) + eps);
#pragma unroll
  for (int j = 0; j < kPerThread; ++j) {
    const int64_t i = threadIdx.x + j * step;
    if (i < n) {
      const float r = v[j] * inv * wv[j];
      row[i] = r;
      if (i >= a.rot_dims) {
        dst[i] = r;
        if (page != nullptr) store_kv_value(a.batch.type, page, i, r);
      }
    }
  }
  __syncthreads();
  for (int64_t i = threadIdx.x; i < half; i += step) {
    const float x0 = row[i], x1 = row[i + half];
    // Angles in double: at positions near 262144 a float32 product loses whole radians.
    const double inv_freq =
        i == threadIdx.x ? inv_freq0 : pow(a.theta, -2.0 * static_cast<double>(i) / a.rot_dims);
    const double angle = static_cast<double>(a.positions[t]) * inv_freq;
    const float c = static_cast<float>(cos(angle)), s = static_cast<float>(sin(angle));
    const float y0 = x0 * c - x1 * s, y1 = x1 * c + x0 * s;
    dst[i] = y0;
    dst[i + half] = y1;
    if (page != nullptr) {
      store_kv_value(a.batch.type, page, i, y0);
      store_kv_value(a.batch.type, page, i + half, y1);
    }
  }
}

// norm.cu's thread count for a row of n.
int threads_for(int64_t n) {
  const int64_t want = (n + kPerThread - 1) / kPerThread;
  return static_cast<int>(std::clamp<int64_t>((want + 31) / 32 * 32, 32, kMaxThreads));
}

}  // namespace

cudaError_t qk_norm_rope(float* qg, size_t q_head_stride, int64_t n_head, float* k,
                         int64_t n_head_kv, int64_t T, int64_t head_dim, const float* q_weight,
                         float q_eps, const float* k_weight, float k_eps, int64_t rot_dims,
                         const int32_t* positions, double theta, float* q_out,
                         cudaStream_t stream) {
  if (T == 0 || n_head + n_head_kv == 0) return cudaSuccess;
  if (head_dim < 1 || head_dim > kMaxHeadDim || rot_dims < 0 || rot_dims > head_dim ||
      rot_dims % 2 != 0 || T > 2147483647 || n_head + n_head_kv > kMaxGridY)
    return cudaErrorInvalidValue;
  const QkArgs a{qg,       q_head_stride, n_head,   k,     n_head_kv,
                 head_dim, q_weight,      k_weight, q_eps, k_eps,
                 rot_dims, positions,     theta,    q_out, early_loads_enabled(),
                 false,    PagedBatch{},  nullptr};
  launch_kernel(qk_norm_rope_kernel,
                dim3(static_cast<unsigned>(T), static_cast<unsigned>(n_head + n_head_kv)),
                threads_for(head_dim), 0, stream, a);
  return cudaGetLastError();
}

cudaError_t qk_norm_rope_store(const PagedBatch& batch, float* qg, size_t q_head_stride,
                               int64_t n_head, float* k, const float* v, int64_t n_head_kv,
                               int64_t T, int64_t head_dim, const float* q_weight, float q_eps,
                               const float* k_weight, float k_eps, int64_t rot_dims,
                               const int32_t* positions, double theta, float* q_out,
                               cudaStream_t stream) {
  if (T == 0 || n_head + n_head_kv == 0) return cudaSuccess;
  if (head_dim < 1 || head_dim > kMaxHeadDim || rot_dims < 0 || rot_dims > head_dim ||
      rot_dims % 2 != 0 || T > 2147483647 || n_head + 2 * n_head_kv > kMaxGridY ||
      (batch.type != DType::F16 && batch.type != DType::F32) || batch.rows != T ||
      batch.n_head_kv != n_head_kv || batch.head_dim != head_dim)
    return cudaErrorInvalidValue;
  const QkArgs a{qg,       q_head_stride, n_head,   k,     n_head_kv,
                 head_dim, q_weight,      k_weight, q_eps, k_eps,
                 rot_dims, positions,     theta,    q_out, early_loads_enabled(),
                 true,     batch,         v};
  launch_kernel(qk_norm_rope_kernel,
                dim3(static_cast<unsigned>(T), static_cast<unsigned>(n_head + 2 * n_head_kv)),
                threads_for(head_dim), 0, stream, a);
  return cudaGetLastError();
}

}  // namespace hostlm::cuda
