// The tokenizer.ggml.* keys: reading a tokenizer from a GGUF and writing one into a GGUF the
// way llama.cpp's converter does (tokens, token_type, merges "left right", pre, special ids).
#include "hostlm/error.h"
#include "hostlm/gguf.h"
#include "hostlm/tokenizer.h"
#include "tokenizer/tokenizer_impl.h"

namespace hostlm {

Tokenizer Tokenizer::from_gguf(const GgufFile& file) {
  const std::string where = file.path().string() + ": ";
  const auto model = file.get_string("tokenizer.ggml.model");
  if (!model) throw Error(where + "no tokenizer (tokenizer.ggml.model is missing)");
  if (*model != "gpt2") {
    throw Error(where + "tokenizer model '" + *model +
                "' is not supported (only gpt2 byte-level BPE)");
  }
  TokenizerSpec spec;
  // llama.cpp falls back to the GPT-2 split when no pre-tokenizer is named.
  spec.pre = file.get_string("tokenizer.ggml.pre").value_or("gpt2");
  if (!builtin_pretokenizer_regex(spec.pre)) {
    throw Error(where + "pre-tokenizer '" + spec.pre + "' is not supported (qwen35, qwen2, gpt2)");
  }
  // llama.cpp does not normalise, but HF does for the Qwen tokenizers, and HF is the reference.
  spec.nfc = spec.pre == "qwen35" || spec.pre == "qwen2";

  auto tokens = file.get_string_array("tokenizer.ggml.tokens");
  if (!tokens) throw Error(where + "tokenizer.ggml.tokens is missing");
  const auto types = file.get_int_array("tokenizer.ggml.token_type");
  if (types && types->size() != tokens->size()) {
    throw Error(where + "tokenizer.ggml.token_type has " + std::to_string(types->size()) +
                " entries for " + std::to_string(tokens->size()) + " tokens");
  }
  spec.vocab.resize(tokens->size());
  for (size_t id = 0; id < tokens->size(); ++id) {
    std::string& text = (*tokens)[id];
    const auto type = static_cast<TokenType>(types ? (*types)[id] : 1);
    switch (type) {
      case TokenType::Control:
      case TokenType::UserDefined: {
        // Added tokens are stored as plain text; CONTROL is the converter's "special".
        AddedToken t;
        t.id = static_cast<int32_t>(id);
        t.content = std::move(text);
        t.special = type == TokenType::Control;
        spec.added_tokens.push_back(std::move(t));
        break;
      }
      case TokenType::Unused:
        break;  // padding rows: no text
      default:
        spec.vocab[id] = std::move(text);
    }
  }

  const auto merges = file.get_string_array("tokenizer.ggml.merges");
  if (!merges) throw Error(where + "tokenizer.ggml.merges is missing");
  spec.merges.reserve(merges->size());
  for (const std::string& merge : *merges) {
    const size_t space = merge.find(' ', 1);
    if (space == std::string::npos) throw Error(where + "merge '" + merge + "' has no space");
    spec.merges.emplace_back(merge.substr(0, space), merge.substr(space + 1));
  }

  auto id_key = [&](const char* key) -> std::optional<int32_t> {
    const auto v = file.get_int(key);
    if (!v) return std::nullopt;
    if (*v < 0 || *v >= static_cast<int64_t>(tokens->size())) {
      throw Error(where + key + " " + std::to_string(*v) + " is out of range");
    }
    return static_cast<int32_t>(*v);
  };
  spec.bos_id = id_key("tokenizer.ggml.bos_token_id");
  spec.eos_id = id_key("tokenizer.ggml.eos_token_id");
  spec.pad_id = id_key("tokenizer.ggml.padding_token_id");
  spec.add_bos = file.get_bool("tokenizer.ggml.add_bos_token").value_or(false);
  try {
    return Tokenizer(std::move(spec));
  } catch (const Error& e) {
    const std::string what = e.what();
    throw Error(where + (what.starts_with("tokenizer: ") ? what.substr(11) : what));
  }
}

void Tokenizer::write_gguf(GgufWriter& writer, int32_t padded_vocab_size) const {
  const Impl& m = *impl_;
  const TokenizerSpec& s = m.spec;
  if (s.pre.empty()) {
    throw Error("tokenizer: its pre-tokenizer regex has no GGUF name (qwen35, qwen2, gpt2)");
  }
  const size_t n =
      std::max<size_t>(m.bytes.size(), static_cast<size_t>(std::max(padded_vocab_size, 0)));
  std::vector<const AddedToken*> added(n, nullptr);
  for (const AddedToken& t : s.added_tokens) added[t.id] = &t;

  std::vector<GgufValue> tokens, types;
  tokens.reserve(n);
  types.reserve(n);
  for (size_t id = 0; id < n; ++id) {
    TokenType type;
    std::string text;
    if (added[id] != nullptr) {
      text = added[id]->content;
      type = m.types[id];
    } else if (id < s.vocab.size() && !s.vocab[id].empty()) {
      text = s.vocab[id];
      type = TokenType::Normal;
    } else {
      text = "[PAD" + std::to_string(id) + "]";
      type = TokenType::Unused;
    }
    tokens.push_back(GgufValue::string(std::move(text)));
    types.push_back(GgufValue::i32(static_cast<int32_t>(type)));
  }
  std::vector<GgufValue> merges;
  merges.reserve(s.merges.size());
  for (const auto& [left, right] : s.merges)
    merges.push_back(GgufValue::string(left + " " + right));

  writer.set("tokenizer.ggml.model", GgufValue::string("gpt2"));
  writer.set("tokenizer.ggml.pre", GgufValue::string(s.pre));
  writer.set("tokenizer.ggml.tokens", GgufValue::array(GgufType::STRING, std::move(tokens)));
  writer.set("tokenizer.ggml.token_type", GgufValue::array(GgufType::I32, std::move(types)));
  writer.set("tokenizer.ggml.merges", GgufValue::array(GgufType::STRING, std::move(merges)));
  if (s.bos_id)
    writer.set("tokenizer.ggml.bos_token_id", GgufValue::u32(static_cast<uint32_t>(*s.bos_id)));
  if (s.eos_id)
    writer.set("tokenizer.ggml.eos_token_id", GgufValue::u32(static_cast<uint32_t>(*s.eos_id)));
  if (s.pad_id) {
    writer.set("tokenizer.ggml.padding_token_id", GgufValue::u32(static_cast<uint32_t>(*s.pad_id)));
  }
  writer.set("tokenizer.ggml.add_bos_token", GgufValue::boolean(s.add_bos));
}

}  // namespace hostlm
