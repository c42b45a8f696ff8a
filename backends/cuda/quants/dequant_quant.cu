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
#include "cuda/launch.cuh"
#include "cuda/quants/quant_kernels.h"
#include "cuda/quants/quant_types.h"

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

// Blocks [first, first + n_blocks) of the matrix in flat order (row-major: block b of row r is
// r * nb + b) to out, which then holds those rows contiguously. A thread decodes one piece into
// shared memory; the CTA then writes its span of out with consecutive 16-byte stores, because
// each piece's own runs are scattered 32-byte pieces of the span, and writing them directly
// doubles the L2 write requests (the kernel was L2-bound at 82%, 1.9 TB/s).
template <class Q>
__global__ void __launch_bounds__(kThreads)
    dequant_f16_kernel(QuantMatrix w, int64_t first, int64_t n_blocks, __half* out) {
  pdl_begin();
  constexpr int kBlocksPerCta = kThreads / Q::kPieces;
  constexpr int kSpan = kBlocksPerCta * Q::kBlockElems;
  static_assert(kThreads % Q::kPieces == 0 && Q::kBlockElems % 8 == 0);
  __shared__ __align__(16) __half span[kSpan];
  const int64_t block0 = int64_t{blockIdx.x} * kBlocksPerCta;
  const int local = static_cast<int>(threadIdx.x) / Q::kPieces;
  if (block0 + local < n_blocks) {
    const auto p = Q::load(w, first + block0 + local, static_cast<int>(threadIdx.x) % Q::kPieces);
#pragma unroll
    for (int g = 0; g < Q::kRanges; ++g) {
      float v[16];
      decode_range<Q>(p, g, v);
      store16_half(span + local * Q::kBlockElems + p.off[g], v);
    }
  }
  __syncthreads();
  const int64_t blocks = n_blocks - block0 < kBlocksPerCta ? n_blocks - block0 : kBlocksPerCta;
  const int n16 = static_cast<int>(blocks) * Q::kBlockElems / 8;
  const auto* src = reinterpret_cast<const uint4*>(span);
  auto* dst = reinterpret_cast<uint4*>(out + block0 * Q::kBlockElems);
  for (int i = static_cast<int>(threadIdx.x); i < n16; i += kThreads) dst[i] = src[i];
}

// grid.y = token; `vector` when out is 16-byte aligned (then every run is).
template <class Q>
__global__ void __launch_bounds__(kThreads)
    embed_kernel(QuantMatrix w, const int32_t* tokens, float* out, bool vector) {
  pdl_begin();
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

constexpr int kActThreads = 512;

__device__ float block_max(float v, float* scratch) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  float m = 0.f;
  for (int i = 0; i < kActThreads / 32; ++i) m = fmaxf(m, scratch[i]);
  return m;
}

// The power of two k that a row of largest magnitude `amax` is multiplied by before rounding
// to half. Half's relative precision is the same over its whole normal range, so rows whose
// largest value lies in [2^-8, 2^15) keep k = 0 (their output then needs no rescale); only
// smaller values would fall into half's subnormals, a bigger one would overflow. Those rows
// get amax into [2^14, 2^15), clamped so that 2^k and 2^-k stay normal floats.
__device__ int half_exponent_shift(float amax) {
  if (!(amax > 0.f) || !isfinite(amax) || (amax >= 0x1p-8f && amax < 0x1p15f)) return 0;
  int e = 0;
  frexpf(amax, &e);  // amax = m * 2^e, m in [0.5, 1)
  return max(-120, min(120, 15 - e));
}

