#include "serve_reload.h"

#include <algorithm>
#include <exception>
#include <optional>

namespace hostlm::cli {

using Json = nlohmann::ordered_json;

ServeReloader::ServeReloader(const ServeArgs& args, ServeSettings current, http::Server& server,
                             ModelManager& models, ollama::StoreSlot& store,
                             PluginRegistry& registry)
    : args_(args),
      current_(std::move(current)),
      server_(server),
      models_(models),
      store_(store),
      registry_(registry) {}

void ServeReloader::reload() {
  http::Logger& log = server_.logger();
  const std::string config = current_.file().empty() ? "none" : current_.file();
  std::optional<ServeSettings> next;
  std::optional<LiveSettings> live;
  std::shared_ptr<ollama::ModelStore> store;
  try {
    // Everything that can fail comes before anything is applied, so a bad file changes nothing.
    next = current_.read_again();
    live = live_settings(args_, *next);
    store = open_store(*live);
  } catch (const std::exception& e) {
    log.event(http::LogLevel::kError, "reload failed; settings unchanged",
              {{"config", config}, {"error", e.what()}});
    return;
  }
  registry_.rescan(PluginRegistry::default_search_path(live->plugin_path));
  // The reload's own line shows when the old or the new level shows info lines: a reload
  // that quiets the log still confirms itself.
  const http::LogLevel new_level = live->log_level;
  log.set_level(std::max(log.level(), new_level));
  server_.set_api_key(live->api_key);
  models_.set_live_options(live->serving);
  store_.set(store);
  models_.set_sources(model_sources(*live, store));

  Json applied = Json::array(), restart = Json::array(), overridden = Json::array();
  const std::vector<std::string>& live_keys = live_setting_keys();
  for (const std::string& key : ServeSettings::changed_keys(current_, *next)) {
    if (std::find(live_keys.begin(), live_keys.end(), key) == live_keys.end())
      restart.push_back(key);
    else if (const std::string flag = overriding_flag(args_, key); !flag.empty())
      overridden.push_back(key + " (" + flag + ")");
    else
      applied.push_back(key);
  }
  current_ = std::move(*next);

  Json fields = {{"config", config},
                 {"changed", applied},
                 {"log_level", http::log_level_text(live->log_level)},
                 {"api_key", !live->api_key.empty()},
                 {"keep_alive", live->keep_alive_text},
                 {"max_queue", live->serving.max_queue},
                 {"max_loaded", live->serving.max_loaded},
                 {"store", store ? store->root().string() : std::string("none")},
                 {"models", models_.list().size()},
                 {"plugins", registry_.manifests().size()},
                 {"plugin_problems", registry_.problems().size()},
                 {"loaded", models_.loaded().size()}};
  if (!overridden.empty()) fields["overridden_by_flags"] = overridden;
  if (!restart.empty()) fields["needs_restart"] = restart;
  log.event(http::LogLevel::kInfo, "reloaded", fields);
  if (!restart.empty())
    log.event(http::LogLevel::kWarn, "needs restart: these settings are read at start only",
              {{"keys", restart}});
  log.set_level(new_level);
}

}  // namespace hostlm::cli
