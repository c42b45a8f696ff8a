// Shared by the CUDA backend tests: a CUDA backend when this machine can run one, else the
// reason, so GPU tests skip visibly on machines without a GPU (CI).
#pragma once
#include <memory>
#include <string>

#include "hostlm/error.h"
#include "hostlm/ops.h"

namespace hostlm::testing {

inline std::unique_ptr<Backend> cuda_backend_or_reason(std::string& why) {
  try {
    return create_backend("cuda");
  } catch (const Error& e) {
    why = e.what();
    return nullptr;
  }
}

inline bool cuda_usable() {
  std::string why;
  return cuda_backend_or_reason(why) != nullptr;
}

}  // namespace hostlm::testing
