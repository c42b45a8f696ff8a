// `hostlm show NAME [--modelfile|--template|--system|--parameters|--license]`: what a stored
// model is made of, as `ollama show` prints it.
#include <memory>

#include "cli_util.h"
#include "commands.h"
#include "hostlm/ollama/go_template.h"
#include "hostlm/ollama/modelfile.h"
#include "store_util.h"

namespace hostlm::cli {
namespace {

std::string indent_block(const std::string& text) {
  std::string out = "    ";
  for (char c : text) {
    out += c;
    if (c == '\n') out += "    ";
  }
  return out + "\n";
}

std::string summary(const ollama::StoredModel& m) {
  auto str = [&](const char* key) { return m.config.value(key, std::string()); };
  auto row = [](const std::string& k, const std::string& v) {
    std::string key = k;
    key.resize(std::max<size_t>(key.size() + 1, 20), ' ');
    return "    " + key + v + "\n";
  };
  std::string out = "  Model\n";
  out += row("architecture", str("model_family"));
  out += row("parameters", str("model_type"));
  out += row("quantization", str("file_type"));
  if (!m.renderer().empty()) out += row("renderer", m.renderer());
  if (!m.parser().empty()) out += row("parser", m.parser());
  out += "\n  Capabilities\n    completion\n";
  bool tools = m.renderer() == "qwen3.5", thinking = tools;
  if (m.template_text) {
    const auto t = ollama::GoTemplate::parse(*m.template_text);
    tools = tools || t.references("Tools");
    thinking = thinking || t.references("Thinking");
  }
  if (tools) out += "    tools\n";
  if (thinking) out += "    thinking\n";
  if (!m.params.empty())
    out += "\n  Parameters\n" + indent_block(ollama::format_parameters(m.params));
  if (m.system) out += "\n  System\n" + indent_block(*m.system);
  for (const auto& l : m.licenses) {
    const size_t cut = l.find('\n');
    out += "\n  License\n" + indent_block(cut == std::string::npos ? l : l.substr(0, cut));
  }
  return out + "\n";
}

}  // namespace

void add_show_command(CLI::App& app) {
  struct Args {
    std::string name;
    bool modelfile = false, template_text = false, system = false, parameters = false,
         license = false;
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
      write_stdout(summary(m));
    }
  });
}

}  // namespace hostlm::cli
