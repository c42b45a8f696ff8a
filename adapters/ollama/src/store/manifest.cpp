#include "manifest.h"

#include <cmath>

#include "hostlm/error.h"

namespace hostlm::ollama {
namespace {

nlohmann::ordered_json layer_json(const Layer& l) {
  nlohmann::ordered_json j;
  j["mediaType"] = l.media_type;
  j["digest"] = l.digest;
  j["size"] = l.size;
  if (!l.from.empty()) j["from"] = l.from;
  return j;
}

Layer read_layer(const nlohmann::json& j, const std::string& where) {
  if (!j.is_object()) throw Error(where + ": a layer is not a JSON object");
  Layer l;
  try {
    l.media_type = j.at("mediaType").get<std::string>();
    l.digest = normalize_digest(j.at("digest").get<std::string>());
    const auto& size = j.at("size");
    if (!size.is_number_integer() || size.get<int64_t>() < 0) throw Error("bad size");
    l.size = size.get<uint64_t>();
    if (j.contains("from") && j["from"].is_string()) l.from = j["from"].get<std::string>();
  } catch (const std::exception& e) {
    throw Error(where + ": malformed layer (" + e.what() + ")");
  }
  return l;
}

}  // namespace

Manifest Manifest::parse(std::string_view bytes, const std::string& where) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(bytes);
  } catch (const nlohmann::json::exception& e) {
    throw Error(where + ": manifest is not valid JSON (" + e.what() + ")");
  }
  if (!j.is_object() || !j.contains("config") || !j.contains("layers") || !j["layers"].is_array())
    throw Error(where + ": not a model manifest (needs config and layers)");
  Manifest m;
  m.config = read_layer(j["config"], where);
  for (const auto& l : j["layers"]) m.layers.push_back(read_layer(l, where));
  return m;
}

std::string Manifest::to_bytes() const {
  nlohmann::ordered_json j;
  j["schemaVersion"] = 2;
  j["mediaType"] = media::kManifest;
  j["config"] = layer_json(config);
  j["layers"] = nlohmann::ordered_json::array();
  for (const Layer& l : layers) j["layers"].push_back(layer_json(l));
  return go_json(j);
}

// Go writes a whole float as an integer ("1", not "1.0").
static nlohmann::ordered_json go_numbers(const nlohmann::ordered_json& v) {
  if (v.is_number_float()) {
    const double d = v.get<double>();
    if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 1e18)
      return static_cast<int64_t>(d);
    return v;
  }
  if (v.is_array() || v.is_object()) {
    nlohmann::ordered_json out = v;
    for (auto& item : out) item = go_numbers(item);
    return out;
  }
  return v;
}

std::string go_json(const nlohmann::ordered_json& value) {
  const std::string plain =
      go_numbers(value).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::string out;
  out.reserve(plain.size() + 1);
  for (size_t i = 0; i < plain.size(); ++i) {
    const char c = plain[i];
    if (c == '<') {
      out += "\\u003c";
    } else if (c == '>') {
      out += "\\u003e";
    } else if (c == '&') {
      out += "\\u0026";
    } else if (plain.compare(i, 3, "\xE2\x80\xA8") == 0 ||
               plain.compare(i, 3, "\xE2\x80\xA9") == 0) {
      out += plain[i + 2] == '\xA8' ? "\\u2028" : "\\u2029";
      i += 2;
    } else {
      out += c;
    }
  }
  return out + "\n";
}

}  // namespace hostlm::ollama
