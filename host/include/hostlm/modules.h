// Shared building blocks of transformer-style models, composed from Backend ops.
// An architecture plugin declares which tensors feed which module and in what order the
// modules run; the arithmetic lives here (and in the backends), once for every family.
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "hostlm/ops.h"

namespace hostlm::modules {

// Activation scratch for one forward call of up to max_tokens tokens: buffer i holds
// max_tokens x widths[i] floats, made once at load so evaluation allocates nothing. The
// modules below use four (each says which for what); scratch_widths gives their widths.
class Scratch {
 public:
  Scratch(Backend& backend, int64_t max_tokens, std::vector<int64_t> widths);
  float* get(int index) { return buffers_[index]->data(); }
  int64_t max_tokens() const { return max_tokens_; }
  int64_t width(int index) const { return widths_[static_cast<size_t>(index)]; }
  // Floats in all buffers together.
  int64_t floats() const;

 private:
  std::vector<std::unique_ptr<Buffer>> buffers_;
  int64_t max_tokens_;
  std::vector<int64_t> widths_;
};

// The widths (floats per token) of the four scratch buffers that GatedAttention,
// GatedDeltaNet and SwigluMlp of these sizes need: for each buffer the widest use.
struct ScratchNeeds {
  int64_t n_head, n_head_kv, head_dim;          // attention (query rows include their gates)
  int64_t conv_channels, value_dim, n_v_heads;  // Gated DeltaNet
  int64_t ffn;                                  // MLP
};
std::vector<int64_t> scratch_widths(const ScratchNeeds& n);

// RMSNorm with a float32 weight held on the host (any +1 shift already folded in).
struct RmsNorm {
  std::vector<float> weight;
  float eps = 1e-6f;
  void forward(Backend& be, const float* x, float* out, int64_t rows) const {
    be.rms_norm(x, weight.size(), out, weight.size(), rows, static_cast<int64_t>(weight.size()),
                weight.data(), eps);
  }
};

// Linear layers read and update each sequence's recurrent state through SequenceSlice
// (ops.h); attention layers take PagedSequence for its KV pages.
using hostlm::SequenceSlice;

// Multi-head attention with grouped KV heads, per-head q/k RMSNorm, partial NeoX rotary
// and, when gated, a per-head sigmoid output gate interleaved with the query projection
// (q_proj rows per head: [query(head_dim) | gate(head_dim)]).
struct GatedAttention {
  int64_t n_head = 0, n_head_kv = 0, head_dim = 0, rot_dims = 0;
  double rope_theta = 10000.0;
  bool output_gate = true;
  Weight wq, wk, wv, wo;
  RmsNorm q_norm, k_norm;

  // x: [T, hidden] rows of several sequences; positions of the T rows. Projections run once
  // over all rows; the new keys and values go into each sequence's pages, and attention reads
  // each sequence's own pages.
  void forward(Backend& be, Scratch& s, const float* x, int64_t T, const int32_t* positions,
               std::span<const PagedSequence> seqs, float* out) const;
};

// Gated DeltaNet linear attention: causal conv1d + SiLU over [q|k|v], L2-normalised q/k,
// the gated delta rule over a [n_v_heads, dv, dk] state, a gated RMSNorm with silu(z).
// Value heads are in tiled order (value head j reads key head j % n_k_heads).
struct GatedDeltaNet {
  Backend::DeltaRuleShape shape{};
  int64_t conv_kernel = 4;
  Weight w_qkv, w_z, w_alpha, w_beta, w_out;
  std::vector<float> conv_weight;  // [channels, conv_kernel]
  std::vector<float> a_neg;        // -exp(A_log), [n_v_heads]
  std::vector<float> dt_bias;      // [n_v_heads]
  RmsNorm norm;                    // over dv, shared by heads (weight of dv)

  int64_t conv_channels() const {
    return 2 * shape.n_k_heads * shape.dk + shape.n_v_heads * shape.dv;
  }
  int64_t conv_state_size() const { return (conv_kernel - 1) * conv_channels(); }
  int64_t recurrent_state_size() const { return shape.state_floats(); }  // floats
  // x: [T, hidden] rows of several sequences; conv and delta rule per sequence.
  void forward(Backend& be, Scratch& s, const float* x, int64_t T,
               std::span<const SequenceSlice> slices, float* out) const;
};

// out = W_down (silu(W_gate x) * W_up x)
struct SwigluMlp {
  Weight w_gate, w_up, w_down;
  void forward(Backend& be, Scratch& s, const float* x, int64_t T, float* out) const;
};

struct MoeMlp;

// One token's experts: the n_used largest softmax probabilities of its router logits [E],
// renormalised to sum 1, in float32 as transformers computes them (equal probabilities to the
// lower index, a NaN last), into ids[n_used] and weights[n_used]. probs and order: room for E.
void route_experts(const float* logits, int64_t E, int64_t n_used, int32_t* ids, float* weights,
                   std::vector<float>& probs, std::vector<int32_t>& order);

// Working memory of the mixture-of-experts blocks of one model (they run one at a time):
// backend buffers for the router logits and shared-expert gate, the rows routed to experts and
// what the experts (and the shared expert) return, and host arrays for deciding the routes.
// Sized at load for up to max_tokens tokens. On a backend that routes on its own
// (Backend::offers_device_routing), prepare() adds what small decode steps use there: ids and
// weights, and one combined weight per expert matrix type and shape; and room for longer
// inputs' routes, picked there too and sent back instead of the logits.
class MoeScratch {
 public:
  MoeScratch(Backend& backend, int64_t max_tokens, int64_t hidden, int64_t expert_ffn,
             int64_t n_experts, int64_t n_used);
  int64_t max_tokens() const { return max_tokens_; }
  // For `block` (called at load for every block, before any forward).
  void prepare(Backend& backend, const MoeMlp& block);
  // Floats held on the backend and on the host together (the combined weights not included).
  int64_t floats() const;
  // Bytes of the combined weights.
  size_t combined_bytes() const { return combined_bytes_; }

