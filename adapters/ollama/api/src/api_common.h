// Shared by the Ollama route files: what the routes work on and Ollama's JSON conventions
// (RFC 3339 timestamps, nanosecond stats omitted when zero, tool calls with object arguments).
#pragma once
#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "hostlm/http/server.h"
#include "hostlm/ollama/api.h"
#include "hostlm/ollama/store.h"
#include "hostlm/serving.h"

namespace hostlm::ollama {

struct ApiContext {
  ModelManager& models;
  std::shared_ptr<StoreSlot> store;  // never null; holds null when serving without a store
  http::Logger& logger;
};

// Runs a handler with the store's RequestError turned into the HTTP status it stands for.
http::Handler with_store_errors(std::function<void(http::Exchange&)> handler);

// "2026-03-01T12:00:00.123456789Z"
std::string format_time(std::chrono::system_clock::time_point t);
inline std::string now_time() { return format_time(std::chrono::system_clock::now()); }

// total_duration, load_duration, prompt_eval_count, prompt_eval_duration, eval_count,
// eval_duration; zero values left out as Ollama's omitempty does.
void add_stats(nlohmann::ordered_json& line, const GenerationSummary& summary);

// {"id": "call_…", "function": {"index": i, "name": …, "arguments": {…}}}
nlohmann::ordered_json tool_call_json(const ToolCall& call, int index);

// [{"token", "logprob", "bytes", "top_logprobs": [{"token", "logprob", "bytes"}]}]
nlohmann::ordered_json logprobs_json(const std::vector<TokenLogprob>& tokens);

// The store as it is now (never null), or HttpError 501 naming the endpoint when there is none.
std::shared_ptr<ModelStore> require_store(const ApiContext& ctx, const char* what);

}  // namespace hostlm::ollama
