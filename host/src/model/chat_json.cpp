#include "hostlm/chat_json.h"

#include <string>
#include <utility>

#include "hostlm/error.h"
#include "hostlm/json_input.h"

namespace hostlm {
namespace {

using Json = nlohmann::ordered_json;

[[noreturn]] void bad_message(size_t index, const std::string& what) {
  throw Error("message " + std::to_string(index) + ": " + what);
}

std::string type_name(const Json& value) { return value.type_name(); }

// Mirrors the part kinds the Qwen-VL style templates tell apart, so a picture is refused by
// name rather than reported as an unknown part.
std::string content_text(const Json& content, size_t index) {
  if (content.is_null()) return {};
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array())
    bad_message(index,
                "\"content\" must be a string, null or a list of parts, not " + type_name(content));
  std::string text;
  for (size_t i = 0; i < content.size(); ++i) {
    const Json& part = content[i];
    const std::string where = "content part " + std::to_string(i);
    if (!part.is_object()) bad_message(index, where + " must be an object");
    const std::string type = part.contains("type") && part["type"].is_string()
                                 ? part["type"].get<std::string>()
                                 : std::string();
    if (part.contains("image") || part.contains("image_url") || type == "image" ||
        type == "image_url")
      bad_message(index, where + ": images are not supported yet");
    if (part.contains("video") || type == "video" || type == "video_url")
      bad_message(index, where + ": videos are not supported yet");
    if (part.contains("input_audio") || type == "input_audio" || type == "audio")
      bad_message(index, where + ": audio is not supported yet");
    if (!part.contains("text")) {
      bad_message(index, where + (type.empty() ? std::string(" has no \"text\"")
                                               : " of type \"" + type + "\" is not supported yet"));
    }
    if (!part["text"].is_string()) bad_message(index, where + ": \"text\" must be a string");
    text += part["text"].get_ref<const std::string&>();
  }
  return text;
}

std::string optional_string(const Json& message, const char* key, size_t index) {
  const auto it = message.find(key);
  if (it == message.end() || it->is_null()) return {};
  if (!it->is_string())
    bad_message(index, std::string("\"") + key + "\" must be a string, not " + type_name(*it));
  return it->get<std::string>();
}

ToolCall tool_call_from_json(const Json& call, size_t index, size_t call_index,
                             const ChatJsonOptions& options) {
  const std::string where = "tool call " + std::to_string(call_index);
  if (!call.is_object()) bad_message(index, where + " must be an object");
  ToolCall out;
  out.id = optional_string(call, "id", index);
  // Both the OpenAI wrapping {"type": "function", "function": {…}} and the bare {name, arguments}.
  const Json& fn = call.contains("function") ? call["function"] : call;
  if (!fn.is_object()) bad_message(index, where + ": \"function\" must be an object");
  if (!fn.contains("name") || !fn["name"].is_string())
    bad_message(index, where + " has no \"name\" string");
  out.name = fn["name"].get<std::string>();
  const auto args = fn.find("arguments");
  if (args == fn.end() || args->is_null()) return out;
  if (args->is_string() && options.decode_string_arguments) {
    Json decoded = parse_input_json_or_discarded(args->get_ref<const std::string&>());
    if (decoded.is_discarded() || !decoded.is_object())
      bad_message(index, where + " (\"" + out.name +
                             "\"): \"arguments\" is a string but not a JSON object");
    out.arguments = std::move(decoded);
  } else {
    out.arguments = *args;
  }
  return out;
}

const Json& unwrap(const Json& value, const char* key, const char* what) {
  if (!value.is_object()) return value;
  const auto it = value.find(key);
  if (it == value.end())
    throw Error(std::string(what) + ": expected a JSON array or an object with \"" + key + "\"");
  return *it;
}

}  // namespace

ChatMessage chat_message_from_json(const Json& message, size_t index,
                                   const ChatJsonOptions& options) {
  if (!message.is_object()) bad_message(index, "must be a JSON object, not " + type_name(message));
  ChatMessage out;
  const auto role = message.find("role");
  if (role == message.end() || !role->is_string()) bad_message(index, "has no \"role\" string");
  out.role = role->get<std::string>();
  const auto content = message.find("content");
  if (content != message.end()) out.content = content_text(*content, index);
  if (const auto it = message.find("reasoning_content"); it != message.end() && !it->is_null()) {
    if (!it->is_string()) bad_message(index, "\"reasoning_content\" must be a string or null");
    out.reasoning_content = it->get<std::string>();
  }
  if (const auto it = message.find("tool_calls"); it != message.end() && !it->is_null()) {
    if (!it->is_array()) bad_message(index, "\"tool_calls\" must be a list");
    for (size_t i = 0; i < it->size(); ++i)
      out.tool_calls.push_back(tool_call_from_json((*it)[i], index, i, options));
  }
  out.tool_call_id = optional_string(message, "tool_call_id", index);
  out.name = optional_string(message, "name", index);
  return out;
}

std::vector<ChatMessage> chat_messages_from_json(const Json& messages,
                                                 const ChatJsonOptions& options) {
  const Json& list = unwrap(messages, "messages", "messages");
  if (!list.is_array()) throw Error("messages: expected a JSON array, not " + type_name(list));
  std::vector<ChatMessage> out;
  out.reserve(list.size());
  for (size_t i = 0; i < list.size(); ++i)
    out.push_back(chat_message_from_json(list[i], i, options));
  return out;
}

std::vector<ToolDefinition> chat_tools_from_json(const Json& tools) {
  if (tools.is_null()) return {};
  const Json& list = unwrap(tools, "tools", "tools");
  if (list.is_null()) return {};
  if (!list.is_array()) throw Error("tools: expected a JSON array, not " + type_name(list));
  std::vector<ToolDefinition> out;
  out.reserve(list.size());
  for (size_t i = 0; i < list.size(); ++i) {
    if (!list[i].is_object())
      throw Error("tool " + std::to_string(i) + ": must be a JSON object, not " +
                  type_name(list[i]));
    out.push_back(list[i]);
  }
  return out;
}

Conversation conversation_from_json(const Json& messages, const Json& tools,
                                    const ChatJsonOptions& options) {
  Conversation out;
  out.messages = chat_messages_from_json(messages, options);
  out.tools = chat_tools_from_json(tools);
  return out;
}

}  // namespace hostlm
