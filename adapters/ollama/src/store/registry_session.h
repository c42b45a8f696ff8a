// Talking to one Ollama-compatible registry: where it is (the name's host, or a
// HOSTLM_REGISTRY_OVERRIDE entry), and the Bearer-token handshake of the OCI distribution
// spec that registry.ollama.ai and hf.co use: a 401 with `WWW-Authenticate: Bearer
// realm=...,service=...,scope=...` sends us to the realm for a token, and the request is
// tried once more with `Authorization: Bearer <token>`.
#pragma once
#include <optional>
#include <string>
#include <string_view>

#include "hostlm/ollama/model_name.h"
#include "http_client.h"

namespace hostlm::ollama {

struct AuthChallenge {
  std::string scheme;  // "Bearer", "Basic", ...
  std::string realm, service, scope;
};

// Parses a WWW-Authenticate value; nullopt when it is empty or not `scheme params`.
std::optional<AuthChallenge> parse_auth_challenge(std::string_view header);

// "{scheme}://{host}" for the name, unless $HOSTLM_REGISTRY_OVERRIDE maps its host to another
// base URL: comma-separated `host=url` entries, e.g.
// `hf.co=https://127.0.0.1:8443,registry.ollama.ai=http://localhost:5000` (tests, mirrors).
// The store keeps the name's own host either way. A malformed entry: hostlm::Error.
std::string registry_base_url(const ModelName& name);

class RegistrySession {
 public:
  RegistrySession(const ModelName& name, bool insecure);

  // Base URL and `{base}/v2/{namespace}/{model}`.
  const std::string& base_url() const { return base_; }
  std::string repository_url() const;

  // Sends the request with the session's token and TLS setting. On a 401 with a Bearer
  // challenge it fetches a token from the realm (which must be on the same host:port as
  // the request, as Ollama insists, so that nothing is handed to another site) and sends
  // the request once more; what comes back then is returned as it is. Errors of the token
  // request: hostlm::Error naming the realm.
  HttpResponse send(HttpRequest request);

 private:
  void authenticate(const AuthChallenge& challenge, const std::string& request_url);

  std::string base_;
  std::string repository_path_;
  bool insecure_ = false;
  std::string token_;
};

}  // namespace hostlm::ollama
