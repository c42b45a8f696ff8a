#include "hostlm/ollama/model_name.h"

#include <algorithm>
#include <cctype>

#include "hostlm/ollama/errors.h"

namespace hostlm::ollama {
namespace {

enum class Part { kHost, kNamespace, kModel, kTag };

bool alnum_or_underscore(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
}

// The character rules of Ollama's name parts (spec 1.8).
bool valid_part(Part kind, std::string_view s) {
  const size_t max_len = kind == Part::kHost ? 350 : 80;
  if (s.empty() || s.size() > max_len || !alnum_or_underscore(s[0])) return false;
  for (char c : s.substr(1)) {
    if (alnum_or_underscore(c) || c == '-') continue;
    if (c == '.' && kind != Part::kNamespace) continue;
    if (c == ':' && kind == Part::kHost) continue;
    return false;
  }
  return true;
}

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

}  // namespace

std::optional<ModelName> ModelName::try_parse(std::string_view s) {
  ModelName n;
  if (const size_t at = s.find('@'); at != std::string_view::npos) {
    n.digest = std::string(s.substr(at + 1));
    s = s.substr(0, at);
    if (n.digest.size() != 71 || n.digest.compare(0, 7, "sha256:") != 0 ||
        !std::all_of(n.digest.begin() + 7, n.digest.end(),
                     [](char c) { return std::isxdigit(static_cast<unsigned char>(c)); }))
      return std::nullopt;
  }
  if (const size_t scheme = s.find("://"); scheme != std::string_view::npos) {
    n.scheme = std::string(s.substr(0, scheme));
    if (n.scheme != "http" && n.scheme != "https") return std::nullopt;
    s = s.substr(scheme + 3);
  }
  // The tag separator is the last ':' after the last '/'.
  const size_t slash = s.rfind('/');
  const size_t colon = s.rfind(':');
  if (colon != std::string_view::npos && (slash == std::string_view::npos || colon > slash)) {
    n.tag = std::string(s.substr(colon + 1));
    s = s.substr(0, colon);
  }
  std::string_view parts[3];
  int count = 0;
  while (count < 3) {
    const size_t cut = s.rfind('/');
    if (cut == std::string_view::npos) {
      parts[count++] = s;
      s = {};
      break;
    }
    parts[count++] = s.substr(cut + 1);
    s = s.substr(0, cut);
    if (count == 2) {  // everything left is the host
      parts[count++] = s;
      s = {};
      break;
    }
  }
  n.model = std::string(parts[0]);
  if (count >= 2) n.ns = std::string(parts[1]);
  if (count >= 3) n.host = std::string(parts[2]);
  if (!valid_part(Part::kHost, n.host) || !valid_part(Part::kNamespace, n.ns) ||
      !valid_part(Part::kModel, n.model) || !valid_part(Part::kTag, n.tag))
    return std::nullopt;
  return n;
}

ModelName ModelName::parse(std::string_view text) {
  auto n = try_parse(text);
  if (!n) throw bad_request("invalid model name");
  return *n;
}

std::string ModelName::display() const {
  std::string out;
  if (!iequals(host, "registry.ollama.ai")) {
    out = host + "/" + ns + "/";
  } else if (!iequals(ns, "library")) {
    out = ns + "/";
  }
  return out + model + ":" + tag;
}

std::string ModelName::full() const { return host + "/" + ns + "/" + model + ":" + tag; }

std::filesystem::path ModelName::manifest_path() const {
  return std::filesystem::path(host) / ns / model / tag;
}

bool ModelName::same_model(const ModelName& o) const {
  return iequals(host, o.host) && iequals(ns, o.ns) && iequals(model, o.model) &&
         iequals(tag, o.tag);
}

}  // namespace hostlm::ollama
