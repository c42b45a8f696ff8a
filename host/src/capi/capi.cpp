// The C API of hostlm.h over the C++ library. Every entry point catches everything: no
// exception may cross into C, so each failure becomes a code plus a thread-local message.
#include <algorithm>
#include <climits>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "hostlm.h"
#include "hostlm/chat.h"
#include "hostlm/chat_json.h"
#include "hostlm/engine.h"
#include "hostlm/error.h"
#include "hostlm/json_input.h"
#include "hostlm/kv_cache.h"
#include "hostlm/model_loader.h"
#include "hostlm/registry.h"
#include "hostlm/sampler.h"
#include "hostlm/tokenizer.h"
#include "model/chat_prompt.h"

struct hostlm_model {
  // Declared so that destruction runs engine -> format -> tokenizer -> model.
  std::unique_ptr<hostlm::LoadedModel> loaded;
  std::unique_ptr<hostlm::Tokenizer> tokenizer;
  std::unique_ptr<hostlm::ChatFormat> format;  // null when the plugin has none
  std::vector<int32_t> end_ids;
  int64_t context = 0;
  std::string backend_name;  // kept here so hostlm_model_backend can hand out its c_str()
  std::unique_ptr<hostlm::Engine> engine;
};

namespace {

thread_local std::string last_error;

void set_error(std::string message) { last_error = std::move(message); }

// Never destroyed: plugins' code (and the hostlm::Error objects they throw) lives in
// libraries the registry unloads, and a binding may free its last model at interpreter exit
// while other static objects are already gone.
hostlm::PluginRegistry& registry() {
  static auto* r = new hostlm::PluginRegistry;
  return *r;
}
// plugin_for loads libraries on first use; models may be loaded from several threads.
std::mutex registry_mutex;

// Runs `body`, turning exceptions into `code_on_error` plus the message.
template <typename Body>
int32_t guarded(int32_t code_on_error, Body&& body) {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    set_error("out of memory");
    return HOSTLM_ERR_INTERNAL;
  } catch (const std::exception& e) {
    set_error(e.what());
    return code_on_error;
  } catch (...) {
    set_error("unknown error");
    return HOSTLM_ERR_INTERNAL;
  }
}

hostlm::Thinking thinking_from(int32_t think) {
  switch (think) {
    case -1:
      return hostlm::Thinking::kDefault;
    case 0:
      return hostlm::Thinking::kOff;
    case 1:
      return hostlm::Thinking::kOn;
    default:
      throw hostlm::Error("think must be -1 (default), 0 (off) or 1 (on), not " +
                          std::to_string(think));
  }
}

nlohmann::ordered_json parse_json(const char* text, const char* what) {
  try {
    return hostlm::parse_input_json(text);
  } catch (const nlohmann::json::exception& e) {
    throw hostlm::Error(std::string(what) + ": not valid JSON (" + e.what() + ")");
  } catch (const hostlm::JsonTooDeep& e) {
    throw hostlm::Error(std::string(what) + ": not valid JSON (" + e.what() + ")");
  }
}

// What one hostlm_chat call needs after its input is checked.
struct PreparedChat {
  hostlm::GenerationRequest request;
  hostlm::Conversation conversation;
  hostlm::ChatRenderOptions render;
  bool chat = false;  // false: raw prompt, all output is content
};

PreparedChat prepare(const hostlm_model& m, const hostlm_generate_params& p) {
  PreparedChat out;
  if ((p.messages_json == nullptr) == (p.prompt == nullptr))
    throw hostlm::Error("give exactly one of messages_json and prompt");
  if (p.messages_json) {
    if (!m.format) throw hostlm::Error("this model's plugin has no chat format: give a raw prompt");
    const auto messages = parse_json(p.messages_json, "messages_json");
    if (!messages.is_array() && !messages.is_object())
      throw hostlm::Error("messages_json: expected an array of messages");
    const auto tools =
        p.tools_json ? parse_json(p.tools_json, "tools_json") : nlohmann::ordered_json(nullptr);
    out.conversation = hostlm::conversation_from_json(messages, tools);
    if (out.conversation.messages.empty()) throw hostlm::Error("messages_json: no messages");
    out.render.thinking = thinking_from(p.think);
    out.request.prompt =
        hostlm::tokenize_chat_prompt(*m.tokenizer, *m.format, out.conversation, out.render);
    out.chat = true;
  } else {
    out.request.prompt = m.tokenizer->encode(p.prompt);
  }
  if (out.request.prompt.empty()) throw hostlm::Error("the prompt is empty");

  hostlm::SamplerParams& s = out.request.sampling;
  s.temperature = p.temperature;
  s.top_k = p.top_k;
  s.top_p = p.top_p;
  s.min_p = p.min_p;
  s.repeat_penalty = p.repeat_penalty;
  s.repeat_last_n = p.repeat_last_n;
  s.seed = p.seed;
  if (s.top_k < 0) throw hostlm::Error("top_k must not be negative");
  if (!(s.top_p > 0.f && s.top_p <= 1.f)) throw hostlm::Error("top_p must be in (0, 1]");
  hostlm::Sampler check(s);  // throws on the values the engine's sampler would refuse

  const auto prompt_size = static_cast<int64_t>(out.request.prompt.size());
  if (prompt_size >= m.context)
    throw hostlm::Error("the prompt is " + std::to_string(prompt_size) +
                        " tokens, more than the context of " + std::to_string(m.context) +
                        " holds");
  const int64_t room = m.context - prompt_size;
  out.request.max_tokens = p.max_tokens < 0 ? room : std::min<int64_t>(p.max_tokens, room);
  out.request.stop_tokens = m.end_ids;
  return out;
}

