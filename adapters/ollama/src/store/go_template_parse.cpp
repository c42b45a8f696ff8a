// Lexer and parser for the Go text/template subset (spec 2.2). Written from the language
// description: actions between {{ and }}, `{{- ` / ` -}}` trim markers, comments, and the
// control structures if / else if / else / range / with / break / continue / end.
#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <set>

#include "go_template_ast.h"
#include "hostlm/nesting_level.h"
#include "hostlm/ollama/errors.h"
#include "text_util.h"

namespace hostlm::ollama::tmpl {
namespace {

struct Item {
  enum class Kind {
    kText,
    kLeft,
    kRight,
    kSpace,
    kField,
    kVariable,
    kDot,
    kIdent,
    kString,
    kChar,
    kNumber,
    kPipe,
    kLParen,
    kRParen,
    kDeclare,
    kAssign,
    kComma,
    kEOF
  };
  Kind kind;
  std::string text;  // kString: the unquoted value
  int line;
};

[[noreturn]] void fail(int line, const std::string& message) {
  throw bad_request("template: :" + std::to_string(line) + ": " + message);
}

// Blocks, else-if chains and parentheses each recurse here, and again when the template runs
// and when its tree is freed. Templates come in requests (/api/create); real ones nest a
// handful of levels.
constexpr int kMaxNesting = 256;

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }
bool is_ident_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool is_ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

const std::set<std::string, std::less<>>& functions() {
  static const std::set<std::string, std::less<>> names = {"and",
                                                           "or",
                                                           "not",
                                                           "eq",
                                                           "ne",
                                                           "lt",
                                                           "le",
                                                           "gt",
                                                           "ge",
                                                           "len",
                                                           "index",
                                                           "slice",
                                                           "print",
                                                           "printf",
                                                           "println",
                                                           "json",
                                                           "currentDate",
                                                           "yesterdayDate",
                                                           "toTypeScriptType"};
  return names;
}

class Lexer {
 public:
  explicit Lexer(std::string_view s) : s_(s) {}

  std::vector<Item> run() {
    while (pos_ < s_.size()) {
      const size_t open = s_.find("{{", pos_);
      std::string text(s_.substr(pos_, (open == std::string_view::npos ? s_.size() : open) - pos_));
      if (trim_next_) {
        text.erase(0, std::min(text.size(), text.find_first_not_of(" \t\r\n")));
        trim_next_ = false;
      }
      const int text_line = line_;
      advance((open == std::string_view::npos ? s_.size() : open) - pos_);
      if (open == std::string_view::npos) {
        emit_text(std::move(text), text_line);
        break;
      }
      // "{{- " trims the text before it.
      const bool left_trim = s_.size() > pos_ + 3 && s_[pos_ + 2] == '-' && is_space(s_[pos_ + 3]);
      if (left_trim) text.erase(text.find_last_not_of(" \t\r\n") + 1);
      emit_text(std::move(text), text_line);
      advance(left_trim ? 3 : 2);
      size_t p = pos_;
      while (left_trim && p < s_.size() && is_space(s_[p])) ++p;
      if (s_.compare(p, 2, "/*") == 0) {
        comment(p);
      } else {
        items_.push_back({Item::Kind::kLeft, "", line_});
        action();
      }
    }
    items_.push_back({Item::Kind::kEOF, "", line_});
    return std::move(items_);
  }

 private:
  void advance(size_t n) {
    for (size_t i = 0; i < n; ++i)
      if (s_[pos_ + i] == '\n') ++line_;
    pos_ += n;
  }
  void emit_text(std::string text, int line) {
    if (!text.empty()) items_.push_back({Item::Kind::kText, std::move(text), line});
  }
  // At pos_: the right delimiter, "}}" or " -}}" (which trims the text after it).
  bool at_right() const { return s_.compare(pos_, 2, "}}") == 0; }
  bool at_right_trim() const {
    return pos_ + 3 < s_.size() && is_space(s_[pos_]) && s_.compare(pos_ + 1, 3, "-}}") == 0;
  }

  void comment(size_t start) {
    advance(start - pos_);
    const int line = line_;
    const size_t end = s_.find("*/", pos_ + 2);
    if (end == std::string_view::npos) fail(line, "unclosed comment");
    advance(end + 2 - pos_);
    if (at_right()) {
      advance(2);
    } else if (at_right_trim()) {
      advance(4);
      trim_next_ = true;
    } else {
      fail(line, "comment ends before closing delimiter");
    }
  }

