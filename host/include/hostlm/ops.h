// The ops interface: the contract between architecture plugins and backends.
//
// Plugins compose a forward pass from these calls and never touch a backend's memory
// directly: activation buffers come from Backend::alloc and may live on a device; weights
// are handed to the backend once with load_weight and used through the Weight handle.
// Shapes are row-major with the last dimension contiguous; "T" is the number of tokens
// in the batch being evaluated. All activations are float32.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "hostlm/tensor_view.h"

namespace hostlm {

// A weight as the backend holds it: [rows, cols] of `type` (rows = output features).
struct Weight {
  DType type = DType::F32;
  int64_t rows = 0;
  int64_t cols = 0;
  const void* data = nullptr;  // backend-owned or mapped; opaque to plugins
  size_t row_bytes = 0;
};

// One product of a group of matrices that read the same input (Backend::matmul_same_input).
struct MatmulOut {
  const Weight* w;
  float* y;  // [T, w->rows]
};

// Tokens per KV page. 32 because: a CUDA warp reads one page's keys one per lane; a page
// table stays short even at 262,144 tokens (8,192 entries); a Q8_0 block is 32 values, so
// quantized pages need no padding; and a cached prefix that ends inside a page costs one page
// copy (copy-on-write), never recomputation, so smaller pages would buy little reuse.
inline constexpr int64_t kKvPageTokens = 32;

// One attention layer's KV cache as pages (see hostlm/kv_cache.h): page p holds
// kKvPageTokens token rows of n_head_kv * head_dim keys at k + p * page_bytes and the values
// at v + p * page_bytes. Rows are stored as `type`: F32, F16 or Q8_0 (blocks of 32 values).
struct KvPages {
  DType type = DType::F32;
  int64_t n_head_kv = 0, head_dim = 0;
  void* k = nullptr;  // backend memory
  void* v = nullptr;
  size_t page_bytes = 0;
};

// One sequence of a batch, as the paged ops see it: rows [row, row + T) of the batch are its
// new tokens, at positions n_past .. n_past + T - 1. Token i lives in page pages[i / 32]
// (kKvPageTokens); the page table is host memory and covers positions up to n_past + T - 1.
struct PagedSequence {
  KvPages kv;
  const int32_t* pages = nullptr;
  int64_t row = 0, T = 0, n_past = 0;
};

// One sequence of a batch, as the linear-attention (recurrent) ops see it: rows
// [row, row + T) of the batch are its new tokens; its conv and delta-rule states are backend
// memory that the ops read and update in place. n_past is the number of tokens cached already.
struct SequenceSlice {
  int64_t row = 0, T = 0, n_past = 0;
  float* conv_state = nullptr;       // [(K-1), channels]
  float* recurrent_state = nullptr;  // [n_v_heads, dv, dk] of DeltaRuleShape::state
};

// An activation buffer of float32 elements, owned by the backend that made it.
class Buffer {
 public:
  virtual ~Buffer() = default;
  virtual float* data() = 0;  // may be a device pointer: pass it to ops, never dereference
  virtual size_t size() const = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;
  virtual void set_threads(int n_threads) = 0;

