// Request fields the Ollama and OpenAI APIs share in shape. Each throws HttpError 400 naming
// the field when the value has the wrong shape.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "hostlm/text_generation.h"

namespace hostlm::http {

// OpenAI's tool_choice: "auto" | "none" | "required" or
// {"type": "function", "function": {"name": ...}}; null: auto.
ToolChoice parse_tool_choice(const nlohmann::json& value);
// stop: a string or a list of strings; null: none.
std::vector<std::string> parse_stop(const nlohmann::json& value);

// Member `key` of a request body, or nullptr where it is absent or null. A body that is not a
// JSON object is a 400 (nlohmann's own lookups would throw a type error, a 500).
const nlohmann::ordered_json* body_field(const nlohmann::ordered_json& body, const char* key);
// A string or boolean member; absent or null: `fallback`; another type: a 400 naming the key.
std::string string_field(const nlohmann::ordered_json& body, const char* key,
                         std::string fallback = {});
bool bool_field(const nlohmann::ordered_json& body, const char* key, bool fallback);
// A list of token ids (`what` names it in the 400): each an integer that fits int32, which the
// engine then checks against the vocabulary. Larger ones would wrap into its range.
std::vector<int32_t> token_ids(const nlohmann::ordered_json& list, const std::string& what);

}  // namespace hostlm::http
