// PARAMETER names and types: the JSON names of Ollama's Options struct (api/types.go,
// spec 1.4), plus hostlm's `think` default. Values are typed as Go's strconv would parse
// them, and floats keep float32 precision like Ollama's float32 fields.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>

#include "hostlm/ollama/errors.h"
#include "hostlm/ollama/modelfile.h"
#include "text_util.h"

namespace hostlm::ollama {
namespace {

enum class Type { kInt, kFloat, kBool, kStringList, kThink };

const std::map<std::string, Type, std::less<>>& parameter_types() {
  static const std::map<std::string, Type, std::less<>> types = {
      // load time (Runner)
      {"num_ctx", Type::kInt},
      {"num_batch", Type::kInt},
      {"num_gpu", Type::kInt},
      {"main_gpu", Type::kInt},
      {"use_mmap", Type::kBool},
      {"num_thread", Type::kInt},
      {"draft_num_predict", Type::kInt},
      // sampling and generation
      {"num_keep", Type::kInt},
      {"seed", Type::kInt},
      {"num_predict", Type::kInt},
      {"top_k", Type::kInt},
      {"top_p", Type::kFloat},
      {"min_p", Type::kFloat},
      {"typical_p", Type::kFloat},
      {"repeat_last_n", Type::kInt},
      {"temperature", Type::kFloat},
      {"repeat_penalty", Type::kFloat},
      {"presence_penalty", Type::kFloat},
      {"frequency_penalty", Type::kFloat},
      {"stop", Type::kStringList},
      // hostlm: a model that defaults to thinking off (true/false or low/medium/high/max)
      {"think", Type::kThink},
  };
  return types;
}

bool is_deprecated(std::string_view name) {
  static const std::string_view names[] = {"penalize_newline", "low_vram",     "f16_kv",
                                           "logits_all",       "vocab_only",   "use_mlock",
                                           "mirostat",         "mirostat_tau", "mirostat_eta"};
  return std::find(std::begin(names), std::end(names), name) != std::end(names);
}

std::optional<int64_t> go_parse_int(std::string_view s) {
  std::string_view digits = s;
  if (!digits.empty() && digits[0] == '+') digits.remove_prefix(1);
  if (digits.empty() || digits[0] == '+') return std::nullopt;
  int64_t v = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
  if (ec != std::errc() || end != digits.data() + digits.size()) return std::nullopt;
  return v;
}

// A float32 value as a double that prints as the shortest float32 text ("0.95", not
// "0.949999988"), as Go's JSON encoder writes a float32.
double float32_value(float f) {
  char buf[32];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, f);
  double d = f;
  std::from_chars(buf, end, d);
  return d;
}

std::optional<double> go_parse_float32(std::string_view s) {
  std::string_view body = s;
  bool negative = false;
  if (!body.empty() && (body[0] == '+' || body[0] == '-')) {
    negative = body[0] == '-';
    body.remove_prefix(1);
  }
  const std::string lower = to_lower(body);
  double v = 0;
  if (lower == "inf" || lower == "infinity") {
    v = INFINITY;
  } else if (lower == "nan") {
    v = NAN;
  } else {
    if (body.empty() || body[0] == '-' || body[0] == '+') return std::nullopt;
    auto [end, ec] = std::from_chars(body.data(), body.data() + body.size(), v);
    if (ec != std::errc() || end != body.data() + body.size()) return std::nullopt;
    if (std::isfinite(v) && std::fabs(v) > 3.4028234663852886e38) return std::nullopt;
  }
  return float32_value(static_cast<float>(negative ? -v : v));
}

std::optional<bool> go_parse_bool(std::string_view s) {
  for (auto t : {"1", "t", "T", "TRUE", "true", "True"})
    if (s == t) return true;
  for (auto f : {"0", "f", "F", "FALSE", "false", "False"})
    if (s == f) return false;
  return std::nullopt;
}

// Go prints the value list of FormatParams' errors as "[value]".
std::string bracketed(std::string_view v) { return "[" + std::string(v) + "]"; }

}  // namespace