  // Memory. load_weight may keep a pointer to `view.data` (the mapping must outlive the model).
  virtual Weight load_weight(const TensorView& view) = 0;
  // The most tokens one forward call of the model will pass to an op, said before its weights
  // load so that a backend can size per-token scratch to it instead of to its own maximum.
  // Ops given more tokens still work, in pieces.
  virtual void expect_batch_tokens(int64_t tokens) { (void)tokens; }
  // A table that only embed() reads (an untied token embedding). A GPU backend keeps it in
  // host memory that its kernels read over the bus, as llama.cpp does: a step reads a few
  // rows of it, and it is the largest tensor of a model.
  virtual Weight load_embedding_table(const TensorView& view) { return load_weight(view); }
  virtual std::unique_ptr<Buffer> alloc(size_t n_floats) = 0;
  virtual void upload(float* dst, const float* host_src, size_t n) = 0;
  virtual void download(float* host_dst, const float* src, size_t n) = 0;
  virtual void fill(float* dst, float value, size_t n) = 0;
  // Row i of src ([dst.size(), n] backend memory) to the host array dst[i], for every row;
  // returns when all are there. One wait for the lot instead of one per row.
  virtual void download_rows(std::span<float* const> dst, const float* src, size_t n) {
    for (size_t i = 0; i < dst.size(); ++i) download(dst[i], src + i * n, n);
  }
  // The k best of row i of src ([values.size(), n] backend memory) to the host arrays
  // values[i] and ids[i], best first in the sampler's order (best_logits.h), for every row;
  // returns when all are there. An accelerator sends k pairs a row instead of n logits. The
  // default downloads each row and selects on the host.
  // Whether best_logits_rows is worth asking for instead of whole rows: where it saves a
  // transfer, not where the logits are in host memory already.
  virtual bool prefers_best_logits() const { return false; }
  virtual void best_logits_rows(std::span<float* const> values, std::span<int32_t* const> ids,
                                const float* src, size_t n, size_t k);
  // Host memory that downloads will target again and again (the engine's logits rows) may be
  // page-locked for full-speed copies. Best effort: no-op where it does not apply or fails.
  virtual void pin_host(void* /*host*/, size_t /*bytes*/) {}
  virtual void unpin_host(void* /*host*/) {}
  // One token's y[w.rows] = w x written by the product itself into host memory that pin_host
  // registered (all of host_y's w.rows floats in one pinned range), so that no download
  // follows it; may be recorded between begin_step and end_step like any op. Returns false,
  // having done nothing, where the backend cannot; the caller then multiplies into backend
  // memory and downloads. The values are in host_y once wait_host_writes() returns.
  virtual bool matmul_to_host(const Weight& /*w*/, const float* /*x*/, float* /*host_y*/) {
    return false;
  }
  virtual void wait_host_writes() {}
  // The memory of the device this backend computes on, when it has its own (a GPU): bytes in
  // use by everything on the device and bytes in all. False for host memory.
  virtual bool device_memory(size_t& /*used*/, size_t& /*total*/) { return false; }
  // A decode step's ops may be recorded and run as one unit (CUDA graphs: one launch instead
  // of hundreds). Between begin_step and end_step the caller neither downloads nor uploads
  // through upload(); end_step runs what was recorded; abort_step drops it after an error.
  // A backend may also replay the previous step's recording when the new step issues the
  // same ops on the same buffers (only uploaded values differ): then the ops between
  // begin_step and end_step do not run one by one, and when the step turns out to differ,
  // end_step runs nothing and returns false. The caller must then issue the step's ops again
  // (begin_step, ops, end_step), which runs them. Host state the step changes must therefore
  // change only after end_step returned true. No-ops by default: ops run as they are called.
  virtual void begin_step() {}
  virtual bool end_step() { return true; }
  virtual void abort_step() {}
  // The next decode step's pass over the ops, made while the step just launched runs, so that
  // the pass no longer stands between two steps on the device. begin_step_ahead starts it;
  // its ops run and upload nothing (what they would upload is kept aside), and its end_step
  // returns whether a recorded step matches it, which is then held. launch_ahead(tokens)
  // launches the held step with these token ids instead of those its embed was given (the
  // one value the pass could not know). It returns false, having done nothing, when no step
  // is held or an op has run since the pass (it may have replaced a buffer the pass saw);
  // any begin_step drops the held step. offers_steps_ahead says whether a pass can be made at
  // all (recorded steps are kept); false by default: nothing is offered.
  virtual bool offers_steps_ahead() const { return false; }
  virtual bool begin_step_ahead() { return false; }
  virtual bool launch_ahead(std::span<const int32_t> /*tokens*/) { return false; }
  // Copies `rows` rows of `n` floats between strided layouts (strides in floats).
  virtual void copy_rows(float* dst, size_t dst_stride, const float* src, size_t src_stride,
                         int64_t rows, int64_t n) = 0;

