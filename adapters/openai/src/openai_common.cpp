#include "openai_common.h"

#include <chrono>
#include <string_view>

namespace hostlm::openai {

std::string sse(const Json& event) {
  return "data: " + event.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n\n";
}

int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string finish_reason(const GenerationSummary& s) {
  if (s.done_reason == "length") return "length";
  return s.tool_calls > 0 ? "tool_calls" : "stop";
}

Json usage_json(const GenerationSummary& s) {
  Json u = Json::object();
  u["prompt_tokens"] = s.prompt_tokens;
  u["completion_tokens"] = s.generated_tokens;
  u["total_tokens"] = s.prompt_tokens + s.generated_tokens;
  u["prompt_tokens_details"] = {{"cached_tokens", s.cached_tokens}};
  return u;
}

Json timings_json(const GenerationSummary& s) {
  const double prompt_ms = static_cast<double>(s.prompt_duration.count()) / 1e6;
  const double predicted_ms = static_cast<double>(s.generation_duration.count()) / 1e6;
  Json t = Json::object();
  t["cache_n"] = s.cached_tokens;
  t["prompt_n"] = s.prompt_tokens - s.cached_tokens;
  t["prompt_ms"] = prompt_ms;
  t["prompt_per_second"] =
      prompt_ms > 0 ? (s.prompt_tokens - s.cached_tokens) * 1e3 / prompt_ms : 0.0;
  t["predicted_n"] = s.generated_tokens;
  t["predicted_ms"] = predicted_ms;
  t["predicted_per_second"] = predicted_ms > 0 ? s.generated_tokens * 1e3 / predicted_ms : 0.0;
  return t;
}

Json error_json(const http::HttpError& e) {
  std::string type = e.type();
  if (type.empty() || e.status() == 404) {
    switch (e.status()) {
      case 400:
      case 404:
      case 413:
        type = "invalid_request_error";
        break;
      case 401:
        type = "authentication_error";
        break;
      case 403:
        type = "permission_error";
        break;
      case 501:
        type = "not_supported_error";
        break;
      case 503:
        type = "unavailable_error";
        break;
      default:
        type = e.status() < 500 ? "invalid_request_error" : "server_error";
    }
  }
  Json err = Json::object();
  err["message"] = e.what();
  err["type"] = type;
  err["param"] = nullptr;
  if (!e.code().empty())
    err["code"] = e.code();
  else if (e.status() == 404 && std::string_view(e.what()).starts_with("model '"))
    err["code"] = "model_not_found";
  else
    err["code"] = nullptr;
  return {{"error", err}};
}

}  // namespace hostlm::openai
