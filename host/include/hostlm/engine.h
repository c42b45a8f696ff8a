// The serving engine: many generation requests over one model, decoded together.
//
// A scheduler thread owns the model. Every step it evaluates one token for each decoding
// request and fills the rest of the step's token budget with chunks of waiting prompts
// (continuous batching), so running streams keep flowing while new prompts are prefilled.
// Callbacks run on the scheduler thread and must be quick.
//
// Memory: the full-attention layers' keys and values live in one pool of pages (kv_cache.h)
// drawn on demand; each running request has one recurrent-state slot. A request is admitted
// only when the pages it may need are free (or held only by the prefix cache), so a running
// request never runs out; one that can never fit is refused at submit().
//
// Prefix cache: full pages stay cached, keyed by their tokens, with snapshots of the
// recurrent state at the end of each prompt, at the positions a request names
// (snapshot_at) and every snapshot_interval tokens of a prompt. A later request that starts
// with the same tokens resumes from the longest such point and computes only the rest; the
// result is bit-identical to computing everything (on the CPU, for every KV type).
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "hostlm/engine_stats.h"
#include "hostlm/error.h"
#include "hostlm/plugin_api.h"
#include "hostlm/sampler.h"

namespace hostlm {

struct EngineOptions {
  int max_sequences = 4;       // requests decoded at the same time
  int64_t context = 4096;      // most tokens (prompt + generated) of one request
  size_t max_queue = 64;       // waiting requests beyond the running ones
  int64_t prefill_chunk = 0;   // prompt tokens per step and request (0: the model's batch limit)
  DType kv_type = DType::F16;  // F32 (exact), F16 or Q8_0
  // Memory bounds in bytes (0: automatic). The KV pool holds the running requests' pages and,
  // in what they leave, the prefix cache's; automatic is max_sequences full contexts plus
  // prefix_cache_bytes (automatic: a quarter of that, at most 1 GiB, at least 64 pages; none
  // on a GPU when the contexts hold 65,536 tokens or more in all).
  size_t kv_pool_bytes = 0;
  size_t prefix_cache_bytes = 0;
  // Recurrent-state snapshots of the prefix cache, least recently used dropped first
  // (automatic: 4 per parallel sequence, at most 1 GiB, at least 2; on a GPU with a context
  // of kLongWindowTokens or more, 2 per sequence: the state at the end of the last prompt and
  // one before it are what a chat's next turn resumes from).
  size_t state_cache_bytes = 0;
  bool prefix_cache = true;
  int64_t snapshot_interval = 1024;  // tokens, a multiple of kKvPageTokens; 0: none
  bool log_memory = true;            // print the memory plan to stderr at construction
  // On a GPU backend, run one prefill chunk and two decode steps on a scratch sequence at
  // construction, so that the first request does not pay one-time costs (kernel loading,
  // library set-up, the first recorded step): its time to first token is then typical. A
  // model with layers or experts on the CPU gets a 32-token prompt instead of a chunk.
  bool warm_up = true;
  // Requests whose sampler reads only the best few logits (top-k sampling without a grammar,
  // bias or penalty, up to 256) get only those from the model: k values and ids a row instead
  // of the whole vocabulary. -1: where the backend prefers it (Backend::prefers_best_logits);
  // 0: never; 1: wherever the model can write them.
  int best_logits = -1;
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
  // When prompt + max_tokens exceed the context: false refuses the request; true drops prompt
  // tokens after the first num_keep (a system prompt, say) until it fits.
  bool truncate = false;
  int64_t num_keep = 0;
  // Prompt positions where a later request is expected to diverge from this one, such as the
  // end of a rendered chat history before the assistant's opening (see chat_reuse_points in
  // model/chat_prompt.h): the prefix cache keeps a recurrent-state snapshot there.
  std::vector<int64_t> snapshot_at;
  // Called on the scheduler thread with the logits each generated token is drawn from (before
  // biases and penalties): for log probabilities, and for tests.
  std::function<void(std::span<const float> logits)> on_logits;
};

struct GenerationResult {
  std::vector<int32_t> tokens;  // generated, stop token included when one ended it
  std::string done_reason;      // "stop", "length", "cancelled", or "error"
  std::string error;            // set when done_reason is "error"
  int64_t prompt_tokens = 0;    // the prompt as evaluated (after truncation)
  double queue_ms = 0, prompt_ms = 0, generate_ms = 0;
  // Ollama's counts and timings (load is the caller's to measure).
  int64_t prompt_eval_count = 0;  // prompt tokens actually computed
  int64_t cached_tokens = 0;      // prompt tokens reused from the prefix cache
  double prompt_eval_ms = 0;      // admission to the first token (= prompt_ms)
  int64_t eval_count = 0;         // tokens generated (= tokens.size())
  double eval_ms = 0;             // first token to the end (= generate_ms)
  int64_t truncated_tokens = 0;   // prompt tokens dropped by truncate
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
  // Changes EngineOptions::max_queue for later submits (requests already waiting stay).
  void set_max_queue(size_t max_queue);
  // Runs `task` on the scheduler thread between two steps, with the model to itself (work
  // outside generation requests, such as embeddings); blocks until it has run and rethrows
  // what it threw.
  void run_exclusive(const std::function<void(Model&)>& task);
  // Live counters and gauges (thread-safe; see prometheus_text).
  EngineMetrics metrics() const;
  // What was planned and allocated at construction.
  const MemoryPlan& memory_plan() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace hostlm
