// A small blocking HTTP(S) client over libcurl for registry pulls and pushes: streamed
// response bodies, streamed uploads, redirects followed, errors as hostlm::Error.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace hostlm::ollama {

struct HttpRequest {
  std::string method = "GET";  // GET, HEAD, POST, PUT
  std::string url;
  std::vector<std::string> headers;  // "Name: value"
  // Request body: either `body`, or `upload` filling a buffer (returns 0 at the end) for
  // `upload_size` bytes.
  std::string body;
  std::function<size_t(char* buffer, size_t max)> upload;
  uint64_t upload_size = 0;
  // Successful (2xx) response body chunks, with the status, when set (else the body is
  // collected into HttpResponse::body); return false to stop the transfer.
  std::function<bool(long status, const char* data, size_t n)> on_data;
  bool insecure = false;  // skip TLS certificate checks
};

struct HttpResponse {
  long status = 0;
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;
};

// Throws hostlm::Error("<url>: <transport problem>") when no complete response arrived.
HttpResponse http_send(const HttpRequest& request);

}  // namespace hostlm::ollama
