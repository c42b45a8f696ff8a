// The Ollama route files, registered by add_api_routes (routes.cpp).
#pragma once
#include <memory>

#include "api_common.h"

namespace hostlm::ollama {

void add_generate_routes(http::Server& server,
                         std::shared_ptr<ApiContext> ctx);  // /api/chat, /api/generate
void add_model_routes(http::Server& server,
                      std::shared_ptr<ApiContext> ctx);  // tags, show, create, ...
void add_embed_routes(http::Server& server,
                      std::shared_ptr<ApiContext> ctx);  // /api/embed, /api/embeddings

}  // namespace hostlm::ollama
