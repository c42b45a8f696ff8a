#include "tokenizer/nfc.h"

#include <utf8proc.h>

#include <cstdlib>
#include <vector>

#include "hostlm/error.h"
#include "tokenizer/utf8.h"

namespace hostlm::tok {
namespace {

// Below U+0300 nothing decomposes, composes with what precedes it, or has a combining class.
constexpr char32_t kFirstCandidate = 0x300;

// The NFC quick check of UAX #15: a string is in NFC when none of its characters is
// NFC_QC=No (changes under NFC on its own) or Maybe (may compose with what precedes it), and
// the combining classes of each run of marks do not decrease. One bit per code point marks
// the No and Maybe characters, derived from utf8proc's own decomposition data.
class NfcQuickCheck {
 public:
  static const NfcQuickCheck& get() {
    static const NfcQuickCheck table;
    return table;
  }
  bool no_or_maybe(char32_t cp) const { return (bits_[cp >> 6] >> (cp & 63)) & 1; }

 private:
  NfcQuickCheck() : bits_((0x110000 >> 6), 0) {
    // Composites below U+0300 (like U+00C7) still make their last character a Maybe.
    for (char32_t cp = 0xC0; cp < 0x110000; ++cp) {
      if (cp >= 0xD800 && cp <= 0xDFFF) continue;
      const auto c = static_cast<utf8proc_int32_t>(cp);
      utf8proc_int32_t decomposed[8];
      int boundclass = 0;
      const utf8proc_ssize_t n =
          utf8proc_decompose_char(c, decomposed, 8, UTF8PROC_DECOMPOSE, &boundclass);
      if (n == 1 && decomposed[0] == c) continue;
      if (!composes_back(cp)) {
        if (cp >= kFirstCandidate)
          set(cp);  // a singleton, an exclusion or a non-starter decomposition
      } else if (n >= 2 && n <= 8) {
        // cp is a primary composite; the last character of its decomposition is the one
        // a composition could join to what comes before it.
        set(static_cast<char32_t>(decomposed[n - 1]));
      }
    }
  }
  static bool composes_back(char32_t cp) {
    std::string s;
    append_utf8(s, cp);
    utf8proc_uint8_t* out = nullptr;
    const utf8proc_ssize_t n =
        utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(s.data()),
                     static_cast<utf8proc_ssize_t>(s.size()), &out,
                     static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
    const bool same =
        n >= 0 && std::string_view(reinterpret_cast<char*>(out), static_cast<size_t>(n)) == s;
    std::free(out);
    return same;
  }
  void set(char32_t cp) { bits_[cp >> 6] |= uint64_t{1} << (cp & 63); }
  std::vector<uint64_t> bits_;
};

bool is_nfc(std::string_view text, size_t i) {
  const NfcQuickCheck& qc = NfcQuickCheck::get();
  int last_class = 0;
  while (i < text.size()) {
    const char32_t cp = next_code_point(text, i);
    if (cp < kFirstCandidate) {
      last_class = 0;
      continue;
    }
    if (qc.no_or_maybe(cp)) return false;
    const int cls = utf8proc_get_property(static_cast<utf8proc_int32_t>(cp))->combining_class;
    if (cls != 0 && cls < last_class) return false;
    last_class = cls;
  }
  return true;
}

}  // namespace

bool nfc_normalize(std::string_view text, std::string& out) {
  // Code points below U+0300 are encoded with bytes below 0xCC and are all NFC-stable.
  size_t i = 0;
  while (i < text.size() && static_cast<unsigned char>(text[i]) < 0xCC) ++i;
  if (i == text.size() || is_nfc(text, i)) return false;
  utf8proc_uint8_t* mapped = nullptr;
  const utf8proc_ssize_t n =
      utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(text.data()),
                   static_cast<utf8proc_ssize_t>(text.size()), &mapped,
                   static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
  if (n < 0) {
    throw Error(std::string("tokenizer: NFC normalisation failed: ") + utf8proc_errmsg(n));
  }
  out.assign(reinterpret_cast<char*>(mapped), static_cast<size_t>(n));
  std::free(mapped);
  return true;
}

}  // namespace hostlm::tok
