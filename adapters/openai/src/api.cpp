#include "hostlm/openai/api.h"

#include "openai_common.h"

namespace hostlm::openai {

void add_generation_routes(http::Server& server, std::shared_ptr<ApiContext> ctx);
void add_model_routes(http::Server& server, std::shared_ptr<ApiContext> ctx);

void add_api_routes(http::Server& server, ModelManager& models, ApiOptions options) {
  if (options.reasoning_field != "reasoning_content" && options.reasoning_field != "reasoning" &&
      options.reasoning_field != "both")
    throw Error("the reasoning field must be reasoning_content, reasoning or both, not '" +
                options.reasoning_field + "'");
  auto ctx = std::make_shared<ApiContext>(ApiContext{models, std::move(options)});
  server.set_error_format("/v1/", error_json);
  add_generation_routes(server, ctx);
  add_model_routes(server, ctx);
}

}  // namespace hostlm::openai