  void action() {
    const int start_line = line_;
    int parens = 0;
    for (;;) {
      if (pos_ >= s_.size()) fail(start_line, "unclosed action");
      if (at_right_trim()) {
        advance(4);
        trim_next_ = true;
        items_.push_back({Item::Kind::kRight, "", line_});
        return;
      }
      if (at_right()) {
        advance(2);
        items_.push_back({Item::Kind::kRight, "", line_});
        return;
      }
      const char c = s_[pos_];
      const char next = pos_ + 1 < s_.size() ? s_[pos_ + 1] : '\0';
      const int line = line_;
      if (is_space(c)) {
        simple(Item::Kind::kSpace, 1);
      } else if (c == '|') {
        simple(Item::Kind::kPipe, 1);
      } else if (c == '(') {
        ++parens;
        simple(Item::Kind::kLParen, 1);
      } else if (c == ')') {
        if (--parens < 0) fail(line, "unexpected right paren");
        simple(Item::Kind::kRParen, 1);
      } else if (c == ',') {
        simple(Item::Kind::kComma, 1);
      } else if (c == ':' && next == '=') {
        simple(Item::Kind::kDeclare, 2);
      } else if (c == '=') {
        simple(Item::Kind::kAssign, 1);
      } else if (c == '"') {
        quoted();
      } else if (c == '`') {
        const size_t end = s_.find('`', pos_ + 1);
        if (end == std::string_view::npos) fail(line, "unterminated raw quoted string");
        std::string value(s_.substr(pos_ + 1, end - pos_ - 1));
        advance(end + 1 - pos_);
        items_.push_back({Item::Kind::kString, std::move(value), line});
      } else if (c == '\'') {
        char_constant();
      } else if (std::isdigit(static_cast<unsigned char>(c)) ||
                 ((c == '+' || c == '-') &&
                  (std::isdigit(static_cast<unsigned char>(next)) || next == '.')) ||
                 (c == '.' && std::isdigit(static_cast<unsigned char>(next)))) {
        number();
      } else if (c == '.') {
        if (is_ident_start(next)) {
          size_t n = 1;
          while (pos_ + n < s_.size() && is_ident_char(s_[pos_ + n])) ++n;
          items_.push_back({Item::Kind::kField, std::string(s_.substr(pos_ + 1, n - 1)), line});
          advance(n);
        } else {
          simple(Item::Kind::kDot, 1);
        }
      } else if (c == '$') {
        size_t n = 1;
        while (pos_ + n < s_.size() && is_ident_char(s_[pos_ + n])) ++n;
        items_.push_back({Item::Kind::kVariable, std::string(s_.substr(pos_, n)), line});
        advance(n);
      } else if (is_ident_start(c)) {
        size_t n = 0;
        while (pos_ + n < s_.size() && is_ident_char(s_[pos_ + n])) ++n;
        items_.push_back({Item::Kind::kIdent, std::string(s_.substr(pos_, n)), line});
        advance(n);
      } else {
        fail(line, std::string("unexpected \"") + c + "\" in command");
      }
    }
  }

  void simple(Item::Kind kind, size_t n) {
    items_.push_back({kind, std::string(s_.substr(pos_, n)), line_});
    advance(n);
  }

  // Reads one escape after a backslash into out (Go's string literal escapes).
  void escape(size_t& p, std::string& out, int line) {
    auto hex = [&](size_t digits) {
      if (p + digits > s_.size()) fail(line, "bad escape in string");
      const std::string h(s_.substr(p, digits));
      if (!std::all_of(h.begin(), h.end(),
                       [](char x) { return std::isxdigit(static_cast<unsigned char>(x)); }))
        fail(line, "bad escape in string");
      p += digits;
      return static_cast<char32_t>(std::strtoul(h.c_str(), nullptr, 16));
    };
    const char e = s_[p++];
    switch (e) {
      case 'n':
        out += '\n';
        break;
      case 't':
        out += '\t';
        break;
      case 'r':
        out += '\r';
        break;
      case 'a':
        out += '\a';
        break;
      case 'b':
        out += '\b';
        break;
      case 'f':
        out += '\f';
        break;
      case 'v':
        out += '\v';
        break;
      case '\\':
        out += '\\';
        break;
      case '"':
        out += '"';
        break;
      case '\'':
        out += '\'';
        break;
      case 'x':
        out += static_cast<char>(hex(2));
        break;
      case 'u':
        append_utf8(out, hex(4));
        break;
      case 'U':
        append_utf8(out, hex(8));
        break;
      default:
        if (e >= '0' && e <= '7' && p + 1 < s_.size()) {
          const std::string o{e, s_[p], s_[p + 1]};
          p += 2;
          out += static_cast<char>(std::strtoul(o.c_str(), nullptr, 8));
        } else {
          fail(line, "bad escape in string");
        }
    }
  }

