// Recursive-descent parser for GBNF text. Groups and repetitions become generated rules, so
// the compiled grammar only has three kinds of element: a character set, a rule reference
// and the end of an alternative.
#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "grammar/ir.h"
#include "grammar/nesting.h"
#include "grammar/raw_grammar.h"
#include "grammar/utf8.h"
#include "hostlm/error.h"

namespace hostlm::grammar {
namespace {

// Repetition counts above this would make the grammar (and the matcher's stacks) huge for
// no use; a model cannot usefully emit more anyway.
constexpr long kMaxRepeat = 100000;

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '_';
}

class Parser {
 public:
  explicit Parser(std::string_view text) : s_(text) {
    line_starts_.push_back(0);
    points_before_.reserve(text.size() + 1);
    uint32_t points = 0;
    for (size_t i = 0; i < text.size(); ++i) {
      points_before_.push_back(points);
      if ((static_cast<uint8_t>(text[i]) & 0xC0) != 0x80) ++points;
      if (text[i] == '\n') line_starts_.push_back(i + 1);
    }
    points_before_.push_back(points);
  }

  RawGrammar parse() {
    skip_ws();
    if (eof()) fail(pos_, "empty grammar (no rules)");
    while (!eof()) {
      const size_t start = pos_;
      if (!is_name_char(s_[pos_]))
        fail(pos_, std::string("expected a rule name, found '") + s_[pos_] + "'");
      std::string name = parse_name();
      skip_ws();
      if (s_.substr(pos_, 3) != "::=") fail(pos_, "expected '::=' after rule name '" + name + "'");
      pos_ += 3;
      const uint32_t id = rule_id(name, start);
      if (g_.rules[id].defined) fail(start, "rule '" + name + "' is defined twice");
      auto alts = parse_alternatives(false);
      RawRule& rule = g_.rules[id];
      rule.alts = std::move(alts);
      rule.defined = true;
      line_col(start, rule.line, rule.col);
      skip_ws();
      if (!eof() && s_[pos_] == ')') fail(pos_, "unmatched ')'");
    }
    return std::move(g_);
  }

 private:
  bool eof() const { return pos_ >= s_.size(); }
  char peek() const { return eof() ? '\0' : s_[pos_]; }

  // 1-based line, and column in code points. Every rule records its own as it is parsed, so
  // this looks them up (scanning from the top each time made 8,000 rules take 1.7 s).
  void line_col(size_t at, int& line, int& col) const {
    at = std::min(at, s_.size());
    const auto next = std::upper_bound(line_starts_.begin(), line_starts_.end(), at);
    const size_t start = *(next - 1);
    line = static_cast<int>(next - line_starts_.begin());
    col = static_cast<int>(points_before_[at] - points_before_[start]) + 1;
  }

  [[noreturn]] void fail(size_t at, const std::string& what) const {
    int line = 0, col = 0;
    line_col(at, line, col);
    throw Error("GBNF " + std::to_string(line) + ":" + std::to_string(col) + ": " + what);
  }

  void skip_ws() {
    while (!eof()) {
      const char c = s_[pos_];
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
        ++pos_;
      } else if (c == '#') {
        while (!eof() && s_[pos_] != '\n') ++pos_;
      } else {
        break;
      }
    }
  }

  std::string parse_name() {
    const size_t start = pos_;
    while (!eof() && is_name_char(s_[pos_])) ++pos_;
    return std::string(s_.substr(start, pos_ - start));
  }

  // Newlines do not end a rule; the next `name ::=` does.
  bool at_rule_start() {
    const size_t save = pos_;
    bool yes = false;
    if (!eof() && is_name_char(s_[pos_])) {
      parse_name();
      skip_ws();
      yes = s_.substr(pos_, 3) == "::=";
    }
    pos_ = save;
    return yes;
  }

  uint32_t rule_id(const std::string& name, size_t ref_at) {
    auto [it, fresh] = names_.emplace(name, static_cast<uint32_t>(g_.rules.size()));
    if (fresh) {
      RawRule rule;
      rule.name = name;
      line_col(ref_at, rule.ref_line, rule.ref_col);
      g_.rules.push_back(std::move(rule));
    }
    return it->second;
  }

