// Reading Ollama request bodies. Field names and accepted shapes follow Ollama's api/types.go
// as the official clients send them.
#include <algorithm>
#include <cmath>

#include "hostlm/chat_json.h"
#include "hostlm/http/json_fields.h"
#include "hostlm/http/server.h"
#include "hostlm/ollama/api_requests.h"
#include "hostlm/ollama/errors.h"
#include "hostlm/ollama/modelfile.h"
#include "hostlm/serving.h"

namespace hostlm::ollama {
namespace {

using Json = nlohmann::ordered_json;
using http::HttpError;

HttpError bad(const std::string& message) { return HttpError(400, message); }

bool has_images(const Json& value) { return value.is_array() ? !value.empty() : !value.is_null(); }

// Ollama's message shape into the one chat_json reads: thinking -> reasoning_content,
// tool_name -> name; images are refused (no vision yet).
ChatMessage message_from_ollama(const Json& m, size_t index) {
  if (!m.is_object()) throw bad("message " + std::to_string(index) + " must be an object");
  Json copy = m;
  if (const auto role = copy.find("role"); role != copy.end() && role->is_string()) {
    std::string r = role->get<std::string>();
    for (char& c : r) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    *role = r;
  }
  if (const auto images = copy.find("images"); images != copy.end() && has_images(*images))
    throw bad("message " + std::to_string(index) +
              ": images are not supported (hostlm has no vision support yet)");
  copy.erase("images");
  if (const auto t = copy.find("thinking"); t != copy.end()) {
    if (!copy.contains("reasoning_content")) copy["reasoning_content"] = *t;
    copy.erase("thinking");
  }
  if (const auto t = copy.find("tool_name"); t != copy.end()) {
    if (!copy.contains("name")) copy["name"] = *t;
    copy.erase("tool_name");
  }
  try {
    return chat_message_from_json(copy, index);
  } catch (const Error& e) {
    throw bad(e.what());
  }
}

// Fields both endpoints read the same way.
void read_common(const Json& body, ApiCall& call) {
  if (!body.is_object()) throw bad("the request body must be a JSON object");
  call.model = http::string_field(body, "model");
  if (call.model.empty()) call.model = http::string_field(body, "name");  // older clients
  if (call.model.empty()) throw bad("model is required");
  call.stream = http::bool_field(body, "stream", true);
  call.keep_alive = parse_keep_alive(body.value("keep_alive", Json()));
  call.debug_render_only = http::bool_field(body, "_debug_render_only", false);
  TextRequest& r = call.request;
  const Json options = body.value("options", Json());
  r.options = options_from_json(options, &call.ignored_options);
  r.format = parse_format(body.value("format", Json()));
  r.think = parse_think(body.value("think", Json()));
  r.truncate = http::bool_field(body, "truncate", true);
  if (http::bool_field(body, "logprobs", false)) {
    r.top_logprobs = 0;
    if (const auto top = body.find("top_logprobs"); top != body.end() && !top->is_null()) {
      if (!top->is_number_integer() || top->get<int64_t>() < 0 || top->get<int64_t>() > 20)
        throw bad("top_logprobs must be an integer from 0 to 20");
      r.top_logprobs = top->get<int>();
    }
  }
  if (const auto tc = body.find("tool_choice"); tc != body.end()) {
    r.tool_choice = http::parse_tool_choice(*tc);
  } else if (options.is_object() && options.contains("tool_choice")) {
    r.tool_choice = http::parse_tool_choice(options["tool_choice"]);
  }
  r.parallel_tool_calls = http::bool_field(body, "parallel_tool_calls", true);
}

}  // namespace

GenerationOptions options_from_json(const nlohmann::json& options,
                                    std::vector<std::string>* ignored) {
  nlohmann::ordered_json typed;
  try {
    typed = check_parameters(options, /*strict=*/false, ignored);
  } catch (const RequestError& e) {
    throw bad(e.what());
  }
  if (ignored) std::erase(*ignored, std::string("tool_choice"));  // read by read_common
  GenerationOptions o;
  auto number = [&](const char* key) -> std::optional<double> {
    const auto it = typed.find(key);
    if (it == typed.end() || !it->is_number()) return std::nullopt;
    return it->get<double>();
  };
  // Typed by check_parameters; clamped so that no conversion below can overflow.
  auto to_int = [](double v) { return static_cast<int>(std::clamp(v, -2e9, 2e9)); };
  auto to_int64 = [](double v) { return static_cast<int64_t>(std::clamp(v, -9e18, 9e18)); };
  if (auto v = number("num_predict")) o.num_predict = to_int64(*v);
  if (auto v = number("temperature")) o.temperature = static_cast<float>(*v);
  if (auto v = number("top_k")) o.top_k = to_int(*v);
  if (auto v = number("top_p")) o.top_p = static_cast<float>(*v);
  if (auto v = number("min_p")) o.min_p = static_cast<float>(*v);
  if (auto v = number("typical_p")) o.typical_p = static_cast<float>(*v);
  if (auto v = number("repeat_penalty")) o.repeat_penalty = static_cast<float>(*v);
  if (auto v = number("presence_penalty")) o.presence_penalty = static_cast<float>(*v);
  if (auto v = number("frequency_penalty")) o.frequency_penalty = static_cast<float>(*v);
  if (auto v = number("repeat_last_n")) o.repeat_last_n = to_int(*v);
  if (auto v = number("seed")) o.seed = to_int64(*v);
  if (auto v = number("num_ctx")) {
    if (*v < 1) throw bad("num_ctx must be at least 1");
    o.num_ctx = to_int64(*v);
  }
  if (auto v = number("num_gpu")) {
    if (*v < -1) throw bad("num_gpu must be -1 (all layers on the GPU) or a layer count");
    o.num_gpu = to_int64(*v);
  }
  if (const auto stop = typed.find("stop"); stop != typed.end() && stop->is_array())
    o.stop = stop->get<std::vector<std::string>>();
  return o;
}

std::optional<std::chrono::nanoseconds> parse_keep_alive(const nlohmann::json& value) {
  if (value.is_null()) return std::nullopt;
  if (value.is_number()) {
    const double seconds = value.get<double>();
    if (!std::isfinite(seconds)) throw bad("keep_alive must be a finite number of seconds");
    if (seconds < 0) return std::chrono::nanoseconds(-1);
    return std::chrono::nanoseconds(static_cast<int64_t>(std::min(seconds, 9e9) * 1e9));
  }
  if (!value.is_string())
    throw bad("keep_alive must be a number of seconds or a duration string like \"5m\"");
  try {
    const auto d = parse_duration(value.get<std::string>());
    return d < std::chrono::nanoseconds::zero() ? std::chrono::nanoseconds(-1) : d;
  } catch (const InvalidRequest& e) {
    throw bad(std::string("keep_alive: ") + e.what());
  }
}

Thinking parse_think(const nlohmann::json& value) {
  if (value.is_null()) return Thinking::kDefault;
  if (value.is_boolean()) return value.get<bool>() ? Thinking::kOn : Thinking::kOff;
  if (value.is_string()) {
    const std::string level = value.get<std::string>();
    if (level == "low" || level == "medium" || level == "high" || level == "max")
      return Thinking::kOn;
    if (level == "none" || level == "false") return Thinking::kOff;
    if (level == "true") return Thinking::kOn;
  }
  throw bad("think must be true, false, \"low\", \"medium\", \"high\" or \"max\", not " +
            value.dump());
}

ResponseFormat parse_format(const nlohmann::json& value) {
  ResponseFormat f;
  if (value.is_null() || (value.is_string() && value.get<std::string>().empty())) return f;
  if (value.is_string() && value.get<std::string>() == "json") {
    f.kind = ResponseFormat::Kind::kJson;
    return f;
  }
  if (value.is_object()) {
    f.kind = ResponseFormat::Kind::kJsonSchema;
    f.schema = value.dump();
    return f;
  }
  throw bad("invalid format: expected \"json\" or a JSON schema object, not " + value.dump());
}

ApiCall parse_chat_request(const nlohmann::ordered_json& body) {
  ApiCall call;
  read_common(body, call);
  const auto messages = body.find("messages");
  Conversation conversation;
  if (messages != body.end() && !messages->is_null()) {
    if (!messages->is_array()) throw bad("\"messages\" must be a list");
    for (size_t i = 0; i < messages->size(); ++i)
      conversation.messages.push_back(message_from_ollama((*messages)[i], i));
  }
  try {
    conversation.tools = chat_tools_from_json(body.value("tools", Json()));
  } catch (const Error& e) {
    throw bad(e.what());
  }
  call.load_only = conversation.messages.empty();
  call.request.chat = std::move(conversation);
  return call;
}

ApiCall parse_generate_request(const nlohmann::ordered_json& body) {
  ApiCall call;
  read_common(body, call);
  const std::string prompt = http::string_field(body, "prompt");
  const std::string system = http::string_field(body, "system");
  const std::string suffix = http::string_field(body, "suffix");
  const bool raw = http::bool_field(body, "raw", false);
  if (const auto images = body.find("images"); images != body.end() && has_images(*images))
    throw bad("images are not supported (hostlm has no vision support yet)");
  if (!suffix.empty()) throw bad("\"" + call.model + "\" does not support insert");
  std::vector<int32_t> context;
  if (const auto c = body.find("context"); c != body.end() && !c->is_null()) {
    if (!c->is_array()) throw bad("\"context\" must be a list of token ids");
    for (const auto& id : *c) {
      if (!id.is_number_integer()) throw bad("\"context\" must be a list of token ids");
      context.push_back(id.get<int32_t>());
    }
  }
  const std::string tmpl = http::string_field(body, "template");
  if (raw && (!tmpl.empty() || !system.empty() || !context.empty()))
    throw bad("raw mode does not support template, system, or context");
  call.load_only = prompt.empty();
  TextRequest& r = call.request;
  r.context_tokens = std::move(context);
  if (raw) {
    r.prompt = prompt;
    return call;
  }
  if (!tmpl.empty()) call.template_override = tmpl;
  Conversation conversation;
  if (!system.empty()) {
    ChatMessage m;
    m.role = "system";
    m.content = system;
    conversation.messages.push_back(std::move(m));
  }
  ChatMessage user;
  user.role = "user";
  user.content = prompt;
  conversation.messages.push_back(std::move(user));
  r.chat = std::move(conversation);
  return call;
}

}  // namespace hostlm::ollama
