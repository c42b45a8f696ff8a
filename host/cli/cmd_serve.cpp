// `hostlm serve`: the Ollama API (/api) and the OpenAI API (/v1) on one port, models loaded on
// first use from the model store, LM Studio's folder, or a path.
//
// Settings come from flags, else from the environment (HOSTLM_HOST, HOSTLM_API_KEY,
// HOSTLM_NUM_PARALLEL, HOSTLM_MAX_LOADED_MODELS, HOSTLM_MAX_QUEUE, HOSTLM_KEEP_ALIVE,
// HOSTLM_CONTEXT_LENGTH, HOSTLM_ORIGINS, HOSTLM_MODELS, HOSTLM_SHUTDOWN_GRACE,
// HOSTLM_MAX_BODY_BYTES), else Ollama's defaults where it has one.
//
// SIGINT / SIGTERM: stop accepting, let streams finish within the grace period, then end
// them and exit 0. A second signal exits at once.
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
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

namespace hostlm::cli {
namespace {

struct ServeArgs {
  std::string host, api_key, models_dir, keep_alive, log_format = "text", log_level = "info";
  std::string reasoning_field = "reasoning_content", kv_type;
  int parallel = 0, max_loaded = 0, max_queue = 0;
  int64_t ctx = 0;
  bool no_store = false;
  BackendFlags backend;
};

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

int64_t env_int(const char* name, int64_t fallback) {
  const std::string v = env(name);
  if (v.empty()) return fallback;
  try {
    size_t used = 0;
    const long long n = std::stoll(v, &used);
    if (used != v.size() || n < 0) throw std::invalid_argument(v);
    return n;
  } catch (const std::exception&) {
    throw Error(std::string(name) + " must be a non-negative integer, not '" + v + "'");
  }
}

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

// Waits for SIGINT / SIGTERM (blocked in every thread, so only this one sees them).
class SignalWatcher {
 public:
  SignalWatcher(http::Server& server, std::chrono::seconds grace) : server_(server), grace_(grace) {
    thread_ = std::thread([this] { run(); });
  }
  ~SignalWatcher() {
    done_ = true;
    thread_.join();
  }

 private:
  void run() {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
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
      }
      if (stopping && std::chrono::steady_clock::now() > deadline) {
        server_.logger().event(http::LogLevel::kError, "shutdown took too long: exiting now");
        std::_Exit(1);
      }
    }
  }

  http::Server& server_;
  std::chrono::seconds grace_;
  std::atomic<bool> done_{false};
  std::thread thread_;
};

void serve(const ServeArgs& a) {
  // Block the signals before any thread starts, so every thread inherits the mask.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  signal(SIGPIPE, SIG_IGN);

  ServingOptions serving;
  serving.parallel = static_cast<int>(a.parallel ? a.parallel : env_int("HOSTLM_NUM_PARALLEL", 4));
  serving.max_loaded =
      static_cast<int>(a.max_loaded ? a.max_loaded : env_int("HOSTLM_MAX_LOADED_MODELS", 3));
  serving.max_queue =
      static_cast<size_t>(a.max_queue ? a.max_queue : env_int("HOSTLM_MAX_QUEUE", 64));
  serving.context = a.ctx ? a.ctx : env_int("HOSTLM_CONTEXT_LENGTH", 4096);
  if (serving.parallel < 1 || serving.max_loaded < 1 || serving.context < 1)
    throw Error("--parallel, --max-loaded and --ctx must be at least 1");
  const std::string keep_alive = a.keep_alive.empty() ? env("HOSTLM_KEEP_ALIVE") : a.keep_alive;
  if (!keep_alive.empty()) serving.keep_alive = parse_duration(keep_alive);
  serving.load = a.backend.load_options();
  const std::string kv_type = a.kv_type.empty() ? env("HOSTLM_KV_CACHE_TYPE") : a.kv_type;
  if (!kv_type.empty()) serving.kv_type = parse_kv_type(kv_type);

  http::ServerOptions options;
  const http::ListenAddress address =
      a.host.empty() ? http::listen_address_from_env() : http::parse_listen_address(a.host);
  options.host = address.host;
  options.port = address.port;
  options.api_key = a.api_key.empty() ? env("HOSTLM_API_KEY") : a.api_key;
  options.origins = split_commas(env("HOSTLM_ORIGINS"));
  options.max_body_bytes = static_cast<size_t>(env_int("HOSTLM_MAX_BODY_BYTES", 32 << 20));
  options.shutdown_grace = std::chrono::seconds(env_int("HOSTLM_SHUTDOWN_GRACE", 5));
  options.log.format = http::parse_log_format(a.log_format);
  options.log.level = http::parse_log_level(a.log_level);
  // The memory plan is a block of text: it would break a JSON log.
  serving.log_memory = options.log.format == http::LogFormat::kText;
  // One worker per request that can run or wait, plus room for quick requests.
  options.threads = static_cast<int>(std::min<int64_t>(
      1024, serving.parallel * serving.max_loaded + static_cast<int64_t>(serving.max_queue) + 16));

  std::shared_ptr<ollama::ModelStore> store;
  if (!a.no_store) {
    ollama::ModelStore defaults = ollama::ModelStore::open_default();
    store = a.models_dir.empty()
                ? std::make_shared<ollama::ModelStore>(std::move(defaults))
                : std::make_shared<ollama::ModelStore>(a.models_dir, defaults.extra_roots());
  }
  std::vector<std::shared_ptr<const ModelSource>> sources;
  if (store) sources.push_back(ollama::store_model_source(store));
  sources.push_back(openai::lmstudio_model_source(openai::default_lmstudio_root()));
  sources.push_back(std::make_shared<PathModelSource>());

  auto models = std::make_unique<ModelManager>(plugin_registry(), serving, std::move(sources));
  {
    http::Server server(options);
    ollama::add_api_routes(server, *models, store);
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
        {"store", store ? store->root().string() : std::string("none")}};
    server.logger().event(http::LogLevel::kInfo, "listening", fields);
    SignalWatcher watcher(server, options.shutdown_grace);
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
  cmd->add_option("--log-format", a->log_format, "text or json")
      ->check(CLI::IsMember({"text", "json"}));
  cmd->add_option("--log-level", a->log_level, "error, warn, info or debug")
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
