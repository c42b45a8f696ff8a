// The pre-tokenizer: regexes (PCRE2, UTF + Unicode properties, JIT) that cut text into the
// pieces BPE works on. Like HF's Split with behaviour "Isolated", both the matches and the
// text between them become pieces.
#pragma once
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace hostlm::tok {

class PreTokenizer {
 public:
  // Each regex splits the pieces the previous one produced. Throws hostlm::Error on a
  // pattern PCRE2 rejects.
  explicit PreTokenizer(const std::vector<std::string>& regexes);
  ~PreTokenizer();
  PreTokenizer(PreTokenizer&&) noexcept;
  PreTokenizer& operator=(PreTokenizer&&) noexcept;

  // Appends the pieces of `text` (valid UTF-8) to `out`; they cover `text` in order.
  void split(std::string_view text, std::vector<std::string_view>& out) const;

 private:
  struct Regex;
  std::vector<std::unique_ptr<Regex>> regexes_;
};

}  // namespace hostlm::tok
