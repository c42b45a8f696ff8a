#include "cpu/cpu_backend.h"
#include "hostlm/error.h"
#include "hostlm/ops.h"

namespace hostlm {

std::unique_ptr<Backend> create_backend(const std::string& name) {
  if (name == "cpu" || name == "auto" || name.empty()) return cpu::make_cpu_backend();
  if (name == "cuda")
    throw Error("backend 'cuda' is not built into this hostlm (the CUDA backend is not "
                "implemented yet); use --backend cpu");
  throw Error("unknown backend '" + name + "' (known: cpu)");
}

}  // namespace hostlm
