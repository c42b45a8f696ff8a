// Where `hostlm serve` takes its settings from, in order: flags; the settings file
// (--config FILE or $HOSTLM_CONFIG: KEY=VALUE lines as systemd's EnvironmentFile= reads them);
// the environment the server started with; built-in defaults.
//
// On SIGHUP the file is read again (serve_reload.h). The settings in LiveSettings then take
// effect at once; every other setting is read at start only, and a change to one is logged as
// needing a restart.
#pragma once
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cli_util.h"
#include "env_file.h"
#include "hostlm/http/logger.h"
#include "hostlm/ollama/store.h"
#include "hostlm/serving.h"

namespace hostlm::cli {

// The flags of `hostlm serve`; empty / 0: not given.
struct ServeArgs {
  std::string host, api_key, models_dir, keep_alive, log_format, log_level, config;
  std::string reasoning_field = "reasoning_content", kv_type;
  int parallel = 0, max_loaded = 0, max_queue = 0;
  int64_t ctx = 0;
  bool no_store = false;
  BackendFlags backend;
};

// The settings file's values over a copy of the environment.
class ServeSettings {
 public:
  using Environment = std::map<std::string, std::string>;
  // The process environment as it is now (copied: the file's values are exported into it).
  static Environment process_environment();
  // Reads `file` (empty: there is none) over `environment`. Throws hostlm::Error naming the
  // file and line of what it cannot read.
  static ServeSettings load(const std::string& file, Environment environment);
  // The same file read again over the same environment (a reload).
  ServeSettings read_again() const { return load(file_, environment_); }

  // The value, "" when unset.
  std::string get(const std::string& key) const;
  // A non-negative integer or `fallback` when unset; hostlm::Error naming key, value and
  // where it was set otherwise.
  int64_t get_count(const std::string& key, int64_t fallback) const;
  // "FILE line N" or "the environment": where a value came from, for messages.
  std::string origin(const std::string& key) const;
  const std::string& file() const { return file_; }

  // Puts the file's values into the process environment, so every part of hostlm that reads
  // a variable sees them as under EnvironmentFile=. At start only, before any thread runs:
  // setenv is not safe while other threads read the environment.
  void export_file_values() const;

  // Keys whose values differ between two loads (set, changed or removed).
  static std::vector<std::string> changed_keys(const ServeSettings& before,
                                               const ServeSettings& after);

 private:
  std::string file_;
  EnvFile values_;
  Environment environment_;
};

// What a reload changes without a restart.
struct LiveSettings {
  http::LogLevel log_level = http::LogLevel::kInfo;
  std::string api_key;                // empty: none required
  ModelManager::LiveOptions serving;  // keep_alive, max_queue, max_loaded
  std::string keep_alive_text;        // as written ("5m" when not set)
  // Model folders: the store (null root: --no-store) with its read-only Ollama store, LM
  // Studio's folder; and the plugin folders of $HOSTLM_PLUGIN_PATH.
  std::filesystem::path store_root;
  std::vector<std::filesystem::path> store_extra_roots;
  std::filesystem::path lmstudio_root;
  std::string plugin_path;
};

// The variables LiveSettings reads.
const std::vector<std::string>& live_setting_keys();
// The flag that sets `key` when it was given ("--api-key"), else "": a flag wins over the file.
std::string overriding_flag(const ServeArgs& args, const std::string& key);
// Throws hostlm::Error for a value it cannot use, naming the key and where it was set.
LiveSettings live_settings(const ServeArgs& args, const ServeSettings& settings);

// The model store of `live` (null without one) and the sources the server resolves names
// through: the store, LM Studio's folder, paths. Opening reads the folders as they are now.
std::shared_ptr<ollama::ModelStore> open_store(const LiveSettings& live);
std::vector<std::shared_ptr<const ModelSource>> model_sources(
    const LiveSettings& live, std::shared_ptr<ollama::ModelStore> store);

}  // namespace hostlm::cli
