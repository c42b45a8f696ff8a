// model_info and model_tensors of show.h: a weights file's metadata in /api/show's shape.
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <fstream>
#include <string>

#include "hostlm/dtype.h"
#include "hostlm/gguf.h"
#include "hostlm/ollama/show.h"

namespace hostlm::ollama {
namespace {

using Json = nlohmann::ordered_json;
namespace fs = std::filesystem;

Json value_json(const GgufValue& v, bool verbose) {
  if (const GgufArray* array = v.as_array()) {
    Json out = Json::array();
    // Tokenizer vocabularies and merges run to hundreds of thousands of entries.
    if (!verbose && array->elements.size() > 64) return out;
    for (const GgufValue& e : array->elements) out.push_back(value_json(e, verbose));
    return out;
  }
  if (const std::string* s = v.as_string()) return *s;
  if (v.type() == GgufType::BOOL) return v.as_bool().value_or(false);
  if (v.type() == GgufType::F32) {
    // Ollama's JSON has a float32 in its shortest form (1e-06, not 9.99999997e-07).
    char buf[32];
    const auto [end, ec] =
        std::to_chars(buf, buf + sizeof buf, static_cast<float>(v.as_float().value_or(0.0)));
    return std::strtod(std::string(buf, ec == std::errc() ? end : buf).c_str(), nullptr);
  }
  if (v.is_float()) return v.as_float().value_or(0.0);
  if (const auto i = v.as_int()) return *i;
  if (const auto* u = std::get_if<uint64_t>(&v.storage())) return *u;
  return nullptr;
}

Json from_hf_config(const fs::path& folder) {
  Json info = Json::object();
  std::ifstream in(folder / "config.json");
  const Json config = Json::parse(in, nullptr, false);
  if (!config.is_object()) return info;
  const Json& text = config.contains("text_config") && config["text_config"].is_object()
                         ? config["text_config"]
                         : config;
  const std::string arch = config.contains("model_type") && config["model_type"].is_string()
                               ? config["model_type"].get<std::string>()
                               : "unknown";
  info["general.architecture"] = arch;
  auto copy = [&](const char* from, const std::string& to) {
    if (text.contains(from) && text[from].is_number()) info[arch + "." + to] = text[from];
  };
  copy("max_position_embeddings", "context_length");
  copy("hidden_size", "embedding_length");
  copy("num_hidden_layers", "block_count");
  copy("num_attention_heads", "attention.head_count");
  copy("num_key_value_heads", "attention.head_count_kv");
  copy("intermediate_size", "feed_forward_length");
  copy("vocab_size", "vocab_size");
  return info;
}

}  // namespace

nlohmann::ordered_json model_info(const fs::path& path, bool verbose) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) return from_hf_config(path);
  Json info = Json::object();
  const auto gguf = GgufFile::open(path);
  for (const auto& [key, value] : gguf->metadata()) info[key] = value_json(value, verbose);
  uint64_t parameters = 0;
  for (const GgufTensorInfo& t : gguf->tensors()) {
    uint64_t n = 1;
    for (const uint64_t d : t.ne) n *= d;
    parameters += n;
  }
  if (!info.contains("general.parameter_count")) info["general.parameter_count"] = parameters;
  return info;
}

nlohmann::ordered_json model_tensors(const fs::path& path) {
  Json out = Json::array();
  const auto gguf = GgufFile::open(path);
  for (const GgufTensorInfo& t : gguf->tensors()) {
    std::string type(dtype_name(t.type));
    for (char& c : type) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    out.push_back({{"name", t.name}, {"type", type}, {"shape", t.ne}});
  }
  return out;
}

}  // namespace hostlm::ollama
