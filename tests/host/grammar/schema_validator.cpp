// A JSON Schema validator for just the keywords the grammar converter supports, so the
// randomized tests can check generated text without leaving C++.
#include <cmath>
#include <regex>

#include "test_support.h"

namespace hostlm::test {
namespace {

using nlohmann::json;

size_t code_points(const std::string& s) {
  size_t n = 0;
  for (char c : s) n += (static_cast<uint8_t>(c) & 0xC0) != 0x80;
  return n;
}

bool type_is(const json& v, const std::string& t) {
  if (t == "object") return v.is_object();
  if (t == "array") return v.is_array();
  if (t == "string") return v.is_string();
  if (t == "boolean") return v.is_boolean();
  if (t == "null") return v.is_null();
  if (t == "number") return v.is_number();
  if (t == "integer") {
    return v.is_number_integer() ||
           (v.is_number_float() && v.get<double>() == std::floor(v.get<double>()));
  }
  return false;
}

}  // namespace

std::string validate(const json& v, const json& s, const json& root) {
  if (s.is_boolean()) return s.get<bool>() ? "" : "false schema";
  if (s.contains("$ref")) {
    const std::string ref = s["$ref"];
    return validate(v, ref == "#" ? root : root.at(json::json_pointer(ref.substr(1))), root);
  }
  if (s.contains("const") && v != s["const"]) return "not the const " + s["const"].dump();
  if (s.contains("enum")) {
    bool found = false;
    for (const json& e : s["enum"]) found = found || e == v;
    if (!found) return "not in enum";
  }
  if (s.contains("anyOf")) {
    bool any = false;
    for (const json& alt : s["anyOf"]) any = any || validate(v, alt, root).empty();
    if (!any) return "no anyOf branch matches";
  }
  if (s.contains("oneOf")) {
    int n = 0;
    for (const json& alt : s["oneOf"]) n += validate(v, alt, root).empty();
    if (n != 1) return "oneOf matched " + std::to_string(n) + " branches";
  }
  if (s.contains("type")) {
    bool ok = false;
    if (s["type"].is_string()) {
      ok = type_is(v, s["type"]);
    } else {
      for (const json& t : s["type"]) ok = ok || type_is(v, t);
    }
    if (!ok) return "wrong type for " + s["type"].dump();
  }
  if (v.is_object()) {
    if (s.contains("required")) {
      for (const json& r : s["required"]) {
        if (!v.contains(r.get<std::string>())) return "missing required " + r.dump();
      }
    }
    for (const auto& [key, value] : v.items()) {
      if (s.contains("properties") && s["properties"].contains(key)) {
        if (auto e = validate(value, s["properties"][key], root); !e.empty()) return key + ": " + e;
      } else if (s.contains("additionalProperties")) {
        if (auto e = validate(value, s["additionalProperties"], root); !e.empty())
          return "additional " + key + ": " + e;
      }
    }
  }
  if (v.is_array()) {
    const size_t n = v.size();
    if (s.contains("minItems") && n < s["minItems"].get<size_t>()) return "too few items";
    if (s.contains("maxItems") && n > s["maxItems"].get<size_t>()) return "too many items";
    size_t first = 0;
    if (s.contains("prefixItems")) {
      for (; first < n && first < s["prefixItems"].size(); ++first) {
        if (auto e = validate(v[first], s["prefixItems"][first], root); !e.empty())
          return "prefix item: " + e;
      }
    }
    if (s.contains("items")) {
      for (size_t i = first; i < n; ++i) {
        if (auto e = validate(v[i], s["items"], root); !e.empty()) return "item: " + e;
      }
    }
  }
  if (v.is_string()) {
    const std::string str = v.get<std::string>();
    if (s.contains("minLength") && code_points(str) < s["minLength"].get<size_t>())
      return "too short";
    if (s.contains("maxLength") && code_points(str) > s["maxLength"].get<size_t>())
      return "too long";
    if (s.contains("pattern") &&
        !std::regex_search(str, std::regex(s["pattern"].get<std::string>()))) {
      return "does not match pattern";
    }
  }
  if (v.is_number()) {
    const double x = v.get<double>();
    if (s.contains("minimum") && x < s["minimum"].get<double>()) return "below minimum";
    if (s.contains("maximum") && x > s["maximum"].get<double>()) return "above maximum";
    if (s.contains("exclusiveMinimum") && x <= s["exclusiveMinimum"].get<double>())
      return "not above exclusiveMinimum";
    if (s.contains("exclusiveMaximum") && x >= s["exclusiveMaximum"].get<double>())
      return "not below exclusiveMaximum";
  }
  return "";
}

}  // namespace hostlm::test
