// Decode matrix-vector products with quantized weights in split form: y[T, rows] =
// x[T, cols] * W^T for T <= 8, reading every weight byte once for all T tokens.
//
// Two launches, no host synchronisation:
//   1. quantize_acts: x to int8 per 32 values (scale and per-16 sums, see pieces.h), one
//      warp per 32 values. The result is tiny (T * cols * 1.375 bytes) and stays in L2.
//   2. gemv: each warp computes kR rows; its lanes walk consecutive 16-byte pieces of those
//      rows (pieces.h lane_dot), so every main weight load of a warp is one contiguous 512-byte
//      span of 128-bit loads that bypass L1, with the next step's loads issued before this
//      step's arithmetic; then the warp sums its lanes.
// Why int8 activations and __dp4a rather than float: a 4-bit weight costs one float FMA per
// token plus its conversion in float math, which at ~4.8 TB/s of weights exceeds the SM's
// FP32 issue rate already at T = 1 and by 8x at T = 8; one dp4a does 4 multiply-adds of
// bytes, and unpacking nibbles stays in the integer pipe. The rows of a warp (kR > 1) share
// each activation load, which keeps L1 traffic below the weight stream for T up to 8.
#include <cstdint>

#include "cuda/common.cuh"
#include "cuda/launch.cuh"
#include "cuda/quants/acts_quant.cuh"
#include "cuda/quants/gemv_one_token.h"
#include "cuda/quants/quant_kernels.h"
#include "cuda/quants/quant_types.h"

