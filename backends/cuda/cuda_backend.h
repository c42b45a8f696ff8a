// The CUDA backend: every op of hostlm/ops.h on one GPU, float32 activations in device
// memory, F32/F16/BF16 weights uploaded once at load_weight and used in their stored type;
// quantized GGUF weights stay quantized (quants/quant_matmul.h).
//
// Host arrays in the interface. Some ops take small float32 arrays that live on the host
// (RMSNorm weights, conv weights, a_neg, dt_bias): they are immutable model weights, so each
// is uploaded on first use and found again by its host address (HostArrayCache). That holds
// as long as a backend serves the model that owns those arrays, which is how LoadedModel
// pairs them. Token ids and positions change every call: they go through a pinned staging
// buffer into a device buffer that only grows, so steady-state decode allocates nothing.
//
// Decode matmuls that read the same input in a row (q, k, v; gate and up) quantize it once
// (QuantMatmul::forget_acts): every op other than a quantized matmul may write device memory,
// so each one tells QuantMatmul to forget the input it quantized last.
//
// This header declares the class for the files that define its members, one concern each
// (named where their members are declared below); only cuda_entry.cpp creates it, and
// libhostlm sees it as a Backend. What every op calls (the step fingerprint's skip helpers,
// forget_acts, host_array) stays inline here.
#pragma once
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "cuda/backend_options.h"
#include "cuda/graph_stats.h"
#include "cuda/host_arrays.h"
#include "cuda/int_staging.h"
#include "cuda/kernels.h"
#include "cuda/last_writes.h"
#include "cuda/op_kind.h"
#include "cuda/op_profile.h"
#include "cuda/paged_batch.h"
#include "cuda/quants/quant_matmul.h"
#include "cuda/staging.h"
#include "cuda/step_fingerprint.h"
#include "cuda/weight_arena.h"
#include "hostlm/ops.h"

namespace hostlm::cuda {

class CudaBackend final : public Backend {
 public:
  CudaBackend();
  ~CudaBackend() override;

  // cuda_backend.cpp: weights and buffers.
  std::string name() const override { return "cuda"; }
  void set_threads(int) override {}
  Weight load_weight(const TensorView& view) override;
  void expect_batch_tokens(int64_t tokens) override { quant_->expect_batch_tokens(tokens); }
  Weight load_embedding_table(const TensorView& view) override;
  std::unique_ptr<Buffer> alloc(size_t n) override;
  bool device_memory(size_t& used, size_t& total) override;

  // host_transfers.cpp: copies to and from the host.
  void upload(float* dst, const float* src, size_t n) override;
  void download(float* dst, const float* src, size_t n) override;
  void download_rows(std::span<float* const> dst, const float* src, size_t n) override;
  bool prefers_best_logits() const override { return options_.best_logits_on; }
  void best_logits_rows(std::span<float* const> values, std::span<int32_t* const> ids,
                        const float* src, size_t n, size_t k) override;
  void pin_host(void* host, size_t bytes) override;
  void unpin_host(void* host) override;
  bool matmul_to_host(const Weight& w, const float* x, float* host_y) override;
  void wait_host_writes() override;

  // step_graphs.cpp: decode steps recorded and replayed as CUDA graphs.
  void begin_step() override;
  bool end_step() override;
  void abort_step() override;
  bool offers_steps_ahead() const override;
  bool begin_step_ahead() override;
  bool launch_ahead(std::span<const int32_t> tokens) override;

