// `hostlm quantize IN OUT TYPE [--threads N]`: a quantized GGUF of a GGUF or a Hugging Face
// folder, with one progress line per tensor on standard error.
#include <cstdio>
#include <memory>

#include "cli_util.h"
#include "commands.h"
#include "hostlm/error.h"
#include "hostlm/quantize.h"

namespace hostlm::cli {

void add_quantize_command(CLI::App& app) {
  struct Args {
    std::string input, output, type;
    int threads = 0;
    bool quiet = false;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd =
      app.add_subcommand("quantize", "Write a quantized GGUF of a GGUF or a Hugging Face folder");
  cmd->add_option("input", args->input, "GGUF file or Hugging Face model folder")->required();
  cmd->add_option("output", args->output, "GGUF file to write")->required();
  cmd->add_option("type", args->type, "one of " + quant_scheme_names())->required();
  cmd->add_option("--threads,-t", args->threads, "threads (default: one per core)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_flag("--quiet,-q", args->quiet, "no progress lines");
  cmd->callback([args] {
    const std::optional<QuantScheme> scheme = parse_quant_scheme(args->type);
    if (!scheme)
      throw Error("unknown quantization type '" + args->type + "' (use one of " +
                  quant_scheme_names() + ")");
    QuantizeOptions options;
    options.threads = args->threads;
    if (!args->quiet)
      options.progress = [](const QuantizeProgress& p) {
        std::fprintf(stderr, "[%4zu/%4zu] %-36s %6s -> %-6s %9.2f MiB -> %9.2f MiB\n", p.index,
                     p.count, p.name.c_str(), std::string(dtype_name(p.from)).c_str(),
                     std::string(dtype_name(p.to)).c_str(),
                     static_cast<double>(p.bytes_in) / 1048576.0,
                     static_cast<double>(p.bytes_out) / 1048576.0);
      };
    PluginRegistry& registry = plugin_registry();  // outlives errors thrown by plugins
    const QuantizeSummary s = quantize_model(registry, args->input, args->output, *scheme, options);
    std::printf("wrote %s (%s): %zu tensors, %zu re-encoded, %.2f MiB -> %.2f MiB\n",
                args->output.c_str(), std::string(quant_scheme_name(*scheme)).c_str(), s.n_tensors,
                s.n_requantized, static_cast<double>(s.bytes_in) / 1048576.0,
                static_cast<double>(s.bytes_out) / 1048576.0);
  });
}

}  // namespace hostlm::cli
