// `hostlm pull NAME` and `hostlm push NAME`: models to and from an Ollama-compatible
// registry (registry.ollama.ai by default, hf.co/USER/REPO:QUANT, or http://host:port/...).
#include <memory>

#include "cli_util.h"
#include "commands.h"
#include "store_util.h"

namespace hostlm::cli {

void add_pull_push_commands(CLI::App& app) {
  struct Args {
    std::string name;
    bool insecure = false;
  };
  auto pull = std::make_shared<Args>();
  CLI::App* p = app.add_subcommand("pull", "Download a model from a registry into the store");
  p->add_option("name", pull->name, "model name, e.g. qwen3.5:9b or hf.co/user/repo:Q4_K_M")
      ->required();
  p->add_flag("--insecure", pull->insecure, "do not check the registry's TLS certificate");
  p->callback([pull] {
    ollama::ModelStore store = open_model_store();
    ProgressPrinter progress;
    store.pull(pull->name, std::ref(progress), pull->insecure);
  });
  auto push = std::make_shared<Args>();
  CLI::App* u = app.add_subcommand("push", "Upload a model of the store to its registry");
  u->add_option("name", push->name,
                "model name with the registry host, e.g. host:5000/me/model:tag")
      ->required();
  u->add_flag("--insecure", push->insecure, "do not check the registry's TLS certificate");
  u->callback([push] {
    ollama::ModelStore store = open_model_store();
    ProgressPrinter progress;
    store.push(push->name, std::ref(progress), push->insecure);
  });
}

}  // namespace hostlm::cli
