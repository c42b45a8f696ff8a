// Serving many clients from one process: models found by name in model sources, loaded on
// first use with an engine each, shared by concurrent requests, and unloaded after their
// keep-alive. The HTTP adapters (Ollama /api, OpenAI /v1) sit on top of this.
//
// ModelManager  resolves names through ModelSources (a model store, an LM Studio folder,
//               paths), loads, counts users, unloads after keep_alive or when the number of
//               loaded models would pass max_loaded.
// ModelLease    one user of a loaded model; it starts generations (text_generation.h) and
//               computes embeddings. The model stays loaded while a lease or a stream lives.
#pragma once
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hostlm/chat.h"
#include "hostlm/dtype.h"
#include "hostlm/engine_stats.h"
#include "hostlm/model_loader.h"
#include "hostlm/registry.h"
#include "hostlm/text_generation.h"
#include "hostlm/tokenizer.h"

namespace hostlm {

// What a name stands for: files to load plus the defaults a Modelfile gives them.
struct ModelSpec {
  std::string name;            // as clients write it ("qwen3.5:latest", a path, an id)
  std::filesystem::path path;  // the GGUF file or Hugging Face folder to load
  std::string digest;          // hex digest for listings; may be empty
  uint64_t size = 0;           // bytes on disk
  std::chrono::system_clock::time_point modified_at{};
  std::string owned_by = "library";          // OpenAI's /v1/models owned_by
  nlohmann::ordered_json details = nullptr;  // Ollama's "details" object, when known
  GenerationOptions defaults;                // PARAMETERs
  std::optional<bool> think;                 // default thinking (PARAMETER think false)
  std::optional<std::string> system;         // SYSTEM: used when a chat has none
  std::vector<ChatMessage> messages;         // MESSAGEs: put before every chat
  // Replaces the plugin's chat format (a Modelfile TEMPLATE); receives the plugin's (may be
  // null) so the replacement can keep its parser. Unset: the plugin's format.
  std::function<std::unique_ptr<ChatFormat>(std::unique_ptr<ChatFormat> native)> wrap_format;
};

// Somewhere models are found by name. find() returns nullopt for names that are not its own;
// it must be safe to call from several threads.
class ModelSource {
 public:
  virtual ~ModelSource() = default;
  virtual std::optional<ModelSpec> find(std::string_view name) const = 0;
  virtual std::vector<ModelSpec> list() const = 0;
};

// Names that are paths of a GGUF file or a Hugging Face folder (relative to the working
// directory, `~` expanded). Lists nothing.
class PathModelSource final : public ModelSource {
 public:
  std::optional<ModelSpec> find(std::string_view name) const override;
  std::vector<ModelSpec> list() const override { return {}; }
};

struct ServingOptions {
  int64_t context = 4096;  // tokens per request (num_ctx), capped by the model's training
  int parallel = 4;        // requests decoded together per model (HOSTLM_NUM_PARALLEL)
  size_t max_queue = 64;   // requests waiting per model beyond those (then EngineBusy)
  int max_loaded = 3;      // models loaded at once (HOSTLM_MAX_LOADED_MODELS)
  // How long an idle model stays loaded (HOSTLM_KEEP_ALIVE); negative: forever.
  std::chrono::nanoseconds keep_alive = std::chrono::minutes(5);
  ModelLoadOptions load;       // backend, threads
  DType kv_type = DType::F16;  // KV cache element type (HOSTLM_KV_CACHE_TYPE)
  bool log_memory = true;      // print each engine's memory plan to stderr at load
  GenerationOptions defaults = GenerationOptions::ollama_defaults();
};

class ServedModel;  // a loaded model with its engine (src/serving)
namespace serving {
struct LeaseState;
}

// One user of a loaded model. Copies share the use; the model may unload once the last copy
// and every stream it started are gone.
class ModelLease {
 public:
  explicit ModelLease(std::shared_ptr<serving::LeaseState> state);

  const ModelSpec& spec() const;
  const ModelInfo& info() const;
  const Tokenizer& tokenizer() const;
  bool has_chat_format() const;
  int64_t context() const;  // tokens one request may use
  // Time this acquire spent loading the model (0 when it was loaded already).
  std::chrono::nanoseconds load_duration() const;

