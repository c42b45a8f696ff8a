// Matrix-vector products for decode: y[T, rows] = x[T, cols] * W^T with T <= 8, reading each
// weight row once for all T tokens, in its stored type, with float32 accumulation.
//
// One warp per two output rows. The fast path needs cols % 8 == 0 and 16-byte aligned rows
// and activations: each lane then loads 8 weights (16 or 32 bytes) and 8 activations per step.
#include <cstdint>
#include <cstdlib>
#include <type_traits>

#include "common.cuh"
#include "cuda/quants/portable.h"
#include "kernels.h"
#include "launch.cuh"
#include "widen16.cuh"

namespace hostlm::cuda {
namespace {

constexpr int kWarpsPerBlock = 4;

template <typename Elem>
struct Load8;

template <>
struct Load8<F32Elem> {
  static __device__ __forceinline__ void load(const void* row, int64_t c, float (&w)[8]) {
    const float4* p = reinterpret_cast<const float4*>(static_cast<const float*>(row) + c);
    const float4 a = p[0], b = p[1];
    w[0] = a.x, w[1] = a.y, w[2] = a.z, w[3] = a.w;
    w[4] = b.x, w[5] = b.y, w[6] = b.z, w[7] = b.w;
  }
};

template <>
struct Load8<F16Elem> {
  static __device__ __forceinline__ void load(const void* row, int64_t c, float (&w)[8]) {
    widen8<F16Elem>(*reinterpret_cast<const uint4*>(static_cast<const __half*>(row) + c), w);
  }
};

template <>
struct Load8<BF16Elem> {
  static __device__ __forceinline__ void load(const void* row, int64_t c, float (&w)[8]) {
    widen8<BF16Elem>(*reinterpret_cast<const uint4*>(static_cast<const uint16_t*>(row) + c), w);
  }
};

// kRows rows per warp share each activation load (the vector path's activations cost twice
// the bytes of 16-bit weights otherwise); every row's sum runs in the same order whatever
// kRows is.
template <typename Elem, bool kVector, int kRows>
__global__ void __launch_bounds__(kWarpsPerBlock * 32)
    gemv_kernel(const uint8_t* w, size_t row_bytes, int64_t rows, int64_t cols, const float* x,
                int T, float* y) {
  pdl_begin();
  const int64_t r0 = (int64_t{blockIdx.x} * kWarpsPerBlock + threadIdx.x / 32) * kRows;
  if (r0 >= rows) return;
  const int lane = threadIdx.x % 32;
  const void* row[kRows];
#pragma unroll
  for (int r = 0; r < kRows; ++r)  // a missing last row reads row r0 again and is not stored
    row[r] = w + row_bytes * static_cast<size_t>(r0 + r < rows ? r0 + r : r0);
  float acc[kRows][kGemvMaxTokens] = {};
  if constexpr (kVector) {
#pragma unroll 2
    for (int64_t c = lane * 8; c < cols; c += 32 * 8) {
      float wv[kRows][8];
#pragma unroll
      for (int r = 0; r < kRows; ++r) Load8<Elem>::load(row[r], c, wv[r]);
#pragma unroll
      for (int t = 0; t < kGemvMaxTokens; ++t) {
        if (t < T) {
          const float4* xp = reinterpret_cast<const float4*>(x + t * cols + c);
          const float4 a = xp[0], b = xp[1];
#pragma unroll
          for (int r = 0; r < kRows; ++r)
            acc[r][t] += wv[r][0] * a.x + wv[r][1] * a.y + wv[r][2] * a.z + wv[r][3] * a.w +
                         wv[r][4] * b.x + wv[r][5] * b.y + wv[r][6] * b.z + wv[r][7] * b.w;
        }
      }
    }
  } else {
    for (int64_t c = lane; c < cols; c += 32) {
#pragma unroll
      for (int r = 0; r < kRows; ++r) {
        const float wc = Elem::load(row[r], c);
#pragma unroll
        for (int t = 0; t < kGemvMaxTokens; ++t)
          if (t < T) acc[r][t] += wc * x[t * cols + c];
      }
    }
  }
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
#pragma unroll
    for (int t = 0; t < kGemvMaxTokens; ++t) {
      if (t < T) {
        const float s = warp_sum(acc[r][t]);
        if (lane == 0 && r0 + r < rows) y[t * rows + r0 + r] = s;
      }
    }
  }
}

// Two rows per warp: 9B BF16 tg128 on the H200 ran at 127 t/s with two and 118 with four
// (two runs on fresh machines, the same day).
template <typename Elem>
constexpr int kRowsPerWarp = 2;

// Weight bytes read once, past L1 (which keeps the activations every warp re-reads).
__device__ __forceinline__ uint4 load_weights16(const void* p) {
  const quants::Words4 r = quants::load_stream16(static_cast<const uint8_t*>(p));
  return make_uint4(r.w[0], r.w[1], r.w[2], r.w[3]);
}

// One token, 16-bit weights (decode): the vector path of gemv_kernel with kDepth 16-byte
// loads per row in flight per lane instead of what unrolling gave, and the first of them
// issued before waiting for the previous kernel (the weights do not depend on it), so a
// product's first bytes arrive while the kernel before it finishes. Each row's sum runs in
// gemv_kernel's order: the results are the same bits. 9B BF16 tg128 on an H200, alternating
// in one process each: gemv_kernel 130.5 / 130.4 t/s, depth 4 184.7 / 185.1, depth 8 181.0 /
// 180.7.
template <typename Elem, int kRows, int kDepth>
__global__ void __launch_bounds__(kWarpsPerBlock * 32)
    gemv16_one_token_kernel(const uint8_t* w, size_t row_bytes, int64_t rows, int64_t cols,
                            const float* x, float* y) {
  const int64_t r0 = (int64_t{blockIdx.x} * kWarpsPerBlock + threadIdx.x / 32) * kRows;
  if (r0 >= rows) {
    pdl_begin();
    return;
  }
  const int lane = threadIdx.x % 32;
  const uint16_t* row[kRows];
#pragma unroll
  for (int r = 0; r < kRows; ++r)  // a missing last row reads row r0 again and is not stored
    row[r] = reinterpret_cast<const uint16_t*>(
        w + row_bytes * static_cast<size_t>(r0 + r < rows ? r0 + r : r0));
  constexpr int64_t kStep = 32 * 8;
  float acc[kRows] = {};
  int64_t c = lane * 8;
  uint4 raw[kRows][kDepth];
  const bool full = c + (kDepth - 1) * kStep < cols;
  if (full) {
#pragma unroll
    for (int d = 0; d < kDepth; ++d)
#pragma unroll
      for (int r = 0; r < kRows; ++r) raw[r][d] = load_weights16(row[r] + c + d * kStep);
  }
  pdl_begin();
  while (c + (kDepth - 1) * kStep < cols) {
#pragma unroll
    for (int d = 0; d < kDepth; ++d) {
      const float4* xp = reinterpret_cast<const float4*>(x + c + d * kStep);
      const float4 a = xp[0], b = xp[1];
#pragma unroll
      for (int r = 0; r < kRows; ++r) {
        float wv[8];
        widen8<Elem>(raw[r][d], wv);
        acc[r] += wv[0] * a.x + wv[1] * a.y + wv[2] * a.z + wv[3] * a.w + wv[4] * b.x +
                  wv[5] * b.y + wv[6] * b.z + wv[7] * b.w;
      }
    }
    c += kDepth * kStep;
    if (c + (kDepth - 1) * kStep < cols) {
#pragma unroll
      for (int d = 0; d < kDepth; ++d)
#pragma unroll
        for (int r = 0; r < kRows; ++r) raw[r][d] = load_weights16(row[r] + c + d * kStep);
    }
  }
  for (; c < cols; c += kStep) {
    const float4* xp = reinterpret_cast<const float4*>(x + c);
    const float4 a = xp[0], b = xp[1];
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      float wv[8];
      widen8<Elem>(load_weights16(row[r] + c), wv);
      acc[r] += wv[0] * a.x + wv[1] * a.y + wv[2] * a.z + wv[3] * a.w + wv[4] * b.x + wv[5] * b.y +
                wv[6] * b.z + wv[7] * b.w;
    }
  }
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
    const float s = warp_sum(acc[r]);
    if (lane == 0 && r0 + r < rows) y[r0 + r] = s;
  }
}

