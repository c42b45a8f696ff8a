// Quantized weights in split form expanded to floats: prefill tiles (IEEE half, for cuBLAS
// tensor-core GEMM) and embedding rows (float32, bit-identical to the CPU backend). Also the
// two small kernels around the half-precision GEMM: activations to half with a per-token power
// of two, and the matching rescale of the output rows.
//
// One thread per piece (pieces.h): it decodes its kRanges runs of 16 values and stores each
// run with 128-bit stores.
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>

#include "cuda/common.cuh"
#include "cuda/quants/pieces.h"
#include "cuda/quants/quant_kernels.h"

namespace hostlm::cuda::quants {
namespace {

constexpr int kThreads = 256;

__device__ __forceinline__ void store16_half(__half* out, const float (&v)[16]) {
  uint32_t words[8];
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const __half2 h = __floats2half2_rn(v[2 * i], v[2 * i + 1]);
    words[i] = *reinterpret_cast<const uint32_t*>(&h);
  }
  auto* o = reinterpret_cast<uint4*>(out);
  o[0] = make_uint4(words[0], words[1], words[2], words[3]);
  o[1] = make_uint4(words[4], words[5], words[6], words[7]);
}

template <class Q>
__global__ void __launch_bounds__(kThreads)
    dequant_f16_kernel(QuantMatrix w, int64_t row0, int64_t n_rows, __half* out) {
  const int64_t n_pieces = w.nb * Q::kPieces;
  const int64_t i = int64_t{blockIdx.x} * kThreads + threadIdx.x;
  if (i >= n_rows * n_pieces) return;
  const int64_t r = i / n_pieces, piece = i % n_pieces;
  const int64_t b = piece / Q::kPieces;
  const auto p = Q::load(w, (row0 + r) * w.nb + b, static_cast<int>(piece % Q::kPieces));
#pragma unroll
  for (int g = 0; g < Q::kRanges; ++g) {
    float v[16];
    decode_range<Q>(p, g, v);
    store16_half(out + r * w.cols + b * Q::kBlockElems + p.off[g], v);
  }
}

// grid.y = token; `vector` when out is 16-byte aligned (then every run is).
template <class Q>
__global__ void __launch_bounds__(kThreads)
    embed_kernel(QuantMatrix w, const int32_t* tokens, float* out, bool vector) {
  const int64_t t = blockIdx.y;
  const int64_t n_pieces = w.nb * Q::kPieces;
  const int64_t piece = int64_t{blockIdx.x} * kThreads + threadIdx.x;
  if (piece >= n_pieces) return;
  const int64_t b = piece / Q::kPieces;
  const auto p = Q::load(w, int64_t{tokens[t]} * w.nb + b, static_cast<int>(piece % Q::kPieces));
#pragma unroll
  for (int g = 0; g < Q::kRanges; ++g) {
    float v[16];
    decode_range<Q>(p, g, v);
    float* o = out + t * w.cols + b * Q::kBlockElems + p.off[g];
    if (vector) {
#pragma unroll
      for (int j = 0; j < 4; ++j)
        reinterpret_cast<float4*>(o)[j] =
            make_float4(v[4 * j], v[4 * j + 1], v[4 * j + 2], v[4 * j + 3]);
    } else {
#pragma unroll
      for (int j = 0; j < 16; ++j) o[j] = v[j];
    }
  }
}

__device__ float block_max(float v, float* scratch) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  float m = 0.f;
  for (int i = 0; i < kThreads / 32; ++i) m = fmaxf(m, scratch[i]);
  return m;
}

