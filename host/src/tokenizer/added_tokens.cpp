#include "tokenizer/added_tokens.h"

#include <utf8proc.h>

#include <algorithm>

#include "tokenizer/utf8.h"

namespace hostlm::tok {
namespace {

// Unicode \w as Rust's regex crate defines it, which HF uses for single_word.
bool is_word_char(char32_t cp) {
  if (cp < 0x80)
    return (cp >= '0' && cp <= '9') || (cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z') ||
           cp == '_';
  if (cp == 0x200C || cp == 0x200D) return true;
  switch (utf8proc_category(static_cast<utf8proc_int32_t>(cp))) {
    case UTF8PROC_CATEGORY_LU:
    case UTF8PROC_CATEGORY_LL:
    case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_LO:
    case UTF8PROC_CATEGORY_MN:
    case UTF8PROC_CATEGORY_MC:
    case UTF8PROC_CATEGORY_ME:
    case UTF8PROC_CATEGORY_ND:
    case UTF8PROC_CATEGORY_NL:
    case UTF8PROC_CATEGORY_PC:
      return true;
    default:
      return false;
  }
}

}  // namespace

AddedTokenMatcher::AddedTokenMatcher(std::vector<const AddedToken*> tokens) {
  std::erase_if(tokens, [](const AddedToken* t) { return t->content.empty(); });
  std::stable_sort(tokens.begin(), tokens.end(), [](const AddedToken* a, const AddedToken* b) {
    const auto fa = static_cast<unsigned char>(a->content[0]);
    const auto fb = static_cast<unsigned char>(b->content[0]);
    if (fa != fb) return fa < fb;
    return a->content.size() > b->content.size();
  });
  tokens_ = std::move(tokens);
  for (uint32_t i = 0; i < tokens_.size(); ++i) {
    auto& range = by_first_byte_[static_cast<unsigned char>(tokens_[i]->content[0])];
    if (range.first == range.second) range.first = i;
    range.second = i + 1;
  }
}

bool AddedTokenMatcher::find(std::string_view text, size_t from, Match& match) const {
  for (size_t pos = from; pos < text.size(); ++pos) {
    const auto [begin, end] = by_first_byte_[static_cast<unsigned char>(text[pos])];
    // Longest first, so the first hit at the leftmost position is the leftmost-longest one.
    for (uint32_t i = begin; i < end; ++i) {
      const std::string& content = tokens_[i]->content;
      if (text.compare(pos, content.size(), content) == 0) {
        match = {pos, pos + content.size(), tokens_[i]};
        return true;
      }
    }
  }
  return false;
}

void AddedTokenMatcher::split(std::string_view text, bool parse_special,
                              std::vector<Segment>& out) const {
  size_t emitted = 0, from = 0;
  Match m{};
  while (!tokens_.empty() && find(text, from, m)) {
    from = m.end;
    const AddedToken& token = *m.token;
    if (!parse_special && token.special) continue;
    if (token.single_word) {
      const bool word_before = m.start > 0 && is_word_char(previous_code_point(text, m.start));
      size_t after = m.end;
      const bool word_after = m.end < text.size() && is_word_char(next_code_point(text, after));
      if (word_before || word_after) continue;
    }
    size_t start = m.start, end = m.end;
    if (token.lstrip) {
      while (start > emitted) {
        size_t prev = start - 1;
        while (prev > emitted && (static_cast<unsigned char>(text[prev]) & 0xC0) == 0x80) --prev;
        size_t probe = prev;
        if (!is_white_space(next_code_point(text, probe))) break;
        start = prev;
      }
    }
    if (token.rstrip) {
      while (end < text.size()) {
        size_t next = end;
        if (!is_white_space(next_code_point(text, next))) break;
        end = next;
      }
    }
    start = std::max(start, emitted);
    if (start > emitted) out.push_back({text.substr(emitted, start - emitted), -1});
    out.push_back({text.substr(start, end - start), token.id});
    emitted = end;
    from = end;
  }
  if (emitted < text.size()) out.push_back({text.substr(emitted), -1});
}

}  // namespace hostlm::tok
