// llama.cpp's per-tensor type rules for the schemes hostlm writes, without an importance
// matrix. The facts, from src/llama-quant.cpp of the llama.cpp fork the project checks against:
// - Only tensors of two or more dimensions whose name ends in "weight" are re-encoded, never
//   the norms ("_norm.weight"), the conv kernels ("ssm_conv1d") or router gates.
// - output.weight, and token_embd.weight when the embeddings are tied (no output.weight),
//   get Q6_K unless the scheme's type is Q8_0 (Q8_0 when the rows are no whole number of
//   the scheme's blocks).
// - The value projections (attn_v, and the fused attn_qkv of the linear-attention layers,
//   counted together in file order) and ffn_down get more bits in some layers:
//   Q4_K_M/Q5_K_M use Q6_K where use_more_bits(i, n) (the first and last eighth of the
//   layers and every third in between); Q4_K_S uses Q5_K for the first four value
//   projections and the ffn_down of the first eighth of the layers; IQ4_XS uses Q5_K for
//   value projections when there are 4 or more query heads per KV head and for ffn_down in
//   the first eighth.
// - Models with experts: ffn_down's layer is the one its name says (blk.N), not a count of
//   the ffn_down tensors (each layer has the experts' and the shared expert's); with exactly
//   8 experts, value and key projections are Q8_0 and Q4_K_M/Q4_K_S/IQ4_XS give the attention
//   output projection Q5_K.
// - MXFP4_MOE: tensors with a third dimension above 1 (the stacked experts) MXFP4, every
//   other re-encoded tensor, the output head included, Q8_0.
// - A type whose block does not divide the row falls back: IQ4_XS -> IQ4_NL, Q4_K -> Q5_0,
//   Q5_K -> Q5_1, Q6_K -> Q8_0, and F16 if even that does not divide.
// Tensors are visited in llama.cpp's order (by layer number, then by name), which is what
// the value-projection counter depends on.
#include "quantize/type_choice.h"

#include <algorithm>
#include <cstdio>
#include <numeric>

#include "hostlm/error.h"

