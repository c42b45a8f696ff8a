// Launchers of the CUDA backend's kernels, callable from plain C++. All pointers are device
// pointers; shapes and semantics are those of the matching op in hostlm/ops.h (the CPU
// backend is the reference). Each returns the launch's error status (cudaGetLastError).
#pragma once
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "hostlm/dtype.h"

namespace hostlm::cuda {

// elementwise.cu
cudaError_t fill(float* dst, float value, size_t n, cudaStream_t stream);
cudaError_t add(float* x, const float* y, size_t n, cudaStream_t stream);
cudaError_t swiglu(const float* gate, const float* up, float* out, size_t n, cudaStream_t stream);
cudaError_t mul_sigmoid(float* x, const float* gate, size_t gate_stride, int64_t T, int64_t n,
                        cudaStream_t stream);

// embed.cu: out[t] = row tokens[t] of `table`; rows_to_f32: rows [0, rows) into out[rows, cols].
cudaError_t embed(DType type, const void* table, size_t row_bytes, int64_t cols,
                  const int32_t* tokens, int64_t T, float* out, cudaStream_t stream);
cudaError_t rows_to_f32(DType type, const void* rows_data, size_t row_bytes, int64_t rows,
                        int64_t cols, float* out, cudaStream_t stream);

// gemv.cu: y[T, rows] = x[T, cols] * W^T for T <= kGemvMaxTokens (decode).
constexpr int64_t kGemvMaxTokens = 8;
cudaError_t gemv(DType type, const void* w, size_t row_bytes, int64_t rows, int64_t cols,
                 const float* x, int64_t T, float* y, cudaStream_t stream);

// norm.cu
cudaError_t rms_norm(const float* x, size_t x_stride, float* out, size_t out_stride, int64_t rows,
                     int64_t n, const float* weight, float eps, cudaStream_t stream);
cudaError_t gated_rms_norm(const float* x, const float* z, const float* weight, int64_t rows,
                           int64_t dv, float eps, float* out, cudaStream_t stream);

// rope.cu
cudaError_t rope_neox(float* x, size_t token_stride, int64_t T, int64_t n_heads, size_t head_stride,
                      int64_t rot_dims, const int32_t* positions, double theta,
                      cudaStream_t stream);

// paged_attention.cu: the paged-KV ops over a batch of sequences that share one page type and
// shape. Device arrays: descs[n_seq]; row_to_seq[rows] (-1: a row of no sequence); pages, the
// sequences' page tables one after another. Storage of sequence s: k + descs[s].k_offset.
constexpr int64_t kAttentionMaxHeadDim = 512;
struct PagedSeqDesc {
  int64_t k_offset, v_offset;  // bytes from PagedBatch::k / v
  int64_t row, T, n_past;
  int32_t page_offset;  // its first entry in PagedBatch::pages
  int32_t unused;
};
struct PagedBatch {
  DType type;
  int64_t n_head_kv, head_dim;
  size_t page_bytes, row_bytes;
  char* k;
  char* v;
  const PagedSeqDesc* descs;
  const int32_t* row_to_seq;
  const int32_t* pages;
  int64_t n_seq, rows;
  int64_t max_kv;  // most cached tokens any row attends to
};
cudaError_t kv_store(const PagedBatch& batch, const float* k, const float* v, cudaStream_t stream);
// Floats of device scratch paged_attention needs for this batch (0: none).
size_t paged_attention_scratch(const PagedBatch& batch, int64_t n_head);
cudaError_t paged_attention(const PagedBatch& batch, const float* q, size_t q_stride,
                            int64_t n_head, float scale, float* out, float* scratch,
                            cudaStream_t stream);

// conv1d.cu
constexpr int64_t kConvMaxKernel = 8;
cudaError_t conv1d_silu(const float* x, int64_t T, int64_t channels, int64_t K, const float* weight,
                        float* conv_state, float* out, cudaStream_t stream);

// delta_rule.cu
constexpr int64_t kDeltaRuleMaxDk = 256;
cudaError_t gated_delta_rule(const float* qkv, const float* alpha, const float* beta_raw,
                             const float* a_neg, const float* dt_bias, int64_t T, int64_t n_k_heads,
                             int64_t n_v_heads, int64_t dk, int64_t dv, float* state, float* out,
                             cudaStream_t stream);

}  // namespace hostlm::cuda
