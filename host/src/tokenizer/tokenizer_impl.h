// The state behind hostlm::Tokenizer, shared by the files that build, load and save it.
#pragma once
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "hostlm/tokenizer.h"
#include "tokenizer/added_tokens.h"
#include "tokenizer/bpe.h"
#include "tokenizer/pretokenizer.h"

namespace hostlm {

struct Tokenizer::Impl {
  TokenizerSpec spec;
  std::vector<std::string> bytes;                      // per id: what decode emits for it
  std::vector<TokenType> types;                        // per id
  std::vector<uint8_t> special;                        // per id: an added token flagged special
  std::unordered_map<std::string, int32_t> vocab_ids;  // byte-level vocab text -> id
  std::unordered_map<std::string, int32_t> added_ids;  // added token content -> id
  std::optional<tok::PreTokenizer> pre;
  tok::AddedTokenMatcher raw_matcher;         // tokens with normalized == false
  tok::AddedTokenMatcher normalized_matcher;  // tokens matched after NFC
  std::optional<tok::Bpe> bpe;
};

namespace tok {
// llama.cpp's converter marks added tokens of these shapes CONTROL even when not special.
bool looks_special(std::string_view content);
}  // namespace tok

}  // namespace hostlm
