// Small helpers shared by the subcommands.
#pragma once
#include <CLI/CLI.hpp>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "hostlm/chat.h"
#include "hostlm/model_loader.h"

namespace hostlm::cli {

// "1,2,3" -> {1, 2, 3}; throws hostlm::Error on anything else.
std::vector<int32_t> parse_token_list(const std::string& text);

// Options every model-running command takes: --backend, --threads.
struct BackendFlags {
  std::string backend = "auto";
  int threads = 0;
  int gpu_layers = -1;
  int cpu_moe_layers = 0;
  std::string state_type;  // --state-type; "" is f32 (serve: $HOSTLM_STATE_TYPE first)
  void add_to(CLI::App& cmd);
  ModelLoadOptions load_options() const;
};

// --n-cpu-moe N and --cpu-moe (-1) into `cpu_moe_layers` (ModelLoadOptions::cpu_moe_layers).
void add_cpu_moe_options(CLI::App& cmd, int& cpu_moe_layers);
// --state-type f32|f16|bf16 into `state_type` (ModelLoadOptions::recurrent_state).
void add_state_type_option(CLI::App& cmd, std::string& state_type);

// A JSON file ("-": standard input), keys kept in the order written; throws hostlm::Error
// naming the file when it cannot be read or parsed.
nlohmann::ordered_json read_json_file(const std::string& path);

// Writes exactly `text`; throws hostlm::Error when standard output fails (a closed pipe).
void write_stdout(std::string_view text);

// The registry every command uses. It lives until the program ends because plugins throw
// hostlm::Error objects whose code is in the plugin's library: a registry destroyed while
// one propagates to main() would unload that code under it.
PluginRegistry& plugin_registry();

// The chat format of the plugin for `files` (which may carry only an architecture name);
// throws hostlm::Error when the plugin has none.
std::unique_ptr<ChatFormat> chat_format_for(PluginRegistry& registry, const ModelFiles& files);

// The model used when a command is given none: $HOSTLM_DEFAULT_MODEL, else (in a build
// tree) the tiny model of the sources; throws hostlm::Error when there is neither.
std::string default_model_path();

}  // namespace hostlm::cli