  // Row i of dst = row rows[i] of src, rows of `width` floats, for every i of `rows` (a host
  // array). The default copies them one by one.
  virtual void gather_rows(float* dst, const float* src, int64_t width,
                           std::span<const int32_t> rows) {
    for (size_t i = 0; i < rows.size(); ++i)
      copy_rows(dst + static_cast<int64_t>(i) * width, static_cast<size_t>(width),
                src + int64_t{rows[i]} * width, static_cast<size_t>(width), 1, width);
  }
  // Row t of out = the sum over j < m, in that order from zero, of weights[t * m + j] times
  // row rows[t * m + j] of src (rows of `width` floats; rows and weights are host arrays of
  // T * m), for t < T. How a mixture-of-experts block adds up its experts' outputs. The
  // default brings the rows to the host and back.
  virtual void weighted_row_sums(float* out, const float* src, int64_t width, int64_t T, int64_t m,
                                 std::span<const int32_t> rows, std::span<const float> weights);
  // Each expert's product over the rows routed to it: for every e < experts.size(), rows
  // [first[e], first[e + 1]) of x ([first.back(), cols]) times experts[e]^T into the same rows
  // of y ([first.back(), experts[e].rows]). The experts share type and shape; `first` is a host
  // array of experts.size() + 1 ascending offsets. The default runs matmul per expert that has
  // rows; a backend may run many experts in one pass (a prompt's MoE block reaches most of
  // them with a few rows each).
  virtual void matmul_experts(std::span<const Weight> experts, std::span<const int32_t> first,
                              const float* x, float* y);

  // Whether mixture-of-experts blocks may run here at all (a model with them loads elsewhere,
  // or fails to load, where not: BackendUnsupported).
  virtual bool runs_experts() const { return true; }
  // Mixture-of-experts decode steps on the backend alone, with no host wait, so that they can
  // be recorded (begin_step). Offered where offers_device_routing(E) says so for E experts a
  // stack; the defaults throw.
  //   moe_route: for each of T tokens, from its router logits [T, E], the n_used largest
  //     softmax probabilities renormalised to sum 1 (equal ones to the lower index, a NaN
  //     last), as ids [T, n_used] and weights [T, n_used] in backend memory.
  //   combined_weight: a weight for combine_experts, n matrices of experts' type and shape
  //     stacked by rows ([n * rows, cols]) or side by side ([rows, n * cols]). Made at load.
  //   combine_experts: fills `combined` with experts[ids[j]], j < n (ids in backend memory).
  //   scale_segments: x[j * width + i] *= weights[j] for j < n.
  //   add_sigmoid_gated: out[t, i] += sigmoid(gate[t]) * y[t, i] for t < T, i < n.
  virtual bool offers_device_routing(int64_t /*n_experts*/) const { return false; }
  virtual void moe_route(const float* logits, int64_t T, int64_t E, int64_t n_used, int32_t* ids,
                         float* weights);
  virtual Weight combined_weight(std::span<const Weight> experts, int64_t n, bool side_by_side);
  virtual void combine_experts(std::span<const Weight> experts, const int32_t* ids, int64_t n,
                               bool side_by_side, const Weight& combined);
  virtual void scale_segments(float* x, const float* weights, int64_t n, int64_t width);
  virtual void add_sigmoid_gated(float* out, const float* y, const float* gate, int64_t T,
                                 int64_t n);