// 16-byte loads in flight per row and lane for one token (HOSTLM_CUDA_GEMV16_DEPTH: 0 keeps
// gemv_kernel; 2, 4 or 8).
int gemv16_depth() {
  static const int depth = [] {
    const char* env = std::getenv("HOSTLM_CUDA_GEMV16_DEPTH");
    const int d = env ? std::atoi(env) : 4;
    return d == 0 || d == 2 || d == 8 ? d : 4;
  }();
  return depth;
}

template <typename Elem>
void launch(const void* w, size_t row_bytes, int64_t rows, int64_t cols, const float* x, int64_t T,
            float* y, cudaStream_t stream) {
  const bool vector = cols % 8 == 0 && row_bytes % 16 == 0 &&
                      reinterpret_cast<uintptr_t>(w) % 16 == 0 &&
                      reinterpret_cast<uintptr_t>(x) % 16 == 0;
  const unsigned blocks = blocks_for(rows, kWarpsPerBlock * kRowsPerWarp<Elem>);
  const auto* base = static_cast<const uint8_t*>(w);
  if constexpr (!std::is_same_v<Elem, F32Elem>) {
    if (vector && T == 1 && gemv16_depth() > 0) {
      constexpr int R = kRowsPerWarp<Elem>;
      const int d = gemv16_depth();
      auto* kernel = d == 2   ? gemv16_one_token_kernel<Elem, R, 2>
                     : d == 8 ? gemv16_one_token_kernel<Elem, R, 8>
                              : gemv16_one_token_kernel<Elem, R, 4>;
      launch_kernel(kernel, blocks, kWarpsPerBlock * 32, 0, stream, base, row_bytes, rows, cols, x,
                    y);
      return;
    }
  }
  if (vector)
    launch_kernel(gemv_kernel<Elem, true, kRowsPerWarp<Elem>>, blocks, kWarpsPerBlock * 32, 0,
                  stream, base, row_bytes, rows, cols, x, static_cast<int>(T), y);
  else
    launch_kernel(gemv_kernel<Elem, false, kRowsPerWarp<Elem>>, blocks, kWarpsPerBlock * 32, 0,
                  stream, base, row_bytes, rows, cols, x, static_cast<int>(T), y);
}

}  // namespace

cudaError_t gemv(DType type, const void* w, size_t row_bytes, int64_t rows, int64_t cols,
                 const float* x, int64_t T, float* y, cudaStream_t stream) {
  if (T < 1 || T > kGemvMaxTokens) return cudaErrorInvalidValue;
  if (rows == 0) return cudaSuccess;
  switch (type) {
    case DType::F32:
      launch<F32Elem>(w, row_bytes, rows, cols, x, T, y, stream);
      break;
    case DType::F16:
      launch<F16Elem>(w, row_bytes, rows, cols, x, T, y, stream);
      break;
    case DType::BF16:
      launch<BF16Elem>(w, row_bytes, rows, cols, x, T, y, stream);
      break;
    default:
      return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

}  // namespace hostlm::cuda
