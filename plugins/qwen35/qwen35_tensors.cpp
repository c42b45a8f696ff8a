#include "qwen35_tensors.h"

#include <cmath>
#include <cstring>
#include <functional>

#include "hostlm/dtype.h"
#include "hostlm/error.h"
#include "hostlm/safetensors.h"
#include "hostlm/tensor_convert.h"

namespace hostlm::qwen35 {
namespace {

std::string blk(int64_t i, const char* name) { return "blk." + std::to_string(i) + "." + name; }
std::string layer(int64_t i, const char* name) {
  return "layers." + std::to_string(i) + "." + name;
}

float element_as_f32(const TensorView& v, int64_t i) { return tensor_element_f32(v, i); }

// HF value head of GGUF (tiled) value head j': j' = s*Hk + g  <->  j = g*r + s.
int64_t hf_head_of_tiled(int64_t tiled, const Config& c) {
  const int64_t r = c.n_v_heads / c.n_k_heads;
  const int64_t g = tiled % c.n_k_heads, s = tiled / c.n_k_heads;
  return g * r + s;
}

TransformedTensor to_f32(const TensorView& src, std::vector<int64_t> shape,
                         const std::function<float(int64_t)>& value_at, int64_t n) {
  TransformedTensor out;
  out.storage.resize(static_cast<size_t>(n) * 4);
  auto* dst = reinterpret_cast<float*>(out.storage.data());
  for (int64_t i = 0; i < n; ++i) dst[i] = value_at(i);
  out.view =
      TensorView{src.name, DType::F32, std::move(shape), out.storage.data(), out.storage.size()};
  return out;
}

// Copies whole rows in tiled value-head order: rows [first, first + n_v_heads*head_rows).
TransformedTensor permute_rows(const TensorView& src, int64_t first, int64_t head_rows,
                               const Config& c) {
  const size_t row_bytes = src.nbytes / static_cast<size_t>(src.rows());
  TransformedTensor out;
  out.storage.assign(static_cast<const uint8_t*>(src.data),
                     static_cast<const uint8_t*>(src.data) + src.nbytes);
  const auto* in = static_cast<const uint8_t*>(src.data);
  for (int64_t jt = 0; jt < c.n_v_heads; ++jt) {
    const int64_t jh = hf_head_of_tiled(jt, c);
    std::memcpy(out.storage.data() + (first + jt * head_rows) * row_bytes,
                in + (first + jh * head_rows) * row_bytes, row_bytes * head_rows);
  }
  out.view = src;
  out.view.data = out.storage.data();
  return out;
}

TransformedTensor permute_cols(const TensorView& src, const Config& c) {
  const int64_t cols = src.cols(), rows = src.rows(), head = cols / c.n_v_heads;
  const size_t elem = src.nbytes / static_cast<size_t>(rows * cols);
  TransformedTensor out;
  out.storage.resize(src.nbytes);
  const auto* in = static_cast<const uint8_t*>(src.data);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t jt = 0; jt < c.n_v_heads; ++jt)
      std::memcpy(out.storage.data() + (r * cols + jt * head) * elem,
                  in + (r * cols + hf_head_of_tiled(jt, c) * head) * elem, head * elem);
  out.view = src;
  out.view.data = out.storage.data();
  return out;
}

// The router, the stacked experts and the shared expert with its gate (spec 3.5).
void append_moe_rules(std::vector<TensorRule>& rules, int64_t i, const Config& c) {
  using T = Transform;
  rules.push_back({blk(i, "ffn_gate_inp.weight"), layer(i, "mlp.gate.weight"), T::None, false});
  rules.push_back({blk(i, "ffn_gate_exps.weight"), layer(i, "mlp.experts"), T::StackGate, false});
  rules.push_back({blk(i, "ffn_up_exps.weight"), layer(i, "mlp.experts"), T::StackUp, false});
  rules.push_back({blk(i, "ffn_down_exps.weight"), layer(i, "mlp.experts"), T::StackDown, false});
  if (c.shared_ffn > 0) {
    rules.push_back({blk(i, "ffn_gate_inp_shexp.weight"), layer(i, "mlp.shared_expert_gate.weight"),
                     T::None, false});
    rules.push_back({blk(i, "ffn_gate_shexp.weight"),
                     layer(i, "mlp.shared_expert.gate_proj.weight"), T::None, false});
    rules.push_back({blk(i, "ffn_up_shexp.weight"), layer(i, "mlp.shared_expert.up_proj.weight"),
                     T::None, false});
    rules.push_back({blk(i, "ffn_down_shexp.weight"),
                     layer(i, "mlp.shared_expert.down_proj.weight"), T::None, false});
  }
}

// One projection of every expert as a [E, rows, cols] tensor of the experts' common type.
TransformedTensor stack_experts(const HfCheckpoint& hf, const std::string& base,
                                const TensorRule& rule, const Config& c) {
  const std::string folder = hf.folder().string();
  const bool down = rule.transform == Transform::StackDown;
  const int64_t rows = down ? c.hidden : c.expert_ffn, cols = down ? c.expert_ffn : c.hidden;
  TransformedTensor out;
  auto append = [&](const TensorView& src, int64_t first_row, const std::string& what) {
    if (out.view.data == nullptr && out.storage.empty()) out.view.type = src.type;
    if (src.type != out.view.type)
      throw Error(folder + ": tensor '" + what + "' has type " + std::string(dtype_name(src.type)) +
                  ", unlike the other experts");
    const auto row_bytes = dtype_bytes(src.type, cols);
    if (!row_bytes || src.cols() != cols)
      throw Error(folder + ": tensor '" + what + "' has rows of " + std::to_string(src.cols()) +
                  " values, expected " + std::to_string(cols));
    const auto* begin = static_cast<const uint8_t*>(src.data) + first_row * *row_bytes;
    out.storage.insert(out.storage.end(), begin, begin + rows * *row_bytes);
  };
  const char* proj = rule.transform == Transform::StackGate ? "gate_proj"
                     : rule.transform == Transform::StackUp ? "up_proj"
                                                            : "down_proj";
  // transformers' in-memory form: gate and up fused, each expert's gate rows first.
  const std::string fused_name = base + (down ? ".down_proj" : ".gate_up_proj");
  const TensorView* fused = hf.find(fused_name);
  if (fused == nullptr) fused = hf.find(fused_name + ".weight");
  if (fused != nullptr) {
    const int64_t per_expert = down ? rows : 2 * rows;
    if (fused->shape.size() != 3 || fused->shape[0] != c.n_experts ||
        fused->shape[1] != per_expert || fused->shape[2] != cols)
      throw Error(folder + ": tensor '" + fused_name + "' has an unexpected shape");
    const auto row_bytes = dtype_bytes(fused->type, cols);
    if (!row_bytes)
      throw Error(folder + ": tensor '" + fused_name + "' has rows of no whole block");
    const auto expert_bytes = *row_bytes * static_cast<size_t>(per_expert);
    for (int64_t e = 0; e < c.n_experts; ++e) {
      TensorView one = *fused;
      one.shape = {per_expert, cols};
      one.data = static_cast<const uint8_t*>(fused->data) + static_cast<size_t>(e) * expert_bytes;
      one.nbytes = expert_bytes;
      append(one, rule.transform == Transform::StackUp ? rows : 0, fused_name);
    }
  } else {
    for (int64_t e = 0; e < c.n_experts; ++e) {
      const std::string name = base + "." + std::to_string(e) + "." + proj + ".weight";
      const TensorView* src = hf.find(name);
      if (src == nullptr) throw Error(folder + ": tensor '" + name + "' is missing");
      if (src->rows() != rows)
        throw Error(folder + ": tensor '" + name + "' has " + std::to_string(src->rows()) +
                    " rows, expected " + std::to_string(rows));
      append(*src, 0, name);
    }
  }
  out.view.name = rule.gguf_name;
  out.view.shape = {c.n_experts, rows, cols};
  out.view.data = out.storage.data();
  out.view.nbytes = out.storage.size();
  return out;
}

}  // namespace

