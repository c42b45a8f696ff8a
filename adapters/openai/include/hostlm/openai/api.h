// The OpenAI-compatible API (ecosystem spec 4) on the shared HTTP server, as LM Studio,
// llama-server and Ollama's /v1 serve it: /v1/chat/completions, /v1/completions,
// /v1/models, /v1/models/{id}, /v1/embeddings, with OpenAI's error objects.
#pragma once
#include <filesystem>
#include <memory>
#include <string>

#include "hostlm/http/server.h"
#include "hostlm/serving.h"

namespace hostlm::openai {

struct ApiOptions {
  // Where reasoning goes in answers: "reasoning_content" (llama-server, DeepSeek),
  // "reasoning" (Ollama's /v1, vLLM) or "both".
  std::string reasoning_field = "reasoning_content";
};

void add_api_routes(http::Server& server, ModelManager& models, ApiOptions options = {});

// LM Studio's model folder: `<root>/<publisher>/<repo>/<file>.gguf`, named
// "publisher/repo" (when the folder holds one model file) or "publisher/repo/file.gguf".
// Projector files (mmproj*) are skipped. Read-only.
std::shared_ptr<const ModelSource> lmstudio_model_source(std::filesystem::path root);
// $HOSTLM_LMSTUDIO_MODELS, else ~/.lmstudio/models.
std::filesystem::path default_lmstudio_root();

}  // namespace hostlm::openai
