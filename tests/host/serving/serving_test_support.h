// Shared by the ModelManager tests: the tiny model, one plugin registry for the whole binary
// and small serving options.
#pragma once
#include <cstdlib>
#include <filesystem>
#include <string>

#include "hostlm/registry.h"
#include "hostlm/serving.h"

namespace hostlm::testing {

inline std::filesystem::path tiny_model() {
  const char* src = std::getenv("HOSTLM_SOURCE_DIR");
  const std::filesystem::path root =
      src ? std::filesystem::path(src) : std::filesystem::path(__FILE__).parent_path() / "../../..";
  return root / "tests" / "data" / "models" / "tiny-tied-f32";
}

// The build tree's plugins; outlives every manager of the tests.
inline PluginRegistry& registry() {
  static PluginRegistry r;
  return r;
}

inline ServingOptions small_options(const std::string& backend = "cpu") {
  ServingOptions o;
  o.context = 256;
  o.parallel = 1;
  o.log_memory = false;
  o.load.backend = backend;
  return o;
}

}  // namespace hostlm::testing
