// `hostlm create NAME [-f Modelfile] [--quantize TYPE]`: a model in the store from a
// Modelfile (Ollama's `ollama create`), with progress on standard error.
#include <cstdio>
#include <filesystem>
#include <memory>

#include "cli_util.h"
#include "commands.h"
#include "hostlm/ollama/modelfile.h"
#include "store_util.h"

namespace hostlm::cli {

void add_create_command(CLI::App& app) {
  struct Args {
    std::string name, file = "Modelfile", quantize;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("create", "Create a model in the store from a Modelfile");
  cmd->add_option("name", args->name, "model name, e.g. mymodel or user/mymodel:tag")->required();
  cmd->add_option("-f,--file", args->file, "the Modelfile (default: ./Modelfile)");
  cmd->add_option("-q,--quantize", args->quantize, "quantize the weights, e.g. q4_K_M or q8_0");
  cmd->callback([args] {
    ollama::ModelName::parse(args->name);  // a bad name fails before any work
    const std::filesystem::path path = std::filesystem::absolute(args->file);
    const ollama::Modelfile modelfile = ollama::read_modelfile(path);
    for (const std::string& w : modelfile.warnings)
      std::fprintf(stderr, "warning: %s\n", w.c_str());
    ollama::CreateRequest request = ollama::to_create_request(modelfile, path.parent_path());
    request.quantize = args->quantize;
    ollama::ModelStore store = open_model_store();
    ProgressPrinter progress;
    std::fprintf(stderr, "gathering model components\n");
    store.create(args->name, request, std::ref(progress));
  });
}

}  // namespace hostlm::cli
