#include "http_client.h"

#include <curl/curl.h>

#include <cctype>
#include <cstdlib>
#include <memory>
#include <mutex>

#include "hostlm/error.h"

namespace hostlm::ollama {
namespace {

struct Transfer {
  const HttpRequest* request;
  HttpResponse* response;
  bool stopped = false;
};

size_t on_body(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const size_t bytes = size * n;
  if (t->request->on_data && t->response->status / 100 == 2) {
    if (!t->request->on_data(t->response->status, data, bytes)) {
      t->stopped = true;
      return 0;  // makes curl stop with CURLE_WRITE_ERROR
    }
  } else {
    t->response->body.append(data, bytes);
  }
  return bytes;
}

size_t on_header(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const std::string line(data, size * n);
  if (line.rfind("HTTP/", 0) == 0) {
    // A new response (after a redirect or 100-continue) replaces the previous one's headers.
    t->response->headers.clear();
    const size_t sp = line.find(' ');
    t->response->status =
        sp == std::string::npos ? 0 : std::strtol(line.c_str() + sp + 1, nullptr, 10);
    return size * n;
  }
  const size_t colon = line.find(':');
  if (colon != std::string::npos) {
    std::string name = line.substr(0, colon);
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    std::string value = line.substr(colon + 1);
    while (!value.empty() && std::isspace(static_cast<unsigned char>(value.front())))
      value.erase(0, 1);
    while (!value.empty() && std::isspace(static_cast<unsigned char>(value.back())))
      value.pop_back();
    t->response->headers[name] = value;
  }
  return size * n;
}

size_t on_upload(char* buffer, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  return t->request->upload(buffer, size * n);
}

// The CA bundle and folder the user asked for (see http_client.h), or nullptr.
const char* env_or_null(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? v : nullptr;
}

void set_certificate_authorities(CURL* c) {
  const char* bundle = env_or_null("HOSTLM_CA_BUNDLE");
  if (!bundle) bundle = env_or_null("CURL_CA_BUNDLE");
  if (!bundle) bundle = env_or_null("SSL_CERT_FILE");
  if (bundle) curl_easy_setopt(c, CURLOPT_CAINFO, bundle);
  if (const char* dir = env_or_null("SSL_CERT_DIR")) curl_easy_setopt(c, CURLOPT_CAPATH, dir);
}

}  // namespace

HttpResponse http_send(const HttpRequest& req) {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  std::unique_ptr<CURL, decltype(&curl_easy_cleanup)> curl(curl_easy_init(), curl_easy_cleanup);
  if (!curl) throw TransportError(req.url + ": cannot start an HTTP transfer");
  HttpResponse response;
  Transfer t{&req, &response};
  CURL* c = curl.get();
  curl_easy_setopt(c, CURLOPT_URL, req.url.c_str());
  curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
  curl_easy_setopt(c, CURLOPT_MAXREDIRS, 10L);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 30L);
  // A stalled transfer (under 1 byte/s for a minute) is an error, not a hang.
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, 60L);
  curl_easy_setopt(c, CURLOPT_USERAGENT, "hostlm");
  char detail[CURL_ERROR_SIZE] = {};  // says which certificate check failed, and why
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, detail);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &t);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, &t);
  if (req.insecure) {
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 0L);
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 0L);
  } else {
    set_certificate_authorities(c);
  }
  curl_slist* headers = nullptr;
  for (const auto& h : req.headers) headers = curl_slist_append(headers, h.c_str());
  if (req.method == "HEAD") {
    curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
  } else if (req.method == "PUT" || req.method == "POST") {
    if (req.upload) {
      curl_easy_setopt(c, CURLOPT_UPLOAD, 1L);
      curl_easy_setopt(c, CURLOPT_READFUNCTION, on_upload);
      curl_easy_setopt(c, CURLOPT_READDATA, &t);
      curl_easy_setopt(c, CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(req.upload_size));
      headers = curl_slist_append(headers, "Expect:");
    } else {
      curl_easy_setopt(c, CURLOPT_POSTFIELDS, req.body.c_str());
      curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(req.body.size()));
    }
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, req.method.c_str());
  }
  if (headers) curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
  const CURLcode rc = curl_easy_perform(c);
  curl_slist_free_all(headers);
  if (rc != CURLE_OK && !t.stopped)
    throw TransportError(req.url + ": " + (detail[0] ? detail : curl_easy_strerror(rc)));
  long status = 0;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  response.status = status;
  return response;
}

std::string url_encode(std::string_view text) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += ch;
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

std::string url_origin(std::string_view url) {
  const size_t scheme = url.find("://");
  if (scheme == std::string_view::npos) return "";
  const size_t end = url.find_first_of("/?#", scheme + 3);
  return std::string(url.substr(0, end));
}

std::string url_authority(std::string_view url) {
  const std::string origin = url_origin(url);
  if (origin.empty()) return "";
  std::string out = origin.substr(origin.find("://") + 3);
  if (const size_t at = out.rfind('@'); at != std::string::npos) out.erase(0, at + 1);
  for (char& ch : out) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return out;
}

}  // namespace hostlm::ollama
