// The Modelfile lexer: a state machine over runes that follows Ollama's parser/parser.go
// rule for rule (spec 1.1), so a Modelfile means the same thing to both tools. Values are
// then checked per instruction (parameter types, roles, semver) with the line number.
#include <algorithm>
#include <array>
#include <cctype>

#include "fs_util.h"
#include "hostlm/ollama/errors.h"
#include "hostlm/ollama/modelfile.h"
#include "text_util.h"

namespace hostlm::ollama {
namespace {

enum class State { kNil, kName, kValue, kParameter, kMessage, kComment };

constexpr std::array<std::string_view, 11> kCommands = {
    "from",     "license", "template",  "system",  "adapter", "draft",
    "renderer", "parser",  "parameter", "message", "requires"};

const char* kInvalidCommand =
    "command must be one of \"from\", \"license\", \"template\", \"system\", \"adapter\", "
    "\"draft\", \"renderer\", \"parser\", \"parameter\", \"message\", or \"requires\"";
const char* kInvalidRole = "message role must be one of \"system\", \"user\", or \"assistant\"";

bool is_space(char32_t r) { return r == ' ' || r == '\t'; }
bool is_newline(char32_t r) { return r == '\r' || r == '\n'; }
bool is_alpha(char32_t r) { return (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z'); }
bool is_digit(char32_t r) { return r >= '0' && r <= '9'; }

[[noreturn]] void fail(int line, const std::string& message) {
  throw bad_request("(line " + std::to_string(line) + "): " + message);
}

// Strips one level of quotes; false while a quote is still open.
bool unquote(std::string_view s, std::string& out) {
  if (s.size() >= 3 && s.substr(0, 3) == "\"\"\"") {
    if (s.size() >= 6 && s.substr(s.size() - 3) == "\"\"\"") {
      out = s.substr(3, s.size() - 6);
      return true;
    }
    return false;
  }
  if (!s.empty() && s[0] == '"') {
    if (s.size() >= 2 && s.back() == '"') {
      out = s.substr(1, s.size() - 2);
      return true;
    }
    return false;
  }
  out = s;
  return true;
}

// UTF-8 text with any byte-order mark consumed; UTF-16 (by its mark) is transcoded.
std::string decode_text(std::string_view raw) {
  auto u8 = [](std::string_view s) { return s; };
  if (raw.substr(0, 3) == "\xEF\xBB\xBF") return std::string(u8(raw.substr(3)));
  const bool le = raw.substr(0, 2) == "\xFF\xFE";
  const bool be = raw.substr(0, 2) == "\xFE\xFF";
  if (!le && !be) return std::string(raw);
  std::string out;
  auto unit = [&](size_t i) -> char32_t {
    const auto a = static_cast<unsigned char>(raw[i]), b = static_cast<unsigned char>(raw[i + 1]);
    return le ? char32_t(a | (b << 8)) : char32_t((a << 8) | b);
  };
  for (size_t i = 2; i + 1 < raw.size(); i += 2) {
    char32_t r = unit(i);
    if (r >= 0xD800 && r < 0xDC00 && i + 3 < raw.size()) {
      const char32_t lo = unit(i + 2);
      if (lo >= 0xDC00 && lo < 0xE000) {
        r = 0x10000 + ((r - 0xD800) << 10) + (lo - 0xDC00);
        i += 2;
      } else {
        r = 0xFFFD;
      }
    } else if (r >= 0xD800 && r < 0xE000) {
      r = 0xFFFD;
    }
    append_utf8(out, r);
  }
  if (raw.size() % 2) append_utf8(out, 0xFFFD);
  return out;
}

// golang.org/x/mod/semver.IsValid for "v" + text: vMAJOR[.MINOR[.PATCH[-pre][+build]]].
bool valid_semver(std::string_view v) {
  auto number = [&](std::string_view& s) {
    size_t n = 0;
    while (n < s.size() && is_digit(static_cast<unsigned char>(s[n]))) ++n;
    if (n == 0 || (n > 1 && s[0] == '0')) return false;
    s.remove_prefix(n);
    return true;
  };
  auto idents = [&](std::string_view s, bool numeric_rule) {
    if (s.empty()) return false;
    size_t start = 0;
    while (start <= s.size()) {
      size_t end = std::min(s.find('.', start), s.size());
      std::string_view id = s.substr(start, end - start);
      if (id.empty()) return false;
      bool all_digits = true;
      for (char c : id) {
        const bool ok = std::isalnum(static_cast<unsigned char>(c)) || c == '-';
        if (!ok) return false;
        all_digits = all_digits && is_digit(static_cast<unsigned char>(c));
      }
      if (numeric_rule && all_digits && id.size() > 1 && id[0] == '0') return false;
      start = end + 1;
    }
    return true;
  };
  if (v.empty() || v[0] != 'v') return false;
  v.remove_prefix(1);
  if (!number(v)) return false;
  if (v.empty()) return true;
  if (v[0] != '.') return false;
  v.remove_prefix(1);
  if (!number(v)) return false;
  if (v.empty()) return true;
  if (v[0] != '.') return false;
  v.remove_prefix(1);
  if (!number(v)) return false;
  if (v.empty()) return true;
  std::string_view build;
  if (const size_t plus = v.find('+'); plus != std::string_view::npos) {
    build = v.substr(plus + 1);
    if (!idents(build, false)) return false;
    v = v.substr(0, plus);
  }
  if (v.empty()) return true;
  if (v[0] != '-') return false;
  return idents(v.substr(1), true);
}

// Checks one instruction's value the way `ollama create` would, with the line number.
void check_command(ModelfileCommand& cmd, Modelfile& out) {
  if (cmd.name == "parameter") {
    try {
      bool deprecated = false;
      parse_parameter(cmd.key, cmd.args, &deprecated);
      if (deprecated)
        out.warnings.push_back("(line " + std::to_string(cmd.line) + "): parameter " + cmd.key +
                               " is deprecated");
    } catch (const RequestError& e) {
      fail(cmd.line, e.what());
    }
  } else if (cmd.name == "requires") {
    std::string v = cmd.args;
    if (v.empty() || v[0] != 'v') v = "v" + v;
    if (!valid_semver(v)) fail(cmd.line, "requires must be a valid semver (e.g. 0.14.0)");
    cmd.args = v.substr(1);
  }
}

}  // namespace

Modelfile parse_modelfile(std::string_view raw) {
  const std::string text = decode_text(raw);
  Modelfile out;
  ModelfileCommand cmd;
  State state = State::kNil;
  std::string buf;
  int line = 1;
  int value_line = 1;  // where the current instruction started
  auto emit = [&](std::string value) {
    cmd.args = std::move(value);
    check_command(cmd, out);
    out.commands.push_back(cmd);
    cmd = {};
  };

  for (size_t i = 0; i < text.size();) {
    char32_t r = next_rune(text, i);
    const int rune_line = line;
    if (r == '\n' || (r == '\r' && (i >= text.size() || text[i] != '\n'))) ++line;

    // Where this rune takes the machine, and whether it is kept.
    State next = state;
    bool keep = true;
    switch (state) {
      case State::kNil:
        if (r == '#') {
          next = State::kComment;
          keep = false;
        } else if (is_space(r) || is_newline(r)) {
          keep = false;
        } else {
          next = State::kName;
          value_line = rune_line;
        }
        break;
      case State::kName:
        if (is_space(r)) {
          next = State::kValue;
          keep = false;
        } else if (!is_alpha(r)) {
          fail(rune_line, kInvalidCommand);
        }
        break;
      case State::kValue:
        if (is_newline(r) || is_space(r)) next = State::kNil;
        break;
      case State::kParameter:
      case State::kMessage:
        if (is_space(r)) {
          next = State::kValue;
          keep = false;
        } else if (!(is_alpha(r) || (state == State::kParameter && (is_digit(r) || r == '_')))) {
          fail(rune_line, "unexpected EOF: " + buf);
        }
        break;
      case State::kComment:
        keep = false;
        if (is_newline(r)) next = State::kNil;
        break;
    }

    if (next != state) {
      bool stay = false;
      switch (state) {
        case State::kName: {
          const std::string name = to_lower(buf);
          if (std::find(kCommands.begin(), kCommands.end(), name) == kCommands.end())
            fail(rune_line, kInvalidCommand);
          cmd.name = name;
          cmd.line = value_line;
          if (name == "parameter") next = State::kParameter;
          if (name == "message") next = State::kMessage;
          break;
        }
        case State::kParameter:
          cmd.key = buf;
          break;
        case State::kMessage:
          if (buf != "system" && buf != "user" && buf != "assistant") fail(rune_line, kInvalidRole);
          cmd.key = buf;
          break;
        case State::kValue: {
          // A space, or a newline inside an open quote, belongs to the value.
          std::string value;
          if (!unquote(trim_space(buf), value) || is_space(r)) {
            append_utf8(buf, r);
            stay = true;
            break;
          }
          emit(std::move(value));
          break;
        }
        case State::kNil:
        case State::kComment:
          break;
      }
      if (stay) continue;
      buf.clear();
      state = next;
    }
    if (keep && is_go_printable(r)) append_utf8(buf, r);
  }

  switch (state) {
    case State::kNil:
    case State::kComment:
      break;
    case State::kValue: {
      std::string value;
      if (!unquote(trim_space(buf), value)) fail(value_line, "unexpected EOF");
      emit(std::move(value));
      break;
    }
    default:
      fail(value_line, "unexpected EOF");
  }
  if (std::none_of(out.commands.begin(), out.commands.end(),
                   [](const ModelfileCommand& c) { return c.name == "from"; }))
    throw bad_request("no FROM line");
  return out;
}

Modelfile read_modelfile(const std::filesystem::path& path) {
  std::string text;
  try {
    text = read_file(path);
  } catch (const Error&) {
    throw bad_request(path.string() + ": cannot read the Modelfile");
  }
  try {
    return parse_modelfile(text);
  } catch (const RequestError& e) {
    throw bad_request(path.string() + " " + e.what());
  }
}

}  // namespace hostlm::ollama
