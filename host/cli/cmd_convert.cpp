// `hostlm convert HF_FOLDER OUT.gguf [--type f32|f16|bf16]`: a GGUF llama.cpp also loads.
#include <cstdio>
#include <memory>

#include "cli_util.h"
#include "commands.h"
#include "hostlm/error.h"

namespace hostlm::cli {

void add_convert_command(CLI::App& app) {
  struct Args {
    std::string input, output, type = "bf16";
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("convert", "Convert a Hugging Face folder to GGUF");
  cmd->add_option("input", args->input, "Hugging Face model folder")->required();
  cmd->add_option("output", args->output, "GGUF file to write")->required();
  cmd->add_option("--type", args->type, "storage type of the large tensors")
      ->check(CLI::IsMember({"f32", "f16", "bf16"}));
  cmd->callback([args] {
    OpenedModelFiles opened(args->input);
    if (!opened.files().hf)
      throw Error(args->input + ": convert expects a Hugging Face model folder");
    PluginRegistry& registry = plugin_registry();  // outlives errors thrown by plugins
    ArchitecturePlugin& plugin = registry.plugin_for(opened.files().architecture);
    const DType type = args->type == "f32"   ? DType::F32
                       : args->type == "f16" ? DType::F16
                                             : DType::BF16;
    plugin.convert_to_gguf(*opened.files().hf, type, args->output);
    std::printf("wrote %s (%s)\n", args->output.c_str(), args->type.c_str());
  });
}

}  // namespace hostlm::cli