  // elementwise_ops.cpp
  void fill(float* dst, float value, size_t n) override;
  void copy_rows(float* dst, size_t dst_stride, const float* src, size_t src_stride, int64_t rows,
                 int64_t n) override;
  void matmul_experts(std::span<const Weight> experts, std::span<const int32_t> first,
                      const float* x, float* y) override;
  void gather_rows(float* dst, const float* src, int64_t width,
                   std::span<const int32_t> rows) override;
  void weighted_row_sums(float* out, const float* src, int64_t width, int64_t T, int64_t m,
                         std::span<const int32_t> rows, std::span<const float> weights) override;
  bool runs_experts() const override;
  bool offers_device_routing(int64_t n_experts) const override;
  void moe_route(const float* logits, int64_t T, int64_t E, int64_t n_used, int32_t* ids,
                 float* weights) override;
  Weight combined_weight(std::span<const Weight> experts, int64_t n, bool side_by_side) override;
  void combine_experts(std::span<const Weight> experts, const int32_t* ids, int64_t n,
                       bool side_by_side, const Weight& combined) override;
  void scale_segments(float* x, const float* weights, int64_t n, int64_t width) override;
  void add_sigmoid_gated(float* out, const float* y, const float* gate, int64_t T,
                         int64_t n) override;
  void embed(const Weight& table, const int32_t* tokens, int64_t T, float* out) override;
  void add(float* x, const float* y, size_t n) override;
  void mul_sigmoid(float* x, const float* gate, size_t gate_stride, int64_t T, int64_t n) override;
  void swiglu(const float* gate, const float* up, float* out, size_t n) override;

  // norm_ops.cpp
  void rms_norm(const float* x, size_t x_stride, float* out, size_t out_stride, int64_t rows,
                int64_t n, const float* weight, float eps) override;
  void add_rms_norm(float* x, const float* y, int64_t rows, int64_t n, const float* weight,
                    float eps, float* out) override;
  void gated_rms_norm(const float* x, const float* z, const float* weight, int64_t rows, int64_t dv,
                      float eps, float* out) override;

  // matmul_routing.cpp
  void matmul_same_input(std::span<const MatmulOut> outs, const float* x, int64_t T) override;
  void matmul_same_input_conv1d(std::span<const MatmulOut> outs, const float* x, int64_t T,
                                std::span<const SequenceSlice> seqs, int64_t channels, int64_t K,
                                const float* weight, float* conv_out) override;
  void matmul_swiglu(const Weight& w_gate, const Weight& w_up, const float* x, int64_t T,
                     float* gate, float* up) override;
  void matmul(const Weight& w, const float* x, int64_t T, float* y) override;

  // attention_ops.cpp
  void rope_neox(float* x, size_t token_stride, int64_t T, int64_t n_heads, size_t head_stride,
                 int64_t rot_dims, const int32_t* positions, double theta) override;
  void qk_norm_rope(float* qg, size_t q_head_stride, int64_t n_head, float* k, int64_t n_head_kv,
                    int64_t T, int64_t head_dim, const float* q_weight, float q_eps,
                    const float* k_weight, float k_eps, int64_t rot_dims, const int32_t* positions,
                    double theta, float* q_out) override;
  void qk_norm_rope_store(std::span<const PagedSequence> seqs, float* qg, size_t q_head_stride,
                          int64_t n_head, float* k, const float* v, int64_t n_head_kv, int64_t T,
                          int64_t head_dim, const float* q_weight, float q_eps,
                          const float* k_weight, float k_eps, int64_t rot_dims,
                          const int32_t* positions, double theta, float* q_out) override;
  void kv_store(std::span<const PagedSequence> seqs, const float* k, const float* v) override;
  void paged_attention(std::span<const PagedSequence> seqs, const float* q, size_t q_stride,
                       int64_t n_head, float scale, float* out) override;

  // recurrent_ops.cpp
  void conv1d_silu(const float* x, int64_t T, int64_t channels, int64_t K, const float* weight,
                   float* conv_state, float* out) override;
  void conv1d_silu_seqs(std::span<const SequenceSlice> seqs, const float* x, int64_t channels,
                        int64_t K, const float* weight, float* out) override;
  void gated_delta_rule(const float* qkv, const float* alpha, const float* beta_raw,
                        const float* a_neg, const float* dt_bias, int64_t T,
                        const DeltaRuleShape& sh, float* state, float* out) override;
  void gated_delta_rule_seqs(std::span<const SequenceSlice> seqs, const float* qkv,
                             const float* alpha, const float* beta_raw, const float* a_neg,
                             const float* dt_bias, const DeltaRuleShape& sh, float* out) override;
  void gated_delta_rule_norm_seqs(std::span<const SequenceSlice> seqs, const float* qkv,
                                  const float* alpha, const float* beta_raw, const float* a_neg,
                                  const float* dt_bias, const DeltaRuleShape& sh, const float* z,
                                  const float* norm_weight, float eps, int64_t T,
                                  float* out) override;

