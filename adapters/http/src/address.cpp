#include "hostlm/http/address.h"

#include <charconv>
#include <cstdlib>

#include "hostlm/error.h"

namespace hostlm::http {

ListenAddress parse_listen_address(std::string_view text) {
  ListenAddress out;
  std::string_view s = text;
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '/')) s.remove_suffix(1);
  for (std::string_view scheme : {"http://", "https://"})
    if (s.starts_with(scheme)) s.remove_prefix(scheme.size());
  if (s.empty()) return out;
  const auto bad = [&] {
    return Error("invalid listen address '" + std::string(text) +
                 "' (expected host:port, host or :port)");
  };
  std::string_view host = s, port;
  if (s.front() == '[') {  // [IPv6]:port
    const size_t close = s.find(']');
    if (close == std::string_view::npos) throw bad();
    host = s.substr(1, close - 1);
    std::string_view rest = s.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':') throw bad();
      port = rest.substr(1);
    }
  } else if (const size_t colon = s.rfind(':'); colon != std::string_view::npos) {
    if (s.find(':') != colon) {
      host = s;  // a bare IPv6 address
    } else {
      host = s.substr(0, colon);
      port = s.substr(colon + 1);
    }
  }
  if (!host.empty()) out.host = std::string(host);
  if (!port.empty()) {
    int value = 0;
    const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
    if (ec != std::errc() || end != port.data() + port.size() || value < 0 || value > 65535)
      throw bad();
    out.port = value;
  }
  return out;
}

ListenAddress listen_address_from_env() {
  const char* env = std::getenv("HOSTLM_HOST");
  return parse_listen_address(env ? env : "");
}

std::string client_base_url(const ListenAddress& address) {
  std::string host = address.host;
  if (host == "0.0.0.0" || host.empty()) host = "127.0.0.1";
  if (host == "::") host = "::1";
  if (host.find(':') != std::string::npos) host = "[" + host + "]";
  return "http://" + host + ":" + std::to_string(address.port);
}

}  // namespace hostlm::http
