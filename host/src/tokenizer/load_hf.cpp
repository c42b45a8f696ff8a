// Loading a Hugging Face tokenizer.json (+ tokenizer_config.json beside it).
#include <cctype>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "hostlm/error.h"
#include "hostlm/tokenizer.h"

namespace hostlm {
namespace {

using nlohmann::json;

json read_json(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path.string() + ": cannot open");
  std::ostringstream text;
  text << in.rdbuf();
  try {
    return json::parse(text.str());
  } catch (const json::exception& e) {
    throw Error(path.string() + ": invalid JSON: " + e.what());
  }
}

// PCRE2 syntax for a literal string: every ASCII punctuation character escaped.
std::string escape_regex(std::string_view literal) {
  std::string out;
  for (char c : literal) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x80 && !std::isalnum(u)) out.push_back('\\');
    out.push_back(c);
  }
  return out;
}

class HfLoader {
 public:
  explicit HfLoader(std::filesystem::path path) : path_(std::move(path)) {}

  TokenizerSpec load() {
    const json root = read_json(path_);
    if (!root.is_object()) fail("not a tokenizer.json object");
    TokenizerSpec spec;
    load_model(root.value("model", json()), spec);
    load_added(root.value("added_tokens", json::array()), spec);
    spec.nfc = load_normalizer(root.value("normalizer", json()));
    std::vector<std::string> regexes;
    load_pre(root.value("pre_tokenizer", json()), regexes);
    spec.pre.clear();
    for (const char* name : {"qwen35", "qwen2", "gpt2"}) {
      if (regexes.size() == 1 && regexes[0] == builtin_pretokenizer_regex(name)) spec.pre = name;
    }
    if (spec.pre.empty()) spec.pre_regexes = std::move(regexes);
    const auto config_path = path_.parent_path() / "tokenizer_config.json";
    if (std::filesystem::exists(config_path)) load_config(config_path, spec);
    return spec;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw Error(path_.string() + ": " + what);
  }

  void load_model(const json& model, TokenizerSpec& spec) const {
    if (!model.is_object()) fail("no model");
    if (model.value("type", std::string("BPE")) != "BPE") fail("model type is not BPE");
    auto truthy = [&](const char* key) {
      const json& v = model.contains(key) ? model[key] : json();
      return !(v.is_null() || v == false || v == "" || v == 0.0);
    };
    for (const char* key : {"byte_fallback", "continuing_subword_prefix", "end_of_word_suffix",
                            "dropout", "ignore_merges"}) {
      if (truthy(key)) fail(std::string("BPE option '") + key + "' is not supported");
    }
    const json& vocab = model.value("vocab", json());
    if (!vocab.is_object()) fail("model.vocab is not an object");
    for (const auto& [token, id_json] : vocab.items()) {
      if (!id_json.is_number_integer() || id_json.get<int64_t>() < 0 ||
          id_json.get<int64_t>() >= INT32_MAX) {
        fail("bad id for vocab token '" + token + "'");
      }
      const auto id = id_json.get<size_t>();
      if (id >= spec.vocab.size()) spec.vocab.resize(id + 1);
      spec.vocab[id] = token;
    }
    const json& merges = model.value("merges", json::array());
    if (!merges.is_array()) fail("model.merges is not an array");
    spec.merges.reserve(merges.size());
    for (const json& merge : merges) {
      // Older files write "left right"; newer ones ["left", "right"].
      if (merge.is_string()) {
        const auto& text = merge.get_ref<const std::string&>();
        const size_t space = text.find(' ', 1);
        if (space == std::string::npos) fail("merge '" + text + "' has no space");
        spec.merges.emplace_back(text.substr(0, space), text.substr(space + 1));
      } else if (merge.is_array() && merge.size() == 2 && merge[0].is_string() &&
                 merge[1].is_string()) {
        spec.merges.emplace_back(merge[0].get<std::string>(), merge[1].get<std::string>());
      } else {
        fail("bad merge entry " + merge.dump());
      }
    }
  }

