#include "registry_session.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "hostlm/error.h"

namespace hostlm::ollama {
namespace {

bool is_space(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

// The first `"...", or up to the next comma, of `s`, consumed (quoted-string escapes undone).
std::string take_value(std::string_view& s) {
  std::string value;
  if (!s.empty() && s.front() == '"') {
    size_t i = 1;
    for (; i < s.size() && s[i] != '"'; ++i) {
      if (s[i] == '\\' && i + 1 < s.size()) ++i;
      value += s[i];
    }
    s.remove_prefix(std::min(s.size(), i + 1));
  } else {
    const size_t comma = s.find(',');
    value = std::string(trim(s.substr(0, comma)));
    s.remove_prefix(comma == std::string_view::npos ? s.size() : comma);
  }
  return value;
}

std::string short_body(const HttpResponse& r) {
  std::string body(trim(r.body.substr(0, 200)));
  return body.empty() ? "" : ": " + body;
}

}  // namespace

std::optional<AuthChallenge> parse_auth_challenge(std::string_view header) {
  header = trim(header);
  const size_t sp = header.find(' ');
  if (header.empty()) return std::nullopt;
  AuthChallenge c;
  c.scheme = std::string(header.substr(0, sp));
  std::string_view rest = sp == std::string_view::npos ? "" : header.substr(sp + 1);
  while (!(rest = trim(rest)).empty()) {
    const size_t eq = rest.find('=');
    if (eq == std::string_view::npos) break;
    const std::string key = lower(std::string(trim(rest.substr(0, eq))));
    rest.remove_prefix(eq + 1);
    rest = trim(rest);
    const std::string value = take_value(rest);
    if (key == "realm") c.realm = value;
    if (key == "service") c.service = value;
    if (key == "scope") c.scope = value;
    rest = trim(rest);
    if (!rest.empty() && rest.front() == ',') rest.remove_prefix(1);
  }
  return c;
}

std::string registry_base_url(const ModelName& name) {
  const char* env = std::getenv("HOSTLM_REGISTRY_OVERRIDE");
  std::string_view entries = env ? env : "";
  while (!entries.empty()) {
    const size_t cut = entries.find(',');
    const std::string_view entry = trim(entries.substr(0, cut));
    entries.remove_prefix(cut == std::string_view::npos ? entries.size() : cut + 1);
    if (entry.empty()) continue;
    const size_t eq = entry.find('=');
    const std::string url =
        eq == std::string_view::npos ? "" : std::string(trim(entry.substr(eq + 1)));
    if (url.rfind("http://", 0) != 0 && url.rfind("https://", 0) != 0)
      throw Error("HOSTLM_REGISTRY_OVERRIDE: '" + std::string(entry) +
                  "' is not HOST=URL with an http:// or https:// URL");
    if (lower(std::string(trim(entry.substr(0, eq)))) != lower(name.host)) continue;
    std::string base = url;
    while (!base.empty() && base.back() == '/') base.pop_back();
    return base;
  }
  return name.scheme + "://" + name.host;
}

RegistrySession::RegistrySession(const ModelName& name, bool insecure)
    : base_(registry_base_url(name)),
      repository_path_("/v2/" + name.ns + "/" + name.model),
      insecure_(insecure) {}

std::string RegistrySession::repository_url() const { return base_ + repository_path_; }

HttpResponse RegistrySession::send(HttpRequest request) {
  request.insecure = insecure_;
  const std::vector<std::string> headers = request.headers;
  for (int attempt = 0;; ++attempt) {
    request.headers = headers;
    if (!token_.empty()) request.headers.push_back("Authorization: Bearer " + token_);
    HttpResponse response = http_send(request);
    if (response.status != 401 || attempt > 0) return response;
    const auto it = response.headers.find("www-authenticate");
    const auto challenge =
        it == response.headers.end() ? std::nullopt : parse_auth_challenge(it->second);
    // Only the token handshake is ours to do; any other 401 is the caller's answer.
    if (!challenge || lower(challenge->scheme) != "bearer" || challenge->realm.empty())
      return response;
    authenticate(*challenge, request.url);
    if (request.rewind_upload) request.rewind_upload();
  }
}

void RegistrySession::authenticate(const AuthChallenge& challenge, const std::string& request_url) {
  const std::string realm_host = url_authority(challenge.realm);
  const std::string request_host = url_authority(request_url);
  if (realm_host != request_host)
    throw Error("registry authentication: realm host \"" + realm_host +
                "\" does not match original host \"" + request_host + "\"");
  std::string url = challenge.realm;
  char sep = url.find('?') == std::string::npos ? '?' : '&';
  auto add = [&](const char* key, const std::string& value) {
    url += sep + std::string(key) + "=" + url_encode(value);
    sep = '&';
  };
  if (!challenge.service.empty()) add("service", challenge.service);
  std::string_view scopes = challenge.scope;  // space-separated, one query value each
  while (!(scopes = trim(scopes)).empty()) {
    const size_t sp = scopes.find(' ');
    add("scope", std::string(scopes.substr(0, sp)));
    scopes.remove_prefix(sp == std::string_view::npos ? scopes.size() : sp);
  }
  HttpRequest get;
  get.url = url;
  get.insecure = insecure_;
  const HttpResponse r = http_send(get);
  const std::string where = "registry authentication at " + challenge.realm;
  if (r.status != 200) throw Error(where + ": HTTP " + std::to_string(r.status) + short_body(r));
  // Docker's token servers answer "token", OAuth2-style ones "access_token".
  const auto j = nlohmann::json::parse(r.body, nullptr, false);
  for (const char* key : {"token", "access_token"}) {
    if (j.is_object() && j.contains(key) && j[key].is_string() &&
        !j[key].get<std::string>().empty()) {
      token_ = j[key].get<std::string>();
      return;
    }
  }
  throw Error(where + ": the answer has no token" + short_body(r));
}

}  // namespace hostlm::ollama
