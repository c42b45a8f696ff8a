// JSON Schema `pattern` (ECMAScript regex, common subset) -> GBNF over the JSON-escaped
// string content. The regex speaks about decoded characters; the grammar must produce their
// JSON encoding, so '"' becomes \" , a newline becomes \n, and so on.
#include <algorithm>
#include <cctype>
#include <string>
#include <string_view>

#include "grammar/ir.h"
#include "grammar/json_schema.h"
#include "grammar/nesting.h"
#include "grammar/utf8.h"
#include "hostlm/error.h"

namespace hostlm::grammar {
namespace {

// How a control character or quote is written inside a JSON string, or "" if not at all.
std::string json_escape_of(uint32_t cp) {
  switch (cp) {
    case '"':
      return "\\\"";
    case '\\':
      return "\\\\";
    case '\n':
      return "\\n";
    case '\t':
      return "\\t";
    case '\r':
      return "\\r";
    case '\b':
      return "\\b";
    case '\f':
      return "\\f";
    default:
      return "";
  }
}

// GBNF for one character drawn from `set`, in its JSON encoding.
std::string encode_set(const CharSet& set) {
  std::string raw;
  for (auto [lo, hi] : set.ranges) {
    // Raw in a JSON string: everything from U+0020 except '"' and '\'.
    auto emit = [&](uint32_t a, uint32_t b) {
      if (a > b) return;
      raw += gbnf_class_char(a);
      if (b > a) raw += "-" + gbnf_class_char(b);
    };
    const uint32_t a = std::max<uint32_t>(lo, 0x20);
    if (a > hi) continue;
    // Split around the two characters that must be escaped.
    uint32_t from = a;
    for (uint32_t special : {uint32_t{'"'}, uint32_t{'\\'}}) {
      if (special >= from && special <= hi) {
        if (special > from) emit(from, special - 1);
        from = special + 1;
      }
    }
    if (from <= hi) emit(from, hi);
  }
  std::string alts;
  if (!raw.empty()) alts = "[" + raw + "]";
  for (uint32_t c : {uint32_t{'"'}, uint32_t{'\\'}, uint32_t{'\n'}, uint32_t{'\t'}, uint32_t{'\r'},
                     uint32_t{'\b'}, uint32_t{'\f'}}) {
    if (set.contains(c)) alts += (alts.empty() ? "" : " | ") + gbnf_literal(json_escape_of(c));
  }
  if (alts.empty()) return "[^\\x00-\\U0010FFFF]";  // an empty set: matches nothing
  return "(" + alts + ")";
}

class RegexConverter {
 public:
  RegexConverter(std::string_view pattern, const std::string& where) : p_(pattern), where_(where) {}

  std::string convert() {
    bool anchored_start = false, anchored_end = false;
    if (!p_.empty() && p_[0] == '^') {
      anchored_start = true;
      ++i_;
    }
    std::string body = parse_alternatives();
    if (i_ < p_.size() && p_[i_] == '$') {
      anchored_end = true;
      ++i_;
    }
    if (i_ != p_.size())
      fail(p_[i_] == ')' ? "unmatched ')'" : "'^' or '$' only as first or last character");
    // Search semantics: without anchors, anything may come before and after.
    if (!anchored_start) body = "json-char* " + body;
    if (!anchored_end) body += " json-char*";
    return "(" + body + ")";
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw Error("JSON Schema: unsupported 'pattern' at " + where_ + ": " + what + " (in /" +
                std::string(p_) + "/ at offset " + std::to_string(i_) + ")");
  }

  bool at_end() const { return i_ >= p_.size(); }

  std::string parse_alternatives() {
    std::string out = parse_sequence();
    bool many = false;
    while (!at_end() && p_[i_] == '|') {
      ++i_;
      out += " | " + parse_sequence();
      many = true;
    }
    return many ? "(" + out + ")" : out;
  }

  std::string parse_sequence() {
    std::string out = "(";
    while (!at_end() && p_[i_] != '|' && p_[i_] != ')') {
      if (p_[i_] == '$' && i_ + 1 == p_.size()) break;
      std::string atom = parse_atom();
      atom += parse_quantifier();
      out += " " + atom;
    }
    return out + " )";
  }

  std::string parse_quantifier() {
    if (at_end()) return "";
    std::string q;
    const char c = p_[i_];
    if (c == '*' || c == '+' || c == '?') {
      q = std::string(1, c);
      ++i_;
    } else if (c == '{') {
      const size_t close = p_.find('}', i_);
      if (close == std::string_view::npos) fail("unterminated {");
      const std::string inner(p_.substr(i_ + 1, close - i_ - 1));
      for (char d : inner) {
        if (!(d >= '0' && d <= '9') && d != ',') fail("bad repetition {" + inner + "}");
      }
      q = "{" + inner + "}";
      i_ = close + 1;
    } else {
      return "";
    }
    if (!at_end() && p_[i_] == '?') ++i_;  // lazy: the same language
    if (!at_end() && (p_[i_] == '*' || p_[i_] == '+' || p_[i_] == '?' || p_[i_] == '{'))
      fail("nested quantifier");
    return q;
  }

