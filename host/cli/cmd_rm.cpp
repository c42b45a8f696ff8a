// `hostlm rm NAME...`: remove models from the store; blobs no other model uses go too.
#include <memory>

#include "cli_util.h"
#include "commands.h"
#include "hostlm/error.h"
#include "store_util.h"

namespace hostlm::cli {

void add_rm_command(CLI::App& app) {
  auto names = std::make_shared<std::vector<std::string>>();
  CLI::App* cmd = app.add_subcommand("rm", "Remove models from the store");
  cmd->add_option("name", *names, "model names")->required();
  cmd->callback([names] {
    ollama::ModelStore store = open_model_store();
    for (const std::string& name : *names) {
      if (!store.remove(name)) throw Error("model '" + name + "' not found");
      write_stdout("deleted '" + name + "'\n");
    }
  });
}

}  // namespace hostlm::cli
