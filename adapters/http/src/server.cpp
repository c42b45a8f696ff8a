// Routing, access control and shutdown over cpp-httplib.
//
// Every method is sent to one dispatcher with httplib's catch-all patterns, and POST, PUT,
// PATCH and DELETE are registered as content-reader handlers, so httplib never reads a body
// on its own: the route decides how much it accepts (413 past that) or streams it (blobs).
#include "hostlm/http/server.h"

#include <httplib.h>
#include <sys/socket.h>

#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <regex>
#include <thread>

#include "cors.h"
#include "hostlm/engine.h"
#include "hostlm/error.h"
#include "hostlm/text_generation.h"
#include "request_context.h"

namespace hostlm::http {

RequestContext& current_request() {
  thread_local RequestContext context;
  return context;
}

namespace {

using Clock = std::chrono::steady_clock;

// Connections the kernel may hold for accept() (capped by net.core.somaxconn): a burst of
// clients as large as any --parallel plus queue.
constexpr int kBacklog = 4096;

struct Route {
  std::string method;
  std::regex pattern;
  Handler handler;
  RouteOptions options;
};

// Constant-time comparison, so the key cannot be guessed byte by byte from timings.
bool same_secret(std::string_view a, std::string_view b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < a.size(); ++i)
    diff |= static_cast<unsigned char>(a[i] ^ (i < b.size() ? b[i] : 0));
  return diff == 0;
}

std::string bearer_token(const httplib::Request& req) {
  const std::string auth = req.get_header_value("Authorization");
  constexpr std::string_view kBearer = "Bearer ";
  if (auth.size() > kBearer.size() && auth.compare(0, kBearer.size(), kBearer) == 0)
    return auth.substr(kBearer.size());
  return req.get_header_value("x-api-key");  // Anthropic-style clients
}

}  // namespace

struct Server::Impl {
  ServerOptions options;
  httplib::Server svr;
  Logger logger;
  OriginPolicy origins;
  std::vector<Route> routes;
  std::vector<std::pair<std::string, ErrorFormatter>> formatters;
  std::atomic<bool> shutting_down{false};
  std::atomic<bool> stop_streams{false};
  std::atomic<size_t> active_streams{0};
  // options.api_key as it is now: set_api_key() may replace it while requests run.
  mutable std::mutex api_key_mutex;
  std::string api_key;
  int bound_port = 0;
  socket_t listen_socket = -1;  // the last socket made for listening (set_socket_options)
  std::thread watchdog;
  std::mutex watchdog_mutex;
  std::condition_variable watchdog_wake;

  explicit Impl(ServerOptions o)
      : options(std::move(o)),
        logger(options.log),
        origins(options.origins),
        api_key(options.api_key) {}

  std::string current_api_key() const {
    std::lock_guard lock(api_key_mutex);
    return api_key;
  }

  nlohmann::ordered_json error_body(const std::string& path, const HttpError& error) const {
    const ErrorFormatter* best = nullptr;
    size_t best_len = 0;
    for (const auto& [prefix, fn] : formatters)
      if (path.compare(0, prefix.size(), prefix) == 0 && prefix.size() >= best_len) {
        best = &fn;
        best_len = prefix.size();
      }
    if (best) return (*best)(error);
    return {{"error", error.what()}};
  }

  void reply_error(const httplib::Request& req, httplib::Response& res, const HttpError& error) {
    res.status = error.status();
    res.set_content(
        error_body(req.path, error).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
        "application/json; charset=utf-8");
    current_request().fields.error = error.what();
  }

  void add_cors_headers(const httplib::Request& req, httplib::Response& res) const {
    const std::string origin = req.get_header_value("Origin");
    if (origin.empty() || !origins.allowed(origin, req.get_header_value("Host"))) return;
    res.set_header("Access-Control-Allow-Origin", origin);
    res.set_header("Vary", "Origin");
  }

  // CORS preflight; also the start of every request's log record.
  httplib::Server::HandlerResponse pre_route(const httplib::Request& req, httplib::Response& res) {
    RequestContext& ctx = current_request();
    ctx = RequestContext{};
    ctx.start = Clock::now();
    ctx.started = true;
    if (req.method != "OPTIONS") return httplib::Server::HandlerResponse::Unhandled;
    const std::string origin = req.get_header_value("Origin");
    if (!origin.empty() && !origins.allowed(origin, req.get_header_value("Host"))) {
      reply_error(req, res, HttpError(403, "origin not allowed: " + origin));
      return httplib::Server::HandlerResponse::Handled;
    }
    res.status = 204;
    res.set_header("Access-Control-Allow-Methods", "GET, POST, PUT, DELETE, HEAD, OPTIONS");
    const std::string asked = req.get_header_value("Access-Control-Request-Headers");
    res.set_header("Access-Control-Allow-Headers",
                   asked.empty()
                       ? "Authorization, Content-Type, Accept, User-Agent, X-Requested-With"
                       : asked);
    res.set_header("Access-Control-Max-Age", "86400");
    return httplib::Server::HandlerResponse::Handled;
  }