  uint32_t new_rule(std::vector<std::vector<Elem>> alts, size_t at) {
    RawRule rule;
    rule.name = "(generated #" + std::to_string(g_.rules.size()) + ")";
    rule.alts = std::move(alts);
    rule.defined = true;
    rule.generated = true;
    line_col(at, rule.line, rule.col);
    g_.rules.push_back(std::move(rule));
    return static_cast<uint32_t>(g_.rules.size() - 1);
  }

  std::vector<std::vector<Elem>> parse_alternatives(bool nested) {
    std::vector<std::vector<Elem>> alts;
    alts.push_back(parse_sequence(nested));
    while (peek() == '|') {
      ++pos_;
      alts.push_back(parse_sequence(nested));
    }
    return alts;
  }

  std::vector<Elem> parse_sequence(bool nested) {
    std::vector<Elem> seq;
    for (;;) {
      skip_ws();
      if (eof() || peek() == '|' || peek() == ')') break;
      if (!nested && at_rule_start()) break;
      parse_item(seq);
    }
    return seq;
  }

  Elem chars_elem(CharSet set) {
    g_.sets.push_back(std::move(set));
    return {ElemKind::Chars, static_cast<uint32_t>(g_.sets.size() - 1)};
  }

  uint32_t parse_escape() {
    const size_t at = pos_ - 1;  // the backslash
    if (eof()) fail(at, "unterminated escape");
    const char c = s_[pos_++];
    switch (c) {
      case 'n':
        return '\n';
      case 'r':
        return '\r';
      case 't':
        return '\t';
      case '0':
        return 0;
      case '\\':
      case '"':
      case '\'':
      case '[':
      case ']':
      case '-':
      case '^':
      case '/':
        return static_cast<uint8_t>(c);
      case 'x':
        return parse_hex(2, at);
      case 'u':
        return parse_hex(4, at);
      case 'U':
        return parse_hex(8, at);
      default:
        fail(at, std::string("unknown escape '\\") + c + "'");
    }
  }

  uint32_t parse_hex(int digits, size_t at) {
    uint32_t v = 0;
    for (int i = 0; i < digits; ++i) {
      const char c = peek();
      int d = -1;
      if (c >= '0' && c <= '9') d = c - '0';
      if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
      if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
      if (d < 0) fail(at, "escape needs " + std::to_string(digits) + " hex digits");
      v = v * 16 + static_cast<uint32_t>(d);
      ++pos_;
    }
    if (v > kMaxCodePoint) fail(at, "escape beyond U+10FFFF");
    return v;
  }

  uint32_t parse_char() {
    if (s_[pos_] == '\\') {
      ++pos_;
      return parse_escape();
    }
    const size_t at = pos_;
    auto cp = utf8_next(s_, pos_);
    if (!cp) fail(at, "invalid UTF-8");
    return *cp;
  }

  void parse_literal(std::vector<Elem>& seq) {
    const size_t start = pos_++;
    for (;;) {
      if (eof()) fail(start, "unterminated string literal");
      if (s_[pos_] == '"') break;
      const uint32_t cp = parse_char();
      CharSet set;
      set.add(cp, cp);
      set.finish(false);
      seq.push_back(chars_elem(std::move(set)));
    }
    ++pos_;
  }

  void parse_class(std::vector<Elem>& seq) {
    const size_t start = pos_++;
    bool negate = false;
    if (peek() == '^') {
      negate = true;
      ++pos_;
    }
    CharSet set;
    for (;;) {
      if (eof()) fail(start, "unterminated character class");
      if (s_[pos_] == ']') break;
      const size_t at = pos_;
      const uint32_t lo = parse_char();
      uint32_t hi = lo;
      if (peek() == '-' && pos_ + 1 < s_.size() && s_[pos_ + 1] != ']') {
        ++pos_;
        if (eof()) fail(start, "unterminated character class");
        hi = parse_char();
        if (hi < lo) fail(at, "character range is reversed");
      }
      set.add(lo, hi);
    }
    ++pos_;
    set.finish(negate);
    seq.push_back(chars_elem(std::move(set)));
  }

