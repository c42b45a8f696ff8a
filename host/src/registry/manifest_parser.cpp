#include "registry/manifest_parser.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

#include "hostlm/error.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace hostlm::registry {
namespace {

class FieldReader {
 public:
  explicit FieldReader(const fs::path& file) : file_(file) {}

  [[noreturn]] void fail(const std::string& what) const {
    throw Error("manifest " + file_.string() + ": " + what);
  }

  const json& required(const json& object, const std::string& key, const std::string& field) const {
    auto it = object.find(key);
    if (it == object.end()) fail("field '" + field + "' is missing");
    return *it;
  }

  std::string string(const json& value, const std::string& field) const {
    if (!value.is_string()) fail(wrong_type(field, "a string", value));
    std::string s = value.get<std::string>();
    if (s.empty()) fail("field '" + field + "' is empty");
    return s;
  }

  int integer(const json& value, const std::string& field) const {
    if (!value.is_number_integer()) fail(wrong_type(field, "an integer", value));
    bool fits = value.is_number_unsigned()
                    ? value.get<uint64_t>() <= uint64_t{std::numeric_limits<int>::max()}
                    : value.get<int64_t>() >= std::numeric_limits<int>::min() &&
                          value.get<int64_t>() <= std::numeric_limits<int>::max();
    if (!fits) fail("field '" + field + "' is out of range");
    return value.get<int>();
  }

  std::vector<std::string> string_list(const json& value, const std::string& field) const {
    if (!value.is_array()) fail(wrong_type(field, "an array of strings", value));
    std::vector<std::string> out;
    for (size_t i = 0; i < value.size(); ++i)
      out.push_back(string(value[i], field + "[" + std::to_string(i) + "]"));
    return out;
  }

 private:
  static std::string wrong_type(const std::string& field, const char* expected, const json& value) {
    return "field '" + field + "' must be " + expected + ", not " + value.type_name();
  }

  const fs::path& file_;
};

// nlohmann's messages start with "[json.exception.parse_error.101] ", noise for a user.
std::string without_exception_tag(const char* what) {
  std::string s(what);
  if (!s.empty() && s.front() == '[') {
    size_t close = s.find("] ");
    if (close != std::string::npos) s.erase(0, close + 2);
  }
  return s;
}

}  // namespace

PluginManifest parse_manifest_text(const std::string& text, const fs::path& file) {
  FieldReader read(file);
  json root;
  try {
    root = json::parse(text);
  } catch (const json::parse_error& e) {
    read.fail("not valid JSON: " + without_exception_tag(e.what()));
  }
  if (!root.is_object()) read.fail(std::string("must be a JSON object, not ") + root.type_name());

  PluginManifest m;
  m.manifest_path = file;
  m.name = read.string(read.required(root, "name", "name"), "name");
  m.version = read.string(read.required(root, "version", "version"), "version");
  m.abi_version = read.integer(read.required(root, "abi_version", "abi_version"), "abi_version");
  m.library = read.string(read.required(root, "library", "library"), "library");
  if (auto it = root.find("description"); it != root.end())
    m.description = read.string(*it, "description");

  const json& archs = read.required(root, "architectures", "architectures");
  if (!archs.is_object())
    read.fail(std::string("field 'architectures' must be an object with 'gguf' and/or 'hf' "
                          "lists, not ") +
              archs.type_name());
  // Strict here, unlike the top level: a misspelt key would silently claim nothing.
  for (const auto& [key, value] : archs.items())
    if (key != "gguf" && key != "hf")
      read.fail("field 'architectures." + key + "' is unknown (expected 'gguf' or 'hf')");
  if (auto it = archs.find("gguf"); it != archs.end())
    m.gguf_architectures = read.string_list(*it, "architectures.gguf");
  if (auto it = archs.find("hf"); it != archs.end())
    m.hf_architectures = read.string_list(*it, "architectures.hf");
  if (m.gguf_architectures.empty() && m.hf_architectures.empty())
    read.fail("field 'architectures' claims nothing: give a non-empty 'gguf' or 'hf' list");
  return m;
}

PluginManifest parse_manifest_file(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw Error("manifest " + file.string() + ": cannot open: " + std::strerror(errno));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw Error("manifest " + file.string() + ": cannot read");
  return parse_manifest_text(text.str(), file);
}

}  // namespace hostlm::registry