// Tokens handed from the engine's scheduler thread to the caller's thread, so the caller's
// callback (Python under the GIL, say) never runs on, or holds up, the scheduler.
struct TokenQueue {
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<int32_t> tokens;
  bool done = false;
  bool stop = false;
  hostlm::GenerationResult result;
};

int32_t done_reason_code(const std::string& reason) {
  if (reason == "stop") return HOSTLM_DONE_STOP;
  if (reason == "cancelled") return HOSTLM_DONE_CANCELLED;
  return HOSTLM_DONE_LENGTH;
}

int32_t run_chat(hostlm_model& m, const hostlm_generate_params& p, hostlm_on_text on_text,
                 hostlm_on_progress on_progress, void* user, hostlm_generation_stats* stats) {
  PreparedChat prepared;
  const int32_t prepared_rc = guarded(HOSTLM_ERR_INVALID_ARGUMENT, [&] {
    prepared = prepare(m, p);
    return HOSTLM_OK;
  });
  if (prepared_rc != HOSTLM_OK) return prepared_rc;
  const auto max_tokens =
      static_cast<int32_t>(std::min<int64_t>(prepared.request.max_tokens, INT32_MAX));

  auto queue = std::make_shared<TokenQueue>();
  hostlm::Engine::RequestId id = 0;
  try {
    id = m.engine->submit(
        std::move(prepared.request),
        [queue](int32_t token) {
          std::lock_guard lock(queue->mutex);
          queue->tokens.push_back(token);
          queue->changed.notify_one();
          return !queue->stop;
        },
        [queue](const hostlm::GenerationResult& result) {
          std::lock_guard lock(queue->mutex);
          queue->result = result;
          queue->done = true;
          queue->changed.notify_one();
        });
  } catch (const hostlm::EngineBusy& e) {
    set_error(e.what());
    return HOSTLM_ERR_BUSY;
  } catch (const std::exception& e) {
    set_error(e.what());
    return HOSTLM_ERR_INVALID_ARGUMENT;
  }

  hostlm::StreamingDecoder decoder(*m.tokenizer);
  std::unique_ptr<hostlm::ChatParser> parser;
  if (prepared.chat) parser = m.format->new_parser(prepared.conversation.tools, prepared.render);
  bool stopped = false;
  auto stop = [&] {
    stopped = true;
    {
      std::lock_guard lock(queue->mutex);
      queue->stop = true;
    }
    m.engine->cancel(id);
  };
  // Tool calls have no text kind yet in this API; they are left out of the stream.
  auto deliver = [&](const std::string& text) {
    std::vector<hostlm::ChatEvent> events;
    if (parser) {
      events = parser->feed(text);
    } else {
      events.push_back({hostlm::ChatEvent::Kind::kContent, text, {}});
    }
    for (const hostlm::ChatEvent& e : events) {
      if (stopped || !on_text || e.text.empty() || e.kind == hostlm::ChatEvent::Kind::kToolCall)
        continue;
      const int32_t kind = e.kind == hostlm::ChatEvent::Kind::kReasoning ? HOSTLM_TEXT_REASONING
                                                                         : HOSTLM_TEXT_CONTENT;
      if (on_text(e.text.c_str(), kind, user) == 0) stop();
    }
  };

  std::vector<int32_t> batch;
  int32_t generated_so_far = 0;
  for (;;) {
    bool finished = false;
    {
      std::unique_lock lock(queue->mutex);
      queue->changed.wait(lock, [&] { return queue->done || !queue->tokens.empty(); });
      batch.swap(queue->tokens);
      queue->tokens.clear();
      finished = queue->done && batch.empty();
    }
    if (finished) break;
    for (const int32_t token : batch) {
      if (stopped) break;
      if (std::find(m.end_ids.begin(), m.end_ids.end(), token) != m.end_ids.end()) continue;
      ++generated_so_far;
      if (on_progress && on_progress(generated_so_far, max_tokens, user) == 0) {
        stop();
        break;
      }
      deliver(decoder.push(token));
    }
  }
  if (!stopped) {
    deliver(decoder.finish());
    if (parser) {
      // Whatever the parser held back is released as the last pieces.
      const auto tail = parser->finish();
      parser.reset();
      for (const hostlm::ChatEvent& e : tail) {
        if (stopped || !on_text || e.text.empty()) continue;
        if (e.kind == hostlm::ChatEvent::Kind::kToolCall) continue;
        const int32_t kind = e.kind == hostlm::ChatEvent::Kind::kReasoning ? HOSTLM_TEXT_REASONING
                                                                           : HOSTLM_TEXT_CONTENT;
        if (on_text(e.text.c_str(), kind, user) == 0) stopped = true;
      }
    }
  }

  const hostlm::GenerationResult& r = queue->result;
  if (r.done_reason == "error") {
    set_error("generation failed: " + r.error);
    return HOSTLM_ERR_GENERATION;
  }
  if (stats) {
    int64_t generated = static_cast<int64_t>(r.tokens.size());
    if (generated > 0 &&
        std::find(m.end_ids.begin(), m.end_ids.end(), r.tokens.back()) != m.end_ids.end())
      --generated;
    stats->prompt_tokens = static_cast<int32_t>(r.prompt_tokens);
    stats->generated_tokens = static_cast<int32_t>(generated);
    stats->done_reason = stopped ? HOSTLM_DONE_CANCELLED : done_reason_code(r.done_reason);
    stats->prompt_ms = r.prompt_ms;
    stats->generate_ms = r.generate_ms;
  }
  return HOSTLM_OK;
}

}  // namespace

