// Command-line and environment lists of the hand-run benchmarks.
#pragma once
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "hostlm/error.h"

namespace hostlm::bench {

// "4096,16384" or "16x4": positive counts separated by ',' or 'x'; `what` names the list in
// the error.
inline std::vector<int64_t> int_list(const char* text, const char* what) {
  std::vector<int64_t> out;
  for (const char* p = text; *p;) {
    char* end = nullptr;
    const long long v = std::strtoll(p, &end, 10);
    if (end == p || v < 1) throw hostlm::Error(std::string(what) + ": not a list of counts");
    out.push_back(v);
    p = *end == ',' || *end == 'x' ? end + 1 : end;
  }
  return out;
}

}  // namespace hostlm::bench
