// Qwen3.5's chat format: the ChatML prompt of its Jinja template, rendered natively, and the
// parser for what the model writes back (<think>, <tool_call><function=…><parameter=…>).
#pragma once
#include <memory>
#include <string>
#include <string_view>

#include "hostlm/chat.h"
#include "hostlm/plugin_api.h"

namespace hostlm::qwen35 {

class Qwen35ChatFormat final : public ChatFormat {
 public:
  // Qwen3.5 ships two templates that differ only in what an unset enable_thinking means.
  explicit Qwen35ChatFormat(bool thinks_by_default = true)
      : thinks_by_default_(thinks_by_default) {}

  std::string render(const Conversation& conversation,
                     const ChatRenderOptions& options) const override;  // qwen35_chat_render.cpp
  bool thinks_by_default() const override { return thinks_by_default_; }
  std::unique_ptr<ChatParser> new_parser(
      const std::vector<ToolDefinition>& tools,
      const ChatRenderOptions& options) const override;  // qwen35_chat_parse.cpp
  std::string tool_call_grammar(const std::vector<ToolDefinition>& tools,
                                const std::string& only_function,
                                bool parallel) const override;  // qwen35_tool_grammar.cpp

  bool thinking_enabled(const ChatRenderOptions& options) const {
    return options.thinking == Thinking::kDefault ? thinks_by_default_
                                                  : options.thinking == Thinking::kOn;
  }

 private:
  bool thinks_by_default_;
};

// False for the template variant that thinks only when asked (`enable_thinking is true`).
bool template_thinks_by_default(std::string_view chat_template);

// The format for a model, its thinking default read from the template the files carry (GGUF
// tokenizer.chat_template, HF chat_template.jinja or tokenizer_config.json). Files that carry
// none, or only an architecture name, get the larger models' template: thinking on.
std::unique_ptr<ChatFormat> make_chat_format(const ModelFiles& files);

}  // namespace hostlm::qwen35
