// CudaBackend's products of many tokens through cuBLAS for F32, BF16 and F16 weights, and the
// sizes of the scratch they widen into (dequant_): apart from matmul_routing.cpp because
// only prefill reaches them.
#include <cublas_v2.h>

#include <algorithm>
#include <cstdint>

#include "cuda/check.h"
#include "cuda/cuda_backend.h"
#include "cuda/quants/quant_kernels.h"

namespace hostlm::cuda {

// 16-bit weights multiplied with cuBLAS use dequant_: BF16 for the activations' BF16 parts;
// for F16, the activations in half with their scales, or (exact) float32 row blocks.
bool CudaBackend::widens(const Weight& w, int64_t T) const {
  return !quants::QuantMatmul::supports(w.type) && T > kGemvMaxTokens && w.type != DType::F32;
}

int64_t CudaBackend::widen_block_rows(const Weight& w) {
  const size_t row_f32 = static_cast<size_t>(w.cols) * sizeof(float);
  return std::clamp<int64_t>(static_cast<int64_t>(kDequantBytes / std::max<size_t>(row_f32, 1)), 1,
                             w.rows);
}

// Tokens per BF16 product: their parts fill at most kDequantBytes.
int64_t CudaBackend::bf16_chunk_tokens(const Weight& w, int64_t T) const {
  const size_t token_bytes = static_cast<size_t>(options_.bf16_parts * w.cols) * 2;
  return std::clamp<int64_t>(static_cast<int64_t>(kDequantBytes / std::max<size_t>(token_bytes, 1)),
                             1, T);
}

// Tokens per half product of F16 weights: their activations and scales fill at most
// kDequantBytes.
int64_t CudaBackend::half_chunk_tokens(const Weight& w, int64_t T) {
  const size_t token_bytes = static_cast<size_t>(w.cols) * 2 + sizeof(float);
  return std::clamp<int64_t>(static_cast<int64_t>(kDequantBytes / token_bytes), 1, T);
}

size_t CudaBackend::half_acts_bytes(const Weight& w, int64_t tokens) {
  return (static_cast<size_t>(tokens * w.cols) * 2 + 255) / 256 * 256;
}

size_t CudaBackend::widen_bytes(const Weight& w, int64_t T) const {
  if (w.type == DType::BF16)
    return static_cast<size_t>(bf16_chunk_tokens(w, T) * options_.bf16_parts * w.cols) * 2;
  if (w.type == DType::F16 && !options_.exact_16bit) {
    const int64_t chunk = half_chunk_tokens(w, T);
    return half_acts_bytes(w, chunk) + static_cast<size_t>(chunk) * sizeof(float);
  }
  return static_cast<size_t>(widen_block_rows(w)) * static_cast<size_t>(w.cols) * sizeof(float);
}

// y[T, rows] = x * W^T for BF16 W: one tensor-core product per BF16 part of x, summed by
// cuBLAS (beta = 1 after the first) in float32.
void CudaBackend::bf16_gemm(const Weight& w, const float* x, int64_t T, float* y) {
  const int64_t chunk = bf16_chunk_tokens(w, T);
  auto* parts = reinterpret_cast<uint16_t*>(dequant_scratch(widen_bytes(w, T)));
  const float one = 1.f, zero = 0.f;
  for (int64_t t0 = 0; t0 < T; t0 += chunk) {
    const int64_t tc = std::min(chunk, T - t0);
    const size_t n = static_cast<size_t>(tc * w.cols);
    check(split_bf16(x + t0 * w.cols, n, options_.bf16_parts, parts, stream_),
          "matmul (bf16 parts)");
    for (int p = 0; p < options_.bf16_parts; ++p)
      check(
          cublasGemmEx(cublas_, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(w.rows),
                       static_cast<int>(tc), static_cast<int>(w.cols), &one, w.data, CUDA_R_16BF,
                       static_cast<int>(w.cols), parts + p * n, CUDA_R_16BF,
                       static_cast<int>(w.cols), p == 0 ? &zero : &one, y + t0 * w.rows, CUDA_R_32F,
                       static_cast<int>(w.rows), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
          "matmul (cublasGemmEx, bf16)");
  }
}

// y[T, rows] = x * W^T for F16 W: the activations in half, each token scaled by a power of
// two that keeps it in half's range (undone on y), one tensor-core product per chunk.
void CudaBackend::f16_gemm(const Weight& w, const float* x, int64_t T, float* y) {
  const int64_t chunk = half_chunk_tokens(w, T);
  auto* scratch = reinterpret_cast<uint8_t*>(dequant_scratch(widen_bytes(w, T)));
  auto* inv_scale = reinterpret_cast<float*>(scratch + half_acts_bytes(w, chunk));
  const float one = 1.f, zero = 0.f;
  for (int64_t t0 = 0; t0 < T; t0 += chunk) {
    const int64_t tc = std::min(chunk, T - t0);
    check(quants::acts_to_f16(x + t0 * w.cols, tc, w.cols, scratch, inv_scale, stream_),
          "matmul (activations to half)");
    check(cublasGemmEx(cublas_, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(w.rows),
                       static_cast<int>(tc), static_cast<int>(w.cols), &one, w.data, CUDA_R_16F,
                       static_cast<int>(w.cols), scratch, CUDA_R_16F, static_cast<int>(w.cols),
                       &zero, y + t0 * w.rows, CUDA_R_32F, static_cast<int>(w.rows),
                       CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
          "matmul (cublasGemmEx, half)");
    check(quants::scale_rows(y + t0 * w.rows, w.rows, w.rows, tc, inv_scale, stream_),
          "matmul (undo activation scale)");
  }
}

// y[T, ldy] (first `rows` columns) = x[T, cols] * W^T for row-major float32 W[rows, cols].
// In cuBLAS's column-major terms: Y^T = W^T^T * X^T, i.e. op(A) = A^T with A = W as [cols, rows].
void CudaBackend::sgemm(const float* w, int64_t rows, int64_t cols, const float* x, int64_t T,
                        float* y, int64_t ldy) {
  const float one = 1.f, zero = 0.f;
  check(
      cublasGemmEx(cublas_, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(rows), static_cast<int>(T),
                   static_cast<int>(cols), &one, w, CUDA_R_32F, static_cast<int>(cols), x,
                   CUDA_R_32F, static_cast<int>(cols), &zero, y, CUDA_R_32F,
                   static_cast<int>(ldy < 0 ? rows : ldy), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
      "matmul (cublasGemmEx)");
}

}  // namespace hostlm::cuda
