// Writing GBNF text: literals, class characters, integer ranges, and the JSON base rules.
#include <string>

#include "grammar/json_schema.h"
#include "grammar/utf8.h"

namespace hostlm::grammar {
namespace {

std::string hex(uint32_t v, int digits) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string s(static_cast<size_t>(digits), '0');
  for (int i = digits - 1; i >= 0; --i, v >>= 4) s[static_cast<size_t>(i)] = kHex[v & 15];
  return s;
}

std::string code_escape(uint32_t cp) {
  if (cp < 0x100) return "\\x" + hex(cp, 2);
  if (cp < 0x10000) return "\\u" + hex(cp, 4);
  return "\\U" + hex(cp, 8);
}

std::string nines(size_t n) { return std::string(n, '9'); }
std::string zeros(size_t n) { return std::string(n, '0'); }

std::string digits_any(size_t n) {
  if (n == 0) return "";
  if (n == 1) return "[0-9]";
  return "[0-9]{" + std::to_string(n) + "}";
}

// Both strings have the same length; lo <= hi.
std::string same_length_range(const std::string& lo, const std::string& hi) {
  const size_t n = lo.size();
  if (n == 0) return "";
  if (lo == hi) return gbnf_literal(lo);
  const std::string lo_rest = lo.substr(1), hi_rest = hi.substr(1);
  const char a = lo[0], b = hi[0];
  auto join = [](const std::string& x, const std::string& y) {
    return y.empty() ? x : x + " " + y;
  };
  if (a == b) return join(gbnf_literal(std::string(1, a)), same_length_range(lo_rest, hi_rest));
  if (lo_rest == zeros(n - 1) && hi_rest == nines(n - 1)) {
    return join(std::string("[") + a + "-" + b + "]", digits_any(n - 1));
  }
  std::string out =
      "(" + join(gbnf_literal(std::string(1, a)), same_length_range(lo_rest, nines(n - 1)));
  if (a + 1 <= b - 1) {
    out += " | " +
           join(std::string("[") + static_cast<char>(a + 1) + "-" + static_cast<char>(b - 1) + "]",
                digits_any(n - 1));
  }
  out +=
      " | " + join(gbnf_literal(std::string(1, b)), same_length_range(zeros(n - 1), hi_rest)) + ")";
  return out;
}

}  // namespace

std::string gbnf_literal(std::string_view text) {
  std::string out = "\"";
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t start = pos;
    auto cp = utf8_next(text, pos);
    if (!cp) {  // not valid UTF-8: cannot be matched as code points; keep the byte visible
      out += code_escape(static_cast<uint8_t>(text[start]));
      pos = start + 1;
      continue;
    }
    if (*cp == '"' || *cp == '\\') {
      out += '\\';
      out += static_cast<char>(*cp);
    } else if (*cp < 0x20 || *cp == 0x7F) {
      out += code_escape(*cp);
    } else {
      out.append(text.substr(start, pos - start));
    }
  }
  return out + "\"";
}

std::string gbnf_class_char(uint32_t cp) {
  if ((cp >= '0' && cp <= '9') || (cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z')) {
    return std::string(1, static_cast<char>(cp));
  }
  return code_escape(cp);
}

std::string int_range_gbnf(uint64_t lo, uint64_t hi) {
  std::string a = std::to_string(lo), b = std::to_string(hi);
  if (a.size() == b.size()) return same_length_range(a, b);
  std::string out = "(" + same_length_range(a, nines(a.size()));
  if (b.size() > a.size() + 1) {
    // Every number with a length strictly between the two.
    const size_t min_rest = a.size(), max_rest = b.size() - 2;
    out += " | [1-9] [0-9]{" + std::to_string(min_rest) +
           (min_rest == max_rest ? "" : "," + std::to_string(max_rest)) + "}";
  }
  out += " | " + same_length_range("1" + zeros(b.size() - 1), b) + ")";
  return out;
}

std::string json_base_rules() {
  // White space is bounded so that a model cannot loop on it forever; one newline plus
  // indentation covers pretty-printed JSON.
  return R"GBNF(ws ::= ([ \t] | "\n" [ \t]{0,40})?
json-char ::= [^"\\\x00-\x1F] | "\\" (["\\/bfnrt] | "u" json-u4)
json-u4 ::= [0-9a-cA-CefEF] [0-9a-fA-F]{3} | [dD] [0-7] [0-9a-fA-F]{2}
json-string ::= "\"" json-char* "\""
json-int ::= "-"? ("0" | [1-9] [0-9]{0,14})
json-frac ::= "." [0-9]{1,16}
json-exp ::= [eE] [-+]? [0-9]{1,2}
json-number ::= json-int json-frac? json-exp?
json-boolean ::= "true" | "false"
json-null ::= "null"
json-value ::= json-object | json-array | json-string | json-number | json-boolean | json-null
json-member ::= json-string ws ":" ws json-value ws
json-object ::= "{" ws (json-member ("," ws json-member)*)? "}"
json-array ::= "[" ws (json-value ws ("," ws json-value ws)*)? "]"
)GBNF";
}

std::string json_object_gbnf() { return "root ::= ws json-object ws\n" + json_base_rules(); }

}  // namespace hostlm::grammar
