// What the OpenAI route files share: SSE events, usage and timings objects, finish reasons,
// the error object.
#pragma once
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "hostlm/http/server.h"
#include "hostlm/openai/api.h"
#include "hostlm/serving.h"

namespace hostlm::openai {

struct ApiContext {
  ModelManager& models;
  ApiOptions options;
};

using Json = nlohmann::ordered_json;

// "data: <json>\n\n"
std::string sse(const Json& event);
inline constexpr const char* kSseDone = "data: [DONE]\n\n";

int64_t unix_now();
// stop / length / tool_calls
std::string finish_reason(const GenerationSummary& summary);
// prompt_tokens, completion_tokens, total_tokens, prompt_tokens_details.cached_tokens
Json usage_json(const GenerationSummary& summary);
// llama-server's timings (prompt_n, prompt_ms, predicted_n, predicted_ms, per second).
Json timings_json(const GenerationSummary& summary);
// {"error": {"message", "type", "param": null, "code"}}
Json error_json(const http::HttpError& error);

}  // namespace hostlm::openai
