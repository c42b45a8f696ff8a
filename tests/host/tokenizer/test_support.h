// Paths and small tokenizers shared by the tokenizer tests.
#pragma once
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "hostlm/tokenizer.h"
#include "tokenizer/byte_unicode.h"

namespace hostlm::test {

inline std::filesystem::path source_dir() {
  if (const char* env = std::getenv("HOSTLM_SOURCE_DIR")) return env;
  // tests/host/tokenizer/<file> -> repository root.
  return std::filesystem::path(__FILE__).parent_path().parent_path().parent_path().parent_path();
}

inline std::filesystem::path shared_dir() {
  if (const char* env = std::getenv("HOSTLM_SHARED_DIR")) return env;
  return source_dir() / ".." / "shared";
}

inline std::filesystem::path qwen3_tokenizer_json() {
  return shared_dir() / "data" / "qwen3-tokenizer" / "tokenizer.json";
}

// A tokenizer whose ids 0..255 are the single bytes (id == byte value), plus one token per
// merge added with add_merge(). Merges and added tokens are given as raw UTF-8.
class ByteSpec {
 public:
  explicit ByteSpec(std::string pre = "qwen35") {
    spec_.pre = std::move(pre);
    for (int b = 0; b < 256; ++b) spec_.vocab.push_back(bu().encode(static_cast<uint8_t>(b)));
  }
  int32_t add_merge(const std::string& left, const std::string& right) {
    spec_.merges.emplace_back(bu().encode(left), bu().encode(right));
    spec_.vocab.push_back(bu().encode(left + right));
    return static_cast<int32_t>(spec_.vocab.size() - 1);
  }
  int32_t add_token(AddedToken token) {
    token.id = static_cast<int32_t>(spec_.vocab.size() + spec_.added_tokens.size());
    spec_.added_tokens.push_back(token);
    return token.id;
  }
  TokenizerSpec& spec() { return spec_; }
  Tokenizer build() const { return Tokenizer(spec_); }

 private:
  static const tok::ByteUnicode& bu() { return tok::ByteUnicode::get(); }
  TokenizerSpec spec_;
};

// The ids of raw bytes in a ByteSpec tokenizer.
inline std::vector<int32_t> byte_ids(std::string_view bytes) {
  std::vector<int32_t> ids;
  for (char c : bytes) ids.push_back(static_cast<uint8_t>(c));
  return ids;
}

}  // namespace hostlm::test
