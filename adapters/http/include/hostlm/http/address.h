// Where the server listens and where clients (`hostlm ps`, `hostlm stop`) find it: Ollama's
// OLLAMA_HOST forms, read from HOSTLM_HOST or --host.
#pragma once
#include <string>
#include <string_view>

namespace hostlm::http {

inline constexpr int kDefaultPort = 11434;

struct ListenAddress {
  std::string host = "127.0.0.1";
  int port = kDefaultPort;
};

// "host:port", "host", ":port", "[::1]:port", with or without "http://"; empty: the
// default 127.0.0.1:11434. Throws hostlm::Error naming the text when it is not one of those.
ListenAddress parse_listen_address(std::string_view text);
// $HOSTLM_HOST, or the default.
ListenAddress listen_address_from_env();
// The base URL a client on this machine uses ("http://127.0.0.1:11434"); a wildcard host
// (0.0.0.0, ::) becomes the loopback address.
std::string client_base_url(const ListenAddress& address);

}  // namespace hostlm::http