 private:
  // step_graphs.cpp
  bool end_step_ahead();
  void report_miss() const;
  void launch_replay();
  void downloaded();
  void mark_fetched();
  void collect_replay_time();
  void graph_launched();

  // matmul_routing.cpp
  bool one_token_ring(const Weight& w) const;
  // Which outputs of a matmul_same_input call have been multiplied.
  using Grouped = std::array<bool, 16>;
  static int same_input_group(std::span<const MatmulOut> outs, size_t i, Grouped& done,
                              const Weight** ws, float** ys, bool group16 = false);
  void matmul_groups(std::span<const MatmulOut> outs, const float* x, int64_t T, Grouped& done);
  bool matmul16_group(const Weight* const* ws, float* const* ys, int n, const float* x,
                      Gemv16Epilogue epilogue = {});
  const char* matmul_label(int64_t T) const;
  static std::string group_label(const Weight* const* ws, int n);
  const char* seqs_label(const char* op, std::span<const SequenceSlice> seqs);

  // prefill_products.cpp
  static constexpr size_t kDequantBytes = size_t{64} << 20;
  bool widens(const Weight& w, int64_t T) const;
  static int64_t widen_block_rows(const Weight& w);
  int64_t bf16_chunk_tokens(const Weight& w, int64_t T) const;
  static int64_t half_chunk_tokens(const Weight& w, int64_t T);
  static size_t half_acts_bytes(const Weight& w, int64_t tokens);
  size_t widen_bytes(const Weight& w, int64_t T) const;
  void bf16_gemm(const Weight& w, const float* x, int64_t T, float* y);
  void f16_gemm(const Weight& w, const float* x, int64_t T, float* y);
  void sgemm(const float* w, int64_t rows, int64_t cols, const float* x, int64_t T, float* y,
             int64_t ldy = -1);

  // norm_ops.cpp
  cuda::Int8ActsOut norm_acts(const float* out, int64_t rows, int64_t n);

  // recurrent_ops.cpp
  void delta_rule(std::span<const SequenceSlice> seqs, const float* qkv, const float* alpha,
                  const float* beta_raw, const float* a_neg, const float* dt_bias,
                  const DeltaRuleShape& sh, const float* z, const float* norm_weight, float eps,
                  int64_t T, float* out);
  bool chunked_fits(int64_t dk);
  void delta_rule_chunked(const cuda::RecurrentSeqs& seqs, const float* qkv, const float* alpha,
                          const float* beta_raw, const float* a_neg, const float* dt_bias,
                          const DeltaRuleShape& sh, StateType state_type, float* out);
  // Calls fn(table, largest T) for the sequences in groups of one launch's table size.
  template <typename Fn>
  static void for_each_group(std::span<const SequenceSlice> seqs, Fn&& fn) {
    cuda::RecurrentSeqs group;
    int64_t max_T = 0;
    for (size_t i = 0; i < seqs.size(); ++i) {
      const SequenceSlice& sl = seqs[i];
      group.T[group.n] = static_cast<int32_t>(sl.T);
      group.row[group.n] = sl.row;
      group.conv_state[group.n] = sl.conv_state;
      group.state[group.n] = sl.recurrent_state;
      max_T = std::max(max_T, sl.T);
      if (++group.n == cuda::kRecurrentSeqsPerLaunch || i + 1 == seqs.size()) {
        fn(group, max_T);
        group.n = 0;
        max_T = 0;
      }
    }
  }

  // scratch.cpp
  void replace_scratch(void* old, const char* what);
  float* attention_scratch(size_t floats);
  float* dequant_scratch(size_t bytes);

  // What every op calls, inline so that the pass over a replayed step stays short.

