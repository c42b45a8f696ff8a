// `hostlm cp SRC DST`: another name for a model (the blobs are shared, not copied).
#include <memory>

#include "cli_util.h"
#include "commands.h"
#include "store_util.h"

namespace hostlm::cli {

void add_cp_command(CLI::App& app) {
  struct Args {
    std::string src, dst;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("cp", "Copy a model in the store");
  cmd->add_option("source", args->src, "existing model")->required();
  cmd->add_option("destination", args->dst, "new name")->required();
  cmd->callback([args] {
    open_model_store().copy(args->src, args->dst);
    write_stdout("copied '" + args->src + "' to '" + args->dst + "'\n");
  });
}

}  // namespace hostlm::cli
