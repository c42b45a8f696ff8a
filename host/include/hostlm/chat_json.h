// Conversations as clients write them: the OpenAI / transformers JSON shape of messages and
// tools, turned into hostlm::chat types. The one place the host reads that shape, so the CLI,
// the adapters and the tests agree on what a message means.
//
// Accepted per message: "role" (string), "content" (string, null, absent, or a list of
// {"type": "text", "text": …} parts that are joined), "reasoning_content" (string or null),
// "tool_calls" ([{"id", "type": "function", "function": {"name", "arguments"}}] or the
// unwrapped {"name", "arguments"}), "tool_call_id", "name". Anything else of the wrong type
// is a hostlm::Error naming the message and the field.
#pragma once
#include <cstddef>
#include <nlohmann/json.hpp>
#include <vector>

#include "hostlm/chat.h"

namespace hostlm {

struct ChatJsonOptions {
  // OpenAI clients send tool-call arguments as a string of JSON; transformers passes
  // whatever the caller gave to the template, which refuses a string. true: a string is
  // decoded and must hold a JSON object. false: kept as given, so a renderer that mirrors the
  // reference template refuses it as the template does.
  bool decode_string_arguments = true;
};

// `index` only names the message in error messages.
ChatMessage chat_message_from_json(const nlohmann::ordered_json& message, size_t index,
                                   const ChatJsonOptions& options = {});

// A JSON array of messages, or an object holding one under "messages".
std::vector<ChatMessage> chat_messages_from_json(const nlohmann::ordered_json& messages,
                                                 const ChatJsonOptions& options = {});

// A JSON array of tool definitions (null: none), or an object holding one under "tools".
// Each must be an object; it is kept as written because formats print it verbatim.
std::vector<ToolDefinition> chat_tools_from_json(const nlohmann::ordered_json& tools);

// `tools` may be null.
Conversation conversation_from_json(const nlohmann::ordered_json& messages,
                                    const nlohmann::ordered_json& tools,
                                    const ChatJsonOptions& options = {});

}  // namespace hostlm
