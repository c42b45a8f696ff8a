#include "hostlm/model_loader.h"

#include <algorithm>
#include <cstdio>
#include <string>

#include "hostlm/error.h"
#include "hostlm/kv_cache.h"

namespace hostlm {
namespace fs = std::filesystem;

OpenedModelFiles::OpenedModelFiles(const fs::path& path) {
  files_.path = path;
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    hf_ = HfCheckpoint::open(path);
    const auto& config = hf_->config();
    if (!config.contains("architectures") || !config.at("architectures").is_array() ||
        config.at("architectures").empty() || !config.at("architectures")[0].is_string())
      throw Error((path / "config.json").string() +
                  ": no \"architectures\" list naming the model class");
    files_.architecture = config.at("architectures")[0].get<std::string>();
    files_.hf = hf_.get();
  } else if (fs::is_regular_file(path, ec)) {
    gguf_ = GgufFile::open(path);
    auto arch = gguf_->get_string("general.architecture");
    if (!arch) throw Error(path.string() + ": missing metadata key 'general.architecture'");
    files_.architecture = *arch;
    files_.gguf = gguf_.get();
  } else {
    throw Error(path.string() +
                ": no such file or folder (expected a .gguf file or a Hugging "
                "Face model folder)");
  }
}

std::string describe_cpu_share(int64_t host_layers, int64_t host_moe_layers) {
  const auto layers = [](int64_t first, int64_t n) {
    return n == 1 ? "layer " + std::to_string(first)
                  : "layers " + std::to_string(first) + "-" + std::to_string(first + n - 1);
  };
  std::string out;
  if (host_layers > 0) out = layers(0, host_layers) + " and the token embedding";
  if (host_moe_layers > 0)
    out += std::string(out.empty() ? "" : ", ") + "the experts of " +
           layers(host_layers, host_moe_layers);
  return out;
}

LoadedModel::LoadedModel(PluginRegistry& registry, const fs::path& path,
                         const ModelLoadOptions& options)
    : files_(path) {
  ArchitecturePlugin& plugin = registry.plugin_for(files_.files().architecture);
  if (options.gpu_layers < -1)
    throw Error("gpu layers: " + std::to_string(options.gpu_layers) +
                " is not a layer count (-1: all, 0: none)");
  std::string backend = options.backend;
  if (options.gpu_layers == 0) {
    if (backend == "cuda")
      throw Error(
          "gpu layers 0 keeps every layer off the GPU, but the cuda backend was asked "
          "for: use the cpu backend, or -1 for all layers on the GPU");
    backend = "cpu";
  }
  backend_ = create_backend(backend);
  backend_->set_threads(options.threads);
  LoadOptions load;
  load.max_batch = options.max_batch > 0                     ? options.max_batch
                   : backend_->name() == "cpu"               ? 256
                   : options.context >= kLongWindowTokens    ? 512
                   : options.max_sequences >= kManySequences ? 4096
                                                             : 2048;
  load.max_sequences = std::max<int64_t>(0, options.max_sequences);
  if (!is_state_type(options.recurrent_state))
    throw Error("recurrent states cannot be stored as " +
                std::string(dtype_name(options.recurrent_state)) + " (choose f32, f16 or bf16)");
  load.recurrent_state = options.recurrent_state;
  if (options.cpu_moe_layers < -1)
    throw Error("cpu moe layers: " + std::to_string(options.cpu_moe_layers) +
                " is not a layer count (-1: all, 0: none)");
  if ((options.gpu_layers > 0 || options.cpu_moe_layers != 0) && backend_->name() != "cpu") {
    // The plugin splits only when a count asks for it (fewer GPU layers than it has, experts
    // it has on the CPU); otherwise it ignores the host backend, which is then dropped.
    host_backend_ = create_backend("cpu");
    host_backend_->set_threads(options.threads);
    load.host_backend = host_backend_.get();
    load.gpu_layers = options.gpu_layers;
    load.cpu_moe_layers = options.cpu_moe_layers;
  }
  try {
    model_ = plugin.load(files_.files(), *backend_, load);
  } catch (const BackendUnsupported& e) {
    // "auto" means the best backend that can run the model: here the CPU.
    if (options.backend != "auto" || backend_->name() == "cpu") throw;
    std::fprintf(stderr, "hostlm: %s; running it on the CPU\n", e.what());
    host_backend_.reset();
    backend_ = create_backend("cpu");
    backend_->set_threads(options.threads);
    load = LoadOptions{};
    load.max_batch = options.max_batch > 0 ? options.max_batch : 256;
    load.max_sequences = std::max<int64_t>(0, options.max_sequences);
    load.recurrent_state = options.recurrent_state;
    model_ = plugin.load(files_.files(), *backend_, load);
  }
  const ModelInfo& info = model_->info();
  if (info.host_layers == 0 && info.host_moe_layers == 0) {
    host_backend_.reset();
    return;
  }
  char gib[32];
  std::snprintf(gib, sizeof gib, "%.2f", static_cast<double>(info.host_weight_bytes) / (1 << 30));
  const std::string on_cpu = describe_cpu_share(info.host_layers, info.host_moe_layers);
  std::fprintf(stderr,
               "hostlm: %lld of %lld layers and the output head on %s; %s on the CPU (%s GiB of "
               "weights in host memory)\n",
               static_cast<long long>(info.n_layers - info.host_layers),
               static_cast<long long>(info.n_layers), backend_->name().c_str(), on_cpu.c_str(),
               gib);
}

}  // namespace hostlm
