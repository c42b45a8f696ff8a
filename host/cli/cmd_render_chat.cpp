// `hostlm render-chat (MODEL | --arch NAME) --messages F [--tools F] [--think on|off]
// [--no-generation-prompt]`: the prompt a conversation becomes, exactly as the model reads
// it. Outside checks compare this output byte for byte with the reference template: print
// the prompt and nothing else.
#include <memory>
#include <string>

#include "cli_util.h"
#include "commands.h"
#include "hostlm/chat_json.h"
#include "hostlm/error.h"
#include "store_util.h"

namespace hostlm::cli {
namespace {

struct RenderChatArgs {
  std::string model, arch, messages, tools, think;
  bool no_generation_prompt = false;
};

void run_render_chat(const RenderChatArgs& a) {
  // Read the input before loading a plugin, so a bad file is reported first.
  const nlohmann::ordered_json messages = read_json_file(a.messages);
  nlohmann::ordered_json tools;
  if (!a.tools.empty()) {
    tools = read_json_file(a.tools);
  } else if (messages.is_object() && messages.contains("tools")) {
    tools = messages["tools"];  // one file holding {"messages": …, "tools": …}
  }
  // Strict transformers semantics: the output must match what the reference template gives.
  const Conversation conversation =
      conversation_from_json(messages, tools, {.decode_string_arguments = false});
  ChatRenderOptions options;
  options.add_generation_prompt = !a.no_generation_prompt;
  if (!a.think.empty()) options.thinking = a.think == "on" ? Thinking::kOn : Thinking::kOff;

  PluginRegistry& registry = plugin_registry();
  std::string prompt;
  if (!a.arch.empty()) {
    ModelFiles files;
    files.architecture = a.arch;
    prompt = chat_format_for(registry, files)->render(conversation, options);
  } else {
    const OpenedModelFiles opened(resolve_model(a.model));
    prompt = chat_format_for(registry, opened.files())->render(conversation, options);
  }
  write_stdout(prompt);
}

}  // namespace

void add_render_chat_command(CLI::App& app) {
  auto args = std::make_shared<RenderChatArgs>();
  CLI::App* cmd = app.add_subcommand(
      "render-chat", "Print the prompt a conversation (OpenAI / transformers JSON) becomes");
  CLI::Option_group* source = cmd->add_option_group("source", "Whose chat format to use");
  source->add_option("model", args->model, "GGUF file or Hugging Face folder");
  source->add_option("--arch", args->arch,
                     "Architecture name (e.g. qwen35): the plugin's format, without a model");
  source->require_option(1);
  cmd->add_option("--messages", args->messages,
                  "JSON file: a list of messages, or {\"messages\": …, \"tools\": …} ('-': stdin)")
      ->required();
  cmd->add_option("--tools", args->tools, "JSON file: a list of tool definitions");
  cmd->add_option("--think", args->think, "Thinking on or off (default: the model's template)")
      ->check(CLI::IsMember({"on", "off"}));
  cmd->add_flag("--no-generation-prompt", args->no_generation_prompt,
                "Do not end with the opening of the assistant's answer");
  cmd->callback([args] { run_render_chat(*args); });
}

}  // namespace hostlm::cli
