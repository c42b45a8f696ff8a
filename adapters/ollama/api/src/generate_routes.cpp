// POST /api/chat and POST /api/generate: NDJSON streams (the default) or one JSON object.
#include "hostlm/http/generation.h"
#include "hostlm/ollama/api_requests.h"
#include "hostlm/ollama/go_template.h"
#include "routes.h"

namespace hostlm::ollama {
namespace {

using Json = nlohmann::ordered_json;

// Where the answer goes in each endpoint's objects.
struct Shape {
  bool chat = true;

  Json line(const std::string& model) const {
    Json j = Json::object();
    j["model"] = model;
    j["created_at"] = now_time();
    if (chat)
      j["message"] = Json{{"role", "assistant"}, {"content", ""}};
    else
      j["response"] = "";
    return j;
  }

  // One stream line for one delta (tool calls numbered by `calls`).
  Json delta_line(const std::string& model, const TextDelta& d, int& calls) const {
    Json j = line(model);
    Json& target = chat ? j["message"] : j;
    const char* content_key = chat ? "content" : "response";
    switch (d.kind) {
      case TextDelta::Kind::kContent:
        target[content_key] = d.text;
        break;
      case TextDelta::Kind::kThinking:
        target["thinking"] = d.text;
        break;
      case TextDelta::Kind::kToolCall:
        target["tool_calls"] = Json::array({tool_call_json(d.tool_call, calls++)});
        break;
    }
    if (!d.logprobs.empty()) j["logprobs"] = logprobs_json(d.logprobs);
    j["done"] = false;
    return j;
  }

