// Quantized GGUF weights on the CUDA backend: upload in split form (split_layout.h), decode
// GEMV for up to 6 tokens, a fused dequantize + tensor-core product for up to 64 (the decode
// steps of many streams), dequantize-to-half tiles + cuBLAS GEMM for prefill, and embedding
// lookups. Owns the weights' device memory and its scratch buffers, which are
// sized while weights load so that matmul never allocates.
#pragma once
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "cuda/kernels.h"
#include "cuda/quants/quant_kernels.h"
#include "cuda/weight_arena.h"
#include "hostlm/ops.h"
#include "hostlm/tensor_view.h"

namespace hostlm::cuda::quants {

class QuantMatmul {
 public:
  // Device allocation that throws hostlm::Error naming `what`, the size and the free memory.
  using AllocFn = void* (*)(size_t bytes, const std::string& what);

  // Weights go to `weights` (which must outlive this), scratch to `alloc`.
  QuantMatmul(cudaStream_t stream, cublasHandle_t cublas, AllocFn alloc, WeightArena& weights);
  ~QuantMatmul();
  QuantMatmul(const QuantMatmul&) = delete;
  QuantMatmul& operator=(const QuantMatmul&) = delete;

  // Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, IQ4_NL, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_XS.
  static bool supports(DType type);

  // Uploads a [rows, cols] tensor of a supported type. Throws hostlm::Error naming the tensor
  // when its rows are not whole blocks or its byte size does not match its shape.
  Weight load(const TensorView& view);
  // The same in mapped pinned host memory, for a table only embed() reads.
  Weight load_host(const TensorView& view);
  // Makes room in the scratch buffers for products of a [rows, cols] matrix of `type` whose
  // device copy is made elsewhere (a mixture-of-experts block's combined experts).
  void reserve(DType type, int64_t rows, int64_t cols) { reserve_scratch(type, rows, cols); }
  // y[T, rows] = x[T, cols] * W^T (device pointers).
  void matmul(const Weight& w, const float* x, int64_t T, float* y);
  // Backend::matmul_experts for experts of one supported type and shape (the caller checks):
  // tile products of many experts per launch (expert_tiles.h), an expert with more rows than
  // one launch's activations hold (prefill_tokens_) one prefill product of its own. Even an
  // expert with hundreds of rows stays in the tile launch (several blocks of tokens): one
  // expansion and GEMM per expert costs tens of microseconds in launches, and a long prompt
  // gives half of 256 experts over 64 rows.
  void matmul_experts(std::span<const Weight> experts, std::span<const int32_t> first,
                      const float* x, float* y);
  // Prefill converts at most this many tokens' activations at once (kPrefillTokens, or fewer
  // when the model said it never passes more: Backend::expect_batch_tokens). Taken before the
  // first load; later calls change nothing.
  void expect_batch_tokens(int64_t tokens);
  // Whether matmul_group runs T tokens in one launch (the GEMV path).
  bool groups(int64_t T) const { return T <= gemv_tokens_; }
  // Whether it runs them in one tile launch per block shape where the type has the pipelined
  // tile kernel (tile_matmul_group): above the GEMV's tokens, up to the tile product's.
  // HOSTLM_CUDA_TILE_GROUPS=0 turns it off.
  bool tile_groups(int64_t T) const {
    return tile_groups_ && T > gemv_tokens_ && T <= tile_tokens_;
  }
  // matmul(*ws[j], x, T, ys[j]) for n <= kGemvGroupMax (quant_kernels.h) matrices of one type
  // and cols: one launch where groups(T) (or tile_groups(T) allows), else one matmul each.
  void matmul_group(const Weight* const* ws, float* const* ys, int n, const float* x, int64_t T);
  // One token: matmul_group with the convolution applied to the first matrix's rows as they
  // are written (ConvStep, quant_kernels.h; ys[0] is not written), in one launch. Returns
  // false, having launched nothing but perhaps the quantized input, where the one-token
  // product does not take it; the caller then runs the products and the convolution apart.
  bool matmul_group_conv(const Weight* const* ws, float* const* ys, int n, const float* x,
                         const ConvStep& conv);
  // out[t] = row device_tokens[t] of `table` as float32 (ids already validated).
  void embed(const Weight& table, const int32_t* device_tokens, int64_t T, float* out);
  // Decode matmuls of the same input in a row quantize it once: the caller says when device
  // memory may have changed under the last input (any op other than matmul). Runs a deferred
  // norm first.
  void forget_acts() {
    flush_norm();
    acts_x_ = f16_x_ = nullptr;
  }
  // A one-row RMSNorm (x += y when y is set, then out = rms_norm(x) * weight; device
  // pointers, n values) whose launch waits for the next op: a one-token product of `out` folds
  // it into its own blocks (gemv_group_folded_norm), meant to save the norm's launch and chain
  // of work (3.6 us per norm of a 9B decode step); anything else runs it first. Off unless
  // HOSTLM_CUDA_FOLD_NORM=1 (can_defer_norm is false otherwise): measured on an H200 the folded
  // products ran about 20 us longer each, for a cause not found yet
  // (bench/results/2026-12-02-h200-s17/README.md).
  bool can_defer_norm(int64_t n) const;
  // Whether norms may be deferred at all (HOSTLM_CUDA_FOLD_NORM=1): then a product's launch
  // may also write a norm's buffers, and any op may launch a deferred norm first.
  bool folds_norms() const { return fold_norms_; }
  void defer_norm(float* x, const float* y, const float* weight, float eps, int64_t n, float* out);
  // Launches a deferred norm, if any, as the norm kernel with its quantized output.
  void flush_norm();
  // Where the kernel about to write x (n = T * cols values) may also write it quantized for
  // the GEMV (cuda/kernels.h), which the next matmul on x then uses instead of quantizing it;
  // all null when n is not a multiple of 32 or exceeds the scratch. Call after forget_acts,
  // right before launching that kernel.
  Int8ActsOut produce_acts(const float* x, int64_t n);

