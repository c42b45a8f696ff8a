// `hostlm show NAME [-v] [--modelfile|--template|--system|--parameters|--license]`: what a
// stored model is made of, as `ollama show` prints it (hostlm/ollama/show.h has the layout).
#include <memory>

#include "cli_util.h"
#include "commands.h"
#include "hostlm/ollama/modelfile.h"
#include "hostlm/ollama/show.h"
#include "store_util.h"

namespace hostlm::cli {

void add_show_command(CLI::App& app) {
  struct Args {
    std::string name;
    bool modelfile = false, template_text = false, system = false, parameters = false,
         license = false, verbose = false;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("show", "Show a model of the store");
  cmd->add_option("name", args->name, "model name")->required();
  auto* g = cmd->add_option_group("part", "print one part only");
  g->add_flag("--modelfile", args->modelfile, "the Modelfile");
  g->add_flag("--template", args->template_text, "the template");
  g->add_flag("--system", args->system, "the system message");
  g->add_flag("--parameters", args->parameters, "the parameters");
  g->add_flag("--license", args->license, "the license");
  g->require_option(0, 1);
  cmd->add_flag("-v,--verbose", args->verbose, "also the GGUF metadata and the tensors");
  cmd->callback([args] {
    const ollama::StoredModel m = open_model_store().get(args->name);
    const auto line = [](const std::string& s) {
      return s.empty() || s.back() == '\n' ? s : s + "\n";
    };
    if (args->modelfile) {
      write_stdout(ollama::format_modelfile(m));
    } else if (args->template_text) {
      write_stdout(line(m.template_text.value_or("")));
    } else if (args->system) {
      write_stdout(line(m.system.value_or("")));
    } else if (args->parameters) {
      write_stdout(line(ollama::format_parameters(m.params)));
    } else if (args->license) {
      std::string all;
      for (const auto& l : m.licenses) all += (all.empty() ? "" : "\n") + l;
      write_stdout(line(all));
    } else {
      write_stdout(
          ollama::format_show_info(ollama::show_response(m, args->verbose), args->verbose));
    }
  });
}

}  // namespace hostlm::cli
