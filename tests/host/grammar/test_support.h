// Shared helpers for the grammar tests: a byte-per-token vocabulary for matching plain
// strings, the real Qwen3 tokenizer, and a small JSON Schema validator for the keywords the
// converter supports.
#pragma once
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "hostlm/grammar.h"

namespace hostlm::test {

inline std::filesystem::path source_dir() {
  if (const char* env = std::getenv("HOSTLM_SOURCE_DIR")) return env;
  return std::filesystem::path(__FILE__).parent_path().parent_path().parent_path().parent_path();
}

inline std::filesystem::path qwen3_tokenizer_json() {
  return source_dir() / ".." / "shared" / "data" / "qwen3-tokenizer" / "tokenizer.json";
}

// Token i < 256 is byte i; token 256 is the end token.
inline std::shared_ptr<const GrammarVocab> byte_vocab() {
  static const auto vocab = [] {
    std::vector<std::string> bytes;
    for (int b = 0; b < 256; ++b) bytes.emplace_back(1, static_cast<char>(b));
    bytes.emplace_back();
    return std::make_shared<const GrammarVocab>(bytes, std::vector<int32_t>{256});
  }();
  return vocab;
}

// Whether `text` is a complete sentence of the grammar.
inline bool full_match(const Grammar& g, std::string_view text) {
  GrammarMatcher m(g, byte_vocab());
  return m.accept_bytes(text) && m.can_end();
}

// Whether `text` can be continued into a sentence (every prefix is accepted).
inline bool prefix_ok(const Grammar& g, std::string_view text) {
  GrammarMatcher m(g, byte_vocab());
  return m.accept_bytes(text);
}

// Empty when `value` satisfies `schema`; else why not. `root` resolves "#..." references.
std::string validate(const nlohmann::json& value, const nlohmann::json& schema,
                     const nlohmann::json& root);

}  // namespace hostlm::test
