// Opens a model file (GGUF or Hugging Face folder), finds the plugin for its architecture
// and loads it on a backend. The one entry point the CLI, the engine and the C API use.
#pragma once
#include <filesystem>
#include <memory>
#include <string>

#include "hostlm/gguf.h"
#include "hostlm/ops.h"
#include "hostlm/plugin_api.h"
#include "hostlm/registry.h"
#include "hostlm/safetensors.h"

namespace hostlm {

// A GGUF file or an HF folder, opened and with its architecture name read.
class OpenedModelFiles {
 public:
  // Throws hostlm::Error naming the path when it is neither a readable GGUF nor a folder
  // with config.json and safetensors, or when it names no architecture.
  explicit OpenedModelFiles(const std::filesystem::path& path);
  const ModelFiles& files() const { return files_; }

 private:
  std::unique_ptr<GgufFile> gguf_;
  std::unique_ptr<HfCheckpoint> hf_;
  ModelFiles files_;
};

// From this many sequences at once (ModelLoadOptions::max_sequences) a GPU's default prefill
// step is 4096 tokens instead of 2048.
constexpr int64_t kManySequences = 32;

struct ModelLoadOptions {
  // "auto" (a GPU when present, else the CPU; also the CPU for a model whose plugin reports
  // BackendUnsupported on the GPU backend, with a note on stderr), "cpu", "cuda".
  std::string backend = "auto";
  int threads = 0;  // 0: one per core
  // Tokens per forward call (prompts are prefilled in chunks of it); 0: 2048 on a GPU backend,
  // where a longer chunk expands each quantized weight tile for more tokens and runs the
  // GEMMs faster (9B Q4_K_M on an H200, 512-token prompts, aggregate t/s at 32 / 64 streams:
  // 1,731 / 1,903 at 512, 1,865 / 2,126 at 1024, 1,936 / 2,208 at 2048), and 256 on the CPU.
  // The price is activation scratch: 0.28 GB more than at 512 on the 9B (370 MB in all;
  // computed from the buffer widths, not measured). So for long windows (`context` of
  // kLongWindowTokens or more) the GPU default is 512, llama.cpp's default micro-batch: at
  // the 9B's 262,144 tokens the 2048 default would hold 264 MiB more than llama.cpp's. With
  // kManySequences or more sequences (max_sequences) it is 4096: bursts of many prompts then
  // fill the longer steps (9B Q4_K_M, 64 streams on an H100, session 41: 2,868 t/s at 2048,
  // 2,932-2,934 at 4096 for 350 MiB more GPU memory, 2,968-2,981 at 8192 for 1,052 MiB more).
  int64_t max_batch = 0;
  // Tokens of one sequence's window, when the caller knows it (0: not known): picks
  // max_batch's default.
  int64_t context = 0;
  // Layers on the GPU, as llama.cpp's -ngl: -1 or at least the model's layer count, all of
  // them (on the backend chosen above); 0, none: the CPU backend. A count in between splits
  // the model: the last N layers and the output head on the GPU, the first ones and the
  // token embedding on the CPU (printed at load). Does nothing with the CPU backend, as -ngl
  // without a GPU.
  int gpu_layers = -1;
  // The first N layers' mixture-of-experts blocks on the CPU, the rest of those layers on the
  // GPU, as llama.cpp's --n-cpu-moe (-1: every layer's, llama.cpp's --cpu-moe; 0: none), for
  // models whose experts do not fit in VRAM. Printed at load; nothing to do for models without
  // experts or with the CPU backend.
  int cpu_moe_layers = 0;
  // Sequences decoded together at most (LoadOptions::max_sequences); 0: not known.
  int64_t max_sequences = 0;
  // The recurrent states' element type (LoadOptions::recurrent_state): F32 (the model's
  // own), F16 or BF16 (half the memory; faster decoding of many sequences at once).
  DType recurrent_state = DType::F32;
};

// What of a split model runs on the CPU, for messages: "layers 0-3 and the token embedding,
// the experts of layers 4-9" (ModelInfo::host_layers, host_moe_layers); "" when nothing.
std::string describe_cpu_share(int64_t host_layers, int64_t host_moe_layers);

// Members are declared so that destruction runs model -> backend -> files.
class LoadedModel {
 public:
  LoadedModel(PluginRegistry& registry, const std::filesystem::path& path,
              const ModelLoadOptions& options);
  Model& model() { return *model_; }
  Backend& backend() { return *backend_; }
  const ModelFiles& files() const { return files_.files(); }
  // A split model's CPU part (ModelLoadOptions::gpu_layers), else null.
  Backend* host_backend() { return host_backend_.get(); }

 private:
  OpenedModelFiles files_;
  std::unique_ptr<Backend> backend_;
  std::unique_ptr<Backend> host_backend_;
  std::unique_ptr<Model> model_;
};

}  // namespace hostlm
