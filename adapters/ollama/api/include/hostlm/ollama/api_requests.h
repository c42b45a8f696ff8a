// Ollama's request bodies (ecosystem spec 3.3-3.7) read into serving requests. Every problem
// is an http::HttpError 400 whose message names the field.
#pragma once
#include <chrono>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "hostlm/text_generation.h"

namespace hostlm::ollama {

// `options` of a request or PARAMETERs of a Modelfile. Unknown and deprecated keys (clients
// still send mirostat, tfs_z, numa, ...) are named in *ignored, never an error; a value of the
// wrong type is. hostlm's own key `tool_choice` (OpenAI's shape, also accepted at the top
// level of /api/chat) forces tool calls, which Ollama itself cannot.
GenerationOptions options_from_json(const nlohmann::json& options,
                                    std::vector<std::string>* ignored = nullptr);

// keep_alive: seconds as a number, or a Go duration ("5m", "-1"); null or absent: nullopt.
std::optional<std::chrono::nanoseconds> parse_keep_alive(const nlohmann::json& value);
// think: true / false, or "low" | "medium" | "high" | "max" (thinking on); absent: default.
Thinking parse_think(const nlohmann::json& value);
// format: "" or absent (free text), "json", or a JSON schema object.
ResponseFormat parse_format(const nlohmann::json& value);

// What both generation endpoints share.
struct ApiCall {
  std::string model;
  TextRequest request;
  bool stream = true;
  std::optional<std::chrono::nanoseconds> keep_alive;
  bool debug_render_only = false;  // _debug_render_only: answer with the prompt
  bool load_only = false;          // no prompt / no messages: load (or unload) the model
  std::optional<std::string> template_override;  // /api/generate `template` (Go template)
  std::vector<std::string> ignored_options;
};

// POST /api/chat. `messages` may be empty (load or unload the model).
ApiCall parse_chat_request(const nlohmann::ordered_json& body);
// POST /api/generate. An empty prompt means load or unload; request.chat holds the
// [system,] user conversation unless `raw`.
ApiCall parse_generate_request(const nlohmann::ordered_json& body);

}  // namespace hostlm::ollama
