// `hostlm serve`: the Ollama API (/api) and the OpenAI API (/v1) on one port, models loaded on
// first use from the model store, LM Studio's folder, or a path.
//
// Settings come from flags, else from the settings file (--config FILE or $HOSTLM_CONFIG,
// KEY=VALUE lines), else from the environment (HOSTLM_HOST, HOSTLM_API_KEY,
// HOSTLM_NUM_PARALLEL, HOSTLM_MAX_LOADED_MODELS, HOSTLM_MAX_QUEUE, HOSTLM_KEEP_ALIVE,
// HOSTLM_CONTEXT_LENGTH, HOSTLM_ORIGINS, HOSTLM_MODELS, HOSTLM_SHUTDOWN_GRACE,
// HOSTLM_MAX_BODY_BYTES, HOSTLM_LOG_LEVEL, HOSTLM_LOG_FORMAT), else Ollama's defaults where it
// has one (serve_settings.h).
//
// SIGINT / SIGTERM: stop accepting, let streams finish within the grace period, then end
// them and exit 0. A second signal exits at once (status 1).
// SIGHUP: read the settings file again and re-scan model and plugin folders, keeping loaded
// models (serve_reload.h).
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <memory>
#include <thread>

#include "cli_util.h"
#include "commands.h"
#include "hostlm/engine_stats.h"
#include "hostlm/error.h"
#include "hostlm/http/address.h"
#include "hostlm/http/server.h"
#include "hostlm/kv_cache.h"
#include "hostlm/ollama/api.h"
#include "hostlm/openai/api.h"
#include "hostlm/serving.h"
#include "serve_reload.h"
#include "serve_settings.h"

namespace hostlm::cli {
namespace {

std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t end = std::min(text.find(',', start), text.size());
    std::string part = text.substr(start, end - start);
    while (!part.empty() && part.front() == ' ') part.erase(part.begin());
    while (!part.empty() && part.back() == ' ') part.pop_back();
    if (!part.empty()) out.push_back(part);
    start = end + 1;
  }
  return out;
}

// The signals this server handles; blocked in every thread, so only the watcher sees them.
sigset_t handled_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGHUP);
  return set;
}

// Waits for SIGINT / SIGTERM (shutdown) and SIGHUP (`reload`, on this thread).
class SignalWatcher {
 public:
  SignalWatcher(http::Server& server, std::chrono::seconds grace, std::function<void()> reload)
      : server_(server), grace_(grace), reload_(std::move(reload)) {
    thread_ = std::thread([this] { run(); });
  }
  ~SignalWatcher() {
    done_ = true;
    thread_.join();
  }

 private:
  void run() {
    const sigset_t set = handled_signals();
    const timespec tick{0, 200'000'000};
    bool stopping = false;
    std::chrono::steady_clock::time_point deadline{};
    while (!done_) {
      const int sig = sigtimedwait(&set, nullptr, &tick);
      if (sig == SIGINT || sig == SIGTERM) {
        if (stopping) {
          server_.logger().event(http::LogLevel::kWarn, "second signal: exiting now");
          std::_Exit(1);
        }
        stopping = true;
        // Streams get the grace period, then a little time to say goodbye.
        deadline = std::chrono::steady_clock::now() + grace_ + std::chrono::seconds(10);
        server_.shutdown();
      } else if (sig == SIGHUP) {
        if (stopping) {
          server_.logger().event(http::LogLevel::kInfo, "SIGHUP ignored: shutting down");
        } else {
          try {
            reload_();
          } catch (const std::exception& e) {  // the reloader logs its own failures
            server_.logger().event(http::LogLevel::kError, "reload failed", {{"error", e.what()}});
          }
        }
      }
      if (stopping && std::chrono::steady_clock::now() > deadline) {
        server_.logger().event(http::LogLevel::kError, "shutdown took too long: exiting now");
        std::_Exit(1);
      }
    }
  }

  http::Server& server_;
  std::chrono::seconds grace_;
  std::function<void()> reload_;
  std::atomic<bool> done_{false};
  std::thread thread_;
};

