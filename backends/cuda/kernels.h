// Launchers of the CUDA backend's kernels, callable from plain C++. All pointers are device
// pointers; shapes and semantics are those of the matching op in hostlm/ops.h (the CPU
// backend is the reference). Each returns the launch's error status (cudaGetLastError).
#pragma once
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "cuda/expert_copy.h"
#include "cuda/state_values.h"
#include "hostlm/dtype.h"

namespace hostlm::cuda {

// Where a kernel that produces a decode GEMV's input also writes it quantized, in the layout
// of quants/quant_kernels.h quantize_acts (value i of the flat input to q[i], the scale of its
// 32 to d[i / 32], the scaled sum of its 16 to s16[i / 16]); all null: it does not. Supported
// by the kernels that take one when their values per row are a multiple of 32.
struct Int8ActsOut {
  int8_t* q = nullptr;
  float* d = nullptr;
  float* s16 = nullptr;
};

// Whether kernels read what the kernel before them cannot have written (model constants, a
// recurrent state) before their programmatic wait (launch.cuh), so that those loads overlap
// its tail. HOSTLM_CUDA_EARLY_LOADS=0 reads everything after the wait, for comparisons.
bool early_loads_enabled();

// elementwise.cu
cudaError_t fill(float* dst, float value, size_t n, cudaStream_t stream);
// dst (device) = src (pinned host memory the device can read), n16 blocks of 16 bytes, both
// 16-byte aligned: an upload as a kernel rather than a copy-engine node (staging.h says why).
// The host memory is read before the wait for the previous kernel, dst written after it.
cudaError_t copy_from_host(void* dst, const void* src, size_t n16, cudaStream_t stream);
cudaError_t add(float* x, const float* y, size_t n, cudaStream_t stream);
cudaError_t swiglu(const float* gate, const float* up, float* out, size_t n, cudaStream_t stream,
                   Int8ActsOut acts = {});
// early_gate: the kernel launched just before did not write the gates, so they may be read
// before the programmatic wait.
cudaError_t mul_sigmoid(float* x, const float* gate, size_t gate_stride, int64_t T, int64_t n,
                        cudaStream_t stream, Int8ActsOut acts = {}, bool early_gate = false);

// moe_rows.cu: Backend::gather_rows and Backend::weighted_row_sums with their row indices
// (and weights) already on the device.
cudaError_t gather_rows(float* dst, const float* src, int64_t width, const int32_t* rows,
                        int64_t n_rows, cudaStream_t stream);
cudaError_t weighted_row_sums(float* out, const float* src, int64_t width, int64_t T, int64_t m,
                              const int32_t* rows, const float* weights, cudaStream_t stream);

// moe_rows.cu, routing on the device (Backend::moe_route and what follows it).
cudaError_t moe_route(const float* logits, int64_t T, int64_t E, int64_t k, int32_t* ids,
                      float* weights, cudaStream_t stream);
// expert_copy.h says how.
cudaError_t combine_experts(const ExpertCopy& copy, const int32_t* ids, void* dst,
                            cudaStream_t stream);
cudaError_t scale_segments(float* x, const float* weights, int64_t n, int64_t width,
                           cudaStream_t stream);
cudaError_t add_sigmoid_gated(float* out, const float* y, const float* gate, int64_t T, int64_t n,
                              cudaStream_t stream);

// best_logits.cu: Backend::best_logits_rows on the device. For each of `rows` rows of n logits
// at src, its k best (k <= kBestLogitsMax, n <= 2^32) into values[row * k ..] and
// ids[row * k ..], best first in the sampler's order. `scratch` holds
// best_logits_scratch_bytes(rows) bytes.
constexpr int kBestLogitsMax = 1024;
constexpr int64_t kBestLogitsMaxRows = 65535;  // one grid row each
size_t best_logits_scratch_bytes(int64_t rows);
cudaError_t best_logits(const float* src, int64_t rows, int64_t n, int k, void* scratch,
                        float* values, int32_t* ids, cudaStream_t stream);

// embed.cu: out[t] = row tokens[t] of `table`; rows_to_f32: rows [0, rows) into out[rows, cols].
cudaError_t embed(DType type, const void* table, size_t row_bytes, int64_t cols,
                  const int32_t* tokens, int64_t T, float* out, cudaStream_t stream);
cudaError_t rows_to_f32(DType type, const void* rows_data, size_t row_bytes, int64_t rows,
                        int64_t cols, float* out, cudaStream_t stream);

// gemv.cu: y[T, rows] = x[T, cols] * W^T for T <= kGemvMaxTokens (decode).
constexpr int64_t kGemvMaxTokens = 8;
cudaError_t gemv(DType type, const void* w, size_t row_bytes, int64_t rows, int64_t cols,
                 const float* x, int64_t T, float* y, cudaStream_t stream);

// The decode step of a causal conv1d + SiLU (conv1d.cu) that a one-token product applies to
// its first matrix's rows as it writes them: row c becomes out[c], with the same bits as
// writing y and then running conv1d_silu, and the state moves on; y[0] is not written.
// weight: [channels, K]; state: [K-1, channels]; channels equals the first matrix's rows.
constexpr int kFusedConvMaxK = 4;
struct ConvStep {
  const float* weight = nullptr;
  float* state = nullptr;
  float* out = nullptr;
  int64_t channels = 0;
  int K = 0;
};

// gemv16_staged.cu: the one-token (T == 1) product for BF16 and F16 weights, streamed
// through a shared-memory ring; the same bits as gemv(). `ring` is each warp's ring of stages
// (chunk columns of two rows, `stages` of them; chunk 0: off). Returns false, launching
// nothing, where it does not apply (before sm_90, unaligned data, other types, the ring off).
struct Gemv16Ring {
  int chunk = 0, stages = 0;
};
// HOSTLM_CUDA_GEMV16_RING: "0" (off: gemv()'s kernels), "1024x3" (the default) or "512x6";
// another value is reported on stderr and gives the default.
Gemv16Ring gemv16_ring_from_env();
bool gemv16_staged(Gemv16Ring ring, DType type, const void* w, size_t row_bytes, int64_t rows,
                   int64_t cols, const float* x, float* y, cudaStream_t stream);
// Whether gemv16_staged takes products of this type and width here (given aligned data).
// Its plain rows leave a warp 32 consecutive rows at a time, as matmul_to_host needs.
bool gemv16_staged_applies(Gemv16Ring ring, DType type, int64_t cols);
// The same for up to kGemv16GroupMax matrices of one type and `cols` that read the same x, in
// one launch (one ramp-up and drain instead of one each); each row's bits as alone.
constexpr int kGemv16GroupMax = 4;
struct Gemv16Target {
  const void* w;
  size_t row_bytes;
  int64_t rows;
  float* y;
};
// What a group's launch does with its rows' sums besides writing them: with `conv`, the
// first target's rows are the channels of a convolution's decode step (ConvStep; that y is not
// written); with `swiglu`, the group is an MLP's gate and up (two targets of equal rows) and
// targets[0].y[r] = silu(gate_r) * up_r with the bits of swiglu() after the products
// (targets[1].y is not written). At most one of them.
struct Gemv16Epilogue {
  const ConvStep* conv = nullptr;
  bool swiglu = false;
};
bool gemv16_staged_group(Gemv16Ring ring, DType type, const Gemv16Target* targets, int n,
                         int64_t cols, const float* x, cudaStream_t stream,
                         Gemv16Epilogue epilogue = {});

// bf16_split.cu: out[p][i] (parts arrays of n bfloat16, one after another) such that
// sum_p out[p][i] carries x[i] to about 8 * parts bits; parts in 1..3.
cudaError_t split_bf16(const float* x, size_t n, int parts, void* out, cudaStream_t stream);

// norm.cu. `acts` needs out_stride == n and n <= kNormQuantizeMax. The norms' and
// qk_norm_rope's weights are model constants, read before the programmatic wait (launch.cuh):
// no kernel of the stream may write them.
constexpr int64_t kNormQuantizeMax = 8192;
cudaError_t rms_norm(const float* x, size_t x_stride, float* out, size_t out_stride, int64_t rows,
                     int64_t n, const float* weight, float eps, cudaStream_t stream,
                     Int8ActsOut acts = {});
// The block size of both norms for rows of n; each thread sums the squares of values
// t, t + threads, ... (at most 8 of them) in that order, and the block adds its warps' sums in
// warp order. The decode GEMV that folds a norm in (quant_kernels.h) sums in the same order.
int rms_norm_threads(int64_t n);
// x += y, then out = rms_norm(x) (rows of n, contiguous). early_x: the kernel launched just
// before did not write x, so x is read before the programmatic wait too.
cudaError_t add_rms_norm(float* x, const float* y, int64_t rows, int64_t n, const float* weight,
                         float eps, float* out, cudaStream_t stream, Int8ActsOut acts = {},
                         bool early_x = false);
// early_z: as early_x, for z.
cudaError_t gated_rms_norm(const float* x, const float* z, const float* weight, int64_t rows,
                           int64_t dv, float eps, float* out, cudaStream_t stream,
                           Int8ActsOut acts = {}, bool early_z = false);

// qk_norm_rope.cu: Backend::qk_norm_rope (positions on the device).
constexpr int64_t kQkNormRopeMaxHeadDim = 1024;
cudaError_t qk_norm_rope(float* qg, size_t q_head_stride, int64_t n_head, float* k,
                         int64_t n_head_kv, int64_t T, int64_t head_dim, const float* q_weight,
                         float q_eps, const float* k_weight, float k_eps, int64_t rot_dims,
                         const int32_t* positions, double theta, float* q_out, cudaStream_t stream);

// rope.cu
cudaError_t rope_neox(float* x, size_t token_stride, int64_t T, int64_t n_heads, size_t head_stride,
                      int64_t rot_dims, const int32_t* positions, double theta,
                      cudaStream_t stream);

// paged_attention.cu: the paged-KV ops over a batch of sequences that share one page type and
// shape. Device arrays: descs[n_seq]; row_to_seq[rows] (-1: a row of no sequence); pages, the
// sequences' page tables one after another. Storage of sequence s: k + descs[s].k_offset.
constexpr int64_t kAttentionMaxHeadDim = 512;
// Token rows per page: hostlm::kKvPageTokens (ops.h, which the kernels' C++17 cannot include;
// paged_batch.cpp checks they agree).
constexpr int64_t kPageTokens = 32;
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
  int64_t max_kv;        // most cached tokens any row attends to
  int64_t min_t, max_t;  // fewest and most new rows of any sequence
  bool aligned16;        // every sequence's k and v storage starts 16-byte aligned
  // Set by paged_attention: sequences with at least this many new rows go to flash_prefill
  // and the CUDA-core kernels skip their rows (0: none do).
  int64_t flash_rows;
};
cudaError_t kv_store(const PagedBatch& batch, const float* k, const float* v, cudaStream_t stream);
// qk_norm_rope, whose blocks also store the batch's new keys (as they make them) and values v
// into the pages, as kv_store(batch, k, v) would after it: F32 and F16 pages.
cudaError_t qk_norm_rope_store(const PagedBatch& batch, float* qg, size_t q_head_stride,
                               int64_t n_head, float* k, const float* v, int64_t n_head_kv,
                               int64_t T, int64_t head_dim, const float* q_weight, float q_eps,
                               const float* k_weight, float k_eps, int64_t rot_dims,
                               const int32_t* positions, double theta, float* q_out,
                               cudaStream_t stream);
