// libFuzzer target for the grammar front ends, which take user text on the server (GBNF from
// `--grammar`, JSON Schemas from Ollama's `format` and OpenAI's `response_format`). The input
// is tried as GBNF and as a JSON Schema; each either compiles or fails with hostlm::Error. A
// compiled grammar then walks the rest of the input byte by byte over a small vocabulary: the
// mask must agree with accept_token, and a rejected byte must leave the state as it was.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "hostlm/error.h"
#include "hostlm/grammar.h"

namespace {

void check(bool ok) {
  if (!ok) std::abort();
}

std::shared_ptr<const hostlm::GrammarVocab> vocab() {
  static const auto v = [] {
    std::vector<std::string> tokens = {
        "",      "{",    "}", "\"", ":", ",", "[", "]",  " ",     "\n",  "a",        "ab", "true",
        "false", "null", "0", "12", "-", ".", "e", "\\", "\"a\"", "{\"", "\xc3\xa9", "x"};
    return std::make_shared<const hostlm::GrammarVocab>(tokens, std::vector<int32_t>{0});
  }();
  return v;
}

void walk(hostlm::Grammar grammar, std::string_view text) {
  hostlm::GrammarMatcher matcher(std::move(grammar), vocab());
  hostlm::TokenBitmask mask;
  for (size_t i = 0; i < text.size() && i < 64; ++i) {
    matcher.allowed_tokens(mask);
    for (int32_t id = 1; id < vocab()->size(); ++id) {
      hostlm::GrammarMatcher probe(matcher);
      check(probe.accept_token(id) == mask.test(id));
    }
    check(mask.test(0) == matcher.can_end());
    const std::string_view byte = text.substr(i, 1);
    const bool can = matcher.can_accept_bytes(byte);
    check(matcher.accept_bytes(byte) == can);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  // A NUL splits the grammar from the text walked over it.
  const size_t nul = input.find('\0');
  const std::string_view text = input.substr(0, nul);
  const std::string_view rest = nul == std::string_view::npos ? "" : input.substr(nul + 1);
  try {
    walk(hostlm::Grammar::from_gbnf(text), rest);
  } catch (const hostlm::Error&) {
  }
  try {
    walk(hostlm::Grammar::from_json_schema(text), rest);
  } catch (const hostlm::Error&) {
  }
  return 0;
}