  uint32_t next_cp() {
    auto cp = utf8_next(p_, i_);
    if (!cp) fail("invalid UTF-8");
    return *cp;
  }

  uint32_t hex_escape(int digits) {
    uint32_t v = 0;
    for (int k = 0; k < digits; ++k) {
      if (at_end() || !std::isxdigit(static_cast<unsigned char>(p_[i_]))) fail("bad hex escape");
      const char h = p_[i_++];
      v = v * 16 + static_cast<uint32_t>(h <= '9' ? h - '0' : (h | 0x20) - 'a' + 10);
    }
    return v;
  }

  // An escape after '\'. Class escapes (\d \w \s and negations) add to `set` and return
  // false; a single character is returned in `cp`.
  bool escape(CharSet& set, uint32_t& cp) {
    if (at_end()) fail("trailing backslash");
    const char c = p_[i_++];
    auto add_class = [&](char k, bool negate) {
      CharSet s;
      if (k == 'd') s.add('0', '9');
      if (k == 'w') {
        s.add('0', '9');
        s.add('a', 'z');
        s.add('A', 'Z');
        s.add('_', '_');
      }
      if (k == 's') {
        s.add('\t', '\r');
        s.add(' ', ' ');
        s.add(0xA0, 0xA0);
        s.add(0x2028, 0x2029);
        s.add(0xFEFF, 0xFEFF);
      }
      s.finish(negate);
      for (auto r : s.ranges) set.add(r.first, r.second);
    };
    switch (c) {
      case 'd':
      case 'w':
      case 's':
        add_class(c, false);
        return false;
      case 'D':
      case 'W':
      case 'S':
        add_class(static_cast<char>(c | 0x20), true);
        return false;
      case 'n':
        cp = '\n';
        return true;
      case 't':
        cp = '\t';
        return true;
      case 'r':
        cp = '\r';
        return true;
      case 'f':
        cp = '\f';
        return true;
      case 'v':
        cp = '\v';
        return true;
      case '0':
        cp = 0;
        return true;
      case 'x':
        cp = hex_escape(2);
        return true;
      case 'u':
        cp = hex_escape(4);
        return true;
      case 'b':
      case 'B':
        fail("word boundaries");
      default:
        if (std::isalnum(static_cast<unsigned char>(c))) fail(std::string("escape \\") + c);
        cp = static_cast<uint8_t>(c);
        return true;
    }
  }

  std::string parse_atom() {
    const char c = p_[i_];
    if (c == '(') {
      const NestingLevel level(depth_, kMaxNesting,
                               [this](const std::string& what) { fail(what); });
      ++i_;
      if (!at_end() && p_[i_] == '?') {
        if (p_.substr(i_, 2) != "?:") fail("lookarounds and named groups");
        i_ += 2;
      }
      std::string inner = parse_alternatives();
      if (at_end() || p_[i_] != ')') fail("unclosed '('");
      ++i_;
      return "(" + inner + ")";
    }
    if (c == '[') return parse_class();
    if (c == '.') {
      ++i_;
      CharSet any;
      any.add('\n', '\n');
      any.add('\r', '\r');
      any.add(0x2028, 0x2029);
      any.finish(true);
      return encode_set(any);
    }
    if (c == '^' || c == '$') fail("'^' or '$' only as first or last character");
    if (c == '*' || c == '+' || c == '?' || c == '{') fail("quantifier with nothing to repeat");
    CharSet set;
    uint32_t cp = 0;
    if (c == '\\') {
      ++i_;
      if (escape(set, cp)) set.add(cp, cp);
    } else {
      cp = next_cp();
      set.add(cp, cp);
    }
    set.finish(false);
    return encode_set(set);
  }

  std::string parse_class() {
    ++i_;
    bool negate = false;
    if (!at_end() && p_[i_] == '^') {
      negate = true;
      ++i_;
    }
    CharSet set;
    bool first = true;
    for (;;) {
      if (at_end()) fail("unterminated character class");
      if (p_[i_] == ']' && !first) break;
      first = false;
      uint32_t lo = 0;
      if (p_[i_] == '\\') {
        ++i_;
        if (!escape(set, lo)) continue;
      } else {
        lo = next_cp();
      }
      uint32_t hi = lo;
      if (i_ + 1 < p_.size() && p_[i_] == '-' && p_[i_ + 1] != ']') {
        ++i_;
        if (p_[i_] == '\\') {
          ++i_;
          CharSet ignored;
          if (!escape(ignored, hi)) fail("class escape as a range end");
        } else {
          hi = next_cp();
        }
        if (hi < lo) fail("reversed range");
      }
      set.add(lo, hi);
    }
    ++i_;
    set.finish(negate);
    return encode_set(set);
  }

  std::string_view p_;
  size_t i_ = 0;
  int depth_ = 0;  // groups open at i_
  std::string where_;
};

}  // namespace

std::string regex_to_gbnf(std::string_view pattern, const std::string& where) {
  return RegexConverter(pattern, where).convert();
}

}  // namespace hostlm::grammar
