// One function per `hostlm` subcommand, each in its own cmd_<name>.cpp. Each adds its
// subcommand to the app and sets the callback that runs it; callbacks throw hostlm::Error
// for user-facing failures, which main() prints as "hostlm: <message>" with exit code 1.
#pragma once
#include <CLI/CLI.hpp>

namespace hostlm::cli {

void add_plugins_command(CLI::App& app);
void add_logits_command(CLI::App& app);
void add_run_command(CLI::App& app);
void add_convert_command(CLI::App& app);
void add_tokenize_commands(CLI::App& app);  // tokenize and detokenize
void add_render_chat_command(CLI::App& app);
void add_version_command(CLI::App& app);

}  // namespace hostlm::cli
