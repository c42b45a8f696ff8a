// The Qwen3.5 chat format as the host gets it: through the plugin registry.
#pragma once
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>

#include "hostlm/chat.h"
#include "hostlm/chat_json.h"
#include "hostlm/gguf.h"
#include "hostlm/plugin_api.h"
#include "hostlm/registry.h"

namespace hostlm::testing {

// The generation-prompt branch of the two shipped Qwen3.5 templates (spec/qwen35.md 6.2).
inline constexpr const char* kThinkingOnBranch =
    "{%- if enable_thinking is defined and enable_thinking is false %}";
inline constexpr const char* kThinkingOffBranch =
    "{%- if enable_thinking is defined and enable_thinking is true %}";

struct Qwen35Formats {
  PluginRegistry registry;
  ArchitecturePlugin& plugin = registry.plugin_for("qwen35");
  std::unique_ptr<ChatFormat> bare = plugin.chat_format(architecture_only());
  std::unique_ptr<ChatFormat> thinking_off_default = from_gguf_template(kThinkingOffBranch);

  static ModelFiles architecture_only() {
    ModelFiles files;
    files.architecture = "qwen35";
    return files;
  }

  // The format the plugin picks for a GGUF whose tokenizer.chat_template is `chat_template`.
  std::unique_ptr<ChatFormat> from_gguf_template(const std::string& chat_template) {
    const auto path = std::filesystem::temp_directory_path() /
                      ("hostlm-chat-" + std::to_string(::getpid()) + ".gguf");
    GgufWriter writer;
    writer.set("general.architecture", GgufValue::string("qwen35"));
    writer.set("tokenizer.chat_template", GgufValue::string(chat_template));
    writer.write(path);
    std::unique_ptr<ChatFormat> format;
    {
      const auto gguf = GgufFile::open(path);
      ModelFiles files = architecture_only();
      files.path = path;
      files.gguf = gguf.get();
      format = plugin.chat_format(files);
    }
    std::filesystem::remove(path);
    return format;
  }
};

// The conversation of a reference case ({"messages", "tools"} in the OpenAI / transformers
// shape), read as the host reads client JSON. Tool-call arguments stay as written: the
// reference is transformers, which hands a string to the template and lets it fail.
inline Conversation reference_conversation(const nlohmann::ordered_json& reference_case) {
  const auto tools = reference_case.find("tools");
  return conversation_from_json(reference_case.at("messages"),
                                tools == reference_case.end() ? nlohmann::ordered_json() : *tools,
                                {.decode_string_arguments = false});
}

// Loaded once: the plugin library stays mapped while its formats are alive.
inline Qwen35Formats& qwen35_formats() {
  static Qwen35Formats formats;
  return formats;
}

}  // namespace hostlm::testing
