// OpenAI request bodies read into serving requests; every problem is an http::HttpError 400
// naming the field.
#pragma once
#include <chrono>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "hostlm/text_generation.h"

namespace hostlm::openai {

struct CompletionCall {
  std::string model;
  TextRequest request;
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
  bool logprobs = false;
  std::optional<std::chrono::nanoseconds> keep_alive;
  bool echo = false;  // /v1/completions: the prompt comes back before the answer
};

// POST /v1/chat/completions. Thinking switches, strongest first: `think` (bool or level),
// chat_template_kwargs.enable_thinking, reasoning_effort / reasoning.effort ("none" is off).
CompletionCall parse_chat_completion(const nlohmann::ordered_json& body);
// POST /v1/completions: `prompt` as a string, one-string list, token ids or one list of ids.
CompletionCall parse_completion(const nlohmann::ordered_json& body);

}  // namespace hostlm::openai
