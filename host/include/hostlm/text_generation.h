// Text-level generation requests, as the HTTP adapters (Ollama /api, OpenAI /v1) and other
// front ends state them: messages or a raw prompt in, a stream of reasoning / content / tool
// call deltas out, then one summary with Ollama-style counts and timings.
//
// The pieces here are plain data plus TextStream, the handle of one running generation;
// serving.h loads models and starts generations.
#pragma once
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "hostlm/chat.h"
#include "hostlm/error.h"

namespace hostlm {

// A request the client got wrong (HTTP 400): bad option values, a schema that does not
// compile, a prompt that cannot fit the context. The message is meant for the client.
class InvalidRequest : public Error {
 public:
  using Error::Error;
};

// No model of that name (HTTP 404). The message is "model '<name>' not found".
class ModelNotFound : public Error {
 public:
  using Error::Error;
};

// Sampling and length options. Every field is optional: a request's options fall back to
// the model's defaults (a Modelfile's PARAMETERs), then to the server's (Ollama's).
struct GenerationOptions {
  std::optional<int64_t> num_predict;  // most tokens to generate; < 0: until the context is full
  std::optional<float> temperature, top_p, min_p, typical_p;
  std::optional<int> top_k;
  std::optional<float> repeat_penalty, presence_penalty, frequency_penalty;
  std::optional<int> repeat_last_n;              // -1: the whole context
  std::optional<int64_t> seed;                   // < 0: a random seed
  std::optional<std::vector<std::string>> stop;  // stop strings, matched across tokens
  std::map<int32_t, float> logit_bias;           // token id -> added to its logit
  std::optional<int64_t> num_ctx;                // context of the loaded model (load time)
  // Layers on the GPU (load time, Ollama's num_gpu): -1 all, 0 none (the CPU backend); see
  // ModelLoadOptions::gpu_layers.
  std::optional<int64_t> num_gpu;

  // Fills every unset field (and logit_bias, when empty) from `base`.
  void inherit(const GenerationOptions& base);
  // Ollama's api.DefaultOptions(): temperature 0.8, top_k 40, top_p 0.9, ...
  static GenerationOptions ollama_defaults();
};

struct ResponseFormat {
  enum class Kind { kText, kJson, kJsonSchema, kGrammar };
  Kind kind = Kind::kText;
  // kJsonSchema: the schema as JSON text (its key order is kept); kGrammar: GBNF text
  // (llama-server's `grammar` field).
  std::string schema;
};

struct ToolChoice {
  // kAuto: the model decides; kNone: tools are not offered; kRequired: at least one call,
  // kept well-formed by a grammar; kFunction: one call of `function`.
  enum class Kind { kAuto, kNone, kRequired, kFunction };
  Kind kind = Kind::kAuto;
  std::string function;
};

struct TextRequest {
  // A conversation rendered by the model's chat format, or (when unset) a raw prompt.
  std::optional<Conversation> chat;
  std::string prompt;
  // Token ids placed before the prompt (Ollama's deprecated `context` of /api/generate).
  std::vector<int32_t> context_tokens;
  Thinking think = Thinking::kDefault;
  GenerationOptions options;
  ResponseFormat format;
  ToolChoice tool_choice;
  bool parallel_tool_calls = true;
  int top_logprobs = -1;  // -1: no log probabilities; 0..20: that many alternatives per token
  // Drop the oldest messages (never system messages nor the last one) when the prompt does
  // not fit the context; false: such a prompt is an InvalidRequest.
  bool truncate = true;
};

struct TokenLogprob {
  int32_t id = 0;
  std::string token;  // the token's bytes (may be part of a UTF-8 character)
  float logprob = 0;
  std::vector<TokenLogprob> top;  // the most likely tokens at this position (top is empty)
};

// A piece of the answer, as soon as it is certain.
struct TextDelta {
  enum class Kind { kThinking, kContent, kToolCall };
  Kind kind = Kind::kContent;
  std::string text;    // kThinking, kContent
  ToolCall tool_call;  // kToolCall: a complete call (arguments is a JSON object)
  // Log probabilities of the tokens decoded since the previous delta (when asked for).
  std::vector<TokenLogprob> logprobs;
};

struct GenerationSummary {
  // "stop" (end token or stop string), "length" (num_predict or the context), "cancelled"
  // (cancel() or shutdown), "error".
  std::string done_reason;
  std::string error;                                // done_reason "error": what went wrong
  std::string stop_string;                          // the stop string that ended it, if one did
  int64_t prompt_tokens = 0;                        // the whole prompt, reused prefix included
  int64_t cached_tokens = 0;                        // of which reused from an earlier request
  int64_t generated_tokens = 0;                     // the end token not counted
  std::chrono::nanoseconds load_duration{0};        // loading the model for this request
  std::chrono::nanoseconds prompt_duration{0};      // evaluating the prompt
  std::chrono::nanoseconds generation_duration{0};  // generating
  std::chrono::nanoseconds total_duration{0};       // the whole request, load included
  std::vector<int32_t> context;                     // prompt and generated ids (Ollama's `context`)
  int tool_calls = 0;                               // tool-call deltas delivered
};

// One running generation. Not thread-safe except cancel(): one reader at a time.
class TextStream {
 public:
  virtual ~TextStream() = default;  // cancels the generation if still running
  // Waits up to `timeout` for output and appends what is certain to `out`. Returns true
  // once the generation is over and every delta has been delivered; summary() is then set.
  virtual bool read(std::vector<TextDelta>& out, std::chrono::milliseconds timeout) = 0;
  // Stops early (the client went away); read() then finishes with done_reason "cancelled".
  virtual void cancel() = 0;
  virtual const GenerationSummary& summary() const = 0;
};

}  // namespace hostlm
