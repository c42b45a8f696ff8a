// Errors of the Ollama adapter that an HTTP server maps to a status code. Any other
// hostlm::Error raised by the store (I/O, a corrupt blob) is a server-side failure (500).
#pragma once
#include <string>

#include "hostlm/error.h"

namespace hostlm::ollama {

class RequestError : public Error {
 public:
  enum class Kind {
    kBadRequest,  // 400: invalid name, digest, Modelfile, template, parameters
    kNotFound,    // 404: unknown model or blob
  };
  RequestError(Kind kind, const std::string& message) : Error(message), kind_(kind) {}
  Kind kind() const { return kind_; }
  int http_status() const { return kind_ == Kind::kNotFound ? 404 : 400; }

 private:
  Kind kind_;
};

inline RequestError bad_request(const std::string& message) {
  return RequestError(RequestError::Kind::kBadRequest, message);
}
inline RequestError not_found(const std::string& message) {
  return RequestError(RequestError::Kind::kNotFound, message);
}

}  // namespace hostlm::ollama
