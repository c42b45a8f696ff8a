// How GoogleTest names a Backend::DeltaRuleShape parameter: its fields. By default it prints the
// struct's bytes, whose padding (after the state type) differs between runs, and CMake's test
// discovery puts that print into the CTest names.
#pragma once
#include <ostream>

#include "hostlm/dtype.h"
#include "hostlm/ops.h"

namespace hostlm {

inline void PrintTo(const Backend::DeltaRuleShape& s, std::ostream* os) {
  *os << "{n_k_heads " << s.n_k_heads << ", n_v_heads " << s.n_v_heads << ", dk " << s.dk << ", dv "
      << s.dv << ", state " << dtype_name(s.state) << "}";
}

}  // namespace hostlm
