// POST /api/embed (batch) and the legacy POST /api/embeddings.
#include <chrono>

#include "hostlm/http/json_fields.h"
#include "hostlm/ollama/api_requests.h"
#include "routes.h"

namespace hostlm::ollama {
namespace {

using Json = nlohmann::ordered_json;
using http::Exchange;
using http::HttpError;

// Member `key`, or null where absent; a reference, so that a long input list is not copied.
const Json& field_or_null(const Json& body, const char* key) {
  static const Json kAbsent;
  const Json* v = http::body_field(body, key);
  return v ? *v : kAbsent;
}

struct EmbedCall {
  std::string model;
  std::optional<std::chrono::nanoseconds> keep_alive;
  std::optional<int64_t> num_ctx, num_gpu;
};

EmbedCall read_call(const Json& body) {
  EmbedCall call;
  call.model = http::string_field(body, "model");
  if (call.model.empty()) throw HttpError(400, "model is required");
  call.keep_alive = parse_keep_alive(field_or_null(body, "keep_alive"));
  const GenerationOptions options = options_from_json(field_or_null(body, "options"));
  call.num_ctx = options.num_ctx;
  call.num_gpu = options.num_gpu;
  return call;
}

void embed(ApiContext& ctx, Exchange& ex) {
  const auto t0 = std::chrono::steady_clock::now();
  const Json body = ex.json();
  const EmbedCall call = read_call(body);
  ex.log().model = call.model;
  std::vector<std::string> inputs;
  const Json& input = field_or_null(body, "input");
  if (input.is_string()) {
    inputs.push_back(input.get<std::string>());
  } else if (input.is_array()) {
    for (const Json& item : input) {
      if (!item.is_string()) throw HttpError(400, "input must be a string or a list of strings");
      inputs.push_back(item.get<std::string>());
    }
  } else if (!input.is_null()) {
    throw HttpError(400, "input must be a string or a list of strings");
  }
  int dimensions = 0;
  if (const auto d = body.find("dimensions"); d != body.end() && !d->is_null()) {
    if (!d->is_number_integer() || d->get<int64_t>() < 1)
      throw HttpError(400, "dimensions must be a positive integer");
    dimensions = d->get<int>();
  }
  ModelLease lease = ctx.models.acquire(
      call.model,
      {.keep_alive = call.keep_alive, .context = call.num_ctx, .gpu_layers = call.num_gpu});
  const auto result = lease.embed(inputs, http::bool_field(body, "truncate", true), dimensions);
  Json j = Json::object();
  j["model"] = call.model;
  j["embeddings"] = result.vectors;
  j["total_duration"] =
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0)
          .count();
  if (lease.load_duration().count() > 0) j["load_duration"] = lease.load_duration().count();
  j["prompt_eval_count"] = result.prompt_tokens;
  ex.log().prompt_tokens = result.prompt_tokens;
  ex.send_json(200, j);
}

void embeddings(ApiContext& ctx, Exchange& ex) {
  const Json body = ex.json();
  const EmbedCall call = read_call(body);
  ex.log().model = call.model;
  const std::string prompt = http::string_field(body, "prompt");
  ModelLease lease = ctx.models.acquire(
      call.model,
      {.keep_alive = call.keep_alive, .context = call.num_ctx, .gpu_layers = call.num_gpu});
  if (prompt.empty()) return ex.send_json(200, {{"embedding", Json::array()}});
  const auto result = lease.embed({prompt}, true);
  ex.log().prompt_tokens = result.prompt_tokens;
  ex.send_json(200, {{"embedding", result.vectors.at(0)}});
}

}  // namespace

void add_embed_routes(http::Server& server, std::shared_ptr<ApiContext> ctx) {
  server.route("POST", "/api/embed", with_store_errors([ctx](Exchange& ex) { embed(*ctx, ex); }));
  server.route("POST", "/api/embeddings",
               with_store_errors([ctx](Exchange& ex) { embeddings(*ctx, ex); }));
}

}  // namespace hostlm::ollama
