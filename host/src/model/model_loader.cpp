#include "hostlm/model_loader.h"

#include "hostlm/error.h"

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
  load.max_batch = options.max_batch > 0       ? options.max_batch
                   : backend_->name() == "cpu" ? 256
                                               : 512;
  model_ = plugin.load(files_.files(), *backend_, load);
  const int64_t layers = model_->info().n_layers;
  if (options.gpu_layers > 0 && options.gpu_layers < layers && backend_->name() != "cpu")
    throw Error(path.string() + ": gpu layers " + std::to_string(options.gpu_layers) + " of " +
                std::to_string(layers) +
                ": splitting a model between the GPU and the CPU is not supported yet; use -1 "
                "(all layers on the GPU) or 0 (the CPU backend)");
}

}  // namespace hostlm
