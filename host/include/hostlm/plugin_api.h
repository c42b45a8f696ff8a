// The contract between the host and an architecture plugin (a shared library).
//
// A plugin library exports two C symbols (see HOSTLM_DECLARE_PLUGIN): the ABI version it
// was built against, checked by the host before anything else, and a factory. Everything
// behind the factory is C++ built with the same toolchain as the host; the ABI version is
// bumped whenever these classes, anything they expose, or the shared modules plugins build
// on (modules.h) change layout.
#pragma once
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "hostlm/chat.h"
#include "hostlm/dtype.h"

#define HOSTLM_PLUGIN_ABI_VERSION 11

namespace hostlm {

class Backend;
class GgufFile;
class HfCheckpoint;

// An opened model file, as the host found it.
struct ModelFiles {
  std::filesystem::path path;
  std::string architecture;        // GGUF general.architecture or HF architectures[0]
  const GgufFile* gguf = nullptr;  // exactly one of gguf / hf is set
  const HfCheckpoint* hf = nullptr;
};

// Windows of this many tokens per sequence or more count as long: on a GPU, where the engine
// allocates all its memory at load, they get smaller activation scratch and fewer state
// snapshots by default (model_loader.h, engine.h), so that the KV cache, which dominates
// there, has the memory llama.cpp would give it.
constexpr int64_t kLongWindowTokens = 65536;

struct LoadOptions {
  int64_t max_batch = 256;  // tokens evaluated per forward call (prompts are chunked)
  // A split between devices, like llama.cpp's -ngl: with host_backend set and 0 <= gpu_layers
  // < the model's layer count, the last gpu_layers layers (and the output head) run on the
  // backend given to load, the first ones and the token embedding on host_backend (the CPU).
  Backend* host_backend = nullptr;
  int64_t gpu_layers = -1;
  // With host_backend set, the mixture-of-experts blocks (router, experts, shared expert) of
  // the first cpu_moe_layers layers run on it, like llama.cpp's --n-cpu-moe: the rest of those
  // layers stays on the backend given to load, and the block's input and output cross over.
  // 0: none; -1 or at least the layer count: every layer's. Models without experts ignore it.
  int64_t cpu_moe_layers = 0;
  // Sequences decoded together at most, when the caller knows (0: not known). A model may
  // size its logits buffer by it: at one sequence, the 9B output head's room for 64 rows is
  // 60 MiB of GPU memory that nothing reads.
  int64_t max_sequences = 0;
  // The element type of the linear layers' recurrent states (Backend::DeltaRuleShape::state):
  // F32, F16 or BF16. Conv states stay F32.
  DType recurrent_state = DType::F32;
};

struct ModelInfo {
  std::string architecture;
  int64_t n_vocab = 0;
  int64_t n_ctx_train = 0;
  int64_t n_layers = 0;
  std::string description;   // one line for humans
  size_t weight_bytes = 0;   // weights as the backend holds them
  size_t scratch_bytes = 0;  // activation buffers of one forward call of max_batch_tokens
  // A split model (LoadOptions::host_backend): layers and weight bytes on the host backend.
  int64_t host_layers = 0;
  size_t host_weight_bytes = 0;
  // Layers past host_layers whose mixture-of-experts block runs on the host backend
  // (LoadOptions::cpu_moe_layers); their weights count in host_weight_bytes.
  int64_t host_moe_layers = 0;
};

// What one sequence of a model keeps between calls (see hostlm/kv_cache.h): KV pages for
// the full-attention layers and a recurrent-state slot for the linear ones.
struct CacheLayout {
  int64_t n_kv_layers = 0;  // full-attention layers
  int64_t n_head_kv = 0, head_dim = 0;
  int64_t n_state_layers = 0;         // linear-attention layers
  int64_t conv_state = 0;             // floats of conv state per linear layer
  int64_t recurrent_state = 0;        // floats of delta-rule state per linear layer
  DType recurrent_type = DType::F32;  // its element type (LoadOptions::recurrent_state)

