#include "routes.h"

#include "hostlm/ollama/api.h"

namespace hostlm::ollama {

void add_api_routes(http::Server& server, ModelManager& models, std::shared_ptr<StoreSlot> store) {
  // Shared by the handlers, which keep it alive as long as the server.
  auto ctx = std::make_shared<ApiContext>(ApiContext{
      models, store ? std::move(store) : std::make_shared<StoreSlot>(), server.logger()});
  add_generate_routes(server, ctx);
  add_model_routes(server, ctx);
  add_embed_routes(server, ctx);
}

}  // namespace hostlm::ollama
