// Reading OpenAI request bodies, with the extensions llama-server, vLLM, LM Studio and
// Ollama's /v1 accept (top_k, min_p, chat_template_kwargs, reasoning_effort, think, ...).
// Unknown keys are ignored, never an error.
#include "hostlm/openai/requests.h"

#include <cmath>

#include "hostlm/chat_json.h"
#include "hostlm/http/json_fields.h"
#include "hostlm/http/server.h"
#include "hostlm/serving.h"

namespace hostlm::openai {
namespace {

using Json = nlohmann::ordered_json;
using http::HttpError;

HttpError bad(const std::string& message) { return HttpError(400, message); }

const Json* field(const Json& body, const char* key) {
  const auto it = body.find(key);
  return it == body.end() || it->is_null() ? nullptr : &*it;
}

std::optional<double> number(const Json& body, const char* key) {
  const Json* v = field(body, key);
  if (!v) return std::nullopt;
  if (!v->is_number()) throw bad(std::string(key) + " must be a number, not " + v->type_name());
  const double d = v->get<double>();
  if (!std::isfinite(d)) throw bad(std::string(key) + " must be a finite number");
  return d;
}

std::optional<int64_t> integer(const Json& body, const char* key) {
  const Json* v = field(body, key);
  if (!v) return std::nullopt;
  if (v->is_number_integer()) return v->get<int64_t>();
  // 3.0 is an integer to JavaScript clients; beyond 2^53 a double is no exact integer anyway.
  if (!v->is_number_float() || v->get<double>() != std::floor(v->get<double>()) ||
      std::fabs(v->get<double>()) > 9007199254740992.0)
    throw bad(std::string(key) + " must be an integer");
  return static_cast<int64_t>(v->get<double>());
}

bool boolean(const Json& body, const char* key, bool fallback) {
  const Json* v = field(body, key);
  if (!v) return fallback;
  if (!v->is_boolean()) throw bad(std::string(key) + " must be a boolean");
  return v->get<bool>();
}

// Sampling and length fields shared by both endpoints.
void read_options(const Json& body, CompletionCall& call) {
  if (!body.is_object()) throw bad("the request body must be a JSON object");
  const Json* model = field(body, "model");
  if (!model || !model->is_string() || model->get<std::string>().empty())
    throw bad("you must provide a model parameter");
  call.model = model->get<std::string>();
  call.stream = boolean(body, "stream", false);
  if (const Json* so = field(body, "stream_options"); so && so->is_object())
    call.include_usage = boolean(*so, "include_usage", false);
  if (const auto n = integer(body, "n"); n && *n != 1)
    throw bad("n must be 1: hostlm answers with one choice");
  if (const auto n = integer(body, "best_of"); n && *n != 1) throw bad("best_of must be 1");
  GenerationOptions& o = call.request.options;
  std::optional<int64_t> max_tokens = integer(body, "max_completion_tokens");
  if (!max_tokens) max_tokens = integer(body, "max_tokens");
  if (!max_tokens) max_tokens = integer(body, "n_predict");  // llama-server
  if (max_tokens) {
    if (*max_tokens < 0) throw bad("max_tokens must not be negative");
    o.num_predict = *max_tokens;
  }
  if (auto v = number(body, "temperature")) {
    if (*v < 0 || *v > 2) throw bad("temperature must be between 0 and 2");
    o.temperature = static_cast<float>(*v);
  }
  if (auto v = number(body, "top_p")) o.top_p = static_cast<float>(*v);
  if (auto v = number(body, "min_p")) o.min_p = static_cast<float>(*v);
  if (auto v = number(body, "typical_p")) o.typical_p = static_cast<float>(*v);
  if (auto v = integer(body, "top_k")) o.top_k = static_cast<int>(*v);
  if (auto v = number(body, "repeat_penalty")) o.repeat_penalty = static_cast<float>(*v);
  if (auto v = integer(body, "repeat_last_n")) o.repeat_last_n = static_cast<int>(*v);
  if (auto v = number(body, "presence_penalty")) {
    if (*v < -2 || *v > 2) throw bad("presence_penalty must be between -2 and 2");
    o.presence_penalty = static_cast<float>(*v);
  }
  if (auto v = number(body, "frequency_penalty")) {
    if (*v < -2 || *v > 2) throw bad("frequency_penalty must be between -2 and 2");
    o.frequency_penalty = static_cast<float>(*v);
  }
  if (auto v = integer(body, "seed")) o.seed = *v;
  if (const Json* stop = field(body, "stop")) o.stop = http::parse_stop(*stop);
  if (const Json* bias = field(body, "logit_bias")) {
    if (!bias->is_object()) throw bad("logit_bias must be an object of token id -> bias");
    for (const auto& [key, value] : bias->items()) {
      int32_t id = 0;
      try {
        size_t used = 0;
        id = static_cast<int32_t>(std::stol(key, &used));
        if (used != key.size() || id < 0) throw std::invalid_argument(key);
      } catch (const std::exception&) {
        throw bad("logit_bias keys must be token ids, not \"" + key + "\"");
      }
      if (!value.is_number() || value.get<double>() < -100 || value.get<double>() > 100)
        throw bad("logit_bias values must be numbers between -100 and 100");
      o.logit_bias[id] = value.get<float>();
    }
  }
  if (const Json* ka = field(body, "keep_alive")) {
    if (ka->is_number()) {
      const double s = ka->get<double>();
      call.keep_alive =
          std::chrono::nanoseconds(s < 0 ? -1 : static_cast<int64_t>(std::min(s, 9e9) * 1e9));
    } else if (ka->is_string()) {
      call.keep_alive = parse_duration(ka->get<std::string>());
    }
  } else if (auto ttl = number(body, "ttl")) {  // LM Studio
    call.keep_alive = std::chrono::nanoseconds(static_cast<int64_t>(std::max(0.0, *ttl) * 1e9));
  }
}

// response_format and llama-server's json_schema / grammar fields.
ResponseFormat read_format(const Json& body) {
  ResponseFormat f;
  if (const Json* rf = field(body, "response_format")) {
    if (!rf->is_object() || !rf->contains("type") || !(*rf)["type"].is_string())
      throw bad("response_format must be an object with a \"type\"");
    const std::string type = (*rf)["type"].get<std::string>();
    const Json* schema = field(*rf, "schema");
    if (type == "json_schema" && !schema) {
      const Json* js = field(*rf, "json_schema");
      if (!js || !js->is_object())
        throw bad("response_format json_schema needs a \"json_schema\" object");
      schema = field(*js, "schema");
      if (!schema) throw bad("response_format json_schema needs json_schema.schema");
    }
    if (type == "text") return f;
    if (type != "json_object" && type != "json_schema")
      throw bad("response_format type must be text, json_object or json_schema, not \"" + type +
                "\"");
    if (schema) {
      if (!schema->is_object()) throw bad("the response_format schema must be a JSON object");
      f.kind = ResponseFormat::Kind::kJsonSchema;
      f.schema = schema->dump();
    } else {
      f.kind = ResponseFormat::Kind::kJson;
    }
    return f;
  }
  if (const Json* schema = field(body, "json_schema"); schema && schema->is_object()) {
    f.kind = ResponseFormat::Kind::kJsonSchema;
    f.schema = schema->dump();
  } else if (const Json* grammar = field(body, "grammar"); grammar && grammar->is_string()) {
    f.kind = ResponseFormat::Kind::kGrammar;
    f.schema = grammar->get<std::string>();
  }
  return f;
}

void read_logprobs(const Json& body, CompletionCall& call, bool chat) {
  if (chat) {
    call.logprobs = boolean(body, "logprobs", false);
    const auto top = integer(body, "top_logprobs");
    if (top && (*top < 0 || *top > 20)) throw bad("top_logprobs must be between 0 and 20");
    if (top && !call.logprobs) throw bad("top_logprobs needs logprobs: true");
    if (call.logprobs) call.request.top_logprobs = static_cast<int>(top.value_or(0));
    return;
  }
  // The legacy completions API: logprobs is the number of alternatives (0-5).
  if (const auto n = integer(body, "logprobs")) {
    if (*n < 0 || *n > 20) throw bad("logprobs must be between 0 and 20");
    call.logprobs = true;
    call.request.top_logprobs = static_cast<int>(*n);
  }
}

Thinking read_thinking(const Json& body) {
  if (const Json* think = field(body, "think")) {
    if (think->is_boolean()) return think->get<bool>() ? Thinking::kOn : Thinking::kOff;
    if (think->is_string())
      return think->get<std::string>() == "none" ? Thinking::kOff : Thinking::kOn;
    throw bad("think must be a boolean or a level");
  }
  if (const Json* kwargs = field(body, "chat_template_kwargs"); kwargs && kwargs->is_object())
    if (const Json* enable = field(*kwargs, "enable_thinking")) {
      if (!enable->is_boolean())
        throw bad("chat_template_kwargs.enable_thinking must be a boolean");
      return enable->get<bool>() ? Thinking::kOn : Thinking::kOff;
    }
  const Json* effort = field(body, "reasoning_effort");
  if (const Json* reasoning = field(body, "reasoning");
      !effort && reasoning && reasoning->is_object())
    effort = field(*reasoning, "effort");
  if (effort) {
    if (!effort->is_string()) throw bad("reasoning_effort must be a string");
    const std::string e = effort->get<std::string>();
    if (e == "none") return Thinking::kOff;
    for (const char* level : {"minimal", "low", "medium", "high", "max", "xhigh", "ultra"})
      if (e == level) return Thinking::kOn;
    throw bad("reasoning_effort must be none, minimal, low, medium, high or max, not \"" + e +
              "\"");
  }
  return Thinking::kDefault;
}

// OpenAI's message shape into chat_json's: developer is a system message, and reasoning
// from earlier turns may come as reasoning_content, reasoning or thinking.
ChatMessage message_from_openai(const Json& m, size_t index) {
  if (!m.is_object()) throw bad("messages[" + std::to_string(index) + "] must be an object");
  Json copy = m;
  if (const auto role = copy.find("role");
      role != copy.end() && role->is_string() && *role == "developer")
    *role = "system";
  if (!copy.contains("reasoning_content"))
    for (const char* key : {"reasoning", "thinking"})
      if (const auto it = copy.find(key); it != copy.end() && it->is_string()) {
        copy["reasoning_content"] = *it;
        break;
      }
  try {
    return chat_message_from_json(copy, index);
  } catch (const Error& e) {
    throw bad(e.what());
  }
}

}  // namespace

CompletionCall parse_chat_completion(const nlohmann::ordered_json& body) {
  CompletionCall call;
  read_options(body, call);
  const Json* messages = field(body, "messages");
  if (!messages || !messages->is_array() || messages->empty())
    throw HttpError(400, "messages must be a non-empty list", "invalid_request_error");
  Conversation c;
  for (size_t i = 0; i < messages->size(); ++i)
    c.messages.push_back(message_from_openai((*messages)[i], i));
  if (const Json* tools = field(body, "tools")) {
    if (!tools->is_array()) throw bad("tools must be a list");
    for (const Json& t : *tools) {
      const Json* type = t.is_object() ? field(t, "type") : nullptr;
      if (!t.is_object() || (type && *type != "function") || !t.contains("function"))
        throw bad("only tools of type \"function\" are supported");
    }
    try {
      c.tools = chat_tools_from_json(*tools);
    } catch (const Error& e) {
      throw bad(e.what());
    }
  }
  call.request.chat = std::move(c);
  if (const Json* tc = field(body, "tool_choice"))
    call.request.tool_choice = http::parse_tool_choice(*tc);
  call.request.parallel_tool_calls = boolean(body, "parallel_tool_calls", true);
  call.request.format = read_format(body);
  call.request.think = read_thinking(body);
  read_logprobs(body, call, true);
  return call;
}

CompletionCall parse_completion(const nlohmann::ordered_json& body) {
  CompletionCall call;
  read_options(body, call);
  if (const Json* suffix = field(body, "suffix");
      suffix && !(suffix->is_string() && suffix->get<std::string>().empty()))
    throw bad("suffix is not supported: this model has no fill-in-the-middle format");
  call.echo = boolean(body, "echo", false);
  const Json* prompt = field(body, "prompt");
  if (!prompt) throw bad("prompt is required");
  const Json* p = prompt;
  if (p->is_array() && p->size() == 1 && ((*p)[0].is_string() || (*p)[0].is_array())) p = &(*p)[0];
  if (p->is_string()) {
    call.request.prompt = p->get<std::string>();
  } else if (p->is_array() && std::all_of(p->begin(), p->end(),
                                          [](const Json& t) { return t.is_number_integer(); })) {
    if (p->empty()) throw bad("prompt must not be empty");
    call.request.context_tokens = http::token_ids(*p, "prompt");
  } else {
    throw bad(
        "prompt must be a string, a list of token ids, or a list with one of those "
        "(hostlm answers one prompt per request)");
  }
  call.request.format = read_format(body);
  read_logprobs(body, call, false);
  return call;
}

}  // namespace hostlm::openai
