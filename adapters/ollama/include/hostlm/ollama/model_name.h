// Ollama model names: `[host/][namespace/]model[:tag][@digest]` (ecosystem spec 1.8).
// Defaults are host `registry.ollama.ai`, namespace `library`, tag `latest`. A host may carry
// a port (`localhost:5000/ns/model`) and a scheme (`http://localhost:5000/ns/model`).
#pragma once
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace hostlm::ollama {

struct ModelName {
  std::string scheme = "https";  // from a `http://host/...` prefix; used by pull/push
  std::string host = "registry.ollama.ai";
  std::string ns = "library";  // namespace
  std::string model;
  std::string tag = "latest";
  std::string digest;  // "sha256:<hex>" when the name carried `@digest`, else empty

  // Fills in the defaults; nullopt when a part is empty, too long or has characters the
  // grammar does not allow.
  static std::optional<ModelName> try_parse(std::string_view text);
  // As try_parse; throws RequestError(kBadRequest, "invalid model name") on failure.
  static ModelName parse(std::string_view text);

  // `qwen3.5:latest`, `user/model:tag`, `hf.co/u/r:Q4_K_M`: default host and namespace
  // dropped, as `ollama list` prints names.
  std::string display() const;
  // `registry.ollama.ai/library/qwen3.5:latest`.
  std::string full() const;
  // host/namespace/model/tag: where the manifest lives below `manifests/`.
  std::filesystem::path manifest_path() const;
  // Case-insensitive comparison of host, namespace, model and tag (digest ignored).
  bool same_model(const ModelName& other) const;
};

}  // namespace hostlm::ollama
