// The CPU backend: the reference implementation of every op, multi-threaded.
#pragma once
#include <memory>

#include "hostlm/ops.h"

namespace hostlm::cpu {

std::unique_ptr<Backend> make_cpu_backend();

}  // namespace hostlm::cpu