// Floats of device scratch paged_attention needs for this batch (0: none).
size_t paged_attention_scratch(const PagedBatch& batch, int64_t n_head);
// early: the kernel launched just before wrote none of the batch's arrays and, of its pages,
// only the rows of the batch's new tokens (a KV store of this batch), so the decode kernel
// reads the arrays and its first older keys and values before the programmatic wait.
cudaError_t paged_attention(const PagedBatch& batch, const float* q, size_t q_stride,
                            int64_t n_head, float scale, float* out, float* scratch,
                            cudaStream_t stream, bool early = false);

// flash_prefill.cu: paged_attention on tensor cores for sequences with many new rows (F16
// pages, head_dim 64, 128 or 256, any query heads per KV head), as accurate as the CUDA-core
// kernels (a few 1e-6 of max |out|). A sequence goes there when it has at least
// kFlashPrefillMinRows new rows, or HOSTLM_CUDA_FLASH_MIN_ROWS when that is set (1 sends
// every sequence of a supported shape, 0 none; read on every call, so tests can switch it).
// 64 is one tile of query rows: with fewer, most of a tile would be padding, and the split
// kernel spreads few rows over the keys of a long context (flash-decoding), which this
// kernel does only for whole tiles, when it has too few blocks for the GPU.
constexpr int64_t kFlashPrefillMinRows = 64;
// That threshold when some sequence of `batch` reaches it and the shape is supported, else 0.
int64_t flash_prefill_rows(const PagedBatch& batch, int64_t n_head);
// Splits of the keys flash_prefill uses for `batch` (flash_rows set as paged_attention sets
// it): a function of the batch's host-side fields and the device only. HOSTLM_CUDA_FLASH_SPLITS
// = N forces N (at most 16; read on every call), else 1 unless blocks are few and keys many.
int flash_prefill_splits(const PagedBatch& batch, int64_t n_head);
// Floats of scratch flash_prefill needs for `batch` (0 when it does not split).
size_t flash_prefill_scratch(const PagedBatch& batch, int64_t n_head);
// Attention of the sequences with at least batch.flash_rows new rows; other rows untouched.
// scratch: flash_prefill_scratch floats (may be null when that is 0).
cudaError_t flash_prefill(const PagedBatch& batch, const float* q, size_t q_stride, int64_t n_head,
                          float scale, float* out, float* scratch, cudaStream_t stream);

