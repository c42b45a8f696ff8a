// Errors that cross module boundaries. Every failure a user can cause (bad file, bad flag,
// missing plugin) is reported as hostlm::Error with a message that names the thing at fault.
#pragma once
#include <stdexcept>
#include <string>

namespace hostlm {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
  // Defined in libhostlm so the vtable and type info live there, not in each plugin: an
  // Error thrown by a plugin stays valid after that plugin's library is unloaded.
  ~Error() override;
};

// A model that cannot run on the backend it was given (a plugin's layers without kernels
// there). Loading with the backend "auto" then falls back to the CPU; an explicit choice
// reports it.
class BackendUnsupported : public Error {
 public:
  using Error::Error;
  ~BackendUnsupported() override;
};

}  // namespace hostlm