extern "C" {

int32_t hostlm_c_api_version(void) { return HOSTLM_C_API_VERSION; }

const char* hostlm_last_error(void) { return last_error.c_str(); }

hostlm_model_params hostlm_model_default_params(void) {
  const hostlm::EngineOptions engine;
  hostlm_model_params p;
  p.backend = "auto";
  p.threads = 0;
  p.context = engine.context;
  p.max_sequences = engine.max_sequences;
  p.kv_type = "f16";
  p.prefix_cache = engine.prefix_cache ? 1 : 0;
  p.kv_cache_mib = 0;
  p.gpu_layers = -1;
  p.cpu_moe_layers = 0;
  p.state_type = "f32";
  return p;
}

hostlm_model* hostlm_model_load(const char* path, hostlm_model_params params) {
  hostlm_model* result = nullptr;
  guarded(HOSTLM_ERR_INVALID_ARGUMENT, [&] {
    if (!path) throw hostlm::Error("hostlm_model_load: path is NULL");
    if (params.context <= 0 || params.max_sequences <= 0)
      throw hostlm::Error("hostlm_model_load: context and max_sequences must be positive");
    if (params.kv_cache_mib < 0)
      throw hostlm::Error("hostlm_model_load: kv_cache_mib must not be negative");
    hostlm::EngineOptions engine;
    engine.context = params.context;
    engine.max_sequences = params.max_sequences;
    engine.kv_type = hostlm::parse_kv_type(params.kv_type ? params.kv_type : "f16");
    engine.prefix_cache = params.prefix_cache != 0;
    engine.kv_pool_bytes = static_cast<size_t>(params.kv_cache_mib) << 20;
    auto m = std::make_unique<hostlm_model>();
    hostlm::ModelLoadOptions options;
    options.backend = params.backend ? params.backend : "auto";
    options.threads = params.threads;
    options.gpu_layers = params.gpu_layers;  // the loader names a bad count
    options.cpu_moe_layers = params.cpu_moe_layers;
    options.recurrent_state =
        hostlm::parse_state_type(params.state_type ? params.state_type : "f32");
    options.max_sequences = params.max_sequences;
    options.context = params.context;
    {
      std::lock_guard lock(registry_mutex);
      m->loaded = std::make_unique<hostlm::LoadedModel>(registry(), path, options);
      m->format =
          registry().plugin_for(m->loaded->files().architecture).chat_format(m->loaded->files());
    }
    m->tokenizer = std::make_unique<hostlm::Tokenizer>(hostlm::Tokenizer::load(path));
    m->end_ids = hostlm::end_of_generation_ids(*m->tokenizer);
    m->context = params.context;
    m->backend_name = m->loaded->backend().name();
    m->engine = std::make_unique<hostlm::Engine>(m->loaded->model(), engine);
    result = m.release();
    return HOSTLM_OK;
  });
  return result;
}

void hostlm_model_free(hostlm_model* model) {
  try {
    delete model;
  } catch (...) {  // destructors should not throw; C must never see it if one does
  }
}

int32_t hostlm_model_n_vocab(const hostlm_model* model) {
  if (!model) {
    set_error("hostlm_model_n_vocab: model is NULL");
    return HOSTLM_ERR_INVALID_ARGUMENT;
  }
  return model->tokenizer->vocab_size();
}

int32_t hostlm_tokenize(const hostlm_model* model, const char* text, int32_t parse_special,
                        int32_t* out, size_t capacity) {
  int32_t n = INT32_MIN;
  guarded(HOSTLM_ERR_INVALID_ARGUMENT, [&] {
    if (!model || !text) throw hostlm::Error("hostlm_tokenize: model or text is NULL");
    hostlm::Tokenizer::EncodeOptions options;
    options.parse_special = parse_special != 0;
    const std::vector<int32_t> ids = model->tokenizer->encode(text, options);
    if (ids.size() > static_cast<size_t>(INT32_MAX))
      throw hostlm::Error("hostlm_tokenize: too many tokens");
    if (ids.size() > capacity) {
      n = -static_cast<int32_t>(ids.size());
    } else {
      if (!ids.empty()) std::memcpy(out, ids.data(), ids.size() * sizeof(int32_t));
      n = static_cast<int32_t>(ids.size());
    }
    return HOSTLM_OK;
  });
  return n;
}

int32_t hostlm_detokenize(const hostlm_model* model, const int32_t* tokens, size_t n_tokens,
                          int32_t skip_special, char* out, size_t capacity) {
  int32_t n = INT32_MIN;
  guarded(HOSTLM_ERR_INVALID_ARGUMENT, [&] {
    if (!model || (!tokens && n_tokens > 0))
      throw hostlm::Error("hostlm_detokenize: model or tokens is NULL");
    const std::string text =
        model->tokenizer->decode(std::span<const int32_t>(tokens, n_tokens), skip_special != 0);
    if (text.size() >= static_cast<size_t>(INT32_MAX))
      throw hostlm::Error("hostlm_detokenize: text too long");
    if (text.size() + 1 > capacity || !out) {
      n = -static_cast<int32_t>(text.size() + 1);
    } else {
      std::memcpy(out, text.data(), text.size());
      out[text.size()] = '\0';
      n = static_cast<int32_t>(text.size());
    }
    return HOSTLM_OK;
  });
  return n;
}

hostlm_generate_params hostlm_generate_default_params(void) {
  const hostlm::SamplerParams s;
  hostlm_generate_params p;
  p.messages_json = nullptr;
  p.prompt = nullptr;
  p.tools_json = nullptr;
  p.think = -1;
  p.temperature = s.temperature;
  p.top_k = s.top_k;
  p.top_p = s.top_p;
  p.min_p = s.min_p;
  p.repeat_penalty = s.repeat_penalty;
  p.repeat_last_n = s.repeat_last_n;
  p.seed = s.seed;
  p.max_tokens = -1;
  return p;
}

int32_t hostlm_chat(hostlm_model* model, const hostlm_generate_params* params,
                    hostlm_on_text on_text, void* user, hostlm_generation_stats* stats) {
  return hostlm_chat_with_progress(model, params, on_text, nullptr, user, stats);
}

int32_t hostlm_chat_with_progress(hostlm_model* model, const hostlm_generate_params* params,
                                  hostlm_on_text on_text, hostlm_on_progress on_progress,
                                  void* user, hostlm_generation_stats* stats) {
  if (!model || !params) {
    set_error("hostlm_chat: model or params is NULL");
    return HOSTLM_ERR_INVALID_ARGUMENT;
  }
  return guarded(HOSTLM_ERR_INTERNAL,
                 [&] { return run_chat(*model, *params, on_text, on_progress, user, stats); });
}

const char* hostlm_model_backend(const hostlm_model* model) {
  if (!model) {
    set_error("hostlm_model_backend: model is NULL");
    return nullptr;
  }
  return model->backend_name.c_str();
}

int64_t hostlm_model_n_layers(const hostlm_model* model) {
  if (!model) {
    set_error("hostlm_model_n_layers: model is NULL");
    return HOSTLM_ERR_INVALID_ARGUMENT;
  }
  return model->loaded->model().info().n_layers;
}

int64_t hostlm_model_n_ctx_train(const hostlm_model* model) {
  if (!model) {
    set_error("hostlm_model_n_ctx_train: model is NULL");
    return HOSTLM_ERR_INVALID_ARGUMENT;
  }
  return model->loaded->model().info().n_ctx_train;
}

int64_t hostlm_model_context(const hostlm_model* model) {
  if (!model) {
    set_error("hostlm_model_context: model is NULL");
    return HOSTLM_ERR_INVALID_ARGUMENT;
  }
  return model->context;
}

}  // extern "C"