  void log_request(const httplib::Request& req, const httplib::Response& res) {
    RequestContext& ctx = current_request();
    const double ms =
        ctx.started ? std::chrono::duration<double, std::milli>(Clock::now() - ctx.start).count()
                    : 0.0;
    logger.request(req.method, req.path, res.status, ms, ctx.fields, req.remote_addr);
    ctx = RequestContext{};
  }

  // A body nobody read would be parsed as the next request on this connection: read and
  // drop it (within a bound; past it the connection is beyond saving anyway).
  static void discard_body(const httplib::ContentReader* reader, bool already_read, size_t limit) {
    if (!reader || already_read) return;
    size_t seen = 0;
    (*reader)([&](const char*, size_t n) {
      seen += n;
      return seen <= limit;
    });
  }

  void dispatch(const httplib::Request& req, httplib::Response& res,
                const httplib::ContentReader* reader) {
    bool body_read = false;
    try {
      run_route(req, res, reader, body_read);
    } catch (const HttpError& e) {
      reply_error(req, res, e);
    } catch (const InvalidRequest& e) {
      reply_error(req, res, HttpError(400, e.what(), "invalid_request_error"));
    } catch (const ModelNotFound& e) {
      reply_error(req, res, HttpError(404, e.what(), "not_found_error"));
    } catch (const EngineBusy& e) {
      reply_error(req, res, HttpError(503, e.what(), "unavailable_error"));
    } catch (const std::exception& e) {
      reply_error(req, res, HttpError(500, e.what(), "server_error"));
    }
    discard_body(reader, body_read, options.max_body_bytes + (64u << 20));
  }

  // The route for this method and path, and the path's captures; HttpError 404 / 405.
  const Route& find_route(const httplib::Request& req, std::vector<std::string>& params) const {
    const Route* route = nullptr;
    const Route* head_fallback = nullptr;
    bool path_known = false;
    std::smatch match, fallback_match;
    for (const Route& r : routes) {
      std::smatch m;
      if (!std::regex_match(req.path, m, r.pattern)) continue;
      path_known = true;
      if (r.method == req.method) {
        route = &r;
        match = m;
        break;
      }
      if (req.method == "HEAD" && r.method == "GET" && !head_fallback) {
        head_fallback = &r;
        fallback_match = m;
      }
    }
    if (!route && head_fallback) {
      route = head_fallback;
      match = fallback_match;
    }
    if (!route) {
      if (path_known) throw HttpError(405, "method " + req.method + " not allowed for " + req.path);
      throw HttpError(404, "404 page not found", "not_found_error");
    }
    for (size_t i = 1; i < match.size(); ++i) params.push_back(match[i].str());
    return *route;
  }

  void run_route(const httplib::Request& req, httplib::Response& res,
                 const httplib::ContentReader* reader, bool& body_read) {
    if (shutting_down) {
      res.set_header("Connection", "close");
      throw HttpError(503, "the server is shutting down", "unavailable_error");
    }
    const std::string origin = req.get_header_value("Origin");
    if (!origin.empty() && !origins.allowed(origin, req.get_header_value("Host")))
      throw HttpError(403, "origin not allowed: " + origin, "permission_error");
    std::vector<std::string> params;
    const Route& route = find_route(req, params);
    const std::string key = current_api_key();
    if (!key.empty() && !route.options.public_route && !same_secret(bearer_token(req), key))
      throw HttpError(401, "invalid or missing API key (send Authorization: Bearer <key>)",
                      "authentication_error", "invalid_api_key");
    const size_t limit =
        route.options.max_body_bytes ? route.options.max_body_bytes : options.max_body_bytes;
    Exchange exchange(req, res, reader, std::move(params), limit, stop_streams, active_streams);
    try {
      route.handler(exchange);
    } catch (...) {
      body_read = exchange.body_was_read();
      throw;
    }
    body_read = exchange.body_was_read();
  }