std::vector<TensorRule> tensor_rules(const Config& c) {
  using T = Transform;
  std::vector<TensorRule> rules = {
      {"token_embd.weight", "embed_tokens.weight", T::None, false},
      {"output_norm.weight", "norm.weight", T::NormPlusOne, false},
      {"output.weight", "lm_head.weight", T::None, true},
  };
  for (int64_t i = 0; i < c.n_layers; ++i) {
    rules.push_back(
        {blk(i, "attn_norm.weight"), layer(i, "input_layernorm.weight"), T::NormPlusOne, false});
    if (c.full_attention[i]) {
      rules.push_back(
          {blk(i, "attn_q.weight"), layer(i, "self_attn.q_proj.weight"), T::None, false});
      rules.push_back(
          {blk(i, "attn_k.weight"), layer(i, "self_attn.k_proj.weight"), T::None, false});
      rules.push_back(
          {blk(i, "attn_v.weight"), layer(i, "self_attn.v_proj.weight"), T::None, false});
      rules.push_back(
          {blk(i, "attn_output.weight"), layer(i, "self_attn.o_proj.weight"), T::None, false});
      rules.push_back({blk(i, "attn_q_norm.weight"), layer(i, "self_attn.q_norm.weight"),
                       T::NormPlusOne, false});
      rules.push_back({blk(i, "attn_k_norm.weight"), layer(i, "self_attn.k_norm.weight"),
                       T::NormPlusOne, false});
    } else {
      rules.push_back({blk(i, "attn_qkv.weight"), layer(i, "linear_attn.in_proj_qkv.weight"),
                       T::QkvPermuted, false});
      rules.push_back({blk(i, "attn_gate.weight"), layer(i, "linear_attn.in_proj_z.weight"),
                       T::RowsPermuted, false});
      rules.push_back({blk(i, "ssm_beta.weight"), layer(i, "linear_attn.in_proj_b.weight"),
                       T::RowsPermuted, false});
      rules.push_back({blk(i, "ssm_alpha.weight"), layer(i, "linear_attn.in_proj_a.weight"),
                       T::RowsPermuted, false});
      rules.push_back({blk(i, "ssm_conv1d.weight"), layer(i, "linear_attn.conv1d.weight"),
                       T::ConvPermuted, false});
      rules.push_back(
          {blk(i, "ssm_dt.bias"), layer(i, "linear_attn.dt_bias"), T::RowsPermutedF32, false});
      rules.push_back({blk(i, "ssm_a"), layer(i, "linear_attn.A_log"), T::NegExpPermuted, false});
      rules.push_back(
          {blk(i, "ssm_norm.weight"), layer(i, "linear_attn.norm.weight"), T::ToF32, false});
      rules.push_back({blk(i, "ssm_out.weight"), layer(i, "linear_attn.out_proj.weight"),
                       T::ColsPermuted, false});
    }
    rules.push_back({blk(i, "post_attention_norm.weight"),
                     layer(i, "post_attention_layernorm.weight"), T::NormPlusOne, false});
    if (c.moe()) {
      append_moe_rules(rules, i, c);
    } else {
      rules.push_back(
          {blk(i, "ffn_gate.weight"), layer(i, "mlp.gate_proj.weight"), T::None, false});
      rules.push_back({blk(i, "ffn_up.weight"), layer(i, "mlp.up_proj.weight"), T::None, false});
      rules.push_back(
          {blk(i, "ffn_down.weight"), layer(i, "mlp.down_proj.weight"), T::None, false});
    }
  }
  return rules;
}

