#include <cstdio>
#include <exception>

#include "commands.h"
#include "hostlm/error.h"

int main(int argc, char** argv) {
  CLI::App app{"hostlm: a local LLM backend for the Qwen3.5 family"};
  app.require_subcommand(1);
  app.set_version_flag("--version", [] { return hostlm::cli::version_report(false); });
  hostlm::cli::add_plugins_command(app);
  hostlm::cli::add_logits_command(app);
  hostlm::cli::add_run_command(app);
  hostlm::cli::add_convert_command(app);
  hostlm::cli::add_tokenize_commands(app);
  hostlm::cli::add_render_chat_command(app);
  hostlm::cli::add_version_command(app);
  hostlm::cli::add_quantize_command(app);
  hostlm::cli::add_bench_command(app);
  hostlm::cli::add_serve_command(app);
  hostlm::cli::add_ps_commands(app);
  hostlm::cli::add_store_commands(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const hostlm::Error& e) {
    std::fprintf(stderr, "hostlm: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "hostlm: internal error: %s\n", e.what());
    return 2;
  }
  return 0;
}
