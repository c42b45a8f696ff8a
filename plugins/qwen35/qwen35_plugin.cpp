// The plugin's entry point: what the host's registry loads from libhostlm_qwen35.so.
#include "hostlm/error.h"
#include "hostlm/plugin_api.h"
#include "qwen35_chat.h"
#include "qwen35_convert.h"
#include "qwen35_model.h"

namespace hostlm::qwen35 {

class Qwen35Plugin final : public ArchitecturePlugin {
 public:
  std::unique_ptr<Model> load(const ModelFiles& files, Backend& backend,
                              const LoadOptions& options) override {
    return load_model(files, backend, options);
  }
  void convert_to_gguf(const HfCheckpoint& hf, DType out_type,
                       const std::filesystem::path& out) override {
    qwen35::convert_to_gguf(hf, out_type, out);
  }
  std::unique_ptr<ChatFormat> chat_format(const ModelFiles& files) override {
    return make_chat_format(files);
  }
};

}  // namespace hostlm::qwen35

HOSTLM_DECLARE_PLUGIN(hostlm::qwen35::Qwen35Plugin)
