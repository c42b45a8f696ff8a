// Cuts added tokens out of text before BPE, with HF's rules: leftmost-longest matching over
// all added tokens, and the lstrip / rstrip / single_word flags.
#pragma once
#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

#include "hostlm/tokenizer.h"

namespace hostlm::tok {

struct Segment {
  std::string_view text;  // the covered input (token text, stripped white space included)
  int32_t id = -1;        // the added token, or -1 for plain text
};

class AddedTokenMatcher {
 public:
  AddedTokenMatcher() = default;
  // `tokens` must outlive the matcher; their content is what is searched for.
  explicit AddedTokenMatcher(std::vector<const AddedToken*> tokens);

  bool empty() const { return tokens_.empty(); }
  // Appends segments covering `text` in order. With parse_special false a match of a
  // special token is passed over (left as plain text) and the search goes on after it.
  void split(std::string_view text, bool parse_special, std::vector<Segment>& out) const;

 private:
  struct Match {
    size_t start, end;
    const AddedToken* token;
  };
  bool find(std::string_view text, size_t from, Match& match) const;

  std::vector<const AddedToken*> tokens_;  // grouped by first byte, longest first
  std::array<std::pair<uint32_t, uint32_t>, 256> by_first_byte_{};  // range in tokens_
};

}  // namespace hostlm::tok
