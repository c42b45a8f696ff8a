#include "safetensors/json_text.h"

#include <cerrno>
#include <fstream>
#include <iterator>
#include <set>
#include <system_error>
#include <vector>

#include "hostlm/error.h"
#include "safetensors/quote.h"

namespace hostlm::safetensors {
namespace {

// Small JSON side files (config.json, shard indexes) are kilobytes to a few megabytes; the
// cap keeps a wrongly named multi-gigabyte file from being read into memory.
constexpr std::uintmax_t kMaxJsonFileBytes = 100u << 20;

// nlohmann prefixes its messages with "[json.exception.parse_error.101] "; users do not need it.
std::string strip_exception_id(const char* what) {
  std::string_view s(what);
  if (!s.empty() && s.front() == '[') {
    const auto close = s.find("] ");
    if (close != std::string_view::npos) s.remove_prefix(close + 2);
  }
  // The message quotes the offending token, which a hostile file can make enormous.
  constexpr size_t kMaxShown = 512;
  if (s.size() > kMaxShown) return std::string(s.substr(0, kMaxShown)) + "...";
  return std::string(s);
}

// Thrown from inside the parser callback, caught in parse_json and rewritten with the label.
struct StructureError {
  std::string message;
};

}  // namespace

nlohmann::json parse_json(std::string_view text, const std::string& label, std::string_view what,
                          int max_depth) {
  // One key set per open object; the callback sees keys before their values.
  std::vector<std::set<std::string>> open_objects;
  const nlohmann::json::parser_callback_t check = [&](int depth,
                                                      nlohmann::json::parse_event_t event,
                                                      nlohmann::json& parsed) {
    using E = nlohmann::json::parse_event_t;
    switch (event) {
      case E::object_start:
      case E::array_start:
        if (depth >= max_depth)
          throw StructureError{"nested deeper than " + std::to_string(max_depth) + " levels"};
        if (event == E::object_start) open_objects.emplace_back();
        break;
      case E::object_end:
        if (!open_objects.empty()) open_objects.pop_back();
        break;
      case E::key:
        if (!open_objects.empty() && !open_objects.back().insert(parsed.get<std::string>()).second)
          throw StructureError{"duplicate key " + quote_name(parsed.get<std::string>())};
        break;
      default:
        break;
    }
    return true;
  };
  try {
    return nlohmann::json::parse(text.begin(), text.end(), check);
  } catch (const StructureError& e) {
    throw Error(label + ": " + std::string(what) + ": " + e.message);
  } catch (const nlohmann::json::exception& e) {
    throw Error(label + ": " + std::string(what) + ": " + strip_exception_id(e.what()));
  }
}

nlohmann::json read_json_file(const std::filesystem::path& path) {
  const std::string label = path.string();
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  if (ec) throw Error(label + ": cannot read: " + ec.message());
  if (size > kMaxJsonFileBytes)
    throw Error(label + ": " + std::to_string(size) + " bytes is too large for a JSON file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(label + ": cannot open: " + std::generic_category().message(errno));
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw Error(label + ": read error");
  return parse_json(text, label, "invalid JSON");
}

}  // namespace hostlm::safetensors
