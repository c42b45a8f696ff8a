// `hostlm ps` and `hostlm stop NAME`: ask the running server (HOSTLM_HOST, or --host) which
// models are loaded, or to unload one now, as `ollama ps` / `ollama stop` do.
#include <httplib.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <iomanip>
#include <sstream>

#include "cli_util.h"
#include "commands.h"
#include "hostlm/error.h"
#include "hostlm/http/address.h"

namespace hostlm::cli {
namespace {

using Json = nlohmann::ordered_json;

struct Client {
  explicit Client(const std::string& host)
      : address(host.empty() ? http::listen_address_from_env() : http::parse_listen_address(host)),
        client(http::client_base_url(address)) {
    client.set_connection_timeout(5);
    client.set_read_timeout(60);
    if (const char* key = std::getenv("HOSTLM_API_KEY"); key && *key)
      client.set_bearer_token_auth(key);
  }

  Json call(const std::string& method, const std::string& path, const Json& body = nullptr) {
    httplib::Result r =
        method == "GET" ? client.Get(path) : client.Post(path, body.dump(), "application/json");
    if (!r)
      throw Error("could not connect to hostlm at " + http::client_base_url(address) +
                  " (is `hostlm serve` running? set HOSTLM_HOST)");
    Json j = Json::parse(r->body, nullptr, false);
    if (r->status != 200) {
      const std::string message = j.is_object() && j.contains("error") && j["error"].is_string()
                                      ? j["error"].get<std::string>()
                                      : r->body;
      throw Error("server answered " + std::to_string(r->status) + ": " + message);
    }
    if (j.is_discarded()) throw Error("the server's answer to " + path + " is not JSON");
    return j;
  }

  http::ListenAddress address;
  httplib::Client client;
};

std::string human_size(uint64_t bytes) {
  const char* units[] = {"B", "KB", "MB", "GB", "TB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1000 && u < 4) {
    v /= 1000;
    ++u;
  }
  std::ostringstream out;
  out << std::fixed << std::setprecision(u == 0 ? 0 : 1) << v << " " << units[u];
  return out.str();
}

std::string processor(uint64_t size, uint64_t vram) {
  if (vram == 0 || size == 0) return "100% CPU";
  if (vram >= size) return "100% GPU";
  const int gpu = static_cast<int>(100.0 * static_cast<double>(vram) / static_cast<double>(size));
  return std::to_string(100 - gpu) + "%/" + std::to_string(gpu) + "% CPU/GPU";
}

// "4 minutes from now", "Forever" (expires_at years away), as `ollama ps` prints it.
std::string until(const std::string& rfc3339) {
  std::tm tm{};
  std::istringstream in(rfc3339.substr(0, 19));
  in >> std::get_time(&tm, "%Y-%m-%dT%H:%M:%S");
  if (in.fail()) return rfc3339;
  const auto at = std::chrono::system_clock::from_time_t(timegm(&tm));
  const auto left =
      std::chrono::duration_cast<std::chrono::seconds>(at - std::chrono::system_clock::now());
  if (left > std::chrono::hours(24 * 365)) return "Forever";
  if (left.count() < 60) return "Less than a minute from now";
  if (left.count() < 3600) return std::to_string(left.count() / 60) + " minutes from now";
  return std::to_string(left.count() / 3600) + " hours from now";
}

void ps(const std::string& host) {
  Client c(host);
  const Json reply = c.call("GET", "/api/ps");
  std::printf("%-32s %-14s %-10s %-16s %-9s %s\n", "NAME", "ID", "SIZE", "PROCESSOR", "CONTEXT",
              "UNTIL");
  for (const Json& m : reply.value("models", Json::array())) {
    const uint64_t size = m.value("size", uint64_t{0});
    std::printf("%-32s %-14s %-10s %-16s %-9lld %s\n", m.value("name", std::string()).c_str(),
                m.value("digest", std::string()).substr(0, 12).c_str(), human_size(size).c_str(),
                processor(size, m.value("size_vram", uint64_t{0})).c_str(),
                static_cast<long long>(m.value("context_length", int64_t{0})),
                until(m.value("expires_at", std::string())).c_str());
  }
}

void stop(const std::string& host, const std::string& name) {
  Client c(host);
  // The loaded name may carry the tag the user left out ("qwen" is "qwen:latest").
  std::string loaded;
  for (const Json& m : c.call("GET", "/api/ps").value("models", Json::array())) {
    const std::string n = m.value("name", std::string());
    if (n == name || n == name + ":latest") loaded = n;
  }
  if (loaded.empty()) throw Error("couldn't find a running model named '" + name + "'");
  c.call("POST", "/api/generate", {{"model", loaded}, {"keep_alive", 0}});
}

}  // namespace

void add_ps_commands(CLI::App& app) {
  auto host = std::make_shared<std::string>();
  CLI::App* ps_cmd =
      app.add_subcommand("ps", "List the models a running `hostlm serve` has loaded");
  ps_cmd->add_option("--host", *host, "server address (default $HOSTLM_HOST or 127.0.0.1:11434)");
  ps_cmd->callback([host] { ps(*host); });

  auto name = std::make_shared<std::string>();
  CLI::App* stop_cmd = app.add_subcommand("stop", "Unload a model from a running `hostlm serve`");
  stop_cmd->add_option("model", *name, "the model's name as `hostlm ps` shows it")->required();
  stop_cmd->add_option("--host", *host, "server address (default $HOSTLM_HOST or 127.0.0.1:11434)");
  stop_cmd->callback([host, name] { stop(*host, *name); });
}

}  // namespace hostlm::cli