  long parse_count(size_t at) {
    if (!(peek() >= '0' && peek() <= '9')) fail(at, "bad repetition: expected a number");
    long v = 0;
    while (peek() >= '0' && peek() <= '9') {
      v = v * 10 + (s_[pos_++] - '0');
      if (v > kMaxRepeat) fail(at, "bad repetition: count above " + std::to_string(kMaxRepeat));
    }
    return v;
  }

  void skip_spaces() {
    while (peek() == ' ' || peek() == '\t') ++pos_;
  }

  void parse_item(std::vector<Elem>& seq) {
    const size_t start = pos_;
    const size_t before = seq.size();
    const char c = peek();
    if (c == '"') {
      parse_literal(seq);
    } else if (c == '[') {
      parse_class(seq);
    } else if (c == '.') {
      ++pos_;
      CharSet any;
      any.add(0, kMaxCodePoint);
      any.finish(false);
      seq.push_back(chars_elem(std::move(any)));
    } else if (c == '(') {
      const NestingLevel level(depth_, kMaxNesting,
                               [&](const std::string& what) { fail(start, what); });
      ++pos_;
      auto alts = parse_alternatives(true);
      skip_ws();
      if (peek() != ')') fail(start, "unclosed '('");
      ++pos_;
      seq.push_back({ElemKind::Rule, new_rule(std::move(alts), start)});
    } else if (is_name_char(c)) {
      const std::string name = parse_name();
      seq.push_back({ElemKind::Rule, rule_id(name, start)});
    } else if (c == '*' || c == '+' || c == '?' || c == '{') {
      fail(start, std::string("bad repetition: '") + c + "' has nothing to repeat");
    } else {
      fail(start, std::string("unexpected character '") + c + "'");
    }
    for (;;) {
      skip_spaces();
      const size_t op = pos_;
      long min = 0, max = -1;
      if (peek() == '*') {
        ++pos_;
      } else if (peek() == '+') {
        ++pos_;
        min = 1;
      } else if (peek() == '?') {
        ++pos_;
        max = 1;
      } else if (peek() == '{') {
        ++pos_;
        skip_spaces();
        min = parse_count(op);
        skip_spaces();
        if (peek() == '}') {
          max = min;
        } else if (peek() == ',') {
          ++pos_;
          skip_spaces();
          if (peek() != '}') max = parse_count(op);
          skip_spaces();
        }
        if (peek() != '}') fail(op, "bad repetition: expected '}'");
        ++pos_;
        if (max >= 0 && max < min) fail(op, "bad repetition: maximum below minimum");
      } else {
        break;
      }
      repeat(seq, before, min, max, op);
    }
  }

  // Rewrites seq[before..] as `min` copies followed by an optional chain (bounded) or a
  // right-recursive star rule (unbounded); right recursion keeps the matcher's stacks flat.
  void repeat(std::vector<Elem>& seq, size_t before, long min, long max, size_t op) {
    if (seq.size() == before) return;  // an empty literal ("") repeated is still nothing
    Elem item = seq[before];
    if (seq.size() - before != 1) {
      std::vector<Elem> body(seq.begin() + static_cast<long>(before), seq.end());
      item = {ElemKind::Rule, new_rule({std::move(body)}, op)};
    }
    seq.resize(before);
    for (long i = 0; i < min; ++i) seq.push_back(item);
    if (max < 0) {
      const auto star = static_cast<uint32_t>(g_.rules.size());
      new_rule({{item, {ElemKind::Rule, star}}, {}}, op);
      seq.push_back({ElemKind::Rule, star});
    } else if (max > min) {
      uint32_t chain = new_rule({{item}, {}}, op);
      for (long i = min + 1; i < max; ++i)
        chain = new_rule({{item, {ElemKind::Rule, chain}}, {}}, op);
      seq.push_back({ElemKind::Rule, chain});
    }
  }

  std::string_view s_;
  std::vector<size_t> line_starts_;      // byte offset of each line's first byte
  std::vector<uint32_t> points_before_;  // code points before each byte offset
  size_t pos_ = 0;
  int depth_ = 0;  // groups open at pos_
  RawGrammar g_;
  std::unordered_map<std::string, uint32_t> names_;
};

}  // namespace

CompiledGrammar parse_gbnf(std::string_view text, std::string_view root) {
  return compile_raw(Parser(text).parse(), root);
}

}  // namespace hostlm::grammar