  void quoted() {
    const int line = line_;
    std::string value;
    size_t p = pos_ + 1;
    for (;;) {
      if (p >= s_.size() || s_[p] == '\n') fail(line, "unterminated quoted string");
      const char c = s_[p++];
      if (c == '"') break;
      if (c == '\\') {
        if (p >= s_.size()) fail(line, "unterminated quoted string");
        escape(p, value, line);
      } else {
        value += c;
      }
    }
    advance(p - pos_);
    items_.push_back({Item::Kind::kString, std::move(value), line});
  }

  void char_constant() {
    const int line = line_;
    size_t p = pos_ + 1;
    std::string value;
    if (p < s_.size() && s_[p] == '\\') {
      ++p;
      escape(p, value, line);
    } else {
      size_t q = p;
      append_utf8(value, next_rune(s_, q));
      p = q;
    }
    if (p >= s_.size() || s_[p] != '\'') fail(line, "unterminated character constant");
    advance(p + 1 - pos_);
    size_t i = 0;
    items_.push_back(
        {Item::Kind::kChar, std::to_string(static_cast<uint32_t>(next_rune(value, i))), line});
  }

  void number() {
    size_t n = 0;
    if (s_[pos_] == '+' || s_[pos_] == '-') ++n;
    while (pos_ + n < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[pos_ + n])) ||
                                    s_[pos_ + n] == '.' || s_[pos_ + n] == '_' ||
                                    ((s_[pos_ + n] == '+' || s_[pos_ + n] == '-') &&
                                     (s_[pos_ + n - 1] == 'e' || s_[pos_ + n - 1] == 'E' ||
                                      s_[pos_ + n - 1] == 'p' || s_[pos_ + n - 1] == 'P'))))
      ++n;
    simple(Item::Kind::kNumber, n);
  }

  std::string_view s_;
  size_t pos_ = 0;
  int line_ = 1;
  bool trim_next_ = false;
  std::vector<Item> items_;
};

class Parser {
 public:
  explicit Parser(std::vector<Item> items) : items_(std::move(items)) { vars_.push_back("$"); }

  List parse_all() {
    std::string end;
    List list = parse_list(end, false, false);
    return list;
  }

 private:
  const Item& peek() const { return items_[pos_]; }
  const Item& next() { return items_[pos_ < items_.size() - 1 ? pos_++ : pos_]; }
  const Item& peek_non_space() {
    while (peek().kind == Item::Kind::kSpace) ++pos_;
    return peek();
  }
  const Item& next_non_space() {
    peek_non_space();
    return next();
  }
  void expect_right(const char* context) {
    const Item& it = next_non_space();
    if (it.kind != Item::Kind::kRight)
      fail(it.line, std::string("unexpected \"") + it.text + "\" in " + context);
  }

  // Parses until EOF or, when `in_control`, an {{end}} or {{else}} whose name goes to `end`.
  List parse_list(std::string& end, bool in_control, bool in_range) {
    List list;
    for (;;) {
      const Item& it = next();
      switch (it.kind) {
        case Item::Kind::kEOF:
          if (in_control) fail(it.line, "unexpected EOF");
          return list;
        case Item::Kind::kText:
          list.push_back(Node{Node::Kind::kText, it.text, nullptr, nullptr, nullptr, it.line});
          break;
        case Item::Kind::kLeft: {
          const Item& word = peek_non_space();
          const int line = word.line;
          if (word.kind == Item::Kind::kIdent) {
            const std::string w = word.text;
            if (w == "end" || w == "else") {
              if (!in_control) fail(line, "unexpected {{" + w + "}}");
              next();
              end = w;
              if (w == "end") expect_right("end");
              return list;
            }
            if (w == "if" || w == "with" || w == "range") {
              next();
              list.push_back(control(w, line, in_range));
              break;
            }
            if (w == "break" || w == "continue") {
              next();
              if (!in_range) fail(line, "{{" + w + "}} outside {{range}}");
              expect_right(w.c_str());
              list.push_back(Node{w == "break" ? Node::Kind::kBreak : Node::Kind::kContinue, "",
                                  nullptr, nullptr, nullptr, line});
              break;
            }
            if (w == "define" || w == "template" || w == "block")
              fail(line, "{{" + w + "}} is not supported in Ollama templates");
          }
          auto pipe = pipeline("command", true);
          list.push_back(Node{Node::Kind::kAction, "", pipe, nullptr, nullptr, line});
          break;
        }
        default:
          fail(it.line, "unexpected \"" + it.text + "\"");
      }
    }
  }