 private:
  friend struct MoeMlp;
  // One per role (0 gate, 1 up, 2 down: gate and up are read together) and expert type.
  struct Combined {
    int role;
    DType type;
    int64_t rows, cols;
    Weight weight;
  };
  const Weight& combined_for(int role, const Weight& like) const;

  int64_t max_tokens_, hidden_, expert_ffn_, n_experts_, n_used_;
  // gate_logits_: the router's logits [T, n_experts], then the shared expert's gate [T].
  // expert_out_: [T * (n_used + 1), hidden], the routed rows' outputs then the shared expert's.
  // routed_gate_, routed_up_: the routed rows' gate and up products [T * n_used, expert_ffn].
  std::unique_ptr<Buffer> gate_logits_, routed_in_, expert_out_, routed_gate_, routed_up_;
  std::vector<float> host_gate_logits_;
  // Per routed row its token; per token and slot (expert, weight); per expert its first row;
  // per token the rows it sums and their weights (sum_rows_, sum_weights_: [T, n_used + 1]).
  std::vector<int32_t> row_token_, chosen_, order_, expert_rows_, next_row_, sum_rows_, filled_;
  std::vector<float> row_weight_, weights_, probs_, sum_weights_;
  // Routing on the backend: ids and weights [kDeviceTokens, n_used], the combined experts'
  // SwiGLU [n_used * widest expert] and its up half.
  std::unique_ptr<Buffer> device_ids_, device_weights_, combined_h_, combined_up_;
  // Routes picked on the backend for the host-routed path: ids [T, n_used] (int32 in float
  // slots), weights [T, n_used], the shared expert's gate logits [T]; and their host copy.
  std::unique_ptr<Buffer> routes_;
  std::vector<float> host_routes_;
  std::vector<Combined> combined_;
  size_t combined_bytes_ = 0;
  int64_t widest_expert_ = 0;
};

// A mixture-of-experts feed-forward block (Qwen3.5-MoE, spec 2.8): a softmax over the router's
// logits, the n_used largest renormalised to sum 1, each token's chosen experts (SwiGLU)
// weighted by them and summed, plus an always-on shared expert scaled by
// sigmoid(shared_gate . x).
//
// Two ways to run it. Routed on the host (any backend, any T): the router logits come back
// with download (one wait a block; where the backend routes on its own, its routes come back
// instead: T * n_used pairs rather than T * E logits, and no softmax on the host, which took
// about 1 ms a block of 512 tokens there), the backend gathers each expert's rows (gather_rows),
// every chosen expert runs once over all of its rows (matmul_experts: gate, up, then down, a
// SwiGLU over all rows between), and weighted_row_sums adds each token's
// outputs up in expert order, the shared expert last. Routed on the backend (decode steps of
// up to kDeviceTokens tokens where the backend offers it): moe_route picks the experts there,
// combine_experts copies each token's chosen matrices into one gate, one up (stacked by rows)
// and one down matrix (side by side), so that one SwiGLU product and one down product over the
// weight-scaled SwiGLU give the weighted sum; nothing waits, so those steps can be recorded.
struct MoeMlp {
  static constexpr int64_t kDeviceTokens = 4;
  Weight router;                          // [E, H]
  std::vector<Weight> gates, ups, downs;  // E of each: [F, H], [F, H], [H, F]
  int64_t n_used = 0;                     // k
  bool has_shared = false;
  SwigluMlp shared;
  Weight shared_gate;  // [1, H]
  // Whether a forward of T tokens on `be` runs without a host wait (see above).
  bool routes_on_backend(const Backend& be, int64_t T) const {
    return T <= kDeviceTokens && be.offers_device_routing(router.rows);
  }
  void forward(Backend& be, Scratch& s, MoeScratch& m, const float* x, int64_t T, float* out) const;

 private:
  float* router_products(Backend& be, MoeScratch& m, const float* x, int64_t T) const;
  void forward_host_routed(Backend& be, Scratch& s, MoeScratch& m, const float* x, int64_t T,
                           float* out) const;
  void forward_backend_routed(Backend& be, Scratch& s, MoeScratch& m, const float* x, int64_t T,
                              float* out) const;
};

}  // namespace hostlm::modules