// The recurrent (linear-attention) layers of several sequences in one launch: rows
// [row[i], row[i] + T[i]) of the batch belong to sequence i, whose conv and delta-rule states
// are at conv_state[i] / state[i]. Passed by value as a kernel parameter (no upload, nothing
// to synchronise); larger batches go in groups of kRecurrentSeqsPerLaunch.
constexpr int kRecurrentSeqsPerLaunch = 64;
struct RecurrentSeqs {
  int n = 0;
  int32_t T[kRecurrentSeqsPerLaunch];
  int64_t row[kRecurrentSeqsPerLaunch];
  float* conv_state[kRecurrentSeqsPerLaunch];
  float* state[kRecurrentSeqsPerLaunch];
};

// conv1d.cu. x, out: the batch's [rows, channels]; max_T: the largest T of the table.
constexpr int64_t kConvMaxKernel = 8;
cudaError_t conv1d_silu(const RecurrentSeqs& seqs, int64_t max_T, const float* x, int64_t channels,
                        int64_t K, const float* weight, float* out, cudaStream_t stream);

// delta_rule.cu. qkv, alpha, beta_raw, out: the batch's rows. early_state: no state of the
// table was written by the kernel launched just before this one (in a forward pass the
// products of qkv always come between), so the states are read before the programmatic wait
// (launch.cuh).
constexpr int64_t kDeltaRuleMaxDk = 256;
// norm (optional, z set): the layer's gated RMSNorm applied to out as the rule writes it, the
// same numbers as gated_rms_norm(out, norm.z, norm.weight, rows, dv, norm.eps, out, acts) after
// it, z laid out like out. Only where delta_rule_can_norm holds.
struct DeltaRuleNorm {
  const float* z = nullptr;
  const float* weight = nullptr;  // [dv]
  float eps = 0.f;
  Int8ActsOut acts;
};
// A decode launch (every T <= 4) with dk <= 128 and dv 32, 64 or 128: one block then holds a
// value head's every column, so it can take the head's norm itself.
bool delta_rule_can_norm(int64_t dk, int64_t dv, int64_t max_T);
cudaError_t gated_delta_rule(const RecurrentSeqs& seqs, const float* qkv, const float* alpha,
                             const float* beta_raw, const float* a_neg, const float* dt_bias,
                             int64_t n_k_heads, int64_t n_v_heads, int64_t dk, int64_t dv,
                             float* out, bool early_state, cudaStream_t stream,
                             const DeltaRuleNorm& norm = {}, StateType state_type = StateType::F32);

