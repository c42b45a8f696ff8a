#include "hostlm/http/json_fields.h"

#include "hostlm/http/server.h"

namespace hostlm::http {

ToolChoice parse_tool_choice(const nlohmann::json& value) {
  ToolChoice c;
  if (value.is_null()) return c;
  if (value.is_string()) {
    const std::string s = value.get<std::string>();
    if (s == "auto") return c;
    if (s == "none") {
      c.kind = ToolChoice::Kind::kNone;
    } else if (s == "required" || s == "any") {
      c.kind = ToolChoice::Kind::kRequired;
    } else {
      throw HttpError(
          400,
          "tool_choice must be \"auto\", \"none\", \"required\" or a function, not \"" + s + "\"");
    }
    return c;
  }
  if (value.is_object()) {
    const nlohmann::json& fn = value.contains("function") ? value["function"] : value;
    if (fn.is_object() && fn.contains("name") && fn["name"].is_string()) {
      c.kind = ToolChoice::Kind::kFunction;
      c.function = fn["name"].get<std::string>();
      return c;
    }
  }
  throw HttpError(400,
                  "tool_choice must be \"auto\", \"none\", \"required\" or "
                  "{\"type\": \"function\", \"function\": {\"name\": ...}}");
}

std::vector<std::string> parse_stop(const nlohmann::json& value) {
  std::vector<std::string> out;
  if (value.is_null()) return out;
  if (value.is_string()) {
    out.push_back(value.get<std::string>());
    return out;
  }
  if (value.is_array()) {
    for (const auto& s : value) {
      if (!s.is_string()) throw HttpError(400, "stop must be a string or a list of strings");
      out.push_back(s.get<std::string>());
    }
    return out;
  }
  throw HttpError(400, "stop must be a string or a list of strings");
}

const nlohmann::ordered_json* body_field(const nlohmann::ordered_json& body, const char* key) {
  if (!body.is_object()) throw HttpError(400, "the request body must be a JSON object");
  const auto it = body.find(key);
  return it == body.end() || it->is_null() ? nullptr : &*it;
}

std::string string_field(const nlohmann::ordered_json& body, const char* key,
                         std::string fallback) {
  const nlohmann::ordered_json* v = body_field(body, key);
  if (!v) return fallback;
  if (!v->is_string())
    throw HttpError(400, std::string("\"") + key + "\" must be a string, not " + v->type_name());
  return v->get<std::string>();
}

bool bool_field(const nlohmann::ordered_json& body, const char* key, bool fallback) {
  const nlohmann::ordered_json* v = body_field(body, key);
  if (!v) return fallback;
  if (!v->is_boolean())
    throw HttpError(400, std::string("\"") + key + "\" must be a boolean, not " + v->type_name());
  return v->get<bool>();
}

std::vector<int32_t> token_ids(const nlohmann::ordered_json& list, const std::string& what) {
  if (!list.is_array()) throw HttpError(400, what + " must be a list of token ids");
  std::vector<int32_t> ids;
  ids.reserve(list.size());
  for (const nlohmann::ordered_json& t : list) {
    const bool fits = t.is_number_unsigned() ? t.get<uint64_t>() <= INT32_MAX
                      : t.is_number_integer()
                          ? t.get<int64_t>() >= INT32_MIN && t.get<int64_t>() <= INT32_MAX
                          : false;
    if (!fits) throw HttpError(400, what + " must hold token ids, not " + t.dump());
    ids.push_back(t.get<int32_t>());
  }
  return ids;
}

}  // namespace hostlm::http
