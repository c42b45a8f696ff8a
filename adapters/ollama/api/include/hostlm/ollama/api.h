// Ollama's REST API (ecosystem spec 3) on the shared HTTP server: /api/generate, /api/chat,
// /api/embed(dings), the model store endpoints, /api/ps, /api/version, and / .
#pragma once
#include <memory>
#include <mutex>

#include "hostlm/http/server.h"
#include "hostlm/ollama/store.h"
#include "hostlm/serving.h"

namespace hostlm::ollama {

// The Ollama API level these routes follow, reported by GET /api/version (clients gate
// features such as `think` on it).
inline constexpr const char* kApiVersion = "0.12.0";

// The store the routes use. A server re-reading its settings puts in one opened anew (other
// folders, an Ollama store created since); a request keeps the store it started with.
class StoreSlot {
 public:
  explicit StoreSlot(std::shared_ptr<ModelStore> store = nullptr) : store_(std::move(store)) {}
  std::shared_ptr<ModelStore> get() const {
    std::lock_guard lock(mutex_);
    return store_;
  }
  void set(std::shared_ptr<ModelStore> store) {
    std::lock_guard lock(mutex_);
    store_.swap(store);
  }

 private:
  mutable std::mutex mutex_;
  std::shared_ptr<ModelStore> store_;
};

// Registers the routes. `models` must outlive the server; the slot's store may be null
// (then create, copy, delete and blobs answer 501 and /api/tags lists nothing).
void add_api_routes(http::Server& server, ModelManager& models, std::shared_ptr<StoreSlot> store);

// The store as a model source: a model's weights blob with its Modelfile's PARAMETERs,
// SYSTEM, MESSAGEs and TEMPLATE (rendered with the Go template unless the model has a
// RENDERER, in which case the plugin's own format is used, as Ollama does for qwen3.5).
std::shared_ptr<const ModelSource> store_model_source(std::shared_ptr<const ModelStore> store);

}  // namespace hostlm::ollama