// delta_step16.cu: a decode step (every T == 1) over states stored as 16 bits, whose general
// kernel above moves half the bytes in the same time; a lane holds four columns packed.
// delta_step16_fits: 16-bit states, T == 1 everywhere, dk a multiple of 4 up to 128, 16-byte
// aligned qkv rows and 8-byte aligned states. No gated norm (decode launches of a few
// sequences keep the fused kernel above).
bool delta_step16_fits(const RecurrentSeqs& seqs, const float* qkv, int64_t n_k_heads,
                       int64_t n_v_heads, int64_t dk, int64_t dv, StateType state_type);
cudaError_t gated_delta_step16(const RecurrentSeqs& seqs, const float* qkv, const float* alpha,
                               const float* beta_raw, const float* a_neg, const float* dt_bias,
                               int64_t n_k_heads, int64_t n_v_heads, int64_t dk, int64_t dv,
                               float* out, bool early_state, StateType state_type,
                               cudaStream_t stream);

// delta_chunked.cu: the same rule in the chunked form of spec 2.10 (delta_chunked.h says
// why), for prefill. Sequences of the table are taken in windows of chunks whose per-chunk
// results fit in `scratch` (delta_chunked_slot_floats(n_v_heads) floats a 64-token chunk;
// at least one). Same results as gated_delta_rule to float rounding; no gated norm.
constexpr int64_t kDeltaChunkedMaxDk = 128;
constexpr int64_t kDeltaChunkedTokens = 64;  // tokens per chunk
// stage: the scan keeps each chunk's triangular factors in shared memory where the GPU gives a
// block enough (133 KiB at dk = 128), else it reads them through L1 (98 KiB).
// delta_chunked_fits: whether this GPU gives a block the shared memory of the second way at
// this dk (sm_90 has 227 KiB, the RTX 30/40 cards 99).
bool delta_chunked_fits(int64_t dk);
size_t delta_chunked_slot_floats(int64_t n_v_heads);
cudaError_t gated_delta_rule_chunked(const RecurrentSeqs& seqs, const float* qkv,
                                     const float* alpha, const float* beta_raw, const float* a_neg,
                                     const float* dt_bias, int64_t n_k_heads, int64_t n_v_heads,
                                     int64_t dk, int64_t dv, float* out, float* scratch,
                                     size_t scratch_floats, bool stage, cudaStream_t stream,
                                     StateType state_type = StateType::F32);

}  // namespace hostlm::cuda
