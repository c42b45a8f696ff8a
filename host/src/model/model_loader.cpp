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
      throw Error((path / "config.json").string() + ": no \"architectures\" list naming the model class");
    files_.architecture = config.at("architectures")[0].get<std::string>();
    files_.hf = hf_.get();
  } else if (fs::is_regular_file(path, ec)) {
    gguf_ = GgufFile::open(path);
    auto arch = gguf_->get_string("general.architecture");
    if (!arch) throw Error(path.string() + ": missing metadata key 'general.architecture'");
    files_.architecture = *arch;
    files_.gguf = gguf_.get();
  } else {
    throw Error(path.string() + ": no such file or folder (expected a .gguf file or a Hugging "
                                "Face model folder)");
  }
}

LoadedModel::LoadedModel(PluginRegistry& registry, const fs::path& path,
                         const ModelLoadOptions& options)
    : files_(path) {
  ArchitecturePlugin& plugin = registry.plugin_for(files_.files().architecture);
  backend_ = create_backend(options.backend);
  backend_->set_threads(options.threads);
  LoadOptions load;
  load.max_batch = options.max_batch;
  model_ = plugin.load(files_.files(), *backend_, load);
}

}  // namespace hostlm
