// GET /v1/models, GET /v1/models/{id}, POST /v1/embeddings.
#include <chrono>
#include <cstring>
#include <set>

#include "hostlm/http/generation.h"
#include "hostlm/http/json_fields.h"
#include "openai_common.h"

namespace hostlm::openai {
namespace {

using http::Exchange;
using http::HttpError;

Json model_json(const std::string& id, std::chrono::system_clock::time_point created,
                const std::string& owned_by) {
  Json j = Json::object();
  j["id"] = id;
  j["object"] = "model";
  j["created"] =
      std::chrono::duration_cast<std::chrono::seconds>(created.time_since_epoch()).count();
  j["owned_by"] = owned_by.empty() ? "hostlm" : owned_by;
  return j;
}

void list_models(ApiContext& ctx, Exchange& ex) {
  Json data = Json::array();
  std::set<std::string> seen;
  for (const ModelSpec& spec : ctx.models.list())
    if (seen.insert(spec.name).second)
      data.push_back(model_json(spec.name, spec.modified_at, spec.owned_by));
  // Models loaded by path are not in any listing, but are served.
  for (const LoadedModelStatus& s : ctx.models.loaded())
    if (seen.insert(s.spec.name).second)
      data.push_back(model_json(s.spec.name, s.spec.modified_at, s.spec.owned_by));
  ex.send_json(200, {{"object", "list"}, {"data", data}});
}

void get_model(ApiContext& ctx, Exchange& ex) {
  const std::string id = ex.param(0);
  const auto spec = ctx.models.resolve(id);
  if (!spec) throw HttpError(404, "model '" + id + "' not found");
  ex.send_json(200, model_json(id, spec->modified_at, spec->owned_by));
}

// Little-endian float32 bytes in base64, what encoding_format "base64" asks for.
std::string base64_floats(const std::vector<float>& v) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string bytes(v.size() * sizeof(float), '\0');
  std::memcpy(bytes.data(), v.data(), bytes.size());  // x86-64 and aarch64 are little-endian
  std::string out;
  for (size_t i = 0; i < bytes.size(); i += 3) {
    const uint32_t b0 = static_cast<unsigned char>(bytes[i]);
    const uint32_t b1 = i + 1 < bytes.size() ? static_cast<unsigned char>(bytes[i + 1]) : 0;
    const uint32_t b2 = i + 2 < bytes.size() ? static_cast<unsigned char>(bytes[i + 2]) : 0;
    const uint32_t n = (b0 << 16) | (b1 << 8) | b2;
    out += kAlphabet[(n >> 18) & 63];
    out += kAlphabet[(n >> 12) & 63];
    out += i + 1 < bytes.size() ? kAlphabet[(n >> 6) & 63] : '=';
    out += i + 2 < bytes.size() ? kAlphabet[n & 63] : '=';
  }
  return out;
}

void embeddings(ApiContext& ctx, Exchange& ex) {
  const Json body = ex.json();
  const std::string model = http::string_field(body, "model");
  if (model.empty()) throw HttpError(400, "you must provide a model parameter");
  ex.log().model = model;
  const std::string encoding = http::string_field(body, "encoding_format", "float");
  if (encoding != "float" && encoding != "base64")
    throw HttpError(400, "encoding_format must be float or base64, not \"" + encoding + "\"");
  int dimensions = 0;
  if (const auto d = body.find("dimensions"); d != body.end() && !d->is_null()) {
    if (!d->is_number_integer() || d->get<int64_t>() < 1)
      throw HttpError(400, "dimensions must be a positive integer");
    dimensions = d->get<int>();
  }
  // input: a string, strings, token ids, or lists of token ids.
  static const Json kAbsent;
  const Json* given = http::body_field(body, "input");
  const Json& input = given ? *given : kAbsent;
  std::vector<std::string> texts;
  std::vector<std::vector<int32_t>> token_lists;
  auto is_ids = [](const Json& j) {
    return j.is_array() && !j.empty() &&
           std::all_of(j.begin(), j.end(), [](const Json& t) { return t.is_number_integer(); });
  };
  if (input.is_string()) {
    texts.push_back(input.get<std::string>());
  } else if (is_ids(input)) {
    token_lists.push_back(http::token_ids(input, "input"));
  } else if (input.is_array() && !input.empty()) {
    for (const Json& item : input) {
      if (item.is_string() && token_lists.empty())
        texts.push_back(item.get<std::string>());
      else if (is_ids(item) && texts.empty())
        token_lists.push_back(http::token_ids(item, "input"));
      else
        throw HttpError(400, "input must be a string, a list of strings, or token ids");
    }
  } else {
    throw HttpError(400, "input must be a non-empty string, list of strings, or token ids");
  }
  for (const std::string& t : texts)
    if (t.empty()) throw HttpError(400, "input must not contain empty strings");
  ModelLease lease = ctx.models.acquire(model);
  const auto result = texts.empty() ? lease.embed_tokens(token_lists, true, dimensions)
                                    : lease.embed(texts, true, dimensions);
  Json data = Json::array();
  for (size_t i = 0; i < result.vectors.size(); ++i) {
    Json item = Json::object();
    item["object"] = "embedding";
    item["embedding"] =
        encoding == "base64" ? Json(base64_floats(result.vectors[i])) : Json(result.vectors[i]);
    item["index"] = i;
    data.push_back(std::move(item));
  }
  ex.log().prompt_tokens = result.prompt_tokens;
  ex.send_json(
      200, {{"object", "list"},
            {"data", data},
            {"model", model},
            {"usage",
             {{"prompt_tokens", result.prompt_tokens}, {"total_tokens", result.prompt_tokens}}}});
}

}  // namespace

void add_model_routes(http::Server& server, std::shared_ptr<ApiContext> ctx) {
  server.route("GET", "/v1/models", [ctx](Exchange& ex) { list_models(*ctx, ex); });
  server.route("GET", "/v1/models/(.+)", [ctx](Exchange& ex) { get_model(*ctx, ex); });
  server.route("POST", "/v1/embeddings", [ctx](Exchange& ex) { embeddings(*ctx, ex); });
}

}  // namespace hostlm::openai