  void load_added(const json& added, TokenizerSpec& spec) const {
    if (!added.is_array()) fail("added_tokens is not an array");
    for (const json& t : added) {
      if (!t.is_object() || !t.contains("id") || !t.contains("content")) fail("bad added token");
      AddedToken token;
      token.id = t["id"].get<int32_t>();
      token.content = t["content"].get<std::string>();
      token.special = t.value("special", false);
      token.lstrip = t.value("lstrip", false);
      token.rstrip = t.value("rstrip", false);
      token.single_word = t.value("single_word", false);
      token.normalized = t.value("normalized", !token.special);
      spec.added_tokens.push_back(std::move(token));
    }
  }

  bool load_normalizer(const json& n) const {
    if (n.is_null()) return false;
    const std::string type = n.value("type", "");
    if (type == "NFC") return true;
    if (type == "Sequence") {
      bool nfc = false;
      for (const json& inner : n.value("normalizers", json::array())) nfc |= load_normalizer(inner);
      return nfc;
    }
    fail("normalizer '" + type + "' is not supported (only NFC)");
  }

  void load_pre(const json& p, std::vector<std::string>& regexes) const {
    if (p.is_null()) return;
    const std::string type = p.value("type", "");
    if (type == "Sequence") {
      for (const json& inner : p.value("pretokenizers", json::array())) load_pre(inner, regexes);
    } else if (type == "Split") {
      if (p.value("behavior", "") != "Isolated" || p.value("invert", false)) {
        fail("only Split with behavior Isolated is supported");
      }
      const json& pattern = p.value("pattern", json());
      if (pattern.contains("Regex")) {
        regexes.push_back(pattern["Regex"].get<std::string>());
      } else if (pattern.contains("String")) {
        regexes.push_back(escape_regex(pattern["String"].get<std::string>()));
      } else {
        fail("Split pre-tokenizer without a pattern");
      }
    } else if (type == "ByteLevel") {
      if (p.value("add_prefix_space", false)) fail("ByteLevel add_prefix_space is not supported");
      if (p.value("use_regex", true)) regexes.push_back(*builtin_pretokenizer_regex("gpt2"));
    } else {
      fail("pre-tokenizer '" + type + "' is not supported");
    }
  }

  void load_config(const std::filesystem::path& path, TokenizerSpec& spec) const {
    const json config = read_json(path);
    if (!config.is_object()) return;
    if (config.contains("add_bos_token") && config["add_bos_token"].is_boolean()) {
      spec.add_bos = config["add_bos_token"].get<bool>();
    }
    // Token fields are a string, an AddedToken-shaped object, or null.
    auto id_of = [&](const char* key) -> std::optional<int32_t> {
      if (!config.contains(key)) return std::nullopt;
      const json& v = config[key];
      std::string text;
      if (v.is_string()) {
        text = v.get<std::string>();
      } else if (v.is_object() && v.contains("content")) {
        text = v["content"].get<std::string>();
      } else {
        return std::nullopt;
      }
      for (const AddedToken& t : spec.added_tokens) {
        if (t.content == text) return t.id;
      }
      for (size_t id = 0; id < spec.vocab.size(); ++id) {
        if (spec.vocab[id] == text) return static_cast<int32_t>(id);
      }
      throw Error(path.string() + ": " + key + " '" + text + "' is not a token");
    };
    spec.bos_id = id_of("bos_token");
    spec.eos_id = id_of("eos_token");
    spec.pad_id = id_of("pad_token");
  }

  std::filesystem::path path_;
};

}  // namespace

Tokenizer Tokenizer::from_hf_json(const std::filesystem::path& tokenizer_json) {
  try {
    return Tokenizer(HfLoader(tokenizer_json).load());
  } catch (const nlohmann::json::exception& e) {
    throw Error(tokenizer_json.string() + ": " + e.what());
  } catch (const Error& e) {
    const std::string what = e.what();
    if (what.starts_with("tokenizer: "))
      throw Error(tokenizer_json.string() + ": " + what.substr(11));
    throw;
  }
}

}  // namespace hostlm