std::string hf_prefix(const HfCheckpoint& hf) {
  for (const char* prefix : {"model.language_model.", "model."})
    if (hf.find(std::string(prefix) + "embed_tokens.weight")) return prefix;
  throw Error(hf.folder().string() +
              ": no embed_tokens.weight under model.language_model. or model.; is this a "
              "Qwen3.5 checkpoint?");
}

std::optional<TransformedTensor> transform_hf_tensor(const HfCheckpoint& hf,
                                                     const std::string& prefix,
                                                     const TensorRule& rule, const Config& c) {
  // lm_head sits outside the model prefix in every known checkpoint layout.
  const std::string name = rule.hf_name == "lm_head.weight" ? rule.hf_name : prefix + rule.hf_name;
  if (rule.transform == Transform::StackGate || rule.transform == Transform::StackUp ||
      rule.transform == Transform::StackDown)
    return stack_experts(hf, name, rule, c);
  const TensorView* src = hf.find(name);
  if (!src) {
    if (rule.optional) return std::nullopt;
    throw Error(hf.folder().string() + ": tensor '" + name + "' is missing");
  }
  const int64_t n = src->n_elements();
  const bool permute = c.n_v_heads != c.n_k_heads;
  auto f32 = [&](std::vector<int64_t> shape, const std::function<float(int64_t)>& f) {
    TransformedTensor t = to_f32(*src, std::move(shape), f, n);
    t.view.name = rule.gguf_name;
    return t;
  };
  TransformedTensor out;
  switch (rule.transform) {
    case Transform::None:
      out.view = *src;
      break;
    case Transform::NormPlusOne:
      out = f32(src->shape, [&](int64_t i) { return element_as_f32(*src, i) + 1.f; });
      break;
    case Transform::ToF32:
      out = f32(src->shape, [&](int64_t i) { return element_as_f32(*src, i); });
      break;
    case Transform::NegExpPermuted:
    case Transform::RowsPermutedF32: {
      if (n != c.n_v_heads)
        throw Error(hf.folder().string() + ": tensor '" + name + "' should have " +
                    std::to_string(c.n_v_heads) + " elements");
      const bool negexp = rule.transform == Transform::NegExpPermuted;
      out = f32(src->shape, [&](int64_t j) {
        const float v = element_as_f32(*src, permute ? hf_head_of_tiled(j, c) : j);
        return negexp ? -std::exp(v) : v;
      });
      break;
    }
    case Transform::RowsPermuted:
      if (src->rows() % c.n_v_heads != 0)
        throw Error(hf.folder().string() + ": tensor '" + name +
                    "' rows are not a multiple of the value heads");
      out = permute ? permute_rows(*src, 0, src->rows() / c.n_v_heads, c)
                    : TransformedTensor{*src, {}};
      break;
    case Transform::QkvPermuted:
      if (src->rows() != c.conv_channels())
        throw Error(hf.folder().string() + ": tensor '" + name + "' has " +
                    std::to_string(src->rows()) + " rows, expected " +
                    std::to_string(c.conv_channels()));
      out = permute ? permute_rows(*src, 2 * c.key_dim(), c.dv, c) : TransformedTensor{*src, {}};
      break;
    case Transform::ConvPermuted: {
      const int64_t channels = src->shape.empty() ? 0 : src->shape.front();
      const int64_t k = channels ? n / channels : 0;
      if (channels != c.conv_channels() || k != c.conv_kernel)
        throw Error(hf.folder().string() + ": tensor '" + name + "' has an unexpected shape");
      out = f32({channels, k}, [&](int64_t i) {
        int64_t ch = i / k;
        const int64_t tap = i % k;
        const int64_t vfirst = 2 * c.key_dim();
        if (permute && ch >= vfirst) {
          const int64_t jt = (ch - vfirst) / c.dv;
          ch = vfirst + hf_head_of_tiled(jt, c) * c.dv + (ch - vfirst) % c.dv;
        }
        return element_as_f32(*src, ch * k + tap);
      });
      break;
    }
    case Transform::StackGate:
    case Transform::StackUp:
    case Transform::StackDown:
      break;  // handled above
    case Transform::ColsPermuted:
      if (src->cols() != c.value_dim())
        throw Error(hf.folder().string() + ": tensor '" + name + "' has " +
                    std::to_string(src->cols()) + " columns, expected " +
                    std::to_string(c.value_dim()));
      out = permute ? permute_cols(*src, c) : TransformedTensor{*src, {}};
      break;
  }
  out.view.name = rule.gguf_name;
  return out;
}

}  // namespace hostlm::qwen35
