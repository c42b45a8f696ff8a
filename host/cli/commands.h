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
void add_quantize_command(CLI::App& app);
void add_bench_command(CLI::App& app);
void add_serve_command(CLI::App& app);
void add_ps_commands(CLI::App& app);  // ps and stop, clients of `hostlm serve`
// The model store (Ollama layout): create, list, show, rm, cp.
void add_create_command(CLI::App& app);
void add_list_command(CLI::App& app);
void add_show_command(CLI::App& app);
void add_rm_command(CLI::App& app);
void add_cp_command(CLI::App& app);
void add_pull_push_commands(CLI::App& app);
inline void add_store_commands(CLI::App& app) {
  add_create_command(app);
  add_list_command(app);
  add_show_command(app);
  add_rm_command(app);
  add_cp_command(app);
  add_pull_push_commands(app);
}
// What `hostlm version` prints (one JSON line with as_json), without the final newline; the
// top-level --version flag prints the same.
std::string version_report(bool as_json);

}  // namespace hostlm::cli