  // out[t] = row tokens[t] of `table` (any weight type), for t < T.
  virtual void embed(const Weight& table, const int32_t* tokens, int64_t T, float* out) = 0;
  // y[T, w.rows] = x[T, w.cols] * w^T
  virtual void matmul(const Weight& w, const float* x, int64_t T, float* y) = 0;
  // matmul(*o.w, x, T, o.y) for every o of `outs` (matrices of equal cols that read the same
  // input, such as q/k/v or gate/up), which it makes by default; a backend may run them in
  // fewer launches. The outputs must not overlap x.
  virtual void matmul_same_input(std::span<const MatmulOut> outs, const float* x, int64_t T) {
    for (const MatmulOut& o : outs) matmul(*o.w, x, T, o.y);
  }
  // x += y, n elements.
  virtual void add(float* x, const float* y, size_t n) = 0;
  // RMSNorm over `rows` vectors of `n`: out = x * rsqrt(mean(x^2) + eps) * weight[n].
  // weight is a host float32 array of n (plugins fold in any +1 shift before).
  virtual void rms_norm(const float* x, size_t x_stride, float* out, size_t out_stride,
                        int64_t rows, int64_t n, const float* weight, float eps) = 0;
  // The residual add and the next pre-norm in one op: x += y, then out = rms_norm(x) as
  // above. x, y, out: [rows, n], contiguous. Same results as the two calls, which it makes by
  // default; backends fuse it to save a pass and a launch.
  virtual void add_rms_norm(float* x, const float* y, int64_t rows, int64_t n, const float* weight,
                            float eps, float* out) {
    add(x, y, static_cast<size_t>(rows * n));
    rms_norm(x, static_cast<size_t>(n), out, static_cast<size_t>(n), rows, n, weight, eps);
  }
  // NeoX rotary on the first rot_dims of each head: x is [T, n_heads, head_stride-spaced
  // heads] with row stride `token_stride`; token t is at position positions[t].
  virtual void rope_neox(float* x, size_t token_stride, int64_t T, int64_t n_heads,
                         size_t head_stride, int64_t rot_dims, const int32_t* positions,
                         double theta) = 0;
  // The per-head query and key preparation of gated attention, in one op. qg: [T, n_head]
  // heads spaced q_head_stride apart (q_head_stride * n_head per token), each head's first
  // head_dim values its query; k: [T, n_head_kv * head_dim]. Each query and key head is
  // RMS-normed over head_dim (q_weight, k_weight: host float32 arrays of head_dim), then
  // NeoX-rotated on its first rot_dims at its token's position; keys stay in place, queries
  // go to q_out [T, n_head * head_dim], and qg's query values are left unspecified (its other
  // values, the gates, untouched). Same results as rms_norm, rope_neox and copy_rows, which
  // it makes by default; a backend may do it in one pass.
  virtual void qk_norm_rope(float* qg, size_t q_head_stride, int64_t n_head, float* k,
                            int64_t n_head_kv, int64_t T, int64_t head_dim, const float* q_weight,
                            float q_eps, const float* k_weight, float k_eps, int64_t rot_dims,
                            const int32_t* positions, double theta, float* q_out) {
    const auto q_stride = static_cast<size_t>(head_dim);
    rms_norm(qg, q_head_stride, qg, q_head_stride, T * n_head, head_dim, q_weight, q_eps);
    rms_norm(k, q_stride, k, q_stride, T * n_head_kv, head_dim, k_weight, k_eps);
    rope_neox(qg, q_head_stride * static_cast<size_t>(n_head), T, n_head, q_head_stride, rot_dims,
              positions, theta);
    rope_neox(k, q_stride * static_cast<size_t>(n_head_kv), T, n_head_kv, q_stride, rot_dims,
              positions, theta);
    copy_rows(q_out, q_stride, qg, q_head_stride, T * n_head, head_dim);
  }
  // Paged KV (see hostlm/kv_cache.h). Stores the new tokens' keys and values, k and v
  // [rows, n_head_kv * head_dim] float32 with the rows of every sequence in `seqs`, into each
  // sequence's pages at positions n_past .. n_past + T - 1, converted to the page type.
  virtual void kv_store(std::span<const PagedSequence> seqs, const float* k, const float* v) = 0;
  // qk_norm_rope, then kv_store(seqs, k, v) of its keys and the values v, which is what the
  // default does. One call so that a backend can store each key as it makes it.
  virtual void qk_norm_rope_store(std::span<const PagedSequence> seqs, float* qg,
                                  size_t q_head_stride, int64_t n_head, float* k, const float* v,
                                  int64_t n_head_kv, int64_t T, int64_t head_dim,
                                  const float* q_weight, float q_eps, const float* k_weight,
                                  float k_eps, int64_t rot_dims, const int32_t* positions,
                                  double theta, float* q_out) {
    qk_norm_rope(qg, q_head_stride, n_head, k, n_head_kv, T, head_dim, q_weight, q_eps, k_weight,
                 k_eps, rot_dims, positions, theta, q_out);
    kv_store(seqs, k, v);
  }
  // Causal attention of each sequence's T new queries over its n_past + T cached tokens
  // (query t sees positions 0 .. n_past + t), read through its page table.
  // q: [rows, n_head * head_dim] with row stride q_stride; out: [rows, n_head * head_dim].
  // Grouped-query: head h reads kv head h / (n_head / n_head_kv).
  virtual void paged_attention(std::span<const PagedSequence> seqs, const float* q, size_t q_stride,
                               int64_t n_head, float scale, float* out) = 0;
  // x[t, i] *= sigmoid(gate[t * gate_stride + i]) for i < n.
  virtual void mul_sigmoid(float* x, const float* gate, size_t gate_stride, int64_t T,
                           int64_t n) = 0;
  // out = silu(gate) * up, n elements.
  virtual void swiglu(const float* gate, const float* up, float* out, size_t n) = 0;