  void install() {
    svr.new_task_queue = [n = std::max(4, options.threads)] { return new httplib::ThreadPool(n); };
    // Only the listening socket passes through here; bind() raises its backlog (kBacklog).
    svr.set_socket_options([this](socket_t sock) {
      httplib::default_socket_options(sock);
      listen_socket = sock;
    });
    // Idle keep-alive connections hold a worker and delay shutdown by up to this long.
    svr.set_keep_alive_timeout(3);
    svr.set_read_timeout(30);
    svr.set_write_timeout(60);
    svr.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
      return pre_route(req, res);
    });
    svr.set_post_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
      add_cors_headers(req, res);
    });
    svr.set_logger([this](const httplib::Request& req, const httplib::Response& res) {
      log_request(req, res);
    });
    const char* all = R"(.*)";
    auto plain = [this](const httplib::Request& req, httplib::Response& res) {
      dispatch(req, res, nullptr);
    };
    auto with_body = [this](const httplib::Request& req, httplib::Response& res,
                            const httplib::ContentReader& reader) { dispatch(req, res, &reader); };
    svr.Get(all, plain);
    svr.Options(all, plain);
    svr.Post(all, with_body);
    svr.Post(all, plain);
    svr.Put(all, with_body);
    svr.Put(all, plain);
    svr.Patch(all, with_body);
    svr.Patch(all, plain);
    svr.Delete(all, with_body);
    svr.Delete(all, plain);
  }

  // After shutdown(): lets streams run for the grace period, then tells them to stop.
  void watch_streams() {
    const auto deadline = Clock::now() + options.shutdown_grace;
    std::unique_lock lock(watchdog_mutex);
    while (active_streams > 0 && Clock::now() < deadline)
      watchdog_wake.wait_for(lock, std::chrono::milliseconds(100));
    if (active_streams > 0)
      logger.event(LogLevel::kWarn, "stopping streams still running after the grace period",
                   {{"streams", active_streams.load()}});
    stop_streams = true;
  }
};

Server::Server(ServerOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {
  impl_->install();
}

Server::~Server() {
  if (impl_->watchdog.joinable()) impl_->watchdog.join();
}

void Server::route(const std::string& method, const std::string& pattern, Handler handler,
                   RouteOptions options) {
  impl_->routes.push_back({method, std::regex(pattern), std::move(handler), options});
}

void Server::set_error_format(const std::string& path_prefix, ErrorFormatter formatter) {
  impl_->formatters.emplace_back(path_prefix, std::move(formatter));
}

void Server::bind() {
  const ServerOptions& o = impl_->options;
  if (o.port == 0) {
    impl_->bound_port = impl_->svr.bind_to_any_port(o.host);
    if (impl_->bound_port < 0) throw Error("cannot listen on " + o.host + " (any port)");
  } else {
    if (!impl_->svr.bind_to_port(o.host, o.port))
      throw Error("cannot listen on " + o.host + ":" + std::to_string(o.port) +
                  " (is another server using it? set HOSTLM_HOST or --host)");
    impl_->bound_port = o.port;
  }
  // cpp-httplib (Debian's compiled library) listens with a backlog of 5: 64 clients connecting
  // at once overflowed it, and each connection dropped retried a second later, a 1 s wait for
  // its first token that halved a 64-stream run's aggregate rate. Listening again on a
  // listening socket only changes its backlog.
  if (impl_->listen_socket >= 0 && ::listen(impl_->listen_socket, kBacklog) != 0)
    impl_->logger.event(LogLevel::kWarn, "could not raise the listen backlog",
                        {{"error", std::strerror(errno)}});
}

int Server::port() const { return impl_->bound_port; }

void Server::run() { impl_->svr.listen_after_bind(); }

void Server::shutdown() {
  if (impl_->shutting_down.exchange(true)) return;
  impl_->logger.event(LogLevel::kInfo, "shutting down",
                      {{"streams", impl_->active_streams.load()},
                       {"grace_seconds", impl_->options.shutdown_grace.count()}});
  impl_->svr.stop();
  impl_->watchdog = std::thread([this] { impl_->watch_streams(); });
}

bool Server::shutting_down() const { return impl_->shutting_down; }

size_t Server::active_streams() const { return impl_->active_streams; }

void Server::set_api_key(std::string api_key) {
  std::lock_guard lock(impl_->api_key_mutex);
  impl_->api_key.swap(api_key);
}

Logger& Server::logger() { return impl_->logger; }

}  // namespace hostlm::http
