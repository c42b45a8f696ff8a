// Byte-level BPE tokenizer (the GPT-2 family used by Qwen2, Qwen3 and Qwen3.5). For a
// tokenizer.json of that shape it produces the ids of the Hugging Face `tokenizers` library:
// added tokens are cut out of the raw text first, the rest is NFC-normalised, split by the
// pre-tokenizer regex, mapped byte -> unicode and merged by rank.
// Every load or input problem is reported as hostlm::Error naming the file or token at fault.
#pragma once
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace hostlm {

class GgufFile;
class GgufWriter;

// tokenizer.ggml.token_type values, as llama.cpp numbers them.
enum class TokenType : int32_t {
  Normal = 1,
  Unknown = 2,
  Control = 3,
  UserDefined = 4,
  Unused = 5,
  Byte = 6,
};

// A token matched as a whole string in the input before any BPE (tokenizer.json added_tokens).
struct AddedToken {
  int32_t id = 0;
  std::string content;       // plain UTF-8, not byte-level encoded
  bool special = false;      // skipped by parse_special=false and by decode(skip_special)
  bool lstrip = false;       // absorbs white space on its left
  bool rstrip = false;       // absorbs white space on its right
  bool single_word = false;  // only matches when not touching word characters
  bool normalized = false;   // matched in the NFC-normalised text instead of the raw text
};

// Everything that defines a tokenizer. The loaders fill it; tests can build one by hand.
struct TokenizerSpec {
  std::vector<std::string> vocab;  // id -> byte-level token ("Ġthe"); "" marks an unused id
  std::vector<std::pair<std::string, std::string>> merges;  // byte-level, in rank order
  std::vector<AddedToken> added_tokens;
  // Built-in pre-tokenizer ("qwen35", "qwen2", "gpt2"), or empty to use pre_regexes, which
  // split the text one after the other (tokenizer.json Split steps, behaviour Isolated).
  std::string pre = "qwen35";
  std::vector<std::string> pre_regexes;
  bool nfc = true;
  std::optional<int32_t> bos_id, eos_id, pad_id;
  bool add_bos = false;  // prepend bos_id when encode() is asked to add special tokens
};

// The regex of a built-in pre-tokenizer name, or nullopt when the name is unknown.
std::optional<std::string> builtin_pretokenizer_regex(std::string_view name);

class Tokenizer {
 public:
  explicit Tokenizer(TokenizerSpec spec);  // validates and indexes; throws hostlm::Error
  ~Tokenizer();
  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;

  // A .gguf file, a folder holding tokenizer.json, or a tokenizer.json path.
  static Tokenizer load(const std::filesystem::path& path);
  // tokenizer.json, plus tokenizer_config.json beside it when present (bos/eos/pad, add_bos).
  static Tokenizer from_hf_json(const std::filesystem::path& tokenizer_json);
  static Tokenizer from_gguf(const GgufFile& file);

  struct EncodeOptions {
    // false: text of special added tokens is tokenized as plain text (untrusted input).
    // Non-special added tokens (<think>, <tool_call> in Qwen) still match, as in HF.
    bool parse_special = true;
    bool add_special_tokens = true;  // prepend BOS when the tokenizer asks for it (add_bos)
  };
  // Invalid UTF-8 in `text` is first replaced by U+FFFD. Thread-safe.
  std::vector<int32_t> encode(std::string_view text, EncodeOptions options) const;
  std::vector<int32_t> encode(std::string_view text) const { return encode(text, {}); }

  // Ids that name no token are skipped; invalid UTF-8 becomes U+FFFD as in HF decode.
  std::string decode(std::span<const int32_t> ids, bool skip_special = false) const;
  // The raw bytes one token stands for (may be a partial UTF-8 sequence); "" for unused ids.
  const std::string& token_bytes(int32_t id) const;

  int32_t vocab_size() const;  // number of ids, added tokens included
  std::optional<int32_t> token_id(std::string_view token) const;  // byte-level or added text
  TokenType token_type(int32_t id) const;
  bool is_special(int32_t id) const;
  std::optional<int32_t> bos_id() const;
  std::optional<int32_t> eos_id() const;
  std::optional<int32_t> pad_id() const;
  const TokenizerSpec& spec() const;

  // Writes the tokenizer.ggml.* keys the way llama.cpp's converter does. Ids at or above the
  // tokenizer's own size, up to padded_vocab_size, become "[PAD<id>]" of type Unused.
  void write_gguf(GgufWriter& writer, int32_t padded_vocab_size = 0) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Turns ids into text one at a time: bytes of an unfinished UTF-8 sequence are held back until
// the sequence completes, so concatenating every push() and finish() gives decode(ids).
class StreamingDecoder {
 public:
  explicit StreamingDecoder(const Tokenizer& tokenizer, bool skip_special = false);
  std::string push(int32_t id);
  std::string finish();  // emits U+FFFD for a sequence left unfinished and resets

 private:
  const Tokenizer* tokenizer_;
  bool skip_special_;
  std::string pending_;
};

}  // namespace hostlm