  // Up to this many tokens the int8 GEMV; HOSTLM_CUDA_GEMV_TOKENS=N overrides it (chunks of
  // kQuantGemvMaxTokens above 8). Measured on the 9B shape (H200), decode step with the GEMV
  // against the tile product: 6.3 ms against 9.0 at 4 streams, 11.1 against 9.6 at 8.
  static constexpr int64_t kGemvTokens = 6;
  // Up to this many the fused tile product (tile_mma.cu), which reads the weights once per
  // 64 tokens and never writes them expanded; above it, dequantize + cuBLAS GEMM, whose
  // expansion costs less than its faster products save. HOSTLM_CUDA_TILE_TOKENS=N overrides
  // it (0: never), for measuring where the crossovers lie.
  static constexpr int64_t kTileTokens = 64;
  // Tokens per prefill GEMM: longer batches are multiplied in chunks of this many.
  static constexpr int64_t kPrefillTokens = 1024;
  // Bytes after every split tensor that kernels may read (and ignore): the Q6_K tile product
  // copies each 2-byte d in its aligned 4-byte word, 2 bytes past the last one when the
  // tensor has an odd number of blocks.
  static constexpr size_t kTailBytes = 16;

 private:
  void reserve_scratch(DType type, int64_t rows, int64_t cols);
  // The deferred norm folded into one launch of these products of its output, if they allow.
  bool fold_norm(const Weight* const* ws, float* const* ys, int n);
  // x quantized for the GEMV in acts_q_, unless it is there already.
  void quantized_acts(const float* x, int64_t T, int64_t cols);
  void upload_split(const TensorView& view, uint8_t* device);
  void prefill(const Weight& w, const float* x, int64_t T, float* y);
  void tile(const Weight& w, const float* x, int64_t T, float* y);
  // matmul_group through tile_matmul_group; false, having launched nothing, where it does not
  // take them.
  bool tile_group(const Weight* const* ws, float* const* ys, int n, const float* x, int64_t T);
  // x as half in acts_f16_ (with its per-token scales), unless it is there already.
  void half_acts(const float* x, int64_t T, int64_t cols);

  cudaStream_t stream_;
  cublasHandle_t cublas_;
  int64_t gemv_tokens_ = kGemvTokens;
  int64_t prefill_tokens_ = kPrefillTokens;  // tokens per prefill conversion (scratch rows)
  bool fuse_quantize_ = true;          // produce_acts; HOSTLM_CUDA_FUSE_QUANTIZE=0 turns it off
  int64_t tile_tokens_ = kTileTokens;  // 0 where the GPU has no sm_80 tensor-core path
  bool tile_groups_ = true;
  AllocFn alloc_;
  WeightArena& weights_;
  std::vector<void*> host_weights_;  // pinned, mapped (load_host)
  uint8_t* staging_ = nullptr;       // pinned host memory for uploads
  // Scratch, grown only by load(): int8 activations for the GEMV, half activations and
  // their per-token scales for prefill, and one half tile of dequantized weights.
  void* acts_q_ = nullptr;
  // The input acts_q_ holds, as quantized by the last decode matmul or written by its
  // producer (null: none), and its T * cols (the layout depends on that alone).
  const float* acts_x_ = nullptr;
  int64_t acts_n_ = 0;
  void* acts_f16_ = nullptr;
  float* inv_scale_ = nullptr;
  // The input acts_f16_ holds for the tile product and one-chunk prefill, as acts_x_ for
  // the GEMV.
  const float* f16_x_ = nullptr;
  int64_t f16_T_ = 0, f16_cols_ = 0;
  // Partial sums of tile products split over columns, and their zeroed counters.
  float* partial_ = nullptr;
  size_t partial_floats_ = 0;
  unsigned* counters_ = nullptr;
  size_t n_counters_ = 0;
  int64_t max_cols_ = 0;
  void* tile_ = nullptr;
  size_t tile_elems_ = 0;
  ExpertTiles expert_tiles_{};  // matmul_experts: the launch being gathered
  FoldedNorm norm_;  // the deferred norm, when norm_active_ (its acts and counter set here)
  bool norm_active_ = false;
  bool fold_norms_ = false;           // HOSTLM_CUDA_FOLD_NORM=1
  unsigned* fold_counter_ = nullptr;  // zeroed; each folded launch leaves it zeroed
  size_t tile_elems_max_;             // the most weights one prefill tile expands
};

}  // namespace hostlm::cuda::quants
