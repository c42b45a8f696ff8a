// The contract between the host and an architecture plugin (a shared library).
//
// A plugin library exports two C symbols (see HOSTLM_DECLARE_PLUGIN): the ABI version it
// was built against, checked by the host before anything else, and a factory. Everything
// behind the factory is C++ built with the same toolchain as the host; the ABI version is
// bumped whenever these classes or anything they expose change layout.
#pragma once
#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "hostlm/chat.h"
#include "hostlm/dtype.h"

#define HOSTLM_PLUGIN_ABI_VERSION 2

namespace hostlm {

class Backend;
class GgufFile;
class HfCheckpoint;

// An opened model file, as the host found it.
struct ModelFiles {
  std::filesystem::path path;
  std::string architecture;         // GGUF general.architecture or HF architectures[0]
  const GgufFile* gguf = nullptr;   // exactly one of gguf / hf is set
  const HfCheckpoint* hf = nullptr;
};

struct LoadOptions {
  int64_t max_batch = 256;  // tokens evaluated per forward call (prompts are chunked)
};

struct ModelInfo {
  std::string architecture;
  int64_t n_vocab = 0;
  int64_t n_ctx_train = 0;
  int64_t n_layers = 0;
  std::string description;  // one line for humans
};

// Per-conversation state: KV cache for attention layers, recurrent state for linear layers.
class Sequence {
 public:
  virtual ~Sequence() = default;
  virtual int64_t n_past() const = 0;     // tokens evaluated so far
  virtual int64_t capacity() const = 0;   // most tokens it can hold
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
  };
  virtual void eval_batch(std::span<const BatchItem> items) {
    for (const BatchItem& item : items) eval(*item.seq, item.tokens, item.all_logits, item.logits);
  }
  // Most tokens one forward call takes (eval splits longer inputs; eval_batch callers keep
  // the total within it).
  virtual int64_t max_batch_tokens() const { return 512; }
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
#define HOSTLM_DECLARE_PLUGIN(PluginClass)                                          \
  extern "C" __attribute__((visibility("default"))) int hostlm_plugin_abi_version() { \
    return HOSTLM_PLUGIN_ABI_VERSION;                                                 \
  }                                                                                   \
  extern "C" __attribute__((visibility("default")))                                   \
  hostlm::ArchitecturePlugin* hostlm_plugin_create() {                                \
    return new PluginClass();                                                         \
  }
