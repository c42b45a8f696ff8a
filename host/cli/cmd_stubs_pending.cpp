// Temporary: subcommands whose files are being written. Removed as each lands.
#include "commands.h"
namespace hostlm::cli {
void add_plugins_command(CLI::App&) {}
void add_logits_command(CLI::App&) {}
void add_run_command(CLI::App&) {}
void add_convert_command(CLI::App&) {}
void add_tokenize_commands(CLI::App&) {}
}  // namespace hostlm::cli
