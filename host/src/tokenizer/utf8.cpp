#include "tokenizer/utf8.h"

#include <array>
#include <cstring>

namespace hostlm::tok {
namespace {

// Well-formed sequences (Unicode Table 3-7): the length a lead byte announces and the range
// its second byte must fall in; every later byte is 80..BF. Length 0: not a lead byte.
struct LeadInfo {
  uint8_t length, lo, hi;
};

constexpr LeadInfo compute_lead_info(unsigned b) {
  if (b < 0x80) return {1, 0, 0};
  if (b < 0xC2) return {0, 0, 0};
  if (b < 0xE0) return {2, 0x80, 0xBF};
  if (b == 0xE0) return {3, 0xA0, 0xBF};
  if (b == 0xED) return {3, 0x80, 0x9F};
  if (b < 0xF0) return {3, 0x80, 0xBF};
  if (b == 0xF0) return {4, 0x90, 0xBF};
  if (b < 0xF4) return {4, 0x80, 0xBF};
  if (b == 0xF4) return {4, 0x80, 0x8F};
  return {0, 0, 0};
}

constexpr std::array<LeadInfo, 256> kLeadInfo = [] {
  std::array<LeadInfo, 256> table{};
  for (unsigned b = 0; b < 256; ++b) table[b] = compute_lead_info(b);
  return table;
}();

LeadInfo lead_info(unsigned char b) { return kLeadInfo[b]; }

// Index of the first non-ASCII byte at or after i, eight bytes at a time.
size_t skip_ascii(std::string_view s, size_t i) {
  while (i + 8 <= s.size()) {
    uint64_t w;
    std::memcpy(&w, s.data() + i, 8);
    if (w & 0x8080808080808080ull) break;
    i += 8;
  }
  while (i < s.size() && static_cast<unsigned char>(s[i]) < 0x80) ++i;
  return i;
}

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";

}  // namespace

char32_t previous_code_point(std::string_view s, size_t i) {
  size_t start = i - 1;
  while (start > 0 && (static_cast<unsigned char>(s[start]) & 0xC0) == 0x80) --start;
  return next_code_point(s, start);
}

void append_utf8(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

size_t append_utf8_lossy(std::string_view in, std::string& out, bool final) {
  size_t i = 0;
  const size_t n = in.size();
  while (i < n) {
    // Runs of ASCII are the common case; copy them in one go.
    const size_t j = skip_ascii(in, i);
    out.append(in.data() + i, j - i);
    i = j;
    if (i == n) break;
    const LeadInfo info = lead_info(static_cast<unsigned char>(in[i]));
    if (info.length == 0) {
      out.append(kReplacement);
      ++i;
      continue;
    }
    size_t k = 1;
    for (; k < info.length && i + k < n; ++k) {
      const auto b = static_cast<unsigned char>(in[i + k]);
      const unsigned char lo = k == 1 ? info.lo : 0x80, hi = k == 1 ? info.hi : 0xBF;
      if (b < lo || b > hi) break;
    }
    if (k == info.length) {
      out.append(in.data() + i, k);
    } else if (i + k == n && !final) {
      return i;  // a valid prefix that later bytes may complete
    } else {
      out.append(kReplacement);
    }
    i += k;
  }
  return i;
}

bool is_valid_utf8(std::string_view s) {
  size_t i = 0;
  const size_t n = s.size();
  while ((i = skip_ascii(s, i)) < n) {
    const auto b0 = static_cast<unsigned char>(s[i]);
    const LeadInfo info = lead_info(b0);
    if (info.length == 0 || i + info.length > n) return false;
    const auto b1 = static_cast<unsigned char>(s[i + 1]);
    if (b1 < info.lo || b1 > info.hi) return false;
    for (size_t k = 2; k < info.length; ++k) {
      if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return false;
    }
    i += info.length;
  }
  return true;
}

bool is_white_space(char32_t cp) {
  if (cp < 0x80) return cp == ' ' || (cp >= 0x09 && cp <= 0x0D);
  switch (cp) {
    case 0x85:
    case 0xA0:
    case 0x1680:
    case 0x2028:
    case 0x2029:
    case 0x202F:
    case 0x205F:
    case 0x3000:
      return true;
    default:
      return cp >= 0x2000 && cp <= 0x200A;
  }
}

}  // namespace hostlm::tok
