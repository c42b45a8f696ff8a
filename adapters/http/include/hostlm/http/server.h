// The one HTTP server the API adapters share (Ollama /api, OpenAI /v1, the chat page), over
// cpp-httplib: routing with path patterns, an optional API key (Authorization: Bearer),
// request body limits, CORS, one log line per request, streamed responses that notice a
// client going away, and a graceful shutdown.
//
// Handlers run on a pool of worker threads, one request per thread; a streamed response runs
// its producer on the same thread after the headers are sent, so a slow reader only slows
// down its own stream (writes block: that is the backpressure).
#pragma once
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "hostlm/http/logger.h"

namespace httplib {
struct Request;
struct Response;
class ContentReader;
class DataSink;
}  // namespace httplib

namespace hostlm::http {

// An error a handler throws to answer `status`. `type` and `code` are for API families whose
// error objects carry them (OpenAI); others use only the message.
class HttpError : public std::runtime_error {
 public:
  HttpError(int status, const std::string& message, std::string type = {}, std::string code = {})
      : std::runtime_error(message),
        status_(status),
        type_(std::move(type)),
        code_(std::move(code)) {}
  int status() const { return status_; }
  const std::string& type() const { return type_; }
  const std::string& code() const { return code_; }

 private:
  int status_;
  std::string type_, code_;
};

// Writes an error body for one API family: {"error": "..."} for Ollama, an error object for
// OpenAI. Chosen by path prefix.
using ErrorFormatter = std::function<nlohmann::ordered_json(const HttpError& error)>;

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 11434;                        // 0: any free port (see Server::port())
  std::string api_key;                     // empty: no key required
  size_t max_body_bytes = 32u << 20;       // per request; a route may allow more
  std::vector<std::string> origins;        // CORS origins beyond the local defaults; "*": any
  int threads = 32;                        // worker threads (each serves one request at a time)
  std::chrono::seconds shutdown_grace{5};  // how long streams may run on after shutdown()
  LogOptions log;
};

// Given to a streamed response's producer.
class StreamWriter {
 public:
  StreamWriter(httplib::DataSink& sink, const std::atomic<bool>& stop) : sink_(sink), stop_(stop) {}
  // False once the client is gone or a write failed: stop producing.
  bool write(std::string_view data);
  // Polls the connection without writing (a client that closed it is noticed here).
  bool client_connected();
  // The server is shutting down and the grace period is over: end the stream now.
  bool must_stop() const { return stop_.load(); }

 private:
  httplib::DataSink& sink_;
  const std::atomic<bool>& stop_;
  bool failed_ = false;
};

// One request and its response, as a handler sees them.
class Exchange {
 public:
  Exchange(const httplib::Request& request, httplib::Response& response,
           const httplib::ContentReader* reader, std::vector<std::string> path_params,
           size_t max_body_bytes, const std::atomic<bool>& stop_streams,
           std::atomic<size_t>& active_streams);

  const std::string& method() const;
  const std::string& path() const;
  std::string header(const std::string& name) const;
  std::string query(const std::string& name) const;
  // Captures of the route pattern, in order.
  const std::string& param(size_t i) const { return params_.at(i); }

  // The body, read on first use; HttpError 413 past the route's limit.
  const std::string& body();
  // The body as JSON; HttpError 400 when it is missing or malformed.
  nlohmann::ordered_json json();
  // Streams the body to `sink` without a size limit (blob uploads); `sink` returns false to
  // stop. Returns false when the body could not be read whole.
  bool read_body(const std::function<bool(const char*, size_t)>& sink);
  bool body_was_read() const { return body_read_; }

  void send_json(int status, const nlohmann::ordered_json& body);
  void send_text(int status, std::string text,
                 const std::string& content_type = "text/plain; charset=utf-8");
  void send_empty(int status);
  // Sends headers now and runs `produce` to write the body in chunks.
  void send_stream(const std::string& content_type, std::function<void(StreamWriter&)> produce);

  // Fields of this request's log line (model, token counts, done reason).
  RequestLog& log();

  // For answers sent whole at the end (non-streamed generations): false once the client has
  // closed its connection, so the work can be cancelled. Cheap enough to ask every 100 ms.
  bool client_connected();
  // The server is shutting down and its grace period is over: end the work now.
  bool must_stop() const { return stop_streams_.load(); }

 private:
  const httplib::Request& request_;
  httplib::Response& response_;
  const httplib::ContentReader* reader_;
  std::vector<std::string> params_;
  size_t max_body_bytes_;
  const std::atomic<bool>& stop_streams_;
  std::atomic<size_t>& active_streams_;
  bool body_read_ = false;
  std::string body_;
  std::shared_ptr<const class ConnectionProbe> probe_;  // found on first use
};

using Handler = std::function<void(Exchange&)>;

struct RouteOptions {
  bool public_route = false;  // answered without the API key (the page at /, CORS preflight)
  size_t max_body_bytes = 0;  // 0: the server's limit
};

class Server {
 public:
  explicit Server(ServerOptions options);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // `pattern` is a regular expression over the whole path; its groups become params. HEAD
  // requests use the GET route unless one is registered for HEAD.
  void route(const std::string& method, const std::string& pattern, Handler handler,
             RouteOptions options = {});
  void set_error_format(const std::string& path_prefix, ErrorFormatter formatter);

  // Binds the listening socket; throws hostlm::Error when it cannot (address in use).
  void bind();
  int port() const;
  // Serves until shutdown() has finished every request.
  void run();
  // Stops accepting connections; running streams may finish within the grace period, then
  // are told to stop (StreamWriter::must_stop). Safe to call from any thread, and again.
  void shutdown();
  bool shutting_down() const;
  size_t active_streams() const;
  // Replaces ServerOptions::api_key for later requests (empty: none required); safe to call
  // while serving.
  void set_api_key(std::string api_key);

  Logger& logger();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace hostlm::http