  // Starts a generation. Throws InvalidRequest (bad options, schema, too long a prompt),
  // EngineBusy (queue full).
  std::unique_ptr<TextStream> generate(TextRequest request) const;
  // The prompt text `request` renders to, defaults applied (Ollama's _debug_render_only).
  std::string render(const TextRequest& request) const;

  // Mean of the final hidden states of each input's tokens, L2-normalized. `truncate`: an
  // input longer than the context is cut, else it is an InvalidRequest. `dimensions` > 0
  // keeps that many leading values (normalized again), as Ollama and OpenAI do.
  struct Embeddings {
    std::vector<std::vector<float>> vectors;
    int64_t prompt_tokens = 0;
  };
  Embeddings embed(const std::vector<std::string>& inputs, bool truncate, int dimensions = 0) const;
  Embeddings embed_tokens(const std::vector<std::vector<int32_t>>& inputs, bool truncate,
                          int dimensions = 0) const;

 private:
  std::shared_ptr<serving::LeaseState> state_;
};

// A loaded model as /api/ps shows it.
struct LoadedModelStatus {
  ModelSpec spec;
  int64_t context = 0;
  uint64_t size = 0;       // bytes of weights
  uint64_t size_vram = 0;  // of which on the GPU
  std::string backend;
  int active = 0;  // requests using it now
  // When it unloads if nothing uses it until then; nullopt: never (keep_alive < 0).
  std::optional<std::chrono::system_clock::time_point> expires_at;
};

struct AcquireOptions {
  // Keep-alive after this use (negative: forever, 0: unload when done); unset: the
  // server's default. The latest request's value wins, as in Ollama.
  std::optional<std::chrono::nanoseconds> keep_alive;
  std::optional<int64_t> context;  // num_ctx: reload an idle model with another context
  // num_gpu: reload an idle model with its layers placed otherwise (unset: the model's
  // Modelfile value, else the server's --gpu-layers).
  std::optional<int64_t> gpu_layers;
};

class ModelManager {
 public:
  // `registry` must outlive the manager; sources are asked in order.
  ModelManager(PluginRegistry& registry, ServingOptions options,
               std::vector<std::shared_ptr<const ModelSource>> sources);
  ~ModelManager();  // unloads everything (running streams end as cancelled)
  ModelManager(const ModelManager&) = delete;
  ModelManager& operator=(const ModelManager&) = delete;

  // The spec behind a name, or nullopt.
  std::optional<ModelSpec> resolve(std::string_view name) const;
  // Every model the sources list, first source first, names unique.
  std::vector<ModelSpec> list() const;
  // Replaces the sources (a server re-reading its settings: other model folders). Loaded
  // models stay loaded under their names; the next request for a name whose files changed
  // reloads it once it is idle, as after any change in a source.
  void set_sources(std::vector<std::shared_ptr<const ModelSource>> sources);

  // Loads the model if needed and returns a lease on it. Throws ModelNotFound, EngineBusy
  // (max_loaded models are all busy), hostlm::Error (the files do not load).
  ModelLease acquire(std::string_view name, const AcquireOptions& options = {});
  // Unloads the model once its running requests end. False when it is not loaded.
  bool unload(std::string_view name);
  std::vector<LoadedModelStatus> loaded() const;

  // Requests generating or queued, over all models (for /metrics and tests).
  size_t running_requests() const;
  size_t queued_requests() const;
  // The engines' metrics added up (Prometheus text: prometheus_text in engine_stats.h).
  EngineMetrics metrics() const;

  ServingOptions options() const;

  // The settings that can change while serving. keep_alive: the default of later requests;
  // max_queue: for every engine, loaded ones included; max_loaded: checked at the next load
  // (models over it are not unloaded at once).
  struct LiveOptions {
    std::chrono::nanoseconds keep_alive = std::chrono::minutes(5);
    size_t max_queue = 64;
    int max_loaded = 3;
  };
  void set_live_options(const LiveOptions& live);

  struct Impl;

 private:
  std::shared_ptr<Impl> impl_;
};

// "5m", "1h30m", "-1", "300ms", a number of seconds as text: Go durations as Ollama's
// keep_alive takes them. Throws InvalidRequest naming the text.
std::chrono::nanoseconds parse_duration(std::string_view text);

}  // namespace hostlm