  int64_t kv_width() const { return n_head_kv * head_dim; }
  int64_t state_floats() const { return n_state_layers * (conv_state + recurrent_state); }
  bool empty() const { return n_kv_layers == 0 && n_state_layers == 0; }
  bool operator==(const CacheLayout&) const = default;
};

// Per-conversation state: KV cache for attention layers, recurrent state for linear layers.
// Models that use the host's paged cache take hostlm::KvSequence (hostlm/kv_cache.h).
class Sequence {
 public:
  virtual ~Sequence() = default;
  virtual int64_t n_past() const = 0;    // tokens evaluated so far
  virtual int64_t capacity() const = 0;  // most tokens it can hold
};

class Model {
 public:
  virtual ~Model() = default;
  virtual const ModelInfo& info() const = 0;
  virtual std::unique_ptr<Sequence> new_sequence(int64_t capacity) = 0;
  // Appends `tokens` to `seq`. Writes logits for every token ([T, n_vocab]) when
  // all_logits, else only for the last one ([n_vocab]), into host memory.
  virtual void eval(Sequence& seq, std::span<const int32_t> tokens, bool all_logits,
                    std::span<float> logits) = 0;

  // Several sequences in one forward pass (continuous batching): every item appends its
  // tokens to its own sequence; weights are read once for all of them. Each sequence may
  // appear once. The default evaluates the items one after the other.
  struct BatchItem {
    Sequence* seq = nullptr;
    std::span<const int32_t> tokens;
    bool all_logits = false;
    std::span<float> logits;  // [T or 1, n_vocab]
    // With writes_best_logits() and not all_logits: when these are not empty, the model writes
    // the last position's best_values.size() best logits (best_logits.h) into them, values and
    // ids, instead of the whole row into `logits`.
    std::span<float> best_values;
    std::span<int32_t> best_ids;
  };
  virtual void eval_batch(std::span<const BatchItem> items) {
    for (const BatchItem& item : items) eval(*item.seq, item.tokens, item.all_logits, item.logits);
  }
  // Most tokens one forward call takes (eval splits longer inputs; eval_batch callers keep
  // the total within it).
  virtual int64_t max_batch_tokens() const { return 512; }
  // Whether eval_batch honours BatchItem::best_values (the default evaluates whole rows).
  virtual bool writes_best_logits() const { return false; }

  // For the serving engine, which builds sequences (hostlm::KvSequence) from one shared page
  // pool: what a sequence keeps, and the backend its memory must live on. A model that
  // returns an empty layout or no backend can only be used through new_sequence.
  virtual CacheLayout cache_layout() const { return {}; }
  virtual Backend* backend() { return nullptr; }
  // Where a split model keeps each cache layer (full-attention layer i's pages, linear layer
  // i's state): with the layer. Unsplit: backend().
  virtual Backend* kv_layer_backend(int64_t /*kv_layer*/) { return backend(); }
  virtual Backend* state_layer_backend(int64_t /*state_layer*/) { return backend(); }

  // Embeddings (Ollama /api/embed, OpenAI /v1/embeddings): appends `tokens` to `seq` as
  // eval does and writes the final hidden state of each token, after the output norm, into
  // `hidden` ([T, embedding_size()]) in host memory. embedding_size() 0: not supported (and
  // eval_hidden throws hostlm::Error).
  virtual int64_t embedding_size() const { return 0; }
  virtual void eval_hidden(Sequence& seq, std::span<const int32_t> tokens, std::span<float> hidden);
};

class ArchitecturePlugin {
 public:
  virtual ~ArchitecturePlugin() = default;
  virtual std::unique_ptr<Model> load(const ModelFiles& files, Backend& backend,
                                      const LoadOptions& options) = 0;
  // Writes a GGUF of `hf` that llama.cpp also loads. out_type: F32, F16 or BF16.
  virtual void convert_to_gguf(const HfCheckpoint& hf, DType out_type,
                               const std::filesystem::path& out) = 0;
  // How the family's models read conversations and write answers. `files` may carry only an
  // architecture name (a renderer run without a model); nullptr: the plugin has no format.
  virtual std::unique_ptr<ChatFormat> chat_format(const ModelFiles& files) { return nullptr; }
};

}  // namespace hostlm

extern "C" {
using hostlm_plugin_abi_fn = int();
using hostlm_plugin_create_fn = hostlm::ArchitecturePlugin*();
}

// Use once in a plugin's source: HOSTLM_DECLARE_PLUGIN(MyPluginClass)
#define HOSTLM_DECLARE_PLUGIN(PluginClass)                                            \
  extern "C" __attribute__((visibility("default"))) int hostlm_plugin_abi_version() { \
    return HOSTLM_PLUGIN_ABI_VERSION;                                                 \
  }                                                                                   \
  extern "C" __attribute__((visibility("default"))) hostlm::ArchitecturePlugin*       \
  hostlm_plugin_create() {                                                            \
    return new PluginClass();                                                         \
  }
