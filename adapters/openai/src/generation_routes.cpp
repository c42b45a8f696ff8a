// POST /v1/chat/completions and POST /v1/completions: one JSON object, or SSE chunks ending
// with `data: [DONE]` (ecosystem spec 4.3, 4.4).
#include "hostlm/http/generation.h"
#include "hostlm/openai/requests.h"
#include "openai_common.h"

namespace hostlm::openai {
namespace {

// Everything that differs between the two endpoints' objects.
struct Shape {
  bool chat = true;
  std::string id, model, reasoning_field;
  int64_t created = 0;

  Json base(const char* object) const {
    Json j = Json::object();
    j["id"] = id;
    j["object"] = object;
    j["created"] = created;
    j["model"] = model;
    j["system_fingerprint"] = "fp_hostlm";
    return j;
  }

  void put_reasoning(Json& target, const std::string& text) const {
    if (reasoning_field == "both" || reasoning_field == "reasoning") target["reasoning"] = text;
    if (reasoning_field == "both" || reasoning_field != "reasoning")
      target["reasoning_content"] = text;
  }

  static Json tool_call(const ToolCall& call, int index) {
    Json j = Json::object();
    j["index"] = index;
    j["id"] = call.id.empty() ? http::random_id("call_", 24) : call.id;
    j["type"] = "function";
    j["function"] = {{"name", call.name}, {"arguments", call.arguments.dump()}};
    return j;
  }

  Json logprobs(const std::vector<TokenLogprob>& tokens) const {
    if (!chat) {  // the legacy completions shape
      Json list = Json::array(), values = Json::array(), tops = Json::array();
      for (const TokenLogprob& t : tokens) {
        list.push_back(t.token);
        values.push_back(t.logprob);
        Json top = Json::object();
        for (const TokenLogprob& alt : t.top) top[alt.token] = alt.logprob;
        tops.push_back(std::move(top));
      }
      return {{"tokens", list}, {"token_logprobs", values}, {"top_logprobs", tops}};
    }
    Json content = Json::array();
    auto one = [](const TokenLogprob& t) {
      Json bytes = Json::array();
      for (const unsigned char c : t.token) bytes.push_back(c);
      Json j = Json::object();
      j["token"] = t.token;
      j["logprob"] = t.logprob;
      j["bytes"] = bytes;
      return j;
    };
    for (const TokenLogprob& t : tokens) {
      Json j = one(t);
      Json top = Json::array();
      for (const TokenLogprob& alt : t.top) top.push_back(one(alt));
      j["top_logprobs"] = top;
      content.push_back(std::move(j));
    }
    return {{"content", content}};
  }

  Json chunk(Json delta, const Json& finish, const Json& logprobs_json = nullptr) const {
    Json j = base(chat ? "chat.completion.chunk" : "text_completion");
    Json choice = Json::object();
    choice["index"] = 0;
    if (chat)
      choice["delta"] = std::move(delta);
    else
      choice["text"] = delta.value("content", std::string());
    choice["finish_reason"] = finish;
    choice["logprobs"] = logprobs_json;
    j["choices"] = Json::array({choice});
    return j;
  }

  // The stream chunk for one delta; tool calls are numbered by `calls`.
  Json delta_chunk(const TextDelta& d, int& calls) const {
    Json delta = Json::object();
    switch (d.kind) {
      case TextDelta::Kind::kContent:
        delta["content"] = d.text;
        break;
      case TextDelta::Kind::kThinking:
        if (!chat) {
          delta["content"] = d.text;
          break;
        }
        put_reasoning(delta, d.text);
        break;
      case TextDelta::Kind::kToolCall:
        delta["tool_calls"] = Json::array({tool_call(d.tool_call, calls++)});
        break;
    }
    return chunk(std::move(delta), nullptr, d.logprobs.empty() ? Json() : logprobs(d.logprobs));
  }

