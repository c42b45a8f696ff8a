#include "hostlm/modules.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "hostlm/error.h"

namespace hostlm::modules {

Scratch::Scratch(Backend& backend, int64_t max_tokens, std::vector<int64_t> widths)
    : max_tokens_(max_tokens), widths_(std::move(widths)) {
  for (int64_t width : widths_)
    buffers_.push_back(backend.alloc(static_cast<size_t>(max_tokens * width)));
}

int64_t Scratch::floats() const {
  int64_t n = 0;
  for (int64_t width : widths_) n += max_tokens_ * width;
  return n;
}

std::vector<int64_t> scratch_widths(const ScratchNeeds& n) {
  const int64_t heads = n.n_head * n.head_dim, kv = n.n_head_kv * n.head_dim;
  return {
      std::max({2 * heads, n.conv_channels, n.ffn}),         // q + gates, qkv, gate
      std::max({heads, kv, n.conv_channels, n.ffn}),         // k then attention, conv, up
      std::max({heads, kv, n.value_dim + 2 * n.n_v_heads}),  // v then gates, z + a + b
      std::max(heads, n.value_dim),                          // queries, delta rule
  };
}

// Scratch use: 0 = q (+gate), 1 = k then the attention output, 2 = v,
// 3 = the normed, rotated queries.
void GatedAttention::forward(Backend& be, Scratch& s, const float* x, int64_t T,
                             const int32_t* positions, std::span<const PagedSequence> seqs,
                             float* out) const {
  const int64_t q_width = n_head * head_dim * (output_gate ? 2 : 1);
  const int64_t kv_width = n_head_kv * head_dim;
  if (s.width(1) < n_head * head_dim || s.width(2) < n_head * head_dim || s.width(0) < q_width ||
      s.width(1) < kv_width || s.width(2) < kv_width || s.width(3) < n_head * head_dim)
    throw Error("scratch too small for attention");
  float* qg = s.get(0);
  float* k = s.get(1);
  float* v = s.get(2);
  float* q = s.get(3);     // the normed, rotated queries, compacted
  float* attn = s.get(1);  // k is in the pages by then
  const MatmulOut qkv_outs[] = {{&wq, qg}, {&wk, k}, {&wv, v}};
  be.matmul_same_input(qkv_outs, x, T);
  // The query rows come interleaved with their gates.
  const size_t q_head_stride = static_cast<size_t>(output_gate ? 2 * head_dim : head_dim);
  // New keys and values go into the pages first: the queries then read them from there,
  // rounded to the page type exactly as later queries will, so chunking never changes a result.
  be.qk_norm_rope_store(seqs, qg, q_head_stride, n_head, k, v, n_head_kv, T, head_dim,
                        q_norm.weight.data(), q_norm.eps, k_norm.weight.data(), k_norm.eps,
                        rot_dims, positions, rope_theta, q);
  const int64_t q_width_compact = n_head * head_dim;
  const float scale = 1.f / std::sqrt(static_cast<float>(head_dim));
  be.paged_attention(seqs, q, static_cast<size_t>(q_width_compact), n_head, scale, attn);
  if (output_gate) {
    // Each head's gate is the second half of its rows in qg: read in place, one head a row
    // (a copy to compact them first was a graph node of its own in every attention layer).
    be.mul_sigmoid(attn, qg + head_dim, q_head_stride, T * n_head, head_dim);
  }
  be.matmul(wo, attn, T, out);
}

void GatedDeltaNet::forward(Backend& be, Scratch& s, const float* x, int64_t T,
                            std::span<const SequenceSlice> slices, float* out) const {
  const int64_t channels = conv_channels();
  const int64_t value_dim = shape.n_v_heads * shape.dv;
  float* qkv = s.get(0);
  float* conv = s.get(1);
  float* z = s.get(2);
  float* core = s.get(3);
  float* alpha = s.get(2) + T * value_dim;  // z uses the first T*value_dim floats
  float* beta = alpha + T * shape.n_v_heads;
  if (s.width(0) < channels || s.width(1) < channels ||
      s.width(2) < value_dim + 2 * shape.n_v_heads || s.width(3) < value_dim)
    throw Error("scratch too small for the delta rule");
  const MatmulOut in_outs[] = {{&w_qkv, qkv}, {&w_z, z}, {&w_alpha, alpha}, {&w_beta, beta}};
  be.matmul_same_input_conv1d(in_outs, x, T, slices, channels, conv_kernel, conv_weight.data(),
                              conv);
  be.gated_delta_rule_norm_seqs(slices, conv, alpha, beta, a_neg.data(), dt_bias.data(), shape, z,
                                norm.weight.data(), norm.eps, T, core);
  be.matmul(w_out, core, T, out);
}

void SwigluMlp::forward(Backend& be, Scratch& s, const float* x, int64_t T, float* out) const {
  if (s.width(0) < w_gate.rows || s.width(1) < w_up.rows)
    throw Error("scratch too small for the MLP");
  float* gate = s.get(0);
  float* up = s.get(1);
  be.matmul_swiglu(w_gate, w_up, x, T, gate, up);
  be.matmul(w_down, gate, T, out);
}

}  // namespace hostlm::modules
