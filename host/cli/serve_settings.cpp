#include "serve_settings.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <set>

#include "hostlm/error.h"
#include "hostlm/ollama/api.h"
#include "hostlm/openai/api.h"

namespace hostlm::cli {
namespace {

namespace fs = std::filesystem;

const std::vector<std::string> kLiveKeys = {
    "HOSTLM_LOG_LEVEL", "HOSTLM_API_KEY",           "HOSTLM_KEEP_ALIVE",
    "HOSTLM_MAX_QUEUE", "HOSTLM_MAX_LOADED_MODELS", "HOSTLM_MODELS",
    "OLLAMA_MODELS",    "HOSTLM_LMSTUDIO_MODELS",   "HOSTLM_PLUGIN_PATH"};

fs::path home_of(const ServeSettings& s) {
  const std::string home = s.get("HOME");
  return home.empty() ? fs::path("/") : fs::path(home);
}

// Runs `parse`, adding where the value came from to its error.
template <typename Parse>
auto parse_setting(const ServeSettings& s, const std::string& key, Parse parse) {
  try {
    return parse(s.get(key));
  } catch (const std::exception& e) {
    throw Error(key + " (" + s.origin(key) + "): " + e.what());
  }
}

}  // namespace

ServeSettings::Environment ServeSettings::process_environment() {
  Environment out;
  for (char** e = environ; e && *e; ++e) {
    const std::string entry(*e);
    const size_t eq = entry.find('=');
    if (eq != std::string::npos) out.emplace(entry.substr(0, eq), entry.substr(eq + 1));
  }
  return out;
}

ServeSettings ServeSettings::load(const std::string& file, Environment environment) {
  ServeSettings s;
  s.file_ = file;
  s.environment_ = std::move(environment);
  if (!file.empty()) s.values_ = read_env_file(file);
  return s;
}

std::string ServeSettings::get(const std::string& key) const {
  if (const auto it = values_.find(key); it != values_.end()) return it->second.value;
  if (const auto it = environment_.find(key); it != environment_.end()) return it->second;
  return {};
}

std::string ServeSettings::origin(const std::string& key) const {
  if (const auto it = values_.find(key); it != values_.end())
    return file_ + " line " + std::to_string(it->second.line);
  return "the environment";
}

int64_t ServeSettings::get_count(const std::string& key, int64_t fallback) const {
  const std::string v = get(key);
  if (v.empty()) return fallback;
  try {
    size_t used = 0;
    const long long n = std::stoll(v, &used);
    if (used != v.size() || n < 0) throw std::invalid_argument(v);
    return n;
  } catch (const std::exception&) {
    throw Error(key + " must be a non-negative integer, not '" + v + "' (" + origin(key) + ")");
  }
}

void ServeSettings::export_file_values() const {
  for (const auto& [key, value] : values_) ::setenv(key.c_str(), value.value.c_str(), 1);
}

std::vector<std::string> ServeSettings::changed_keys(const ServeSettings& before,
                                                     const ServeSettings& after) {
  // Only the files can differ: both loads share the environment the server started with.
  std::set<std::string> keys;
  for (const auto& [key, v] : before.values_) keys.insert(key);
  for (const auto& [key, v] : after.values_) keys.insert(key);
  for (const auto& [key, v] : before.environment_) keys.insert(key);
  for (const auto& [key, v] : after.environment_) keys.insert(key);
  std::vector<std::string> out;
  for (const std::string& key : keys)
    if (before.get(key) != after.get(key)) out.push_back(key);
  return out;
}

const std::vector<std::string>& live_setting_keys() { return kLiveKeys; }

std::string overriding_flag(const ServeArgs& a, const std::string& key) {
  if (key == "HOSTLM_LOG_LEVEL" && !a.log_level.empty()) return "--log-level";
  if (key == "HOSTLM_API_KEY" && !a.api_key.empty()) return "--api-key";
  if (key == "HOSTLM_KEEP_ALIVE" && !a.keep_alive.empty()) return "--keep-alive";
  if (key == "HOSTLM_MAX_QUEUE" && a.max_queue) return "--max-queue";
  if (key == "HOSTLM_MAX_LOADED_MODELS" && a.max_loaded) return "--max-loaded";
  if (key == "HOSTLM_MODELS" && !a.models_dir.empty()) return "--models";
  if ((key == "HOSTLM_MODELS" || key == "OLLAMA_MODELS") && a.no_store) return "--no-store";
  return {};
}

LiveSettings live_settings(const ServeArgs& a, const ServeSettings& s) {
  LiveSettings live;
  live.log_level =
      a.log_level.empty()
          ? parse_setting(s, "HOSTLM_LOG_LEVEL",
                          [](const std::string& v) {
                            return v.empty() ? http::LogLevel::kInfo : http::parse_log_level(v);
                          })
          : http::parse_log_level(a.log_level);
  live.api_key = a.api_key.empty() ? s.get("HOSTLM_API_KEY") : a.api_key;

  live.keep_alive_text = a.keep_alive.empty() ? s.get("HOSTLM_KEEP_ALIVE") : a.keep_alive;
  if (live.keep_alive_text.empty()) {
    live.keep_alive_text = "5m";
    live.serving.keep_alive = std::chrono::minutes(5);
  } else if (a.keep_alive.empty()) {
    live.serving.keep_alive = parse_setting(s, "HOSTLM_KEEP_ALIVE",
                                            [](const std::string& v) { return parse_duration(v); });
  } else {
    live.serving.keep_alive = parse_duration(a.keep_alive);
  }
  live.serving.max_queue =
      static_cast<size_t>(a.max_queue ? a.max_queue : s.get_count("HOSTLM_MAX_QUEUE", 64));
  live.serving.max_loaded =
      static_cast<int>(a.max_loaded ? a.max_loaded : s.get_count("HOSTLM_MAX_LOADED_MODELS", 3));
  if (live.serving.max_loaded < 1)
    throw Error("HOSTLM_MAX_LOADED_MODELS must be at least 1 (" +
                s.origin("HOSTLM_MAX_LOADED_MODELS") + ")");

  const fs::path home = home_of(s);
  if (!a.no_store) {
    const std::string own = a.models_dir.empty() ? s.get("HOSTLM_MODELS") : a.models_dir;
    live.store_root = own.empty() ? home / ".hostlm" / "models" : fs::path(own);
    const std::string ollama = s.get("OLLAMA_MODELS");
    const fs::path extra = ollama.empty() ? home / ".ollama" / "models" : fs::path(ollama);
    // Ollama's store is read where it exists when the settings are read (at start, at a reload).
    std::error_code ec;
    if (fs::is_directory(extra, ec) && !fs::equivalent(extra, live.store_root, ec))
      live.store_extra_roots.push_back(extra);
  }
  const std::string lmstudio = s.get("HOSTLM_LMSTUDIO_MODELS");
  live.lmstudio_root = lmstudio.empty() ? home / ".lmstudio" / "models" : fs::path(lmstudio);
  live.plugin_path = s.get("HOSTLM_PLUGIN_PATH");
  return live;
}

std::shared_ptr<ollama::ModelStore> open_store(const LiveSettings& live) {
  if (live.store_root.empty()) return nullptr;
  return std::make_shared<ollama::ModelStore>(live.store_root, live.store_extra_roots);
}

std::vector<std::shared_ptr<const ModelSource>> model_sources(
    const LiveSettings& live, std::shared_ptr<ollama::ModelStore> store) {
  std::vector<std::shared_ptr<const ModelSource>> sources;
  if (store) sources.push_back(ollama::store_model_source(std::move(store)));
  sources.push_back(openai::lmstudio_model_source(live.lmstudio_root));
  sources.push_back(std::make_shared<PathModelSource>());
  return sources;
}

}  // namespace hostlm::cli