nlohmann::ordered_json parse_parameter(std::string_view name, std::string_view value,
                                       bool* deprecated) {
  if (deprecated) *deprecated = false;
  if (is_deprecated(name)) {
    if (deprecated) *deprecated = true;
    return nullptr;
  }
  const auto& types = parameter_types();
  const auto it = types.find(name);
  if (it == types.end()) throw bad_request("unknown parameter '" + std::string(name) + "'");
  switch (it->second) {
    case Type::kInt:
      if (auto v = go_parse_int(value)) return *v;
      throw bad_request("invalid int value " + bracketed(value));
    case Type::kFloat:
      if (auto v = go_parse_float32(value)) return *v;
      throw bad_request("invalid float value " + bracketed(value));
    case Type::kBool:
      if (auto v = go_parse_bool(value)) return *v;
      throw bad_request("invalid bool value " + bracketed(value));
    case Type::kStringList:
      return std::string(value);
    case Type::kThink:
      if (auto v = go_parse_bool(value)) return *v;
      if (value == "low" || value == "medium" || value == "high" || value == "max")
        return std::string(value);
      throw bad_request("invalid think value " + bracketed(value) +
                        " (expected true, false, low, medium, high or max)");
  }
  return nullptr;
}

nlohmann::ordered_json check_parameters(const nlohmann::json& params, bool strict,
                                        std::vector<std::string>* ignored) {
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  if (params.is_null()) return out;
  if (!params.is_object()) throw bad_request("parameters must be a JSON object");
  const auto& types = parameter_types();
  for (const auto& [key, value] : params.items()) {
    const auto it = types.find(key);
    if (it == types.end() || is_deprecated(key)) {
      if (strict && !is_deprecated(key)) throw bad_request("unknown parameter '" + key + "'");
      if (ignored) ignored->push_back(key);
      continue;
    }
    // A named copy: clang before 16 cannot capture a structured binding.
    const std::string& name = key;
    auto wrong = [&name](const char* type) {
      return bad_request("option \"" + name + "\" must be of type " + type);
    };
    switch (it->second) {
      case Type::kInt:
        // JSON has only numbers; Go's Options.FromMap truncates them to int.
        if (!value.is_number()) throw wrong("integer");
        // Truncated below; a float outside int64's range cannot be (undefined behaviour).
        if (value.is_number_float() && !(std::fabs(value.get<double>()) <= 9.2e18))
          throw wrong("integer");
        out[key] = value.is_number_float() ? static_cast<int64_t>(value.get<double>())
                                           : value.get<int64_t>();
        break;
      case Type::kFloat:
        // Past float32's range the conversion is undefined behaviour: refused as the
        // Modelfile's PARAMETER parsing refuses it.
        if (!value.is_number() || !(std::fabs(value.get<double>()) <= 3.4028234663852886e38))
          throw wrong("float");
        out[key] = float32_value(static_cast<float>(value.get<double>()));
        break;
      case Type::kBool:
        if (!value.is_boolean()) throw wrong("boolean");
        out[key] = value.get<bool>();
        break;
      case Type::kStringList: {
        nlohmann::ordered_json list = nlohmann::ordered_json::array();
        if (value.is_string()) {
          list.push_back(value.get<std::string>());
        } else if (value.is_array()) {
          for (const auto& s : value) {
            if (!s.is_string()) throw wrong("array of strings");
            list.push_back(s.get<std::string>());
          }
        } else {
          throw wrong("array of strings");
        }
        out[key] = list;
        break;
      }
      case Type::kThink:
        if (value.is_boolean() ||
            (value.is_string() && parse_parameter("think", value.get<std::string>()) != nullptr)) {
          out[key] = value.is_boolean() ? nlohmann::ordered_json(value.get<bool>())
                                        : nlohmann::ordered_json(value.get<std::string>());
        } else {
          throw wrong("boolean or level string");
        }
        break;
    }
  }
  return out;
}

std::string format_parameters(const nlohmann::json& params) {
  std::string out;
  auto line = [&](const std::string& key, const nlohmann::json& v) {
    if (!out.empty()) out += '\n';
    std::string padded = key;
    if (padded.size() < 30) padded.resize(30, ' ');
    out += padded + " ";
    if (v.is_string()) {
      out += go_quote(v.get<std::string>());
    } else if (v.is_boolean()) {
      out += v.get<bool>() ? "true" : "false";
    } else if (v.is_number()) {
      out += format_number(v.get<double>());
    } else {
      out += v.dump();
    }
  };
  if (!params.is_object()) return out;
  for (const auto& [key, value] : params.items()) {
    if (value.is_array()) {
      for (const auto& v : value) line(key, v);
    } else {
      line(key, value);
    }
  }
  return out;
}

}  // namespace hostlm::ollama