  Json complete(const std::vector<TextDelta>& deltas, const GenerationSummary& s,
                const std::string& echo) const {
    std::string content = echo, reasoning;
    Json calls = Json::array();
    std::vector<TokenLogprob> tokens;
    for (const TextDelta& d : deltas) {
      if (d.kind == TextDelta::Kind::kContent || (!chat && d.kind == TextDelta::Kind::kThinking))
        content += d.text;
      if (d.kind == TextDelta::Kind::kThinking && chat) reasoning += d.text;
      if (d.kind == TextDelta::Kind::kToolCall)
        calls.push_back(tool_call(d.tool_call, static_cast<int>(calls.size())));
      tokens.insert(tokens.end(), d.logprobs.begin(), d.logprobs.end());
    }
    Json j = base(chat ? "chat.completion" : "text_completion");
    Json choice = Json::object();
    choice["index"] = 0;
    choice["finish_reason"] = finish_reason(s);
    choice["logprobs"] = tokens.empty() ? Json() : logprobs(tokens);
    if (chat) {
      Json message = Json::object();
      message["role"] = "assistant";
      message["content"] = calls.empty() || !content.empty() ? Json(content) : Json();
      if (!reasoning.empty()) put_reasoning(message, reasoning);
      if (!calls.empty()) message["tool_calls"] = calls;
      choice["message"] = std::move(message);
    } else {
      choice["text"] = content;
    }
    j["choices"] = Json::array({choice});
    j["usage"] = usage_json(s);
    j["timings"] = timings_json(s);
    return j;
  }
};

void generation(ApiContext& ctx, http::Exchange& ex, bool chat) {
  const Json body = ex.json();
  CompletionCall call = chat ? parse_chat_completion(body) : parse_completion(body);
  ex.log().model = call.model;
  Shape shape;
  shape.chat = chat;
  shape.id = http::random_id(chat ? "chatcmpl-" : "cmpl-", 24);
  shape.model = call.model;
  shape.created = unix_now();
  shape.reasoning_field = ctx.options.reasoning_field;
  const std::string echo = call.echo ? call.request.prompt : std::string();
  ModelLease lease = ctx.models.acquire(call.model, {.keep_alive = call.keep_alive,
                                                     .context = call.request.options.num_ctx,
                                                     .gpu_layers = call.request.options.num_gpu});
  std::shared_ptr<TextStream> stream = lease.generate(std::move(call.request));
  http::RequestLog* log = &ex.log();

  if (!call.stream) {
    const std::vector<TextDelta> deltas = http::collect_generation(
        *stream, [&] { return ex.client_connected(); }, [&] { return ex.must_stop(); });
    const GenerationSummary& s = stream->summary();
    http::log_generation(*log, s);
    if (s.done_reason == "error") throw http::HttpError(500, s.error, "server_error");
    if (s.done_reason == "cancelled")
      throw http::HttpError(503, "the generation was cancelled", "unavailable_error");
    return ex.send_json(200, shape.complete(deltas, s, echo));
  }

  const bool include_usage = call.include_usage;
  ex.send_stream(
      "text/event-stream", [stream, log, shape, include_usage, echo](http::StreamWriter& writer) {
        int calls = 0;
        // The role comes once, first (what OpenAI's SDKs expect).
        if (shape.chat &&
            !writer.write(sse(shape.chunk({{"role", "assistant"}, {"content", ""}}, nullptr))))
          return stream->cancel();
        if (!echo.empty() && !writer.write(sse(shape.chunk({{"content", echo}}, nullptr))))
          return stream->cancel();
        const http::StreamEnd end =
            http::pump_generation(*stream, writer, [&](const std::vector<TextDelta>& deltas) {
              std::string events;
              for (const TextDelta& d : deltas) events += sse(shape.delta_chunk(d, calls));
              return writer.write(events);
            });
        const GenerationSummary& s = stream->summary();
        http::log_generation(*log, s);
        if (end == http::StreamEnd::kClientGone) return;
        // After the first byte an error can only be an event; no [DONE] follows it.
        if (end == http::StreamEnd::kStopping || s.done_reason == "error") {
          const http::HttpError error =
              end == http::StreamEnd::kStopping
                  ? http::HttpError(503, "the server is shutting down", "unavailable_error")
                  : http::HttpError(500, s.error, "server_error");
          writer.write(sse(error_json(error)));
          return;
        }
        Json last = shape.chunk(Json::object(), finish_reason(s));
        last["timings"] = timings_json(s);
        std::string tail = sse(last);
        if (include_usage) {
          Json usage = shape.base(shape.chat ? "chat.completion.chunk" : "text_completion");
          usage["choices"] = Json::array();
          usage["usage"] = usage_json(s);
          tail += sse(usage);
        }
        writer.write(tail + kSseDone);
      });
}

}  // namespace

void add_generation_routes(http::Server& server, std::shared_ptr<ApiContext> ctx) {
  server.route("POST", "/v1/chat/completions",
               [ctx](http::Exchange& ex) { generation(*ctx, ex, true); });
  server.route("POST", "/v1/completions",
               [ctx](http::Exchange& ex) { generation(*ctx, ex, false); });
}

}  // namespace hostlm::openai
