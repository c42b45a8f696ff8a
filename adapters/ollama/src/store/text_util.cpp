#include "text_util.h"

#include <utf8proc.h>

#include <charconv>
#include <cmath>
#include <cstdio>

namespace hostlm::ollama {

char32_t next_rune(std::string_view s, size_t& i) {
  utf8proc_int32_t r = -1;
  const auto n = utf8proc_iterate(reinterpret_cast<const utf8proc_uint8_t*>(s.data() + i),
                                  static_cast<utf8proc_ssize_t>(s.size() - i), &r);
  if (n <= 0 || r < 0) {
    ++i;
    return 0xFFFD;
  }
  i += static_cast<size_t>(n);
  return static_cast<char32_t>(r);
}

void append_utf8(std::string& out, char32_t r) {
  utf8proc_uint8_t buf[4];
  const auto n = utf8proc_encode_char(static_cast<utf8proc_int32_t>(r), buf);
  out.append(reinterpret_cast<const char*>(buf), static_cast<size_t>(n));
}

bool is_go_printable(char32_t r) {
  if (r == U' ') return true;
  switch (utf8proc_category(static_cast<utf8proc_int32_t>(r))) {
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
    case UTF8PROC_CATEGORY_NO:
    case UTF8PROC_CATEGORY_PC:
    case UTF8PROC_CATEGORY_PD:
    case UTF8PROC_CATEGORY_PS:
    case UTF8PROC_CATEGORY_PE:
    case UTF8PROC_CATEGORY_PI:
    case UTF8PROC_CATEGORY_PF:
    case UTF8PROC_CATEGORY_PO:
    case UTF8PROC_CATEGORY_SM:
    case UTF8PROC_CATEGORY_SC:
    case UTF8PROC_CATEGORY_SK:
    case UTF8PROC_CATEGORY_SO:
      return true;
    default:
      return false;
  }
}

namespace {
bool is_go_space(char32_t r) {
  switch (r) {
    case '\t':
    case '\n':
    case '\v':
    case '\f':
    case '\r':
    case ' ':
    case 0x85:
    case 0xA0:
      return true;
    default:
      return r > 0xFF &&
             utf8proc_category(static_cast<utf8proc_int32_t>(r)) == UTF8PROC_CATEGORY_ZS;
  }
}
}  // namespace

std::string_view trim_space(std::string_view s) {
  size_t start = 0;
  while (start < s.size()) {
    size_t j = start;
    if (!is_go_space(next_rune(s, j))) break;
    start = j;
  }
  size_t end = start;  // end of the last non-space rune
  for (size_t i = start; i < s.size();) {
    const char32_t r = next_rune(s, i);
    if (!is_go_space(r)) end = i;
  }
  return s.substr(start, end - start);
}

std::string go_quote(std::string_view s) {
  std::string out = "\"";
  for (size_t i = 0; i < s.size();) {
    const size_t start = i;
    const char32_t r = next_rune(s, i);
    const bool invalid = r == 0xFFFD && !(i - start == 3 && s.substr(start, 3) == "\xEF\xBF\xBD");
    char buf[16];
    if (invalid) {
      std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned char>(s[start]));
      out += buf;
    } else if (r == '"' || r == '\\') {
      out += '\\';
      out += static_cast<char>(r);
    } else if (is_go_printable(r)) {
      out.append(s.substr(start, i - start));
    } else {
      switch (r) {
        case '\a':
          out += "\\a";
          break;
        case '\b':
          out += "\\b";
          break;
        case '\f':
          out += "\\f";
          break;
        case '\n':
          out += "\\n";
          break;
        case '\r':
          out += "\\r";
          break;
        case '\t':
          out += "\\t";
          break;
        case '\v':
          out += "\\v";
          break;
        default:
          if (r < 0x20 || r == 0x7F) {
            std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned>(r));
          } else if (r < 0x10000) {
            std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(r));
          } else {
            std::snprintf(buf, sizeof buf, "\\U%08x", static_cast<unsigned>(r));
          }
          out += buf;
      }
    }
  }
  return out + "\"";
}

std::string format_number(double v) {
  if (std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 1e18) {
    return std::to_string(static_cast<long long>(v));
  }
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, ec == std::errc() ? end : buf);
}

std::string to_lower(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

}  // namespace hostlm::ollama
