#include "api_common.h"

#include <ctime>

#include "hostlm/http/generation.h"
#include "hostlm/ollama/errors.h"

namespace hostlm::ollama {

http::Handler with_store_errors(std::function<void(http::Exchange&)> handler) {
  return [handler = std::move(handler)](http::Exchange& ex) {
    try {
      handler(ex);
    } catch (const RequestError& e) {
      throw http::HttpError(e.http_status(), e.what());
    }
  };
}

std::string format_time(std::chrono::system_clock::time_point t) {
  const auto since = t.time_since_epoch();
  const auto seconds = std::chrono::floor<std::chrono::seconds>(since);
  const auto nanos = std::chrono::duration_cast<std::chrono::nanoseconds>(since - seconds).count();
  const std::time_t tt = static_cast<std::time_t>(seconds.count());
  std::tm tm{};
  gmtime_r(&tt, &tm);
  char date[32];
  std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%S", &tm);
  char out[64];
  std::snprintf(out, sizeof out, "%s.%09lldZ", date, static_cast<long long>(nanos));
  return out;
}

void add_stats(nlohmann::ordered_json& line, const GenerationSummary& s) {
  auto put = [&](const char* key, int64_t v) {
    if (v > 0) line[key] = v;
  };
  put("total_duration", s.total_duration.count());
  put("load_duration", s.load_duration.count());
  put("prompt_eval_count", s.prompt_tokens);
  put("prompt_eval_duration", s.prompt_duration.count());
  put("eval_count", s.generated_tokens);
  put("eval_duration", s.generation_duration.count());
}

nlohmann::ordered_json tool_call_json(const ToolCall& call, int index) {
  nlohmann::ordered_json fn = nlohmann::ordered_json::object();
  fn["index"] = index;
  fn["name"] = call.name;
  fn["arguments"] = call.arguments;
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  out["id"] = call.id.empty() ? http::random_id("call_") : call.id;
  out["function"] = std::move(fn);
  return out;
}

nlohmann::ordered_json logprobs_json(const std::vector<TokenLogprob>& tokens) {
  auto one = [](const TokenLogprob& t) {
    nlohmann::ordered_json j = nlohmann::ordered_json::object();
    j["token"] = t.token;
    j["logprob"] = t.logprob;
    nlohmann::ordered_json bytes = nlohmann::ordered_json::array();
    for (const unsigned char c : t.token) bytes.push_back(c);
    j["bytes"] = bytes;
    return j;
  };
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const TokenLogprob& t : tokens) {
    nlohmann::ordered_json j = one(t);
    if (!t.top.empty()) {
      nlohmann::ordered_json top = nlohmann::ordered_json::array();
      for (const TokenLogprob& alt : t.top) top.push_back(one(alt));
      j["top_logprobs"] = top;
    }
    out.push_back(std::move(j));
  }
  return out;
}

std::shared_ptr<ModelStore> require_store(const ApiContext& ctx, const char* what) {
  std::shared_ptr<ModelStore> store = ctx.store->get();
  if (!store)
    throw http::HttpError(
        501, std::string(what) + " needs the model store, which this server runs without");
  return store;
}

}  // namespace hostlm::ollama