  // Causal depthwise conv1d + SiLU over T tokens of `channels` features, kernel K.
  // conv_state holds the previous K-1 raw inputs ([K-1, channels], oldest first) and is
  // updated to the last K-1 inputs. weight: host float32 [channels, K] (tap K-1 = current).
  virtual void conv1d_silu(const float* x, int64_t T, int64_t channels, int64_t K,
                           const float* weight, float* conv_state, float* out) = 0;

  // Gated delta rule (linear attention) over T tokens, recurrent state updated in place.
  // qkv: [T, 2*n_k_heads*dk + n_v_heads*dv] (q | k | v after conv); value head j reads
  // key head j % n_k_heads (tiled order). alpha, beta_raw: [T, n_v_heads] projections.
  // a_neg: [n_v_heads] = -exp(A_log); dt_bias: [n_v_heads]. state: [n_v_heads, dv, dk].
  // out: [T, n_v_heads * dv] = o before the gated norm.
  // state: the element type the recurrent state is stored in. F32 is the model's own
  // (Qwen3.5's config says mamba_ssm_dtype float32); F16 or BF16 halve the state's memory and
  // its traffic, which at many sequences a step is the largest after the weights (as vLLM's
  // and SGLang's 16-bit state caches). The arithmetic stays float32 either way; the state
  // pointer then holds [n_v_heads, dv, dk] 16-bit values (delta_state_floats of storage).
  struct DeltaRuleShape {
    int64_t n_k_heads, n_v_heads, dk, dv;
    DType state = DType::F32;
    int64_t state_values() const { return n_v_heads * dv * dk; }
    // Floats of memory one sequence's state takes (16-bit values two to a float).
    int64_t state_floats() const {
      return state == DType::F32 ? state_values() : (state_values() + 1) / 2;
    }
  };
  virtual void gated_delta_rule(const float* qkv, const float* alpha, const float* beta_raw,
                                const float* a_neg, const float* dt_bias, int64_t T,
                                const DeltaRuleShape& shape, float* state, float* out) = 0;
  // The two ops above for several sequences at once: rows [row, row + T) of x / qkv, alpha,
  // beta_raw and out belong to seqs[i], whose states are updated. Same results as calling
  // the single-sequence ops per sequence (the default does exactly that); backends override
  // them to run every sequence of a decode step in one pass.
  virtual void conv1d_silu_seqs(std::span<const SequenceSlice> seqs, const float* x,
                                int64_t channels, int64_t K, const float* weight, float* out) {
    for (const SequenceSlice& sl : seqs)
      conv1d_silu(x + sl.row * channels, sl.T, channels, K, weight, sl.conv_state,
                  out + sl.row * channels);
  }
  // A delta-rule layer's input projections and their convolution: matmul_same_input(outs, x,
  // T), then conv1d_silu_seqs(seqs, outs[0].y, channels, K, weight, conv_out), which is what
  // the default does. One call so that a backend can convolve the first product's rows as it
  // writes them; outs[0].y then holds nothing useful afterwards (read conv_out).
  virtual void matmul_same_input_conv1d(std::span<const MatmulOut> outs, const float* x, int64_t T,
                                        std::span<const SequenceSlice> seqs, int64_t channels,
                                        int64_t K, const float* weight, float* conv_out) {
    matmul_same_input(outs, x, T);
    conv1d_silu_seqs(seqs, outs[0].y, channels, K, weight, conv_out);
  }
  // An MLP's gate and up products and their SwiGLU: matmul_same_input({{&w_gate, gate},
  // {&w_up, up}}, x, T), then swiglu(gate, up, gate, T * w_gate.rows), which is what the
  // default does. One call so that a backend can take the SwiGLU where each row's two sums
  // meet; gate then holds the result and up nothing useful.
  virtual void matmul_swiglu(const Weight& w_gate, const Weight& w_up, const float* x, int64_t T,
                             float* gate, float* up) {
    const MatmulOut gate_up[] = {{&w_gate, gate}, {&w_up, up}};
    matmul_same_input(gate_up, x, T);
    swiglu(gate, up, gate, static_cast<size_t>(T * w_gate.rows));
  }
  virtual void gated_delta_rule_seqs(std::span<const SequenceSlice> seqs, const float* qkv,
                                     const float* alpha, const float* beta_raw, const float* a_neg,
                                     const float* dt_bias, const DeltaRuleShape& shape,
                                     float* out) {
    const int64_t row = 2 * shape.n_k_heads * shape.dk + shape.n_v_heads * shape.dv;
    for (const SequenceSlice& sl : seqs)
      gated_delta_rule(qkv + sl.row * row, alpha + sl.row * shape.n_v_heads,
                       beta_raw + sl.row * shape.n_v_heads, a_neg, dt_bias, sl.T, shape,
                       sl.recurrent_state, out + sl.row * shape.n_v_heads * shape.dv);
  }
  // Per value head: out = rms_norm(x) * weight[dv] * silu(z). x, z, out: [rows, dv].
  virtual void gated_rms_norm(const float* x, const float* z, const float* weight, int64_t rows,
                              int64_t dv, float eps, float* out) = 0;
  // A delta-rule layer's core: gated_delta_rule_seqs into out ([T, n_v_heads * dv], every
  // sequence's rows within T), then gated_rms_norm of out with gate z (laid out like out) in
  // place, which is what the default does. One call so that a backend can normalise each
  // head where the rule produced it.
  virtual void gated_delta_rule_norm_seqs(std::span<const SequenceSlice> seqs, const float* qkv,
                                          const float* alpha, const float* beta_raw,
                                          const float* a_neg, const float* dt_bias,
                                          const DeltaRuleShape& shape, const float* z,
                                          const float* norm_weight, float eps, int64_t T,
                                          float* out) {
    gated_delta_rule_seqs(seqs, qkv, alpha, beta_raw, a_neg, dt_bias, shape, out);
    gated_rms_norm(out, z, norm_weight, T * shape.n_v_heads, shape.dv, eps, out);
  }
};

// "cpu" always; "cuda" when libhostlm_cuda.so (built when nvcc was found) loads and a GPU
// is present, else a hostlm::Error saying why; "auto" (or "") picks cuda when it can, else cpu.
std::unique_ptr<Backend> create_backend(const std::string& name);

}  // namespace hostlm