  // While a step is recorded or replayed, adds the op to its fingerprint; true when the op
  // must not launch because the step is a replay.
  template <typename... Args>
  bool skip(OpKind kind, const Args&... args) {
    if (runs_live()) return false;
    step_.op(kind, args...);
    traced(kind);
    return mode_ == UploadMode::replay;
  }
  // The same for the paged-KV ops, with the batch's launch arguments (its longest context
  // only through the grid, which the scratch size stands for).
  template <typename... Args>
  bool skip_paged(OpKind kind, const cuda::PagedBatch& b, const Args&... args) {
    if (runs_live()) return false;
    step_.op(kind, args...);
    step_.add(b.type);
    for (int64_t v : {b.n_head_kv, b.head_dim, b.n_seq, b.rows, b.min_t, b.max_t}) step_.add(v);
    for (size_t v : {b.page_bytes, b.row_bytes}) step_.add(v);
    for (const void* p : {static_cast<const void*>(b.k), static_cast<const void*>(b.v),
                          static_cast<const void*>(b.descs), static_cast<const void*>(b.row_to_seq),
                          static_cast<const void*>(b.pages)})
      step_.add(p);
    step_.add(b.aligned16);
    traced(kind);
    return mode_ == UploadMode::replay;
  }
  // The same for the recurrent ops, with the sequence table they take by value.
  template <typename... Args>
  bool skip_group(OpKind kind, const cuda::RecurrentSeqs& g, const Args&... args) {
    if (runs_live()) return false;
    step_.op(kind, args...);
    step_.add(g.n);
    for (int i = 0; i < g.n; ++i) {
      step_.add(g.T[i]);
      step_.add(g.row[i]);
      step_.add(g.conv_state[i]);
      step_.add(g.state[i]);
    }
    traced(kind);
    return mode_ == UploadMode::replay;
  }
  // The same for a grouped matmul, with each matrix and output.
  bool skip_matmul_group(const Weight* const* ws, float* const* ys, int n, const float* x,
                         int64_t T) {
    if (runs_live()) return false;
    step_.op(kMatmulGroup, x, T, n);
    for (int j = 0; j < n; ++j) {
      step_.add(ws[j]->data);
      step_.add(ws[j]->type);
      step_.add(ws[j]->rows);
      step_.add(ws[j]->cols);
      step_.add(ys[j]);
    }
    traced(kMatmulGroup);
    return mode_ == UploadMode::replay;
  }
  // The same with the convolution of the first matrix's rows.
  bool skip_matmul_group_conv(const Weight* const* ws, float* const* ys, int n, const float* x,
                              const ConvStep& conv) {
    if (runs_live()) return false;
    skip_matmul_group(ws, ys, n, x, 1);
    step_.op(kMatmulGroupConv, conv.weight, conv.state, conv.out, conv.channels, conv.K);
    traced(kMatmulGroupConv);
    return mode_ == UploadMode::replay;
  }
  // An op outside any step runs as it is called; counted, since it may replace a buffer that a
  // pass made ahead saw (launch_ahead).
  bool runs_live() {
    if (mode_ != UploadMode::live) return false;
    ++live_ops_;
    return true;
  }
  // HOSTLM_CUDA_GRAPH_STATS=2: each op's running fingerprint, to name the first op in which a
  // step that matched no recording differs from the closest one.
  void traced(int kind) {
    if (graph_stats_.each) trace_.push_back({kind, step_.hash()});
    if (graph_stats_.gaps && mode_ == UploadMode::replay && !ahead_walk_) {
      const auto now = std::chrono::steady_clock::now();
      auto& g = graph_stats_;
      g.gap_ms[kind] += std::chrono::duration<double, std::milli>(now - g.last_op).count();
      ++g.gap_calls[kind];
      g.last_op = now;
    }
  }
  // A replayed step found it cannot match its recording (end_step reports it).
  void replay_cannot() { replay_failed_ = true; }
  const float* host_array(const float* host, size_t n) {
    if (mode_ != UploadMode::replay) return host_arrays_.get(host, n, stream_);
    const float* device = host_arrays_.find(host, n);
    if (device == nullptr) replay_cannot();
    return device;
  }
  uint64_t staging_generation() const {
    return tokens_.generation() + positions_.generation() + paged_.generation();
  }
  // Every op but the products: the quantized input and the last op's writes are forgotten.
  void forget_acts() {
    kv_stored_ = nullptr;
    quant_->forget_acts();
    last_writes_.forget();
  }

