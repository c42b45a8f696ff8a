#include "template_format.h"

#include <string>
#include <utility>
#include <vector>

namespace hostlm::ollama {
namespace {

using Json = nlohmann::ordered_json;

// The conversation in Ollama's API shape, which Ollama's templates are written against.
Json messages_json(const Conversation& c) {
  Json out = Json::array();
  for (const ChatMessage& m : c.messages) {
    Json j = Json::object();
    j["role"] = m.role;
    j["content"] = m.content;
    if (m.reasoning_content) j["thinking"] = *m.reasoning_content;
    if (!m.tool_calls.empty()) {
      Json calls = Json::array();
      for (size_t i = 0; i < m.tool_calls.size(); ++i)
        calls.push_back({{"function",
                          {{"index", i},
                           {"name", m.tool_calls[i].name},
                           {"arguments", m.tool_calls[i].arguments}}}});
      j["tool_calls"] = calls;
    }
    if (!m.name.empty()) j["tool_name"] = m.name;
    if (!m.tool_call_id.empty()) j["tool_call_id"] = m.tool_call_id;
    out.push_back(std::move(j));
  }
  return out;
}

class ContentOnlyParser final : public ChatParser {
 public:
  std::vector<ChatEvent> feed(std::string_view text) override {
    if (text.empty()) return {};
    return {ChatEvent{ChatEvent::Kind::kContent, std::string(text), {}}};
  }
  std::vector<ChatEvent> finish() override { return {}; }
};

class TemplateChatFormat final : public ChatFormat {
 public:
  TemplateChatFormat(GoTemplate tmpl, std::unique_ptr<ChatFormat> native, bool native_parser)
      : tmpl_(std::move(tmpl)),
        native_(std::move(native)),
        native_parser_(native_parser && native_) {}

  std::string render(const Conversation& c, const ChatRenderOptions& options) const override {
    Json think = nullptr;
    if (options.thinking != Thinking::kDefault) think = options.thinking == Thinking::kOn;
    Json tools = Json::array();
    for (const ToolDefinition& t : c.tools) tools.push_back(t);
    return tmpl_.render_chat(messages_json(c), tools, think);
  }

  bool thinks_by_default() const override { return native_parser_ && native_->thinks_by_default(); }

  std::unique_ptr<ChatParser> new_parser(const std::vector<ToolDefinition>& tools,
                                         const ChatRenderOptions& options) const override {
    if (native_parser_) return native_->new_parser(tools, options);
    return std::make_unique<ContentOnlyParser>();
  }

  std::string tool_call_grammar(const std::vector<ToolDefinition>& tools,
                                const std::string& only_function, bool parallel) const override {
    return native_parser_ ? native_->tool_call_grammar(tools, only_function, parallel) : "";
  }

 private:
  GoTemplate tmpl_;
  std::unique_ptr<ChatFormat> native_;
  bool native_parser_;
};

}  // namespace

std::unique_ptr<ChatFormat> template_chat_format(GoTemplate tmpl,
                                                 std::unique_ptr<ChatFormat> native,
                                                 bool use_native_parser) {
  return std::make_unique<TemplateChatFormat>(std::move(tmpl), std::move(native),
                                              use_native_parser);
}

}  // namespace hostlm::ollama
