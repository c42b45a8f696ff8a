// The serving engine: many generation requests over one model, decoded together.
//
// A scheduler thread owns the model. Every step it evaluates one token for each decoding
// request and fills the rest of the step's token budget with chunks of waiting prompts
// (continuous batching), so running streams keep flowing while new prompts are prefilled.
// Callbacks run on the scheduler thread and must be quick.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "hostlm/error.h"
#include "hostlm/plugin_api.h"
#include "hostlm/sampler.h"

namespace hostlm {

struct EngineOptions {
  int max_sequences = 4;       // requests decoded at the same time
  int64_t context = 4096;      // most tokens (prompt + generated) of one request
  size_t max_queue = 64;       // waiting requests beyond the running ones
  int64_t prefill_chunk = 0;   // prompt tokens per step and request (0: the model's batch limit)
};

struct GenerationRequest {
  std::vector<int32_t> prompt;
  SamplerParams sampling;
  int64_t max_tokens = 128;
  std::vector<int32_t> stop_tokens;  // end-of-generation ids: generation ends after one
  // Keeps the answer inside a grammar (JSON mode, a JSON Schema, GBNF). The grammar
  // vocabulary's end tokens then also end generation, since the grammar forces one once it
  // is complete.
  GrammarConstraint constraint;
};

struct GenerationResult {
  std::vector<int32_t> tokens;     // generated, stop token included when one ended it
  std::string done_reason;         // "stop", "length", "cancelled", or "error"
  std::string error;               // set when done_reason is "error"
  int64_t prompt_tokens = 0;
  double queue_ms = 0, prompt_ms = 0, generate_ms = 0;
};

// Thrown by submit() when the queue is full: the caller should answer "busy" (HTTP 503).
class EngineBusy : public Error {
 public:
  using Error::Error;
};

class Engine {
 public:
  using RequestId = uint64_t;
  // Called with each generated token; return false to stop the request (cancelled).
  using OnToken = std::function<bool(int32_t token)>;
  using OnDone = std::function<void(const GenerationResult&)>;

  Engine(Model& model, EngineOptions options);
  ~Engine();  // cancels what is running and waits for the scheduler to stop
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Queues a request; throws EngineBusy when the queue is full and hostlm::Error when the
  // request can never fit (empty prompt, prompt + max_tokens beyond the context).
  RequestId submit(GenerationRequest request, OnToken on_token, OnDone on_done);
  // Stops a queued or running request; its OnDone reports "cancelled". Unknown ids are ignored.
  void cancel(RequestId id);
  // Blocking convenience: runs one request to the end.
  GenerationResult generate(GenerationRequest request);

  size_t running() const;
  size_t queued() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace hostlm