void serve(const ServeArgs& a) {
  // Block the signals before any thread starts, so every thread inherits the mask.
  const sigset_t set = handled_signals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  signal(SIGPIPE, SIG_IGN);

  const char* config_env = std::getenv("HOSTLM_CONFIG");
  const std::string config = !a.config.empty() ? a.config : config_env ? config_env : "";
  ServeSettings settings = ServeSettings::load(config, ServeSettings::process_environment());
  settings.export_file_values();  // still the only thread
  const LiveSettings live = live_settings(a, settings);

  ServingOptions serving;
  serving.parallel =
      static_cast<int>(a.parallel ? a.parallel : settings.get_count("HOSTLM_NUM_PARALLEL", 4));
  serving.max_loaded = live.serving.max_loaded;
  serving.max_queue = live.serving.max_queue;
  serving.keep_alive = live.serving.keep_alive;
  serving.context = a.ctx ? a.ctx : settings.get_count("HOSTLM_CONTEXT_LENGTH", 4096);
  if (serving.parallel < 1 || serving.context < 1)
    throw Error("--parallel and --ctx must be at least 1");
  serving.load = a.backend.load_options();
  if (a.backend.state_type.empty()) {
    const std::string state_type = settings.get("HOSTLM_STATE_TYPE");
    if (!state_type.empty()) serving.load.recurrent_state = parse_state_type(state_type);
  }
  serving.load.max_sequences = serving.parallel;
  const std::string kv_type = a.kv_type.empty() ? settings.get("HOSTLM_KV_CACHE_TYPE") : a.kv_type;
  if (!kv_type.empty()) serving.kv_type = parse_kv_type(kv_type);

  http::ServerOptions options;
  const http::ListenAddress address =
      http::parse_listen_address(a.host.empty() ? settings.get("HOSTLM_HOST") : a.host);
  options.host = address.host;
  options.port = address.port;
  options.api_key = live.api_key;
  options.origins = split_commas(settings.get("HOSTLM_ORIGINS"));
  options.max_body_bytes =
      static_cast<size_t>(settings.get_count("HOSTLM_MAX_BODY_BYTES", 32 << 20));
  options.shutdown_grace = std::chrono::seconds(settings.get_count("HOSTLM_SHUTDOWN_GRACE", 5));
  const std::string log_format =
      !a.log_format.empty() ? a.log_format : settings.get("HOSTLM_LOG_FORMAT");
  options.log.format = http::parse_log_format(log_format.empty() ? "text" : log_format);
  options.log.level = live.log_level;
  // The memory plan is a block of text: it would break a JSON log.
  serving.log_memory = options.log.format == http::LogFormat::kText;
  // One worker per request that can run or wait, plus room for quick requests.
  options.threads = static_cast<int>(std::min<int64_t>(
      1024, serving.parallel * serving.max_loaded + static_cast<int64_t>(serving.max_queue) + 16));

  PluginRegistry& registry = plugin_registry();
  // The registry may have been made before the file's $HOSTLM_PLUGIN_PATH was exported.
  registry.rescan(PluginRegistry::default_search_path(live.plugin_path));
  std::shared_ptr<ollama::ModelStore> store = open_store(live);
  auto store_slot = std::make_shared<ollama::StoreSlot>(store);
  auto models = std::make_unique<ModelManager>(registry, serving, model_sources(live, store));
  {
    http::Server server(options);
    ollama::add_api_routes(server, *models, store_slot);
    openai::add_api_routes(server, *models, {.reasoning_field = a.reasoning_field});
    server.route("GET", "/health",
                 [](http::Exchange& ex) {
                   ex.send_json(200, {{"status", "ok"}});
                 },
                 {.public_route = true});
    server.route("GET", "/metrics", [&models](http::Exchange& ex) {
      ex.send_text(200, prometheus_text(models->metrics()), "text/plain; version=0.0.4");
    });
    server.bind();
    nlohmann::ordered_json fields = {
        {"address", http::client_base_url({options.host, server.port()})},
        {"parallel", serving.parallel},
        {"context", serving.context},
        {"max_loaded", serving.max_loaded},
        {"api_key", !options.api_key.empty()},
        {"store", store ? store->root().string() : std::string("none")},
        {"plugins", registry.manifests().size()},
        {"config", config.empty() ? std::string("none") : config}};
    server.logger().event(http::LogLevel::kInfo, "listening", fields);
    ServeReloader reloader(a, std::move(settings), server, *models, *store_slot, registry);
    SignalWatcher watcher(server, options.shutdown_grace, [&reloader] { reloader.reload(); });
    server.run();
    server.logger().event(http::LogLevel::kInfo, "stopped");
  }
  models.reset();  // unload before the registry's plugins go away
}

}  // namespace

void add_serve_command(CLI::App& app) {
  auto a = std::make_shared<ServeArgs>();
  CLI::App* cmd = app.add_subcommand(
      "serve", "Serve the Ollama API (/api) and the OpenAI API (/v1) on one port");
  cmd->add_option("--host", a->host,
                  "address to listen on, host:port (default $HOSTLM_HOST or 127.0.0.1:11434)");
  cmd->add_option("--api-key", a->api_key,
                  "require Authorization: Bearer KEY (default $HOSTLM_API_KEY)");
  cmd->add_option("--parallel", a->parallel,
                  "requests decoded together per model (default $HOSTLM_NUM_PARALLEL or 4)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--ctx,--ctx-size", a->ctx,
                  "context length per request (default $HOSTLM_CONTEXT_LENGTH or 4096)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--models", a->models_dir,
                  "model store folder (default $HOSTLM_MODELS or ~/.hostlm/models)");
  cmd->add_flag("--no-store", a->no_store, "serve models by path only, without a model store");
  cmd->add_option("--max-loaded", a->max_loaded,
                  "models loaded at once (default $HOSTLM_MAX_LOADED_MODELS or 3)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--max-queue", a->max_queue,
                  "requests waiting per model before 503 (default $HOSTLM_MAX_QUEUE or 64)")
      ->check(CLI::PositiveNumber);
  cmd->add_option(
      "--keep-alive", a->keep_alive,
      "how long idle models stay loaded, e.g. 5m, -1 (default $HOSTLM_KEEP_ALIVE or 5m)");
  cmd->add_option(
      "--config", a->config,
      "settings file of KEY=VALUE lines, read again on SIGHUP (default $HOSTLM_CONFIG)");
  cmd->add_option("--log-format", a->log_format,
                  "text or json (default $HOSTLM_LOG_FORMAT or text)")
      ->check(CLI::IsMember({"text", "json"}));
  cmd->add_option("--log-level", a->log_level,
                  "error, warn, info or debug (default $HOSTLM_LOG_LEVEL or info)")
      ->check(CLI::IsMember({"error", "warn", "info", "debug"}));
  cmd->add_option("--reasoning-field", a->reasoning_field,
                  "where /v1 answers put reasoning: reasoning_content, reasoning or both")
      ->check(CLI::IsMember({"reasoning_content", "reasoning", "both"}));
  cmd->add_option("--kv-type", a->kv_type,
                  "KV cache type: f16, q8_0 or f32 (default $HOSTLM_KV_CACHE_TYPE or f16)");
  a->backend.add_to(*cmd);
  cmd->callback([a] { serve(*a); });
}

}  // namespace hostlm::cli
