#include "env_file.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "hostlm/error.h"

namespace hostlm::cli {
namespace {

// A settings file is a few dozen lines; anything this large is the wrong file.
constexpr size_t kMaxBytes = 1 << 20;

bool blank(char c) { return c == ' ' || c == '\t' || c == '\r'; }

bool valid_key(std::string_view key) {
  if (key.empty() || (key[0] >= '0' && key[0] <= '9')) return false;
  for (char c : key)
    if (!(c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')))
      return false;
  return true;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && blank(s.front())) s.remove_prefix(1);
  while (!s.empty() && blank(s.back())) s.remove_suffix(1);
  return s;
}

// The value after '=': bare, "double quoted" or 'single quoted'.
std::string parse_value(std::string_view raw, const std::string& where) {
  raw = trim(raw);
  if (raw.empty() || (raw[0] != '"' && raw[0] != '\'')) return std::string(raw);
  const char quote = raw[0];
  std::string out;
  size_t i = 1;
  for (; i < raw.size() && raw[i] != quote; ++i) {
    if (quote == '"' && raw[i] == '\\' && i + 1 < raw.size()) {
      const char next = raw[++i];
      if (next == 'n') {
        out += '\n';
      } else if (next == '"' || next == '\\' || next == '$' || next == '`') {
        out += next;
      } else {
        out += '\\';
        out += next;
      }
      continue;
    }
    out += raw[i];
  }
  if (i >= raw.size())
    throw Error(where + ": the value has no closing " + std::string(1, quote) +
                " (values cannot span lines)");
  if (!trim(raw.substr(i + 1)).empty())
    throw Error(where + ": unexpected text after the closing " + std::string(1, quote) + ": '" +
                std::string(trim(raw.substr(i + 1))) + "'");
  return out;
}

}  // namespace

EnvFile parse_env_file(std::string_view text, const std::string& origin) {
  EnvFile out;
  int number = 0;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = trim(text.substr(start, end - start));
    start = end + 1;
    ++number;
    if (line.empty() || line[0] == '#' || line[0] == ';') continue;
    const std::string where = origin + ":" + std::to_string(number);
    const size_t eq = line.find('=');
    if (eq == std::string_view::npos)
      throw Error(where + ": expected KEY=VALUE, got '" + std::string(line) + "'");
    const std::string_view key = trim(line.substr(0, eq));
    if (!valid_key(key))
      throw Error(where + ": '" + std::string(key) +
                  "' is not a variable name (letters, digits and _, not starting with a digit)");
    out[std::string(key)] = {parse_value(line.substr(eq + 1), where), number};
  }
  return out;
}

EnvFile read_env_file(const std::filesystem::path& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw Error("settings file " + path.string() + " is a folder, not a file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("cannot read settings file " + path.string() + ": " + std::strerror(errno));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw Error("cannot read settings file " + path.string());
  const std::string s = text.str();
  if (s.size() > kMaxBytes)
    throw Error("settings file " + path.string() + " is larger than 1 MiB: not a settings file");
  return parse_env_file(s, path.string());
}

}  // namespace hostlm::cli
