#include "qwen35_config.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>

#include "hostlm/error.h"
#include "hostlm/gguf.h"

namespace hostlm::qwen35 {
namespace {

// Upper bounds far above any real checkpoint (the 397B model has 60 layers, a 248K vocabulary
// and a 4096 hidden size) that keep every product of two sizes well inside int64 and stop a
// corrupt file from asking for a per-layer table of 2^60 entries.
constexpr int64_t kMaxLayers = 4096;
constexpr int64_t kMaxVocab = int64_t{1} << 24;
constexpr int64_t kMaxWidth = int64_t{1} << 20;  // hidden and feed-forward sizes
constexpr int64_t kMaxHeads = int64_t{1} << 12;
constexpr int64_t kMaxHeadDim = int64_t{1} << 12;
constexpr int64_t kMaxConvKernel = 64;
constexpr int64_t kMaxExperts = int64_t{1} << 12;

void check_size(const std::string& where, const char* what, int64_t v, int64_t max) {
  if (v <= 0)
    throw Error(where + ": " + what + " must be positive (got " + std::to_string(v) + ")");
  if (v > max)
    throw Error(where + ": " + what + " " + std::to_string(v) + " is beyond the supported " +
                std::to_string(max));
}

void validate(const Config& c, const std::string& where) {
  check_size(where, "vocabulary size", c.n_vocab, kMaxVocab);
  check_size(where, "hidden size", c.hidden, kMaxWidth);
  if (c.moe()) {
    check_size(where, "expert count", c.n_experts, kMaxExperts);
    check_size(where, "experts used per token", c.n_experts_used, c.n_experts);
    check_size(where, "expert feed-forward size", c.expert_ffn, kMaxWidth);
    if (c.shared_ffn < 0 || c.shared_ffn > kMaxWidth)
      throw Error(where + ": shared expert feed-forward size " + std::to_string(c.shared_ffn) +
                  " is out of range");
  } else {
    check_size(where, "feed-forward size", c.ffn, kMaxWidth);
  }
  check_size(where, "layer count", c.n_layers, kMaxLayers);
  check_size(where, "attention heads", c.n_head, kMaxHeads);
  check_size(where, "key-value heads", c.n_head_kv, kMaxHeads);
  check_size(where, "head dim", c.head_dim, kMaxHeadDim);
  check_size(where, "linear key heads", c.n_k_heads, kMaxHeads);
  check_size(where, "linear value heads", c.n_v_heads, kMaxHeads);
  check_size(where, "linear key head dim", c.dk, kMaxHeadDim);
  check_size(where, "linear value head dim", c.dv, kMaxHeadDim);
  check_size(where, "conv kernel", c.conv_kernel, kMaxConvKernel);
  if (c.n_head % c.n_head_kv != 0)
    throw Error(where + ": attention heads (" + std::to_string(c.n_head) +
                ") are not a multiple of key-value heads (" + std::to_string(c.n_head_kv) + ")");
  if (c.n_v_heads % c.n_k_heads != 0)
    throw Error(where + ": linear value heads are not a multiple of linear key heads");
  if (c.rot_dims <= 0 || c.rot_dims > c.head_dim || c.rot_dims % 2 != 0)
    throw Error(where + ": rotary dims " + std::to_string(c.rot_dims) +
                " must be even and within the head dim " + std::to_string(c.head_dim));
  if (static_cast<int64_t>(c.full_attention.size()) != c.n_layers)
    throw Error(where + ": layer types list has the wrong length");
  if (!(c.eps > 0.0f && c.eps < 1.0f))
    throw Error(where + ": rms norm epsilon " + std::to_string(c.eps) + " is not in (0, 1)");
  if (!(std::isfinite(c.rope_theta) && c.rope_theta > 0.0))
    throw Error(where + ": rope theta must be a positive finite number");
  if (c.n_ctx_train <= 0) throw Error(where + ": training context length must be positive");
}

std::vector<bool> pattern_from_interval(int64_t n_layers, int64_t interval) {
  std::vector<bool> full(static_cast<size_t>(n_layers));
  for (int64_t i = 0; i < n_layers; ++i) full[i] = (i + 1) % interval == 0;
  return full;
}

}  // namespace

int64_t Config::widest_ffn() const { return std::max({ffn, expert_ffn, shared_ffn}); }

bool Config::layer_types_regular() const {
  return full_attention == pattern_from_interval(n_layers, full_attention_interval);
}

Config config_from_gguf(const GgufFile& g) {
  const std::string where = g.path().string();
  // Both architectures spell their keys with their own prefix.
  const std::optional<std::string> arch = g.get_string("general.architecture");
  const bool moe = arch && *arch == "qwen35moe";
  const std::string prefix = moe ? "qwen35moe." : "qwen35.";
  auto key = [&](const char* k) { return prefix + k; };
  auto need_int = [&](const std::string& k) {
    auto v = g.get_int(k);
    if (!v) throw Error(where + ": missing metadata key '" + k + "'");
    return *v;
  };
  // Sizes that later ones are derived from are checked before they are used.
  auto need_size = [&](const char* k, int64_t max) {
    const int64_t v = need_int(key(k));
    check_size(where, key(k).c_str(), v, max);
    return v;
  };
  Config c;
  c.hidden = need_size("embedding_length", kMaxWidth);
  const int64_t blocks = need_size("block_count", kMaxLayers);
  c.n_nextn = g.get_int(key("nextn_predict_layers")).value_or(0);
  if (c.n_nextn < 0 || c.n_nextn >= blocks)
    throw Error(where + ": nextn_predict_layers (" + std::to_string(c.n_nextn) +
                ") must leave at least one of the " + std::to_string(blocks) + " blocks");
  c.n_layers = blocks - c.n_nextn;
  if (moe) {
    c.n_experts = need_size("expert_count", kMaxExperts);
    c.n_experts_used = need_int(key("expert_used_count"));
    c.expert_ffn = need_int(key("expert_feed_forward_length"));
    // llama.cpp falls back to the dense width when the shared expert's is not written.
    c.shared_ffn = g.get_int(key("expert_shared_feed_forward_length"))
                       .value_or(g.get_int(key("feed_forward_length")).value_or(0));
  } else {
    c.ffn = need_int(key("feed_forward_length"));
  }
  c.n_head = need_size("attention.head_count", kMaxHeads);
  c.n_head_kv = need_int(key("attention.head_count_kv"));
  c.head_dim = g.get_int(key("attention.key_length")).value_or(c.hidden / c.n_head);
  const int64_t value_length = g.get_int(key("attention.value_length")).value_or(c.head_dim);
  if (value_length != c.head_dim)
    throw Error(where + ": attention key_length and value_length differ");
  auto eps = g.get_float(key("attention.layer_norm_rms_epsilon"));
  if (!eps)
    throw Error(where + ": missing metadata key '" + key("attention.layer_norm_rms_epsilon") + "'");
  if (!(*eps > 0.0 && *eps < 1.0))
    throw Error(where + ": attention.layer_norm_rms_epsilon must lie in (0, 1)");
  c.eps = static_cast<float>(*eps);
  c.rope_theta = g.get_float(key("rope.freq_base")).value_or(1e7);
  c.rot_dims = g.get_int(key("rope.dimension_count")).value_or(c.head_dim);
  if (auto s = g.get_int_array(key("rope.dimension_sections"))) c.mrope_sections = *s;
  c.conv_kernel = need_int(key("ssm.conv_kernel"));
  c.dk = need_int(key("ssm.state_size"));
  c.n_k_heads = need_int(key("ssm.group_count"));
  c.n_v_heads = need_size("ssm.time_step_rank", kMaxHeads);
  const int64_t inner = need_int(key("ssm.inner_size"));
  if (inner % c.n_v_heads != 0)
    throw Error(where + ": ssm.inner_size is not a multiple of ssm.time_step_rank");
  c.dv = inner / c.n_v_heads;
  if (c.dv != c.dk)
    throw Error(where + ": ssm.inner_size / ssm.time_step_rank (" + std::to_string(c.dv) +
                ") differs from ssm.state_size (" + std::to_string(c.dk) +
                "); GGUF files of this architecture need equal key and value head dims");
  c.n_ctx_train = g.get_int(key("context_length")).value_or(262144);
  c.full_attention_interval = g.get_int(key("full_attention_interval")).value_or(4);
  if (c.full_attention_interval <= 0)
    throw Error(where + ": full_attention_interval must be positive");
  if (const GgufValue* rec = g.find(key("attention.recurrent_layers"))) {
    // Per-layer flags, nonzero = recurrent; written as bools or integers.
    const GgufArray* arr = rec->as_array();
    if (!arr || static_cast<int64_t>(arr->elements.size()) < c.n_layers)
      throw Error(where + ": attention.recurrent_layers must be an array with one entry per layer");
    c.full_attention.resize(static_cast<size_t>(c.n_layers));
    for (int64_t i = 0; i < c.n_layers; ++i) {
      const GgufValue& e = arr->elements[static_cast<size_t>(i)];
      auto flag = e.as_bool()  ? e.as_bool()
                  : e.as_int() ? std::optional<bool>(*e.as_int() != 0)
                               : std::nullopt;
      if (!flag) throw Error(where + ": attention.recurrent_layers holds a non-integer entry");
      c.full_attention[i] = !*flag;
    }
  } else {
    c.full_attention = pattern_from_interval(c.n_layers, c.full_attention_interval);
  }
  auto tokens = g.find("tokenizer.ggml.tokens");
  c.n_vocab = 0;  // taken from token_embd by the loader when the tokenizer is absent
  if (tokens && tokens->as_array())
    c.n_vocab = static_cast<int64_t>(tokens->as_array()->elements.size());
  return c;
}

void validate_config(const Config& c, const std::string& where) { validate(c, where); }

Config config_from_hf(const nlohmann::json& root, const std::string& where) {
  if (!root.is_object()) throw Error(where + ": must hold a JSON object");
  const bool nested = root.contains("text_config");
  const nlohmann::json& t = nested ? root.at("text_config") : root;
  if (!t.is_object()) throw Error(where + ": 'text_config' must be an object");
  // A present key of the wrong JSON type is an error naming the key; null counts as absent,
  // as transformers' configs write it for unset options.
  auto present = [](const nlohmann::json& obj, const char* k) {
    return obj.contains(k) && !obj.at(k).is_null();
  };
  auto get_int = [&](const char* k, std::optional<int64_t> fallback = std::nullopt) -> int64_t {
    if (present(t, k)) {
      const nlohmann::json& v = t.at(k);
      if (!v.is_number_integer() || (v.is_number_unsigned() && v.get<uint64_t>() > INT64_MAX))
        throw Error(where + ": '" + k + "' must be an integer");
      return v.get<int64_t>();
    }
    if (fallback) return *fallback;
    throw Error(where + ": missing key '" + k + "'");
  };
  auto get_number = [&](const nlohmann::json& obj, const char* k, double fallback) -> double {
    if (!present(obj, k)) return fallback;
    const nlohmann::json& v = obj.at(k);
    if (!v.is_number() || !std::isfinite(v.get<double>()))
      throw Error(where + ": '" + k + "' must be a finite number");
    return v.get<double>();
  };
  Config c;
  c.n_vocab = get_int("vocab_size");
  c.hidden = get_int("hidden_size");
  // Qwen3_5Moe* configs (model_type qwen3_5_moe_text) have experts and no dense width.
  if (present(t, "num_experts") && t.at("num_experts") != 0) {
    c.n_experts = get_int("num_experts");
    c.n_experts_used = get_int("num_experts_per_tok");
    c.expert_ffn = get_int("moe_intermediate_size");
    c.shared_ffn = get_int("shared_expert_intermediate_size", 0);
    c.ffn = get_int("intermediate_size", 0);
  } else {
    c.ffn = get_int("intermediate_size");
  }
  c.n_layers = get_int("num_hidden_layers");
  check_size(where, "layer count", c.n_layers, kMaxLayers);
  c.n_head = get_int("num_attention_heads");
  c.n_head_kv = get_int("num_key_value_heads", c.n_head);
  c.head_dim = get_int("head_dim", c.n_head > 0 ? c.hidden / c.n_head : 0);
  c.n_k_heads = get_int("linear_num_key_heads");
  c.n_v_heads = get_int("linear_num_value_heads");
  c.dk = get_int("linear_key_head_dim");
  c.dv = get_int("linear_value_head_dim");
  c.conv_kernel = get_int("linear_conv_kernel_dim", 4);
  c.n_ctx_train = get_int("max_position_embeddings", 32768);
  const double eps = get_number(t, "rms_norm_eps", c.eps);
  if (!(eps > 0.0 && eps < 1.0)) throw Error(where + ": 'rms_norm_eps' must lie in (0, 1)");
  c.eps = static_cast<float>(eps);
  // transformers-5 keeps rope settings in rope_parameters; older files use rope_scaling and a
  // top-level rope_theta.
  const nlohmann::json* rope = nullptr;
  if (t.contains("rope_parameters") && t.at("rope_parameters").is_object())
    rope = &t.at("rope_parameters");
  else if (t.contains("rope_scaling") && t.at("rope_scaling").is_object())
    rope = &t.at("rope_scaling");
  double partial = get_number(t, "partial_rotary_factor", 0.25);
  if (rope) partial = get_number(*rope, "partial_rotary_factor", partial);
  if (!(partial > 0.0 && partial <= 1.0))
    throw Error(where + ": 'partial_rotary_factor' must lie in (0, 1]");
  c.rope_theta = get_number(t, "rope_theta", c.rope_theta);
  if (rope) c.rope_theta = get_number(*rope, "rope_theta", c.rope_theta);
  if (rope && present(*rope, "mrope_section")) {
    const nlohmann::json& sections = rope->at("mrope_section");
    if (!sections.is_array()) throw Error(where + ": 'mrope_section' must be a list of integers");
    for (const nlohmann::json& e : sections) {
      if (!e.is_number_integer() || (e.is_number_unsigned() && e.get<uint64_t>() > INT64_MAX))
        throw Error(where + ": 'mrope_section' must be a list of integers");
      c.mrope_sections.push_back(e.get<int64_t>());
    }
  }
  if (rope && present(*rope, "rope_type")) {
    if (!rope->at("rope_type").is_string()) throw Error(where + ": 'rope_type' must be a string");
    const std::string type = rope->at("rope_type").get<std::string>();
    if (type != "default" && type != "mrope")
      throw Error(where + ": rope_type '" + type + "' is not supported yet");
  }
  check_size(where, "head dim", c.head_dim, kMaxHeadDim);
  c.rot_dims = static_cast<int64_t>(static_cast<double>(c.head_dim) * partial);
  c.full_attention_interval = get_int("full_attention_interval", 4);
  if (t.contains("layer_types") && t.at("layer_types").is_array()) {
    // The list is authoritative even when it disagrees with full_attention_interval.
    const auto& lt = t.at("layer_types");
    if (static_cast<int64_t>(lt.size()) != c.n_layers)
      throw Error(where + ": layer_types has " + std::to_string(lt.size()) + " entries for " +
                  std::to_string(c.n_layers) + " layers");
    for (const auto& e : lt) {
      if (!e.is_string()) throw Error(where + ": 'layer_types' must be a list of strings");
      const std::string s = e.get<std::string>();
      if (s == "full_attention" || s == "attention")
        c.full_attention.push_back(true);
      else if (s == "linear_attention" || s == "mamba")
        c.full_attention.push_back(false);
      else
        throw Error(where + ": unknown layer type '" + s + "'");
    }
  } else {
    if (c.full_attention_interval <= 0)
      throw Error(where + ": full_attention_interval must be positive");
    c.full_attention = pattern_from_interval(c.n_layers, c.full_attention_interval);
  }
  const nlohmann::json* tie = root.contains("tie_word_embeddings") ? &root.at("tie_word_embeddings")
                              : t.contains("tie_word_embeddings")  ? &t.at("tie_word_embeddings")
                                                                   : nullptr;
  c.tied = tie && tie->is_boolean() && tie->get<bool>();
  validate(c, where);
  return c;
}

}  // namespace hostlm::qwen35
