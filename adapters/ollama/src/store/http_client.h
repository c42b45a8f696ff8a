// A small blocking HTTP(S) client over libcurl for registry pulls and pushes: streamed
// response bodies, streamed uploads, redirects followed, errors as hostlm::Error.
//
// Certificates are checked against the CA bundle named by $HOSTLM_CA_BUNDLE, else
// $CURL_CA_BUNDLE, else $SSL_CERT_FILE (and the folder $SSL_CERT_DIR), else libcurl's
// built-in bundle: libcurl itself reads none of these variables, the curl tool and OpenSSL
// users expect them to work.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "hostlm/error.h"

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
  // Puts `upload` back at its first byte, so that the request can be sent again (after a
  // registry asked for a token); needed whenever `upload` is set.
  std::function<void()> rewind_upload;
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

// What http_send throws when no complete response arrived: "<url>: <transport problem>"
// (refused, dropped, timed out, TLS failed). Worth another try, unlike an answer.
class TransportError : public Error {
 public:
  using Error::Error;
};

HttpResponse http_send(const HttpRequest& request);

// Percent-encodes a query value.
std::string url_encode(std::string_view text);
// "https://host:port" of a URL ("" when it has no scheme).
std::string url_origin(std::string_view url);
// "host:port" of a URL, lower case ("" when it has no scheme).
std::string url_authority(std::string_view url);

}  // namespace hostlm::ollama
