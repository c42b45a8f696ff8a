// What `hostlm serve` does on SIGHUP: read the settings file again, apply what can change
// while serving (LiveSettings: log level, API key, keep-alive, queue bound, loaded-model
// limit, model folders, plugin folders), open the model store anew and re-scan the plugin
// folders, keeping every loaded model loaded. One log line says what was reloaded; settings
// that changed but are read at start only are logged as needing a restart.
#pragma once
#include <memory>

#include "hostlm/http/server.h"
#include "hostlm/ollama/api.h"
#include "hostlm/registry.h"
#include "hostlm/serving.h"
#include "serve_settings.h"

namespace hostlm::cli {

class ServeReloader {
 public:
  // All references must outlive the reloader.
  ServeReloader(const ServeArgs& args, ServeSettings current, http::Server& server,
                ModelManager& models, ollama::StoreSlot& store, PluginRegistry& registry);

  // Never throws: when the file cannot be read or a value is wrong, it logs why and changes
  // nothing. Called from one thread at a time.
  void reload();

 private:
  const ServeArgs& args_;
  ServeSettings current_;
  http::Server& server_;
  ModelManager& models_;
  ollama::StoreSlot& store_;
  PluginRegistry& registry_;
};

}  // namespace hostlm::cli
