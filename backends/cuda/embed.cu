// Rows of stored weights (F32, F16, BF16) to float32: the embedding lookup, and the
// conversion that feeds cuBLAS's float32 GEMM for prefill.
#include <algorithm>

#include "common.cuh"
#include "kernels.h"
#include "launch.cuh"

namespace hostlm::cuda {
namespace {

constexpr int kThreads = 256;

// grid: (row blocks, T); each block converts one gathered row.
template <typename Elem>
__global__ void embed_kernel(const uint8_t* table, size_t row_bytes, int64_t cols,
                             const int32_t* tokens, float* out) {
  pdl_begin();
  const int64_t t = blockIdx.y;
  const uint8_t* row = table + row_bytes * static_cast<size_t>(tokens[t]);
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < cols;
       i += int64_t{gridDim.x} * blockDim.x)
    out[t * cols + i] = Elem::load(row, i);
}

template <typename Elem>
__global__ void rows_to_f32_kernel(const uint8_t* data, size_t row_bytes, int64_t rows,
                                   int64_t cols, float* out) {
  pdl_begin();
  const int64_t total = rows * cols;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < total;
       i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t r = i / cols, c = i % cols;
    out[i] = Elem::load(data + row_bytes * static_cast<size_t>(r), c);
  }
}

template <typename Elem>
void launch_embed(const void* table, size_t row_bytes, int64_t cols, const int32_t* tokens,
                  int64_t T, float* out, cudaStream_t stream) {
  // grid.y is at most 65535: longer batches (a one-shot prefill of a long prompt) go in parts.
  for (int64_t t0 = 0; t0 < T; t0 += kMaxGridY) {
    const dim3 grid(blocks_for(cols, kThreads), static_cast<unsigned>(std::min(kMaxGridY, T - t0)));
    launch_kernel(embed_kernel<Elem>, grid, kThreads, 0, stream, static_cast<const uint8_t*>(table),
                  row_bytes, cols, tokens + t0, out + t0 * cols);
  }
}

template <typename Elem>
void launch_rows(const void* data, size_t row_bytes, int64_t rows, int64_t cols, float* out,
                 cudaStream_t stream) {
  const int64_t blocks = std::min<int64_t>(blocks_for(rows * cols, kThreads), 65536);
  launch_kernel(rows_to_f32_kernel<Elem>, static_cast<unsigned>(blocks), kThreads, 0, stream,
                static_cast<const uint8_t*>(data), row_bytes, rows, cols, out);
}

}  // namespace

cudaError_t embed(DType type, const void* table, size_t row_bytes, int64_t cols,
                  const int32_t* tokens, int64_t T, float* out, cudaStream_t stream) {
  if (T == 0 || cols == 0) return cudaSuccess;
  switch (type) {
    case DType::F32:
      launch_embed<F32Elem>(table, row_bytes, cols, tokens, T, out, stream);
      break;
    case DType::F16:
      launch_embed<F16Elem>(table, row_bytes, cols, tokens, T, out, stream);
      break;
    case DType::BF16:
      launch_embed<BF16Elem>(table, row_bytes, cols, tokens, T, out, stream);
      break;
    default:
      return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

cudaError_t rows_to_f32(DType type, const void* data, size_t row_bytes, int64_t rows, int64_t cols,
                        float* out, cudaStream_t stream) {
  if (rows == 0 || cols == 0) return cudaSuccess;
  switch (type) {
    case DType::F32:
      launch_rows<F32Elem>(data, row_bytes, rows, cols, out, stream);
      break;
    case DType::F16:
      launch_rows<F16Elem>(data, row_bytes, rows, cols, out, stream);
      break;
    case DType::BF16:
      launch_rows<BF16Elem>(data, row_bytes, rows, cols, out, stream);
      break;
    default:
      return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

}  // namespace hostlm::cuda
