// Conversations in, prompts out; generated text in, reasoning / content / tool calls out.
//
// Every model family has its own prompt layout and its own way of writing thinking and tool
// calls. A plugin implements ChatFormat for its family; the engine and the adapters only see
// these plain types and never a family's tags.
//
// JSON values use nlohmann::ordered_json because prompt layouts print tool schemas and call
// arguments in the order the client wrote them (as Python's dicts do): a sorted copy would
// give a different prompt than the reference tools.
#pragma once
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hostlm {

struct ToolCall {
  std::string id;  // as the client sent it (may be empty); parsers leave it empty
  std::string name;
  nlohmann::ordered_json arguments = nlohmann::ordered_json::object();  // a JSON object
};

// One turn. The roles every format knows are "system", "user", "assistant" and "tool"; a
// format rejects a role it does not know with hostlm::Error.
struct ChatMessage {
  std::string role;
  std::string content;  // text only; the caller joins text parts and rejects images
  // Assistant: the thinking that preceded `content`. Absent is not the same as empty: when
  // absent, a format may find the thinking written inline in `content` (`<think>`…).
  std::optional<std::string> reasoning_content;
  std::vector<ToolCall> tool_calls;  // assistant
  std::string tool_call_id;          // tool: the call this message answers (may be empty)
  std::string name;                  // tool: the tool's name (may be empty)
};

// A tool the model may call, in the OpenAI shape
// {"type": "function", "function": {"name", "description", "parameters": JSON schema}}.
// Formats print it as given, so keep the client's key order.
using ToolDefinition = nlohmann::ordered_json;

struct Conversation {
  std::vector<ChatMessage> messages;
  std::vector<ToolDefinition> tools;
};

enum class Thinking {
  kDefault,  // whatever the model's own template does when the client does not say
  kOn,
  kOff,
};

struct ChatRenderOptions {
  bool add_generation_prompt = true;  // end with the opening of the assistant's answer
  Thinking thinking = Thinking::kDefault;
};

// A piece of parsed output, delivered as soon as it is certain.
struct ChatEvent {
  enum class Kind { kReasoning, kContent, kToolCall };
  Kind kind = Kind::kContent;
  std::string text;    // kReasoning / kContent: the next piece, whole UTF-8 characters
  ToolCall tool_call;  // kToolCall: a complete call
};

// The whole answer: what the events of one generation add up to.
struct ChatOutput {
  std::string reasoning;
  std::string content;
  std::vector<ToolCall> tool_calls;

  void add(const ChatEvent& event) {
    switch (event.kind) {
      case ChatEvent::Kind::kReasoning:
        reasoning += event.text;
        break;
      case ChatEvent::Kind::kContent:
        content += event.text;
        break;
      case ChatEvent::Kind::kToolCall:
        tool_calls.push_back(event.tool_call);
        break;
    }
  }
};

// Splits one generation, fed as it is decoded. Chunks may end anywhere, inside a tag or a
// UTF-8 sequence: text that could still turn out to be part of a tag is held back, and the
// events add up to the same ChatOutput however the text was chunked. Malformed output never
// throws; what cannot be understood is returned as content.
class ChatParser {
 public:
  virtual ~ChatParser() = default;
  virtual std::vector<ChatEvent> feed(std::string_view text) = 0;
  // End of generation: releases everything held back.
  virtual std::vector<ChatEvent> finish() = 0;
};

class ChatFormat {
 public:
  virtual ~ChatFormat() = default;
  // The prompt for `conversation`, exactly as the model's reference template renders it.
  // Throws hostlm::Error when the template would refuse the conversation.
  virtual std::string render(const Conversation& conversation,
                             const ChatRenderOptions& options) const = 0;
  // Whether Thinking::kDefault means thinking on for this model.
  virtual bool thinks_by_default() const = 0;
  // A parser for the text generated after render(conversation, options). `tools` give the
  // argument types of tool calls.
  virtual std::unique_ptr<ChatParser> new_parser(const std::vector<ToolDefinition>& tools,
                                                 const ChatRenderOptions& options) const = 0;

  // A GBNF grammar (grammar.h) of the text that makes tool calls in this format, for a
  // client that requires a call (OpenAI tool_choice "required" or a named function): one
  // call of `only_function` when it is not empty, else one call of any of `tools` (one or
  // more when `parallel`). Arguments follow each tool's parameter schema as far as the
  // format can say. Empty: the format cannot force calls.
  virtual std::string tool_call_grammar(const std::vector<ToolDefinition>& tools,
                                        const std::string& only_function, bool parallel) const {
    return {};
  }

  // Parses a complete generation at once.
  ChatOutput parse(std::string_view text, const std::vector<ToolDefinition>& tools,
                   const ChatRenderOptions& options) const {
    ChatOutput out;
    auto parser = new_parser(tools, options);
    for (const ChatEvent& e : parser->feed(text)) out.add(e);
    for (const ChatEvent& e : parser->finish()) out.add(e);
    return out;
  }
};

}  // namespace hostlm
