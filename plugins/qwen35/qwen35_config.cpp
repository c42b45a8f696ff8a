#include "qwen35_config.h"

#include <cmath>

#include "hostlm/error.h"
#include "hostlm/gguf.h"

namespace hostlm::qwen35 {
namespace {

constexpr const char* kArch = "qwen35";

void check_positive(const std::string& where, const char* what, int64_t v) {
  if (v <= 0)
    throw Error(where + ": " + what + " must be positive (got " + std::to_string(v) + ")");
}

void validate(const Config& c, const std::string& where) {
  check_positive(where, "vocabulary size", c.n_vocab);
  check_positive(where, "hidden size", c.hidden);
  check_positive(where, "feed-forward size", c.ffn);
  check_positive(where, "layer count", c.n_layers);
  check_positive(where, "attention heads", c.n_head);
  check_positive(where, "key-value heads", c.n_head_kv);
  check_positive(where, "head dim", c.head_dim);
  check_positive(where, "linear key heads", c.n_k_heads);
  check_positive(where, "linear value heads", c.n_v_heads);
  check_positive(where, "linear key head dim", c.dk);
  check_positive(where, "linear value head dim", c.dv);
  check_positive(where, "conv kernel", c.conv_kernel);
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
}

std::vector<bool> pattern_from_interval(int64_t n_layers, int64_t interval) {
  std::vector<bool> full(static_cast<size_t>(n_layers));
  for (int64_t i = 0; i < n_layers; ++i) full[i] = (i + 1) % interval == 0;
  return full;
}

}  // namespace

bool Config::layer_types_regular() const {
  return full_attention == pattern_from_interval(n_layers, full_attention_interval);
}

Config config_from_gguf(const GgufFile& g) {
  const std::string where = g.path().string();
  auto key = [](const char* k) { return std::string(kArch) + "." + k; };
  auto need_int = [&](const std::string& k) {
    auto v = g.get_int(k);
    if (!v) throw Error(where + ": missing metadata key '" + k + "'");
    return *v;
  };
  Config c;
  c.hidden = need_int(key("embedding_length"));
  const int64_t blocks = need_int(key("block_count"));
  c.n_nextn = g.get_int(key("nextn_predict_layers")).value_or(0);
  c.n_layers = blocks - c.n_nextn;
  c.ffn = need_int(key("feed_forward_length"));
  c.n_head = need_int(key("attention.head_count"));
  c.n_head_kv = need_int(key("attention.head_count_kv"));
  c.head_dim = g.get_int(key("attention.key_length")).value_or(c.hidden / c.n_head);
  const int64_t value_length = g.get_int(key("attention.value_length")).value_or(c.head_dim);
  if (value_length != c.head_dim)
    throw Error(where + ": attention key_length and value_length differ");
  auto eps = g.get_float(key("attention.layer_norm_rms_epsilon"));
  if (!eps)
    throw Error(where + ": missing metadata key '" + key("attention.layer_norm_rms_epsilon") + "'");
  c.eps = static_cast<float>(*eps);
  c.rope_theta = g.get_float(key("rope.freq_base")).value_or(1e7);
  c.rot_dims = g.get_int(key("rope.dimension_count")).value_or(c.head_dim);
  if (auto s = g.get_int_array(key("rope.dimension_sections"))) c.mrope_sections = *s;
  c.conv_kernel = need_int(key("ssm.conv_kernel"));
  c.dk = need_int(key("ssm.state_size"));
  c.n_k_heads = need_int(key("ssm.group_count"));
  c.n_v_heads = need_int(key("ssm.time_step_rank"));
  const int64_t inner = need_int(key("ssm.inner_size"));
  if (c.n_v_heads <= 0 || inner % c.n_v_heads != 0)
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
  const nlohmann::json& t = root.contains("text_config") ? root.at("text_config") : root;
  auto get_int = [&](const char* k, std::optional<int64_t> fallback = std::nullopt) -> int64_t {
    if (t.contains(k) && !t.at(k).is_null()) {
      if (!t.at(k).is_number_integer()) throw Error(where + ": '" + k + "' must be an integer");
      return t.at(k).get<int64_t>();
    }
    if (fallback) return *fallback;
    throw Error(where + ": missing key '" + k + "'");
  };
  Config c;
  c.n_vocab = get_int("vocab_size");
  c.hidden = get_int("hidden_size");
  c.ffn = get_int("intermediate_size");
  c.n_layers = get_int("num_hidden_layers");
  c.n_head = get_int("num_attention_heads");
  c.n_head_kv = get_int("num_key_value_heads", c.n_head);
  c.head_dim = get_int("head_dim", c.n_head > 0 ? c.hidden / c.n_head : 0);
  c.n_k_heads = get_int("linear_num_key_heads");
  c.n_v_heads = get_int("linear_num_value_heads");
  c.dk = get_int("linear_key_head_dim");
  c.dv = get_int("linear_value_head_dim");
  c.conv_kernel = get_int("linear_conv_kernel_dim", 4);
  c.n_ctx_train = get_int("max_position_embeddings", 32768);
  if (t.contains("rms_norm_eps")) c.eps = t.at("rms_norm_eps").get<float>();
  // transformers-5 keeps rope settings in rope_parameters; older files use rope_scaling and a
  // top-level rope_theta.
  const nlohmann::json* rope = nullptr;
  if (t.contains("rope_parameters") && t.at("rope_parameters").is_object())
    rope = &t.at("rope_parameters");
  else if (t.contains("rope_scaling") && t.at("rope_scaling").is_object())
    rope = &t.at("rope_scaling");
  double partial = 0.25;
  if (t.contains("partial_rotary_factor")) partial = t.at("partial_rotary_factor").get<double>();
  if (rope && rope->contains("partial_rotary_factor"))
    partial = rope->at("partial_rotary_factor").get<double>();
  if (t.contains("rope_theta")) c.rope_theta = t.at("rope_theta").get<double>();
  if (rope && rope->contains("rope_theta")) c.rope_theta = rope->at("rope_theta").get<double>();
  if (rope && rope->contains("mrope_section"))
    c.mrope_sections = rope->at("mrope_section").get<std::vector<int64_t>>();
  if (rope && rope->contains("rope_type")) {
    const std::string type = rope->at("rope_type").get<std::string>();
    if (type != "default" && type != "mrope")
      throw Error(where + ": rope_type '" + type + "' is not supported yet");
  }
  c.rot_dims = static_cast<int64_t>(static_cast<double>(c.head_dim) * partial);
  c.full_attention_interval = get_int("full_attention_interval", 4);
  if (t.contains("layer_types") && t.at("layer_types").is_array()) {
    // The list is authoritative even when it disagrees with full_attention_interval.
    const auto& lt = t.at("layer_types");
    if (static_cast<int64_t>(lt.size()) != c.n_layers)
      throw Error(where + ": layer_types has " + std::to_string(lt.size()) + " entries for " +
                  std::to_string(c.n_layers) + " layers");
    for (const auto& e : lt) {
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
