// `hostlm logits MODEL --tokens 1,2,3 --output FILE`: float32 logits of every position.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli_util.h"
#include "commands.h"
#include "hostlm/error.h"
#include "store_util.h"

namespace hostlm::cli {

void add_logits_command(CLI::App& app) {
  struct Args {
    std::string model, tokens, output;
    BackendFlags backend;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand(
      "logits", "Evaluate tokens as one prompt and write the logits of every position");
  cmd->add_option("model", args->model, "GGUF file or Hugging Face folder")->required();
  cmd->add_option("--tokens", args->tokens, "comma-separated token ids")->required();
  cmd->add_option("--output", args->output,
                  "file for float32 little-endian logits [n_tokens, n_vocab]")
      ->required();
  args->backend.add_to(*cmd);
  cmd->callback([args] {
    const std::vector<int32_t> tokens = parse_token_list(args->tokens);
    PluginRegistry& registry = plugin_registry();  // outlives errors thrown by plugins
    LoadedModel loaded(registry, resolve_model(args->model), args->backend.load_options());
    Model& model = loaded.model();
    const int64_t V = model.info().n_vocab;
    const int64_t n = static_cast<int64_t>(tokens.size());
    std::vector<float> logits(static_cast<size_t>(n * V));
    auto seq = model.new_sequence(n);
    model.eval(*seq, tokens, true, logits);
    std::ofstream out(args->output, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(logits.data()),
              static_cast<std::streamsize>(logits.size() * sizeof(float)));
    out.close();
    if (!out) throw Error(args->output + ": cannot write the logits file");
    const float* last = logits.data() + (n - 1) * V;
    const int64_t argmax = std::max_element(last, last + V) - last;
    nlohmann::json line = {{"n_tokens", n},
                           {"n_vocab", V},
                           {"argmax_last", argmax},
                           {"backend", loaded.backend().name()},
                           {"output", args->output}};
    std::printf("%s\n", line.dump().c_str());
  });
}

}  // namespace hostlm::cli