  // After the keyword: pipeline, body, optional else (else if / else with), end.
  Node control(const std::string& kind, int line, bool in_range) {
    const NestingLevel level(depth_, kMaxNesting,
                             [line](const std::string& what) { fail(line, what); });
    const size_t scope = vars_.size();
    Node node;
    node.kind = kind == "if"     ? Node::Kind::kIf
                : kind == "with" ? Node::Kind::kWith
                                 : Node::Kind::kRange;
    node.line = line;
    node.pipe = pipeline(kind.c_str(), true);
    std::string end;
    node.list = std::make_shared<List>(parse_list(end, true, in_range || kind == "range"));
    if (end == "else") {
      const Item& after = peek_non_space();
      if ((kind == "if" && after.kind == Item::Kind::kIdent && after.text == "if") ||
          (kind == "with" && after.kind == Item::Kind::kIdent && after.text == "with")) {
        // `else if` / `else with`: a nested control that shares this one's {{end}}.
        const int nested_line = after.line;
        next();
        node.else_list = std::make_shared<List>();
        node.else_list->push_back(control(kind, nested_line, in_range));
      } else {
        expect_right("else");
        std::string end2;
        node.else_list = std::make_shared<List>(parse_list(end2, true, in_range));
        if (end2 != "end") fail(line, "expected end; found {{else}}");
      }
    }
    vars_.resize(scope);
    return node;
  }

  // A pipeline up to the right delimiter (or the closing paren when `in_parens`).
  std::shared_ptr<Pipe> pipeline(const char* context, bool allow_decl, bool in_parens = false) {
    auto pipe = std::make_shared<Pipe>();
    pipe->line = peek_non_space().line;
    if (allow_decl) declarations(*pipe, context);
    for (;;) {
      const Item& it = peek_non_space();
      if (it.kind == Item::Kind::kRight && !in_parens) {
        next();
        break;
      }
      if (it.kind == Item::Kind::kRParen && in_parens) {
        next();
        break;
      }
      if (it.kind == Item::Kind::kEOF) fail(it.line, "unexpected EOF");
      if (it.kind == Item::Kind::kRight) fail(it.line, "unclosed left paren");
      pipe->cmds.push_back(command(in_parens));
      const Item& after = peek_non_space();
      if (after.kind == Item::Kind::kPipe) {
        next();
        if (peek_non_space().kind == Item::Kind::kRight || peek().kind == Item::Kind::kRParen)
          fail(after.line, "missing command after |");
      }
    }
    if (pipe->cmds.empty()) fail(pipe->line, std::string("missing value for ") + context);
    return pipe;
  }

  void declarations(Pipe& pipe, const char* context) {
    const size_t save = pos_;
    std::vector<std::string> names;
    for (;;) {
      const Item& v = peek_non_space();
      if (v.kind != Item::Kind::kVariable) break;
      const std::string name = v.text;
      next();
      if (items_[pos_].kind != Item::Kind::kSpace && items_[pos_].kind != Item::Kind::kDeclare &&
          items_[pos_].kind != Item::Kind::kAssign && items_[pos_].kind != Item::Kind::kComma)
        break;  // `$x.Field`: an operand, not a declaration
      const Item& op = peek_non_space();
      names.push_back(name);
      if (op.kind == Item::Kind::kComma && std::string_view(context) == "range" &&
          names.size() == 1) {
        next();
        continue;
      }
      if (op.kind == Item::Kind::kDeclare || op.kind == Item::Kind::kAssign) {
        next();
        pipe.assign = op.kind == Item::Kind::kAssign;
        for (const auto& n : names) {
          if (pipe.assign) {
            if (std::find(vars_.begin(), vars_.end(), n) == vars_.end())
              fail(v.line, "undefined variable \"" + n + "\"");
          } else {
            vars_.push_back(n);
          }
        }
        pipe.decl = names;
        return;
      }
      break;
    }
    pos_ = save;
  }

  Command command(bool in_parens) {
    Command cmd;
    cmd.line = peek_non_space().line;
    for (;;) {
      const Item& it = peek_non_space();
      if (it.kind == Item::Kind::kRight || it.kind == Item::Kind::kPipe ||
          it.kind == Item::Kind::kEOF || (it.kind == Item::Kind::kRParen && in_parens))
        break;
      cmd.args.push_back(operand());
    }
    if (cmd.args.empty()) fail(cmd.line, "empty command");
    return cmd;
  }

