#define PCRE2_CODE_UNIT_WIDTH 8
#include "tokenizer/pretokenizer.h"

#include <pcre2.h>

#include "hostlm/error.h"

namespace hostlm::tok {

struct PreTokenizer::Regex {
  pcre2_code* code = nullptr;
  bool jit = false;
  ~Regex() { pcre2_code_free(code); }

  void split(std::string_view text, pcre2_match_data* md,
             std::vector<std::string_view>& out) const {
    const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
    const size_t n = text.size();
    size_t pos = 0, emitted = 0;
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
    while (pos < n) {
      // The text was validated once up front, so PCRE2 need not check it on every call.
      const int rc = jit ? pcre2_jit_match(code, subject, n, pos, PCRE2_NO_UTF_CHECK, md, nullptr)
                         : pcre2_match(code, subject, n, pos, PCRE2_NO_UTF_CHECK, md, nullptr);
      if (rc == PCRE2_ERROR_NOMATCH) break;
      if (rc < 0)
        throw Error("tokenizer: pre-tokenizer regex failed (PCRE2 error " + std::to_string(rc) +
                    ")");
      const size_t start = ov[0], end = ov[1];
      if (start > emitted) out.push_back(text.substr(emitted, start - emitted));
      if (end > start) {
        out.push_back(text.substr(start, end - start));
        emitted = end;
        pos = end;
      } else {
        // An empty match cuts nothing; step over one character to make progress.
        pos = start + 1;
        while (pos < n && (static_cast<unsigned char>(text[pos]) & 0xC0) == 0x80) ++pos;
      }
    }
    if (emitted < n) out.push_back(text.substr(emitted));
  }
};

PreTokenizer::PreTokenizer(const std::vector<std::string>& regexes) {
  for (const std::string& pattern : regexes) {
    auto re = std::make_unique<Regex>();
    int err = 0;
    PCRE2_SIZE err_offset = 0;
    re->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                             PCRE2_UTF | PCRE2_UCP, &err, &err_offset, nullptr);
    if (re->code == nullptr) {
      PCRE2_UCHAR msg[256];
      pcre2_get_error_message(err, msg, sizeof msg);
      throw Error("tokenizer: bad pre-tokenizer regex at offset " + std::to_string(err_offset) +
                  ": " + reinterpret_cast<const char*>(msg) + ": " + pattern);
    }
    // JIT is an optimisation only: without it (unsupported CPU) the interpreter still works.
    re->jit = pcre2_jit_compile(re->code, PCRE2_JIT_COMPLETE) == 0;
    regexes_.push_back(std::move(re));
  }
}

PreTokenizer::~PreTokenizer() = default;
PreTokenizer::PreTokenizer(PreTokenizer&&) noexcept = default;
PreTokenizer& PreTokenizer::operator=(PreTokenizer&&) noexcept = default;

void PreTokenizer::split(std::string_view text, std::vector<std::string_view>& out) const {
  if (text.empty()) return;
  if (regexes_.empty()) {
    out.push_back(text);
    return;
  }
  // Match data is per call so one PreTokenizer can serve many threads.
  struct MatchData {
    pcre2_match_data* p;
    ~MatchData() { pcre2_match_data_free(p); }
  } md{pcre2_match_data_create(1, nullptr)};
  if (md.p == nullptr) throw Error("tokenizer: out of memory");
  const size_t first = out.size();
  regexes_[0]->split(text, md.p, out);
  for (size_t r = 1; r < regexes_.size(); ++r) {
    std::vector<std::string_view> pieces(out.begin() + static_cast<std::ptrdiff_t>(first),
                                         out.end());
    out.resize(first);
    for (std::string_view piece : pieces) regexes_[r]->split(piece, md.p, out);
  }
}

}  // namespace hostlm::tok