  Json final_line(const std::string& model, const GenerationSummary& s, bool with_context) const {
    Json j = line(model);
    j["done"] = true;
    j["done_reason"] = s.done_reason == "length" ? "length" : "stop";
    if (!chat && with_context) j["context"] = s.context;
    add_stats(j, s);
    return j;
  }
};

std::string ndjson(const Json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

// The reply to a request without prompt or messages: load or (keep_alive 0) unload.
void load_or_unload(ApiContext& ctx, http::Exchange& ex, const ApiCall& call, const Shape& shape) {
  if (!ctx.models.resolve(call.model))
    throw http::HttpError(404, "model '" + call.model + "' not found");
  Json j = shape.line(call.model);
  if (call.keep_alive && call.keep_alive->count() == 0) {
    ctx.models.unload(call.model);
    j["done"] = true;
    j["done_reason"] = "unload";
  } else {
    ModelLease lease = ctx.models.acquire(call.model, {.keep_alive = call.keep_alive,
                                                       .context = call.request.options.num_ctx,
                                                       .gpu_layers = call.request.options.num_gpu});
    j["done"] = true;
    j["done_reason"] = "load";
    if (lease.load_duration().count() > 0) j["load_duration"] = lease.load_duration().count();
  }
  ex.send_json(200, j);
}

// /api/generate's `template`: the Go template renders the prompt, which then goes raw.
void apply_template_override(ApiCall& call, const ModelLease& lease) {
  const GoTemplate tmpl = GoTemplate::parse(*call.template_override);
  Json messages = Json::array();
  bool has_system = false;
  for (const ChatMessage& m : call.request.chat->messages) {
    messages.push_back({{"role", m.role}, {"content", m.content}});
    has_system = has_system || m.role == "system";
  }
  if (!has_system && lease.spec().system)
    messages.insert(messages.begin(), Json{{"role", "system"}, {"content", *lease.spec().system}});
  Json think = nullptr;
  if (call.request.think != Thinking::kDefault) think = call.request.think == Thinking::kOn;
  call.request.prompt = tmpl.render_chat(messages, Json::array(), think);
  call.request.chat.reset();
}

void generation(ApiContext& ctx, http::Exchange& ex, bool chat) {
  const Shape shape{chat};
  ApiCall call = chat ? parse_chat_request(ex.json()) : parse_generate_request(ex.json());
  ex.log().model = call.model;
  if (!call.ignored_options.empty() && ctx.logger.enabled(http::LogLevel::kDebug)) {
    Json names = call.ignored_options;
    ctx.logger.event(http::LogLevel::kDebug, "ignoring unknown options", {{"options", names}});
  }
  if (call.load_only) return load_or_unload(ctx, ex, call, shape);
  ModelLease lease = ctx.models.acquire(call.model, {.keep_alive = call.keep_alive,
                                                     .context = call.request.options.num_ctx,
                                                     .gpu_layers = call.request.options.num_gpu});
  if (call.template_override) apply_template_override(call, lease);
  if (call.debug_render_only) {
    Json j = shape.line(call.model);
    j["done"] = true;
    j["debug_info"] = {{"rendered_template", lease.render(call.request)}, {"image_count", 0}};
    return ex.send_json(200, j);
  }
  const bool with_context = !chat && call.request.chat.has_value();
  std::shared_ptr<TextStream> stream = lease.generate(std::move(call.request));
  http::RequestLog* log = &ex.log();
  const std::string model = call.model;

  if (!call.stream) {
    const std::vector<TextDelta> deltas = http::collect_generation(
        *stream, [&] { return ex.client_connected(); }, [&] { return ex.must_stop(); });
    const GenerationSummary& s = stream->summary();
    http::log_generation(*log, s);
    if (s.done_reason == "error") throw http::HttpError(500, s.error);
    if (s.done_reason == "cancelled") throw http::HttpError(503, "the generation was cancelled");
    Json j = shape.final_line(model, s, with_context);
    Json& target = chat ? j["message"] : j;
    std::string content, thinking;
    Json calls = Json::array();
    std::vector<TokenLogprob> logprobs;
    for (const TextDelta& d : deltas) {
      logprobs.insert(logprobs.end(), d.logprobs.begin(), d.logprobs.end());
      if (d.kind == TextDelta::Kind::kContent) content += d.text;
      if (d.kind == TextDelta::Kind::kThinking) thinking += d.text;
      if (d.kind == TextDelta::Kind::kToolCall)
        calls.push_back(tool_call_json(d.tool_call, static_cast<int>(calls.size())));
    }
    target[chat ? "content" : "response"] = content;
    if (!thinking.empty()) target["thinking"] = thinking;
    if (!calls.empty()) target["tool_calls"] = calls;
    if (!logprobs.empty()) j["logprobs"] = logprobs_json(logprobs);
    return ex.send_json(200, j);
  }

  ex.send_stream("application/x-ndjson",
                 [stream, log, model, shape, with_context](http::StreamWriter& writer) {
                   int calls = 0;
                   const http::StreamEnd end = http::pump_generation(
                       *stream, writer, [&](const std::vector<TextDelta>& deltas) {
                         std::string lines;
                         for (const TextDelta& d : deltas)
                           lines += ndjson(shape.delta_line(model, d, calls));
                         return writer.write(lines);
                       });
                   const GenerationSummary& s = stream->summary();
                   http::log_generation(*log, s);
                   if (end == http::StreamEnd::kClientGone) return;
                   // Mid-stream failures keep the 200 and end with an error line, as Ollama does.
                   if (end == http::StreamEnd::kStopping) {
                     writer.write(ndjson(Json{{"error", "the server is shutting down"}}));
                   } else if (s.done_reason == "error") {
                     writer.write(ndjson(Json{{"error", s.error}}));
                   } else {
                     writer.write(ndjson(shape.final_line(model, s, with_context)));
                   }
                 });
}

}  // namespace

void add_generate_routes(http::Server& server, std::shared_ptr<ApiContext> ctx) {
  server.route("POST", "/api/chat",
               with_store_errors([ctx](http::Exchange& ex) { generation(*ctx, ex, true); }));
  server.route("POST", "/api/generate",
               with_store_errors([ctx](http::Exchange& ex) { generation(*ctx, ex, false); }));
}

}  // namespace hostlm::ollama