// One block per token; `vector` when cols is a multiple of 4 and x is 16-byte aligned.
__global__ void __launch_bounds__(kActThreads)
    acts_to_f16_kernel(const float* x, int64_t cols, __half* out, float* inv_scale, bool vector) {
  pdl_begin();
  __shared__ float scratch[kActThreads / 32];
  const float* row = x + blockIdx.x * cols;
  __half* o = out + blockIdx.x * cols;
  const auto* row4 = reinterpret_cast<const float4*>(row);
  const int64_t n4 = vector ? cols / 4 : 0;
  float amax = 0.f;
  for (int64_t i = threadIdx.x; i < n4; i += kActThreads) {
    const float4 v = row4[i];
    amax = fmaxf(amax, fmaxf(fmaxf(fabsf(v.x), fabsf(v.y)), fmaxf(fabsf(v.z), fabsf(v.w))));
  }
  for (int64_t i = 4 * n4 + threadIdx.x; i < cols; i += kActThreads)
    amax = fmaxf(amax, fabsf(row[i]));
  amax = block_max(amax, scratch);
  const int k = half_exponent_shift(amax);
  const float scale = ldexpf(1.f, k);
  if (threadIdx.x == 0) inv_scale[blockIdx.x] = ldexpf(1.f, -k);
  for (int64_t i = threadIdx.x; i < n4; i += kActThreads) {
    const float4 v = row4[i];
    const __half2 lo = __floats2half2_rn(v.x * scale, v.y * scale);
    const __half2 hi = __floats2half2_rn(v.z * scale, v.w * scale);
    reinterpret_cast<uint2*>(o)[i] = make_uint2(*reinterpret_cast<const uint32_t*>(&lo),
                                                *reinterpret_cast<const uint32_t*>(&hi));
  }
  for (int64_t i = 4 * n4 + threadIdx.x; i < cols; i += kActThreads)
    o[i] = __float2half_rn(row[i] * scale);
}

// One block per token row (grid.y); rows whose scale is 1 (the usual case, see
// half_exponent_shift) are left as they are. A block per row, not per 256 values: tiny blocks
// made this a launch-rate-bound 18 us for 512 rows of 12288 even when every row returned.
__global__ void scale_rows_kernel(float* y, int64_t ldy, int64_t n, const float* inv_scale) {
  pdl_begin();
  const float s = inv_scale[blockIdx.y];
  if (s == 1.f) return;
  float* row = y + blockIdx.y * ldy;
  for (int64_t i = threadIdx.x; i < n; i += kThreads) row[i] *= s;
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
    const int64_t n_blocks = n_rows * m.nb;
    launch_kernel(dequant_f16_kernel<Q>, blocks_for(n_blocks, kThreads / Q::kPieces), kThreads, 0,
                  stream, m, row0 * m.nb, n_blocks, static_cast<__half*>(out));
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
      launch_kernel(embed_kernel<Q>, grid, kThreads, 0, stream, m, tokens + t0, out + t0 * cols,
                    vector);
    }
  });
  return cudaGetLastError();
}

cudaError_t acts_to_f16(const float* x, int64_t T, int64_t cols, void* out, float* inv_scale,
                        cudaStream_t stream) {
  if (T == 0) return cudaSuccess;
  const bool vector = cols % 4 == 0 && reinterpret_cast<uintptr_t>(x) % 16 == 0 &&
                      reinterpret_cast<uintptr_t>(out) % 8 == 0;
  launch_kernel(acts_to_f16_kernel, static_cast<unsigned>(T), kActThreads, 0, stream, x, cols,
                static_cast<__half*>(out), inv_scale, vector);
  return cudaGetLastError();
}

cudaError_t scale_rows(float* y, int64_t ldy, int64_t n, int64_t T, const float* inv_scale,
                       cudaStream_t stream) {
  if (T == 0 || n == 0) return cudaSuccess;
  for (int64_t t0 = 0; t0 < T; t0 += kMaxGridY) {  // grid.y is at most 65535
    const dim3 grid(1, static_cast<unsigned>(std::min(kMaxGridY, T - t0)));
    launch_kernel(scale_rows_kernel, grid, kThreads, 0, stream, y + t0 * ldy, ldy, n,
                  inv_scale + t0);
  }
  return cudaGetLastError();
}

}  // namespace hostlm::cuda::quants