  Arg operand() {
    const Item& it = next_non_space();
    Arg a;
    a.line = it.line;
    switch (it.kind) {
      case Item::Kind::kField:
        a.kind = Arg::Kind::kField;
        a.fields.push_back(it.text);
        break;
      case Item::Kind::kVariable:
        if (std::find(vars_.begin(), vars_.end(), it.text) == vars_.end())
          fail(it.line, "undefined variable \"" + it.text + "\"");
        a.kind = Arg::Kind::kVariable;
        a.text = it.text;
        break;
      case Item::Kind::kDot:
        a.kind = Arg::Kind::kDot;
        break;
      case Item::Kind::kString:
        a.kind = Arg::Kind::kString;
        a.text = it.text;
        break;
      case Item::Kind::kChar:
        a.kind = Arg::Kind::kInt;
        a.int_value = std::stoll(it.text);
        break;
      case Item::Kind::kNumber:
        number(it, a);
        break;
      case Item::Kind::kLParen: {
        a.kind = Arg::Kind::kPipe;
        const NestingLevel level(depth_, kMaxNesting,
                                 [&it](const std::string& what) { fail(it.line, what); });
        a.pipe = pipeline("parenthesized pipeline", false, true);
        break;
      }
      case Item::Kind::kIdent:
        if (it.text == "true" || it.text == "false") {
          a.kind = Arg::Kind::kBool;
          a.bool_value = it.text == "true";
        } else if (it.text == "nil") {
          a.kind = Arg::Kind::kNil;
        } else if (functions().count(it.text)) {
          a.kind = Arg::Kind::kFunction;
          a.text = it.text;
        } else if (it.text == "if" || it.text == "else" || it.text == "end" || it.text == "range" ||
                   it.text == "with" || it.text == "break" || it.text == "continue") {
          fail(it.line, "unexpected <" + it.text + "> in command");
        } else {
          fail(it.line, "function \"" + it.text + "\" not defined");
        }
        break;
      default:
        fail(it.line, "unexpected \"" + it.text + "\" in operand");
    }
    // .A.B chains: field items that follow with no space between.
    while (peek().kind == Item::Kind::kField) {
      if (a.kind == Arg::Kind::kString || a.kind == Arg::Kind::kInt ||
          a.kind == Arg::Kind::kFloat || a.kind == Arg::Kind::kBool || a.kind == Arg::Kind::kNil ||
          a.kind == Arg::Kind::kFunction)
        fail(peek().line, "unexpected . after term");
      a.fields.push_back(next().text);
    }
    return a;
  }

  void number(const Item& it, Arg& a) {
    std::string t = it.text;
    std::erase(t, '_');
    const bool hex = t.find("0x") != std::string::npos || t.find("0X") != std::string::npos;
    const bool is_float = !hex && t.find_first_of(".eE") != std::string::npos;
    char* end = nullptr;
    bool ok = false;
    if (is_float) {
      a.kind = Arg::Kind::kFloat;
      a.float_value = std::strtod(t.c_str(), &end);
      ok = end && *end == '\0';
    } else {
      a.kind = Arg::Kind::kInt;
      std::string digits = t;
      bool neg = false;
      if (!digits.empty() && (digits[0] == '+' || digits[0] == '-')) {
        neg = digits[0] == '-';
        digits.erase(0, 1);
      }
      int base = 10;
      if (digits.rfind("0x", 0) == 0 || digits.rfind("0X", 0) == 0) {
        base = 16;
        digits.erase(0, 2);
      } else if (digits.rfind("0o", 0) == 0 || digits.rfind("0O", 0) == 0) {
        base = 8;
        digits.erase(0, 2);
      } else if (digits.rfind("0b", 0) == 0 || digits.rfind("0B", 0) == 0) {
        base = 2;
        digits.erase(0, 2);
      } else if (digits.size() > 1 && digits[0] == '0') {
        base = 8;
      }
      const long long v = std::strtoll(digits.c_str(), &end, base);
      a.int_value = neg ? -v : v;
      ok = !digits.empty() && end && *end == '\0';
    }
    if (!ok) fail(it.line, "bad number syntax: \"" + it.text + "\"");
  }

  std::vector<Item> items_;
  size_t pos_ = 0;
  std::vector<std::string> vars_;
  int depth_ = 0;  // blocks and parentheses open at this point (NestingLevel)
};

}  // namespace

List parse(std::string_view text) { return Parser(Lexer(text).run()).parse_all(); }

}  // namespace hostlm::ollama::tmpl