// One block per token.
__global__ void __launch_bounds__(kThreads)
    acts_to_f16_kernel(const float* x, int64_t cols, __half* out, float* inv_scale) {
  __shared__ float scratch[kThreads / 32];
  const float* row = x + blockIdx.x * cols;
  float amax = 0.f;
  for (int64_t i = threadIdx.x; i < cols; i += kThreads) amax = fmaxf(amax, fabsf(row[i]));
  amax = block_max(amax, scratch);
  // amax = m * 2^e with m in [0.5, 1): scaling by 2^(15 - e) puts it in [2^14, 2^15). The
  // clamp keeps both the scale and its inverse normal floats; zero or non-finite rows keep 1.
  int e = 15;
  if (amax > 0.f && isfinite(amax)) frexpf(amax, &e);
  const int k = max(-120, min(120, 15 - e));
  const float scale = ldexpf(1.f, k);
  if (threadIdx.x == 0) inv_scale[blockIdx.x] = ldexpf(1.f, -k);
  __half* o = out + blockIdx.x * cols;
  for (int64_t i = threadIdx.x; i < cols; i += kThreads) o[i] = __float2half_rn(row[i] * scale);
}

__global__ void scale_rows_kernel(float* y, int64_t ldy, int64_t n, const float* inv_scale) {
  const int64_t i = int64_t{blockIdx.x} * kThreads + threadIdx.x;
  if (i < n) y[blockIdx.y * ldy + i] *= inv_scale[blockIdx.y];
}

}  // namespace

cudaError_t dequant_rows_f16(DType type, const void* w, int64_t rows, int64_t cols, int64_t row0,
                             int64_t n_rows, void* out, cudaStream_t stream) {
  const SplitLayout layout = split_layout(type);
  if (layout.n_regions == 0 || cols % layout.block_elems != 0 || row0 < 0 || row0 + n_rows > rows)
    return cudaErrorInvalidValue;
  if (n_rows == 0 || cols == 0) return cudaSuccess;
  const QuantMatrix m = quant_matrix(type, w, rows, cols);
  with_quant_type(type, [&](auto q) {
    using Q = decltype(q);
    const int64_t threads = n_rows * m.nb * Q::kPieces;
    dequant_f16_kernel<Q><<<blocks_for(threads, kThreads), kThreads, 0, stream>>>(
        m, row0, n_rows, static_cast<__half*>(out));
  });
  return cudaGetLastError();
}

cudaError_t embed_quant(DType type, const void* w, int64_t rows, int64_t cols,
                        const int32_t* tokens, int64_t T, float* out, cudaStream_t stream) {
  const SplitLayout layout = split_layout(type);
  if (layout.n_regions == 0 || cols % layout.block_elems != 0) return cudaErrorInvalidValue;
  if (T == 0 || cols == 0) return cudaSuccess;
  const QuantMatrix m = quant_matrix(type, w, rows, cols);
  const bool vector = reinterpret_cast<uintptr_t>(out) % 16 == 0;
  with_quant_type(type, [&](auto q) {
    using Q = decltype(q);
    // grid.y is at most 65535: longer batches go in parts.
    for (int64_t t0 = 0; t0 < T; t0 += kMaxGridY) {
      const dim3 grid(blocks_for(m.nb * Q::kPieces, kThreads),
                      static_cast<unsigned>(std::min(kMaxGridY, T - t0)));
      embed_kernel<Q><<<grid, kThreads, 0, stream>>>(m, tokens + t0, out + t0 * cols, vector);
    }
  });
  return cudaGetLastError();
}

cudaError_t acts_to_f16(const float* x, int64_t T, int64_t cols, void* out, float* inv_scale,
                        cudaStream_t stream) {
  if (T == 0) return cudaSuccess;
  acts_to_f16_kernel<<<static_cast<unsigned>(T), kThreads, 0, stream>>>(
      x, cols, static_cast<__half*>(out), inv_scale);
  return cudaGetLastError();
}

cudaError_t scale_rows(float* y, int64_t ldy, int64_t n, int64_t T, const float* inv_scale,
                       cudaStream_t stream) {
  if (T == 0 || n == 0) return cudaSuccess;
  for (int64_t t0 = 0; t0 < T; t0 += kMaxGridY) {  // grid.y is at most 65535
    const dim3 grid(blocks_for(n, kThreads), static_cast<unsigned>(std::min(kMaxGridY, T - t0)));
    scale_rows_kernel<<<grid, kThreads, 0, stream>>>(y + t0 * ldy, ldy, n, inv_scale + t0);
  }
  return cudaGetLastError();
}

}  // namespace hostlm::cuda::quants
