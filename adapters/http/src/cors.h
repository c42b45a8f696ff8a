// Which browser origins may call the server (CORS), as Ollama decides it: local origins and
// app shells by default, more from the configuration ("*" wildcards), and the server's own
// origin (the chat page it serves).
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace hostlm::http {

class OriginPolicy {
 public:
  explicit OriginPolicy(std::vector<std::string> extra);
  // `host` is the request's Host header: an origin naming the server itself is allowed.
  bool allowed(std::string_view origin, std::string_view host) const;

 private:
  std::vector<std::string> patterns_;
};

}  // namespace hostlm::http