namespace hostlm::cuda::quants {
namespace {

constexpr int kWarps = 4;

// The three arrays of QuantActs inside one scratch allocation.
QuantActs acts_in(void* scratch, int64_t T, int64_t cols) {
  auto* base = static_cast<uint8_t*>(scratch);
  const int64_t n = T * cols;
  QuantActs a;
  a.q = reinterpret_cast<const int8_t*>(base);
  a.d = reinterpret_cast<const float*>(base + n);
  a.s16 = reinterpret_cast<const float*>(base + n + n / 32 * 4);
  a.cols = cols;
  return a;
}

// quantize_block32 of pieces.h with one lane per value: the same amax, scale and rounding
// (acts_quant.cuh, which the kernels that produce GEMV inputs share).
__global__ void __launch_bounds__(kWarps * 32)
    quantize_acts_kernel(const float* x, int64_t n_blocks, Int8ActsOut out) {
  pdl_begin();
  const int64_t blk = int64_t{blockIdx.x} * kWarps + threadIdx.x / 32;
  if (blk >= n_blocks) return;
  quantize32_warp(x[blk * 32 + threadIdx.x % 32], blk * 32, out);
}

// Warp w of `block` computes rows (block * kWarps + w) * kR .. + kR - 1 of W.
template <class Q, int kT, int kR>
__device__ __forceinline__ void gemv_rows(const QuantMatrix& w, const QuantActs& x, int T, float* y,
                                          int64_t block) {
  const int64_t row0 = (block * kWarps + threadIdx.x / 32) * kR;
  if (row0 >= w.rows) return;
  const int lane = threadIdx.x % 32;
  float acc[kR][kT] = {};
  lane_dot<Q, kT, kR>(w, x, row0, lane, T, acc);
#pragma unroll
  for (int t = 0; t < kT; ++t) {
    if (t >= T) break;
#pragma unroll
    for (int r = 0; r < kR; ++r) {
      const float s = warp_sum(acc[r][t]);
      if (lane == 0 && row0 + r < w.rows) y[t * w.rows + row0 + r] = s;
    }
  }
}

template <class Q, int kT, int kR>
__global__ void __launch_bounds__(kWarps * 32)
    gemv_kernel(QuantMatrix w, QuantActs x, int T, float* y) {
  pdl_begin();
  gemv_rows<Q, kT, kR>(w, x, T, y, blockIdx.x);
}

// Several matrices of one type on the same activations: the blocks of matrix j are
// [first[j], first[j + 1]).
struct GemvGroup {
  QuantMatrix w[kGemvGroupMax];
  float* y[kGemvGroupMax];
  unsigned first[kGemvGroupMax + 1];
  int n;
};

template <class Q, int kT, int kR>
__global__ void __launch_bounds__(kWarps * 32)
    gemv_group_kernel(const GemvGroup g, QuantActs x, int T) {
  pdl_begin();
  int j = 0;
  while (j + 1 < g.n && blockIdx.x >= g.first[j + 1]) ++j;
  gemv_rows<Q, kT, kR>(g.w[j], x, T, g.y[j], blockIdx.x - g.first[j]);
}

template <class Q, int kT, int kR>
void launch_gemv(const QuantMatrix& w, float* y, const QuantActs& x, int T, cudaStream_t stream) {
  const unsigned blocks = blocks_for(w.rows, kWarps * kR);
  launch_kernel(gemv_kernel<Q, kT, kR>, blocks, kWarps * 32, 0, stream, w, x, T, y);
}

template <class Q, int kT, int kR>
void launch_gemv(GemvGroup g, const QuantActs& x, int T, cudaStream_t stream) {
  g.first[0] = 0;
  for (int j = 0; j < g.n; ++j) g.first[j + 1] = g.first[j] + blocks_for(g.w[j].rows, kWarps * kR);
  launch_kernel(gemv_group_kernel<Q, kT, kR>, g.first[g.n], kWarps * 32, 0, stream, g, x, T);
}

// Token-count buckets: one row per warp for a single token (most warps, most bytes in
// flight), two rows per warp once activations are reused enough to matter.
// `what`: one QuantMatrix and its y, or a GemvGroup.
template <class Q, class... What>
void gemv_for_tokens(const QuantActs& x, int T, cudaStream_t stream, const What&... what) {
  if (T == 1)
    launch_gemv<Q, 1, 1>(what..., x, T, stream);
  else if (T == 2)
    launch_gemv<Q, 2, 2>(what..., x, T, stream);
  else if (T <= 4)
    launch_gemv<Q, 4, 2>(what..., x, T, stream);
  else
    launch_gemv<Q, 8, 2>(what..., x, T, stream);
}

}  // namespace

Int8ActsOut acts_out(void* acts_scratch, int64_t n) {
  const QuantActs a = acts_in(acts_scratch, 1, n);
  return {const_cast<int8_t*>(a.q), const_cast<float*>(a.d), const_cast<float*>(a.s16)};
}

size_t quant_acts_bytes(int64_t T, int64_t cols) {
  const auto n = static_cast<size_t>(T * cols);
  return n + n / 32 * 4 + n / 16 * 4;
}

cudaError_t quantize_acts(const float* x, int64_t T, int64_t cols, void* acts_scratch,
                          cudaStream_t stream) {
  if (T < 1 || cols % 32 != 0) return cudaErrorInvalidValue;
  const int64_t n_blocks = T * cols / 32;
  launch_kernel(quantize_acts_kernel, blocks_for(n_blocks, kWarps), kWarps * 32, 0, stream, x,
                n_blocks, acts_out(acts_scratch, T * cols));
  return cudaGetLastError();
}

cudaError_t gemv_quantized_acts(DType type, const void* w, int64_t rows, int64_t cols,
                                const void* acts_scratch, int64_t acts_T, int64_t t0, int64_t T,
                                float* y, cudaStream_t stream) {
  const SplitLayout layout = split_layout(type);
  if (layout.n_regions == 0 || T < 1 || T > kQuantGemvMaxTokens || t0 < 0 || t0 + T > acts_T ||
      cols % layout.block_elems != 0)
    return cudaErrorInvalidValue;
  if (rows == 0) return cudaSuccess;
  const QuantActs all = acts_in(const_cast<void*>(acts_scratch), acts_T, cols);
  const QuantActs acts{all.q + t0 * cols, all.d + t0 * cols / 32, all.s16 + t0 * cols / 16, cols};
  const QuantMatrix m = quant_matrix(type, w, rows, cols);
  if (T == 1) {
    OneTokenTargets one;
    one.w[0] = m;
    one.y[0] = y;
    one.n = 1;
    if (launch_gemv_one_token(type, one, acts, stream)) return cudaGetLastError();
  }
  with_quant_type(
      type, [&](auto q) { gemv_for_tokens<decltype(q)>(acts, static_cast<int>(T), stream, m, y); });
  return cudaGetLastError();
}

cudaError_t gemv_group_quantized_acts(DType type, const void* const* w, const int64_t* rows,
                                      float* const* y, int n, int64_t cols,
                                      const void* acts_scratch, int64_t acts_T, int64_t t0,
                                      int64_t T, cudaStream_t stream, const ConvStep* conv) {
  const SplitLayout layout = split_layout(type);
  if (layout.n_regions == 0 || n < 1 || n > kGemvGroupMax || T < 1 || T > kQuantGemvMaxTokens ||
      t0 < 0 || t0 + T > acts_T || cols % layout.block_elems != 0)
    return cudaErrorInvalidValue;
  if (conv != nullptr &&
      (T != 1 || conv->channels != rows[0] || conv->K < 1 || conv->K > kFusedConvMaxK))
    return cudaErrorNotSupported;
  const QuantActs all = acts_in(const_cast<void*>(acts_scratch), acts_T, cols);
  const QuantActs acts{all.q + t0 * cols, all.d + t0 * cols / 32, all.s16 + t0 * cols / 16, cols};
  GemvGroup g{};
  g.n = n;
  for (int j = 0; j < n; ++j) {
    g.w[j] = quant_matrix(type, w[j], rows[j], cols);
    g.y[j] = y[j] + t0 * rows[j];
  }
  if (T == 1) {
    OneTokenTargets one;
    one.n = n;
    for (int j = 0; j < n; ++j) {
      one.w[j] = g.w[j];
      one.y[j] = g.y[j];
    }
    if (launch_gemv_one_token(type, one, acts, stream, nullptr, conv)) return cudaGetLastError();
  }
  if (conv != nullptr) return cudaErrorNotSupported;
  with_quant_type(
      type, [&](auto q) { gemv_for_tokens<decltype(q)>(acts, static_cast<int>(T), stream, g); });
  return cudaGetLastError();
}

bool gemv_group_folded_norm(DType type, const void* const* w, const int64_t* rows, float* const* y,
                            int n, const FoldedNorm& norm, cudaStream_t stream) {
  const SplitLayout layout = split_layout(type);
  if (layout.n_regions == 0 || n < 1 || n > kGemvGroupMax || norm.n <= 0 ||
      norm.n % layout.block_elems != 0 || norm.counter == nullptr || norm.acts.q == nullptr)
    return false;
  // Other blocks still read x and y while one writes its products, and the last one writes
  // x and out: no output may lie over them.
  const auto overlaps = [](const float* a, int64_t na, const float* b, int64_t nb) {
    return a < b + nb && b < a + na;
  };
  if (overlaps(norm.x, norm.n, norm.out, norm.n) ||
      (norm.y != nullptr && overlaps(norm.y, norm.n, norm.out, norm.n)))
    return false;
  OneTokenTargets one;
  one.n = n;
  for (int j = 0; j < n; ++j) {
    if (overlaps(y[j], rows[j], norm.x, norm.n) || overlaps(y[j], rows[j], norm.out, norm.n) ||
        (norm.y != nullptr && overlaps(y[j], rows[j], norm.y, norm.n)))
      return false;
    one.w[j] = quant_matrix(type, w[j], rows[j], norm.n);
    one.y[j] = y[j];
  }
  return launch_gemv_one_token(type, one, QuantActs{}, stream, &norm);
}

cudaError_t gemv_quant(DType type, const void* w, int64_t rows, int64_t cols, const float* x,
                       int64_t T, float* y, void* acts_scratch, cudaStream_t stream) {
  const SplitLayout layout = split_layout(type);
  if (layout.n_regions == 0 || T < 1 || T > kQuantGemvMaxTokens || cols % layout.block_elems != 0)
    return cudaErrorInvalidValue;
  if (rows == 0) return cudaSuccess;
  const cudaError_t status = quantize_acts(x, T, cols, acts_scratch, stream);
  if (status != cudaSuccess) return status;
  return gemv_quantized_acts(type, w, rows, cols, acts_scratch, T, 0, T, y, stream);
}

}  // namespace hostlm::cuda::quants
