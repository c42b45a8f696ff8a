// Request fields the Ollama and OpenAI APIs share in shape. Each throws HttpError 400 naming
// the field when the value has the wrong shape.
#pragma once
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

}  // namespace hostlm::http
