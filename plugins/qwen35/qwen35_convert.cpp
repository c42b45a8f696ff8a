#include "qwen35_convert.h"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "hostlm/error.h"
#include "hostlm/gguf.h"
#include "hostlm/safetensors.h"
#include "hostlm/tensor_convert.h"
#include "hostlm/tokenizer.h"
#include "qwen35_tensors.h"

namespace hostlm::qwen35 {
namespace {

// llama.cpp keeps these in F32 whatever the file type: 1-D tensors, norms, the conv
// kernel, the expert gates, and tensors whose name does not end in ".weight".
bool stays_f32(const TensorView& v) {
  const std::string& n = v.name;
  const bool ends_weight = n.size() >= 7 && n.compare(n.size() - 7, 7, ".weight") == 0;
  return v.shape.size() <= 1 || !ends_weight || n.find("_norm.weight") != std::string::npos ||
         n.find("ssm_conv1d") != std::string::npos ||
         n.find("ffn_gate_inp") != std::string::npos;  // the router and the shared expert's gate
}

uint32_t llama_file_type(DType t) {
  switch (t) {
    case DType::F32:
      return 0;
    case DType::F16:
      return 1;
    case DType::BF16:
      return 32;
    default:
      throw Error("convert writes F32, F16 or BF16 files");
  }
}

void write_hparams(GgufWriter& w, const Config& c, DType out_type, const std::string& name) {
  const std::string a = std::string(c.gguf_architecture()) + ".";
  auto u32 = [](int64_t v) { return GgufValue::u32(static_cast<uint32_t>(v)); };
  w.set("general.architecture", GgufValue::string(c.gguf_architecture()));
  w.set("general.name", GgufValue::string(name));
  w.set("general.file_type", GgufValue::u32(llama_file_type(out_type)));
  w.set(a + "context_length", u32(c.n_ctx_train));
  w.set(a + "embedding_length", u32(c.hidden));
  w.set(a + "block_count", u32(c.n_layers));
  if (c.moe()) {
    w.set(a + "expert_count", u32(c.n_experts));
    w.set(a + "expert_used_count", u32(c.n_experts_used));
    w.set(a + "expert_feed_forward_length", u32(c.expert_ffn));
    if (c.shared_ffn > 0) w.set(a + "expert_shared_feed_forward_length", u32(c.shared_ffn));
  } else {
    w.set(a + "feed_forward_length", u32(c.ffn));
  }
  w.set(a + "attention.head_count", u32(c.n_head));
  w.set(a + "attention.head_count_kv", u32(c.n_head_kv));
  w.set(a + "attention.key_length", u32(c.head_dim));
  w.set(a + "attention.value_length", u32(c.head_dim));
  w.set(a + "attention.layer_norm_rms_epsilon", GgufValue::f32(c.eps));
  w.set(a + "rope.freq_base", GgufValue::f32(static_cast<float>(c.rope_theta)));
  w.set(a + "rope.dimension_count", u32(c.rot_dims));
  std::vector<GgufValue> sections;
  std::vector<int64_t> s =
      c.mrope_sections.empty() ? std::vector<int64_t>{11, 11, 10} : c.mrope_sections;
  s.resize(4, 0);
  for (int64_t v : s) sections.push_back(GgufValue::i32(static_cast<int32_t>(v)));
  w.set(a + "rope.dimension_sections", GgufValue::array(GgufType::I32, std::move(sections)));
  w.set(a + "full_attention_interval", u32(c.full_attention_interval));
  if (!c.layer_types_regular()) {
    // The interval rule cannot describe this checkpoint; llama.cpp reads this override.
    std::vector<GgufValue> recurrent;
    for (bool full : c.full_attention) recurrent.push_back(GgufValue::boolean(!full));
    w.set(a + "attention.recurrent_layers", GgufValue::array(GgufType::BOOL, std::move(recurrent)));
  }
  w.set(a + "ssm.conv_kernel", u32(c.conv_kernel));
  w.set(a + "ssm.state_size", u32(c.dk));
  w.set(a + "ssm.group_count", u32(c.n_k_heads));
  w.set(a + "ssm.time_step_rank", u32(c.n_v_heads));
  w.set(a + "ssm.inner_size", u32(c.value_dim()));
}

// The tokenizer and chat template, when the folder has them, as llama.cpp's converter writes
// them (vocabulary padded to the embedding rows with [PAD<id>] entries).
void write_tokenizer(GgufWriter& w, const HfCheckpoint& hf, const Config& c) {
  namespace fs = std::filesystem;
  const fs::path json = hf.folder() / "tokenizer.json";
  if (!fs::exists(json)) return;
  Tokenizer::from_hf_json(json).write_gguf(w, static_cast<int32_t>(c.n_vocab));
  std::string chat_template;
  const fs::path jinja = hf.folder() / "chat_template.jinja";
  const fs::path config = hf.folder() / "tokenizer_config.json";
  if (fs::exists(jinja)) {
    std::ifstream in(jinja);
    std::stringstream text;
    text << in.rdbuf();
    chat_template = text.str();
  } else if (fs::exists(config)) {
    std::ifstream in(config);
    const auto j = nlohmann::json::parse(in, nullptr, false);
    if (j.is_object() && j.contains("chat_template") && j.at("chat_template").is_string())
      chat_template = j.at("chat_template").get<std::string>();
  }
  if (!chat_template.empty()) w.set("tokenizer.chat_template", GgufValue::string(chat_template));
}

}  // namespace

void convert_to_gguf(const HfCheckpoint& hf, DType out_type, const std::filesystem::path& out) {
  const std::string where = (hf.folder() / "config.json").string();
  const Config c = config_from_hf(hf.config(), where);
  if (c.dk != c.dv)
    throw Error(where + ": linear_key_head_dim (" + std::to_string(c.dk) +
                ") differs from linear_value_head_dim (" + std::to_string(c.dv) +
                "); GGUF files of this architecture cannot represent that (llama.cpp uses one "
                "state size for both)");
  GgufWriter writer;
  write_hparams(writer, c, out_type, hf.folder().filename().string());
  write_tokenizer(writer, hf, c);
  const std::string prefix = hf_prefix(hf);
  struct Stored {
    TransformedTensor tensor;
    std::vector<uint8_t> bytes;
  };
  // Everything is kept until write(): the writer references, not copies, tensor data.
  std::vector<Stored> stored;
  const auto rules = tensor_rules(c);
  stored.reserve(rules.size());
  for (const TensorRule& rule : rules) {
    auto t = transform_hf_tensor(hf, prefix, rule, c);
    if (!t) continue;
    Stored s{std::move(*t), {}};
    const DType type = stays_f32(s.tensor.view) ? DType::F32 : out_type;
    s.bytes = convert_float_tensor(s.tensor.view, type);
    std::vector<uint64_t> ne(s.tensor.view.shape.rbegin(), s.tensor.view.shape.rend());
    stored.push_back(std::move(s));
    const Stored& k = stored.back();
    writer.add_tensor(k.tensor.view.name, type, ne, k.bytes.data(), k.bytes.size());
  }
  writer.write(out);
}

}  // namespace hostlm::qwen35