namespace hostlm::quantize {
namespace {

enum class Category {
  TokenEmbd,
  AttnQ,
  AttnV,
  AttnK,
  AttnQkv,
  AttnKvB,
  AttnOut,
  FfnUp,
  FfnGate,
  FfnDown,
  Output,
  Other
};

bool contains(const std::string& s, const char* part) { return s.find(part) != std::string::npos; }

Category category_of(const std::string& name) {
  if (name == "output.weight") return Category::Output;
  if (name == "token_embd.weight" || name == "per_layer_token_embd.weight")
    return Category::TokenEmbd;
  if (contains(name, "attn_qkv.weight")) return Category::AttnQkv;
  if (contains(name, "attn_kv_b.weight")) return Category::AttnKvB;
  if (contains(name, "attn_v.weight")) return Category::AttnV;
  if (contains(name, "attn_k.weight")) return Category::AttnK;
  if (contains(name, "attn_q.weight")) return Category::AttnQ;
  if (contains(name, "attn_output.weight")) return Category::AttnOut;
  if (contains(name, "ffn_up")) return Category::FfnUp;
  if (contains(name, "ffn_gate")) return Category::FfnGate;
  if (contains(name, "ffn_down")) return Category::FfnDown;
  return Category::Other;
}

bool is_value_like(Category c) {
  return c == Category::AttnV || c == Category::AttnQkv || c == Category::AttnKvB;
}

bool is_block_quantized(DType t) { return dtype_traits(t).block_size > 1; }

int n_dims(const std::vector<uint64_t>& ne) {
  int n = static_cast<int>(ne.size());
  while (n > 1 && ne[n - 1] == 1) --n;
  return n;
}

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

bool allows_quantization(const TensorDesc& t) {
  if (n_dims(t.ne) < 2) return false;
  const std::string& n = t.name;
  return ends_with(n, "weight") && !contains(n, "_norm.weight") &&
         !contains(n, "ffn_gate_inp.weight") && !contains(n, "ssm_conv1d") &&
         !contains(n, "shortconv.conv.weight") && n != "position_embd.weight" &&
         n != "token_types.weight" && !contains(n, "attn_rel_b.weight");
}

bool use_more_bits(int64_t i, int64_t n) {
  return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2;
}

int layer_of(const std::string& name) {
  int layer = -1;
  if (std::sscanf(name.c_str(), "blk.%d.", &layer) != 1) return -1;
  return layer;
}

struct State {
  int64_t n_value = 0, i_value = 0, i_ffn_down = 0;
  bool tied = true;
};

DType mixture_type(const TensorDesc& t, Category cat, DType type, QuantScheme scheme,
                   const ModelFacts& facts, State& st) {
  using S = QuantScheme;
  if (scheme == S::MXFP4_MOE) {
    // The output head (and tied embeddings) and every matrix but the stacked experts: Q8_0.
    const bool stacked = t.ne.size() >= 3 && t.ne[2] > 1;
    const bool head = cat == Category::Output || (st.tied && cat == Category::TokenEmbd);
    return stacked && !head ? DType::MXFP4 : DType::Q8_0;
  }
  if (cat == Category::Output || (st.tied && cat == Category::TokenEmbd)) {
    const int64_t nx = static_cast<int64_t>(t.ne[0]);
    if (nx % dtype_traits(type).block_size != 0) return DType::Q8_0;
    return type != DType::Q8_0 ? DType::Q6_K : type;
  }
  if (cat == Category::TokenEmbd) return type;
  if (is_value_like(cat)) {
    if (scheme == S::IQ4_XS && facts.n_gqa >= 4) {
      type = DType::Q5_K;
    } else if ((scheme == S::Q4_K_M || scheme == S::Q5_K_M) &&
               use_more_bits(st.i_value, st.n_value)) {
      type = DType::Q6_K;
    } else if (scheme == S::Q4_K_S && st.i_value < 4) {
      type = DType::Q5_K;
    }
    if (facts.n_expert == 8) type = DType::Q8_0;
    ++st.i_value;
    return type;
  }
  if (cat == Category::AttnK && facts.n_expert == 8) return DType::Q8_0;
  if (cat == Category::AttnOut && facts.n_expert == 8 &&
      (scheme == S::Q4_K_M || scheme == S::Q4_K_S || scheme == S::IQ4_XS))
    return DType::Q5_K;
  if (cat == Category::FfnDown) {
    const int64_t i = facts.n_expert > 1 ? layer_of(t.name) : st.i_ffn_down, n = facts.n_layer;
    if (scheme == S::Q4_K_M) {
      if (use_more_bits(i, n)) type = DType::Q6_K;
    } else if (i < n / 8 && scheme == S::IQ4_XS) {
      type = DType::Q5_K;
    } else if (scheme == S::Q5_K_M && use_more_bits(i, n)) {
      type = DType::Q6_K;
    } else if (scheme == S::Q4_K_S && i < n / 8) {
      type = DType::Q5_K;
    }
    ++st.i_ffn_down;
    return type;
  }
  return type;
}

DType fallback(const TensorDesc& t, DType type) {
  const int64_t ncols = static_cast<int64_t>(t.ne[0]);
  if (ncols % dtype_traits(type).block_size == 0) return type;
  DType alt;
  switch (type) {
    case DType::IQ4_XS:
      alt = DType::IQ4_NL;
      break;
    case DType::Q4_K:
      alt = DType::Q5_0;
      break;
    case DType::Q5_K:
      alt = DType::Q5_1;
      break;
    case DType::Q6_K:
      alt = DType::Q8_0;
      break;
    default:
      throw Error("tensor '" + t.name + "': rows of " + std::to_string(ncols) +
                  " values are no whole number of " + std::string(dtype_name(type)) +
                  " blocks, and that type has no fallback");
  }
  return ncols % dtype_traits(alt).block_size == 0 ? alt : DType::F16;
}

}  // namespace

DType scheme_base_type(QuantScheme scheme) {
  switch (scheme) {
    case QuantScheme::Q8_0:
      return DType::Q8_0;
    case QuantScheme::Q4_0:
      return DType::Q4_0;
    case QuantScheme::Q4_K_M:
    case QuantScheme::Q4_K_S:
      return DType::Q4_K;
    case QuantScheme::Q5_K_M:
      return DType::Q5_K;
    case QuantScheme::Q6_K:
      return DType::Q6_K;
    case QuantScheme::IQ4_XS:
      return DType::IQ4_XS;
    case QuantScheme::F16:
      return DType::F16;
    case QuantScheme::BF16:
      return DType::BF16;
    case QuantScheme::MXFP4_MOE:
      return DType::MXFP4;
  }
  return DType::F16;
}

uint32_t scheme_file_type(QuantScheme scheme) {
  switch (scheme) {
    case QuantScheme::F16:
      return 1;
    case QuantScheme::Q4_0:
      return 2;
    case QuantScheme::Q8_0:
      return 7;
    case QuantScheme::Q4_K_S:
      return 14;
    case QuantScheme::Q4_K_M:
      return 15;
    case QuantScheme::Q5_K_M:
      return 17;
    case QuantScheme::Q6_K:
      return 18;
    case QuantScheme::IQ4_XS:
      return 30;
    case QuantScheme::BF16:
      return 32;
    case QuantScheme::MXFP4_MOE:
      return 38;
  }
  return 0;
}

std::vector<DType> choose_types(const std::vector<TensorDesc>& tensors, const ModelFacts& facts,
                                QuantScheme scheme) {
  State st;
  for (const TensorDesc& t : tensors) {
    const Category c = category_of(t.name);
    if (is_value_like(c)) ++st.n_value;
    if (c == Category::Output) st.tied = false;
  }
  std::vector<size_t> order(tensors.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const int la = layer_of(tensors[a].name), lb = layer_of(tensors[b].name);
    if (la != lb) return la < lb;
    return tensors[a].name < tensors[b].name;
  });
  const DType base = scheme_base_type(scheme);
  std::vector<DType> out(tensors.size());
  for (size_t k : order) {
    const TensorDesc& t = tensors[k];
    if (!allows_quantization(t)) {
      out[k] = t.type;
      continue;
    }
    DType type = base;
    if (is_block_quantized(base)) {
      type = mixture_type(t, category_of(t.name), type, scheme, facts, st);
      type = fallback(t, type);
    }
    out[k] = type;
  }
  return out;
}

}  // namespace hostlm::quantize
