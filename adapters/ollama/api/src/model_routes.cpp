// Model management: /, version, tags, show, create, blobs, copy, delete, pull, push, ps.
#include <filesystem>

#include "hostlm/http/chat_page.h"
#include "hostlm/http/json_fields.h"
#include "hostlm/ollama/api.h"
#include "hostlm/ollama/modelfile.h"
#include "model_info.h"
#include "routes.h"

namespace hostlm::ollama {
namespace {

using Json = nlohmann::ordered_json;
using http::Exchange;
using http::HttpError;

std::string model_field(const Json& body) {
  for (const char* key : {"model", "name"})
    if (const auto it = body.find(key);
        it != body.end() && it->is_string() && !it->get<std::string>().empty())
      return it->get<std::string>();
  throw HttpError(400, "model is required");
}

std::string ndjson(const Json& j) { return j.dump() + "\n"; }

// Capabilities as Ollama reports them (model_capabilities in show.h); a model outside the
// store (a path) uses hostlm's native format, which renders tools and thinking.
Json capabilities(const std::optional<StoredModel>& stored) {
  if (stored) return Json(model_capabilities(*stored));
  return Json::array({"completion", "tools", "thinking"});
}

void root(Exchange& ex) {
  const std::string_view page = http::chat_page_html();
  if (!page.empty() && ex.header("Accept").find("text/html") != std::string::npos)
    return ex.send_text(200, std::string(page), "text/html; charset=utf-8");
  ex.send_text(200, "Ollama is running");
}

void tags(ApiContext& ctx, Exchange& ex) {
  Json models = Json::array();
  if (const std::shared_ptr<ModelStore> store = ctx.store->get()) {
    for (const StoredModel& m : store->list()) {
      Json j = Json::object();
      j["name"] = m.name.display();
      j["model"] = m.name.display();
      j["modified_at"] = format_time(m.modified_at);
      j["size"] = m.size;
      j["digest"] = m.digest;
      j["details"] = m.details();
      models.push_back(std::move(j));
    }
  }
  ex.send_json(200, {{"models", models}});
}

void show(ApiContext& ctx, Exchange& ex) {
  const Json body = ex.json();
  const std::string name = model_field(body);
  const bool verbose = http::bool_field(body, "verbose", false);
  std::optional<StoredModel> stored;
  const std::shared_ptr<ModelStore> store = ctx.store->get();
  if (store && ModelName::try_parse(name)) stored = store->find(name);
  std::optional<ModelSpec> spec;
  if (!stored) spec = ctx.models.resolve(name);
  if (!stored && !spec) throw HttpError(404, "model '" + name + "' not found");
  Json j = Json::object();
  if (stored) {
    if (!stored->licenses.empty()) {
      std::string license;
      for (const std::string& l : stored->licenses) license += (license.empty() ? "" : "\n") + l;
      j["license"] = license;
    }
    j["modelfile"] = format_modelfile(*stored);
    j["parameters"] = format_parameters(stored->params);
    if (stored->template_text) j["template"] = *stored->template_text;
    if (stored->system) j["system"] = *stored->system;
    if (!stored->renderer().empty()) j["renderer"] = stored->renderer();
    if (!stored->parser().empty()) j["parser"] = stored->parser();
    j["details"] = stored->details();
    if (!stored->messages.empty()) j["messages"] = stored->messages;
    j["model_info"] =
        stored->model_path.empty() ? Json::object() : model_info(stored->model_path, verbose);
    j["modified_at"] = format_time(stored->modified_at);
  } else {
    j["modelfile"] = "FROM " + spec->path.string() + "\n";
    j["parameters"] = "";
    j["details"] = spec->details.is_null() ? Json::object() : spec->details;
    j["model_info"] = model_info(spec->path, verbose);
    j["modified_at"] = format_time(spec->modified_at);
  }
  j["capabilities"] = capabilities(stored);
  ex.send_json(200, j);
}

void create(ApiContext& ctx, Exchange& ex) {
  const std::shared_ptr<ModelStore> store = require_store(ctx, "creating models");
  const Json body = ex.json();
  const std::string name = model_field(body);
  ModelName::parse(name);  // invalid names fail before any work
  const bool stream = http::bool_field(body, "stream", true);
  CreateRequest request;
  if (const auto mf = body.find("modelfile"); mf != body.end() && mf->is_string()) {
    // Older clients send the Modelfile text; its paths are relative to the server's folder.
    request =
        to_create_request(parse_modelfile(mf->get<std::string>()), std::filesystem::current_path());
  } else {
    request = CreateRequest::from_json(body);
  }
  ex.log().model = name;
  ApiContext* c = &ctx;
  if (!stream) {
    store->create(name, request);
    ctx.models.unload(name);  // the next request loads what was just written
    return ex.send_json(200, {{"status", "success"}});
  }
  ex.send_stream("application/x-ndjson", [c, store, name, request](http::StreamWriter& writer) {
    try {
      store->create(name, request, [&](const Progress& p) { writer.write(ndjson(p.to_json())); });
      c->models.unload(name);
    } catch (const std::exception& e) {
      writer.write(ndjson({{"error", e.what()}}));
    }
  });
}

void blob_exists(ApiContext& ctx, Exchange& ex) {
  const std::shared_ptr<ModelStore> store = require_store(ctx, "blobs");
  ex.send_empty(store->has_blob(normalize_digest(ex.param(0))) ? 200 : 404);
}

void blob_upload(ApiContext& ctx, Exchange& ex) {
  const std::shared_ptr<ModelStore> store = require_store(ctx, "blobs");
  const std::string digest = normalize_digest(ex.param(0));
  const bool existed = store->has_blob(digest);
  // Read (and check) the body even when the blob exists, so the client's upload completes.
  BlobWriter writer = store->begin_blob();
  if (!ex.read_body([&](const char* data, size_t n) {
        writer.write(data, n);
        return true;
      }))
    throw HttpError(400, "the upload ended before the whole blob arrived");
  writer.commit(digest);
  ex.send_empty(existed ? 200 : 201);
}

void copy(ApiContext& ctx, Exchange& ex) {
  const std::shared_ptr<ModelStore> store = require_store(ctx, "copying models");
  const Json body = ex.json();
  const std::string source = http::string_field(body, "source");
  const std::string destination = http::string_field(body, "destination");
  if (source.empty() || destination.empty())
    throw HttpError(400, "source and destination are required");
  store->copy(source, destination);
  ctx.models.unload(destination);
  ex.send_empty(200);
}

void remove(ApiContext& ctx, Exchange& ex) {
  const std::shared_ptr<ModelStore> store = require_store(ctx, "deleting models");
  const std::string name = model_field(ex.json());
  ex.log().model = name;
  ctx.models.unload(name);
  if (!store->remove(name)) throw HttpError(404, "model '" + name + "' not found");
  ex.send_empty(200);
}

// /api/pull and /api/push: the store talks to the registry; progress streams as NDJSON.
void registry_transfer(ApiContext& ctx, Exchange& ex, bool pull) {
  const std::shared_ptr<ModelStore> store =
      require_store(ctx, pull ? "pulling models" : "pushing models");
  const Json body = ex.json();
  const std::string name = model_field(body);
  ModelName::parse(name);
  const bool insecure = http::bool_field(body, "insecure", false);
  ex.log().model = name;
  ApiContext* c = &ctx;
  auto run = [c, store, name, insecure, pull](const ProgressFn& progress) {
    if (pull) {
      store->pull(name, progress, insecure);
      c->models.unload(name);  // a model loaded under that name is stale now
    } else {
      store->push(name, progress, insecure);
    }
  };
  if (!http::bool_field(body, "stream", true)) {
    run({});
    return ex.send_json(200, {{"status", "success"}});
  }
  ex.send_stream("application/x-ndjson", [run](http::StreamWriter& writer) {
    try {
      run([&](const Progress& p) { writer.write(ndjson(p.to_json())); });
    } catch (const std::exception& e) {
      writer.write(ndjson({{"error", e.what()}}));
    }
  });
}

void ps(ApiContext& ctx, Exchange& ex) {
  Json models = Json::array();
  for (const LoadedModelStatus& s : ctx.models.loaded()) {
    Json j = Json::object();
    j["name"] = s.spec.name;
    j["model"] = s.spec.name;
    j["size"] = s.size;
    j["digest"] = s.spec.digest;
    j["details"] = s.spec.details.is_null() ? Json::object() : s.spec.details;
    // "Forever" shows as a far future time, as Ollama's does.
    j["expires_at"] = s.expires_at ? format_time(*s.expires_at) : "2318-01-01T00:00:00.000000000Z";
    j["size_vram"] = s.size_vram;
    j["context_length"] = s.context;
    models.push_back(std::move(j));
  }
  ex.send_json(200, {{"models", models}});
}

}  // namespace

void add_model_routes(http::Server& server, std::shared_ptr<ApiContext> ctx) {
  auto on = [&](const char* method, const char* path, auto fn, http::RouteOptions o = {}) {
    server.route(method, path, with_store_errors([ctx, fn](Exchange& ex) { fn(*ctx, ex); }), o);
  };
  server.route("GET", "/", root, {.public_route = true});
  // The chat page under a name a browser or a bookmark may also ask for.
  server.route("GET", "/index\\.html",
               [](Exchange& ex) {
                 ex.send_text(200, std::string(http::chat_page_html()), "text/html; charset=utf-8");
               },
               {.public_route = true});
  server.route("GET", "/api/version", [](Exchange& ex) {
    ex.send_json(200, {{"version", kApiVersion}});
  });
  on("GET", "/api/tags", tags);
  on("POST", "/api/show", show);
  on("POST", "/api/create", create);
  on("HEAD", "/api/blobs/([^/]+)", blob_exists);
  // Blobs are model weights: no body limit.
  on("POST", "/api/blobs/([^/]+)", blob_upload, {.max_body_bytes = SIZE_MAX});
  on("POST", "/api/copy", copy);
  on("DELETE", "/api/delete", remove);
  on("POST", "/api/pull", [](ApiContext& c, Exchange& ex) { registry_transfer(c, ex, true); });
  on("POST", "/api/push", [](ApiContext& c, Exchange& ex) { registry_transfer(c, ex, false); });
  on("GET", "/api/ps", ps);
}

}  // namespace hostlm::ollama
