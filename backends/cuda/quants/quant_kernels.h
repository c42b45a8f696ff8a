// Launchers of the kernels for quantized weights in split form (split_layout.h), callable
// from plain C++. All pointers are device pointers; each returns cudaGetLastError() of its
// launches, or cudaErrorInvalidValue for a type without split form.
#pragma once
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "cuda/kernels.h"
#include "cuda/quants/expert_tiles.h"
#include "hostlm/dtype.h"

namespace hostlm::cuda::quants {

// Bytes of the int8 activation scratch that gemv_quant needs for T tokens of `cols`.
size_t quant_acts_bytes(int64_t T, int64_t cols);

// Decode: y[T, rows] = x[T, cols] * W^T for T <= kQuantGemvMaxTokens. x is first quantized to
// int8 per 32 values into `acts_scratch` (quant_acts_bytes(T, cols) bytes, 16-byte aligned).
constexpr int64_t kQuantGemvMaxTokens = 8;
cudaError_t gemv_quant(DType type, const void* w, int64_t rows, int64_t cols, const float* x,
                       int64_t T, float* y, void* acts_scratch, cudaStream_t stream);
// The two halves of gemv_quant, so that matrices reading the same input (q, k and v; gate
// and up) quantize it once: quantize_acts writes x[T, cols] (any T) into the scratch, and
// gemv_quantized_acts multiplies tokens [t0, t0 + T) of those acts_T tokens (T <= 8).
cudaError_t quantize_acts(const float* x, int64_t T, int64_t cols, void* acts_scratch,
                          cudaStream_t stream);
// Where quantize_acts would write n = T * cols values (the layout depends on n alone), for a
// kernel that produces them (cuda/kernels.h Int8ActsOut).
Int8ActsOut acts_out(void* acts_scratch, int64_t n);
cudaError_t gemv_quantized_acts(DType type, const void* w, int64_t rows, int64_t cols,
                                const void* acts_scratch, int64_t acts_T, int64_t t0, int64_t T,
                                float* y, cudaStream_t stream);
// gemv_quantized_acts for n <= kGemvGroupMax matrices w[j] [rows[j], cols] of one type into
// y[j] (each [acts_T, rows[j]], tokens t0.. written), in one launch. With `conv` (one token
// only), returns cudaErrorNotSupported without launching where the one-token product does not
// take the type, the width or the convolution (K > kFusedConvMaxK).
constexpr int kGemvGroupMax = 4;
cudaError_t gemv_group_quantized_acts(DType type, const void* const* w, const int64_t* rows,
                                      float* const* y, int n, int64_t cols,
                                      const void* acts_scratch, int64_t acts_T, int64_t t0,
                                      int64_t T, cudaStream_t stream,
                                      const ConvStep* conv = nullptr);

// One token's RMSNorm folded into the products that read it: y[j] = w[j] * out, where
// out = rms_norm(x + y) * weight (x + y written back to x; without y, rms_norm(x)), n values.
// Every block of the launch computes the norm itself, in the order of the norm kernels (bits
// equal to add_rms_norm or rms_norm with acts, then gemv_group_quantized_acts), so the norm's
// own launch and its chain of work leave the step. The last block to have read x writes x,
// out and the quantized acts (`acts`, as the norm would have); `counter` is zeroed and left
// zeroed. Returns false without launching where the fold does not apply (a type without the
// paired one-token GEMV, cols != n, or an output over x, y or out); the caller then runs the
// norm and the product separately.
struct FoldedNorm {
  float* x = nullptr;
  const float* y = nullptr;
  const float* weight = nullptr;
  float eps = 0.f;
  int64_t n = 0;
  float* out = nullptr;
  Int8ActsOut acts;
  unsigned* counter = nullptr;
};
bool gemv_group_folded_norm(DType type, const void* const* w, const int64_t* rows, float* const* y,
                            int n, const FoldedNorm& norm, cudaStream_t stream);

// A few dozen tokens (tile_mma.cu): y[T, rows] = x * W^T with x given as half rows scaled
// per token (acts_to_f16) and the scale undone on y. Weights are read once per 64 tokens.
// Splitting over columns needs `partial` (tile_matmul_partial_floats floats) and zeroed
// `counters` (tile_matmul_counters of them, left zeroed); with less it runs unsplit.
// prepare_tile_matmul, once per device before any launch, returns cudaErrorNotSupported on
// GPUs older than sm_80.
cudaError_t prepare_tile_matmul();
size_t tile_matmul_partial_floats(DType type, int64_t rows, int64_t cols, int64_t T);
size_t tile_matmul_counters(DType type, int64_t rows, int64_t T);
cudaError_t tile_matmul(DType type, const void* w, int64_t rows, int64_t cols, const void* x_f16,
                        const float* inv_scale, int64_t T, float* y, float* partial,
                        size_t partial_floats, unsigned* counters, size_t n_counters,
                        cudaStream_t stream);

// tile_matmul of one input x_f16 through n matrices of `type` and `cols` (data[j], rows[j]
// into ys[j]), each with the plan and so the results of its own launch, in one launch per
// block shape (MatrixGroup, tile_common.cuh); their split partials and counters lie one after
// another in `partial` and `counters`. cudaErrorNotSupported, having launched nothing, where
// the type has no pipelined tile kernel, n is outside 2 .. kTileGroupMax or the partials or
// counters do not fit: the caller then runs them one by one.
inline constexpr int kTileGroupMax = 8;
bool tile_matmul_groups(DType type);
cudaError_t tile_matmul_group(DType type, int n, const void* const* data, const int64_t* rows,
                              int64_t cols, const void* x_f16, const float* inv_scale, int64_t T,
                              float* const* ys, float* partial, size_t partial_floats,
                              unsigned* counters, size_t n_counters, cudaStream_t stream);

// tile_matmul for each expert of `tiles` (all of `type`, [rows, cols]) over its rows: rows
// row0 .. row0 + count of x_f16 (and inv_scale) times its matrix into the same rows of y.
// `tokens_per_block` (16, 32 or 64) sizes the blocks; an expert with more rows takes several.
// Never split over columns (the experts fill the GPU).
cudaError_t tile_matmul_experts(DType type, const ExpertTiles& tiles, int64_t rows, int64_t cols,
                                const void* x_f16, const float* inv_scale, int max_count,
                                int tokens_per_block, float* y, cudaStream_t stream);

// Rows [row0, row0 + n_rows) of W as IEEE half into out[n_rows, cols] (prefill tiles).
cudaError_t dequant_rows_f16(DType type, const void* w, int64_t rows, int64_t cols, int64_t row0,
                             int64_t n_rows, void* out, cudaStream_t stream);

// out[t] = row tokens[t] of W as float32, bit-identical to the CPU backend.
cudaError_t embed_quant(DType type, const void* w, int64_t rows, int64_t cols,
                        const int32_t* tokens, int64_t T, float* out, cudaStream_t stream);

// Prefill activations: out[t] = half(x[t] * 2^k_t), with the power of two k_t chosen per
// token: 0 when the largest |x| lies in [2^-8, 2^15), else what puts it in [2^14, 2^15) (no
// half overflow, no loss to subnormals); inv_scale[t] = 2^-k_t. scale_rows multiplies
// y[t, 0..n) (row stride ldy) by inv_scale[t], skipping the rows where it is 1.
cudaError_t acts_to_f16(const float* x, int64_t T, int64_t cols, void* out, float* inv_scale,
                        cudaStream_t stream);
cudaError_t scale_rows(float* y, int64_t ldy, int64_t n, int64_t T, const float* inv_scale,
                       cudaStream_t stream);

}  // namespace hostlm::cuda::quants
