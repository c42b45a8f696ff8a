// Small helpers shared by the subcommands.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "hostlm/model_loader.h"

namespace hostlm::cli {

// "1,2,3" -> {1, 2, 3}; throws hostlm::Error on anything else.
std::vector<int32_t> parse_token_list(const std::string& text);

// Options every model-running command takes: --backend, --threads.
struct BackendFlags {
  std::string backend = "auto";
  int threads = 0;
  void add_to(CLI::App& cmd);
  ModelLoadOptions load_options() const;
};

// The tiny model shipped with hostlm, used when a command is given no model.
std::string default_model_path();

}  // namespace hostlm::cli