  const BackendOptions options_ = backend_options_from_env();  // HOSTLM_CUDA_* variables
  cudaStream_t stream_ = nullptr;
  cublasHandle_t cublas_ = nullptr;
  void* cublas_workspace_ = nullptr;
  std::unique_ptr<WeightArena> weights_;  // every device weight, quantized or not
  std::vector<void*> host_weights_;       // mapped pinned memory (load_embedding_table)
  HostArrayCache host_arrays_;
  IntStaging tokens_, positions_;
  // The row tables of gather_rows and weighted_row_sums (ops that run outside recorded steps).
  IntStaging route_rows_;
  Staging route_weights_;
  PagedBatchUpload paged_;  // page tables of the current batch, on the device
  float* attention_scratch_ = nullptr;
  size_t attention_scratch_floats_ = 0;
  float* dequant_ = nullptr;
  size_t dequant_bytes_ = 0;
  // The pages (KvPages::k) the last op stored new keys into, if it was a KV store (null
  // otherwise): the attention after it may read older keys before its programmatic wait.
  const void* kv_stored_ = nullptr;
  static constexpr size_t kDeltaNormMaxSeqs = 8;
  int64_t chunked_fit_dk_ = -1;  // the dk chunked_fit_ was found for
  bool chunked_fit_ = false;
  static constexpr size_t kChunkedScratchBytes = size_t{16} << 20;
  struct Pinned {
    size_t bytes;
    char* device;  // the same memory as the kernels see it
  };
  std::map<char*, Pinned> pinned_;  // pin_host's ranges by their host address
  // The last op's writes (last_writes.h). Never known while norms may be folded into
  // products, whose launches then also write the norm's buffers.
  cuda::LastWrites last_writes_;
  // Backend::best_logits_rows: device state and results, and their pinned host copy.
  void* best_scratch_ = nullptr;
  size_t best_scratch_bytes_ = 0;
  void* best_host_ = nullptr;
  size_t best_host_bytes_ = 0;
  Gemv16Ring gemv16_ring_;                      // the one-token 16-bit product's ring (kernels.h)
  std::unique_ptr<quants::QuantMatmul> quant_;  // quantized weights and their scratch
  std::unique_ptr<OpProfile> profile_;
  bool warmed_up_ = false;              // the first step, run live, is over (begin_step)
  UploadMode mode_ = UploadMode::live;  // recording or replaying a step, or neither
  // Recorded decode steps, kept by their ops so that a step like any of them replays it: a
  // decode from a short context changes its attention grid as it grows (at powers of two of
  // pages), and a new sequence starts small again, so one recording would be replaced at
  // each of those changes and recorded afresh at the next (2-4 ms each time).
  struct RecordedStep {
    cudaGraphExec_t exec = nullptr;
    StepFingerprint ops;
    uint64_t generation = 0;  // staging_generation() when recorded
    bool replayable = false;
    uint64_t used = 0;                            // step_tick_ at its last launch (0: never)
    std::vector<std::pair<int, uint64_t>> trace;  // HOSTLM_CUDA_GRAPH_STATS=2 only
  };
  bool replayable(const RecordedStep& r) const {
    return r.exec != nullptr && r.replayable && r.generation == step_generation_;
  }
  std::array<RecordedStep, kRecordedSteps> recorded_steps_;
  uint64_t step_tick_ = 0;
  cudaGraphExec_t graph_exec_ = nullptr;         // the one launched last (owned by recorded_steps_)
  StepFingerprint step_;                         // this step's ops
  std::vector<std::pair<int, uint64_t>> trace_;  // its running fingerprint per op (stats 2)
  uint64_t step_generation_ = 0;                 // staging_generation() at this step's start
  bool record_next_ = false;    // the last replay did not match: record the next step
  bool replay_failed_ = false;  // this replayed step cannot match (a buffer would grow)
  bool ahead_walk_ = false;     // this replay's pass is made ahead (begin_step_ahead)
  uint64_t live_ops_ = 0;       // ops run one by one, outside any step
  struct {
    RecordedStep* held = nullptr;  // the recording the last pass made ahead matched
    uint64_t live_ops = 0;         // live_ops_ when it was made
    size_t token_offset = 0;       // where its token ids are in tokens_
    size_t tokens = 0;             // how many (SIZE_MAX: embedded twice; not launched)
    int64_t vocab = 0;             // the embedding's rows
  } ahead_;
  GraphStats graph_stats_;      // HOSTLM_CUDA_GRAPH_STATS
  std::vector<void*> retired_;  // scratch replaced during a capture, freed after the graph
};

}  // namespace hostlm::cuda
