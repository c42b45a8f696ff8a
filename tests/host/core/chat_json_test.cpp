// Client JSON (OpenAI / transformers shape) into hostlm::chat types: every accepted form, and
// a clear error naming the message for every shape that is not.
#include "hostlm/chat_json.h"

#include <gtest/gtest.h>

#include <string>

#include "hostlm/error.h"

namespace hostlm {
namespace {

using Json = nlohmann::ordered_json;

std::string error_of(const Json& messages, const ChatJsonOptions& options = {}) {
  try {
    (void)chat_messages_from_json(messages, options);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(ChatJson, ReadsEveryField) {
  const auto messages = chat_messages_from_json(Json::parse(R"([
    {"role": "system", "content": "S"},
    {"role": "user", "content": [{"type": "text", "text": "a "}, {"text": "b"}]},
    {"role": "assistant", "content": null, "reasoning_content": "r", "tool_calls": [
      {"id": "c1", "type": "function", "function": {"name": "f", "arguments": {"z": 1, "a": 2}}},
      {"name": "g", "arguments": "{\"x\": [1]}"}]},
    {"role": "tool", "content": "42", "tool_call_id": "c1", "name": "f"}
  ])"));
  ASSERT_EQ(messages.size(), 4u);
  EXPECT_EQ(messages[0].role, "system");
  EXPECT_EQ(messages[1].content, "a b");
  EXPECT_FALSE(messages[1].reasoning_content.has_value());
  const ChatMessage& a = messages[2];
  EXPECT_EQ(a.content, "");
  EXPECT_EQ(a.reasoning_content, "r");
  ASSERT_EQ(a.tool_calls.size(), 2u);
  EXPECT_EQ(a.tool_calls[0].id, "c1");
  EXPECT_EQ(a.tool_calls[0].name, "f");
  EXPECT_EQ(a.tool_calls[0].arguments.dump(), R"({"z":1,"a":2})");  // client's key order
  EXPECT_EQ(a.tool_calls[1].name, "g");
  EXPECT_EQ(a.tool_calls[1].arguments.dump(), R"({"x":[1]})");  // OpenAI string, decoded
  EXPECT_EQ(messages[3].tool_call_id, "c1");
  EXPECT_EQ(messages[3].name, "f");
}

TEST(ChatJson, NullReasoningIsAbsentAndEmptyIsKept) {
  const auto messages = chat_messages_from_json(Json::parse(
      R"([{"role": "assistant", "content": "x", "reasoning_content": null},
          {"role": "assistant", "content": "x", "reasoning_content": ""},
          {"role": "assistant"}])"));
  EXPECT_FALSE(messages[0].reasoning_content.has_value());
  EXPECT_EQ(messages[1].reasoning_content, "");
  EXPECT_EQ(messages[2].content, "");
}

TEST(ChatJson, StringArgumentsKeptWhenAskedForTheReferenceBehaviour) {
  const Json m = Json::parse(R"([{"role": "assistant", "tool_calls": [
    {"function": {"name": "f", "arguments": "{\"a\": 1}"}}]}])");
  const auto kept = chat_messages_from_json(m, {.decode_string_arguments = false});
  EXPECT_TRUE(kept[0].tool_calls[0].arguments.is_string());
}

TEST(ChatJson, AcceptsAWrappingObject) {
  const Json file = Json::parse(R"({"messages": [{"role": "user", "content": "hi"}],
                                    "tools": [{"type": "function", "function": {"name": "t"}}]})");
  const Conversation c = conversation_from_json(file, file);
  ASSERT_EQ(c.messages.size(), 1u);
  ASSERT_EQ(c.tools.size(), 1u);
  EXPECT_EQ(c.tools[0]["function"]["name"], "t");
  EXPECT_TRUE(chat_tools_from_json(Json()).empty());
}

TEST(ChatJson, ToolsKeepTheirKeyOrder) {
  const auto tools = chat_tools_from_json(Json::parse(R"([{"name": "b", "description": "x",
                                                           "parameters": {"z": 1, "a": 2}}])"));
  EXPECT_EQ(tools[0].dump(), R"({"name":"b","description":"x","parameters":{"z":1,"a":2}})");
}

TEST(ChatJson, RefusesPicturesAndOtherMediaAsNotSupportedYet) {
  for (const char* part : {R"({"type": "image_url", "image_url": {"url": "http://x"}})",
                           R"({"type": "image", "image": "x.png"})", R"({"image": "x.png"})",
                           R"({"type": "video", "video": "x.mp4"})",
                           R"({"type": "input_audio", "input_audio": {}})"}) {
    const Json messages = Json::array(
        {{{"role", "user"},
          {"content", Json::array({{{"type", "text"}, {"text", "a"}}, Json::parse(part)})}}});
    const std::string e = error_of(messages);
    EXPECT_NE(e.find("message 0: content part 1"), std::string::npos) << e;
    EXPECT_NE(e.find("not supported yet"), std::string::npos) << e;
  }
}

TEST(ChatJson, BadShapesNameTheMessageAndField) {
  struct Case {
    const char* json;
    const char* want;
  };
  const Case cases[] = {
      {R"({"role": "user"})", "messages: expected a JSON array or an object with \"messages\""},
      {R"("hello")", "messages: expected a JSON array"},
      {R"([1])", "message 0: must be a JSON object"},
      {R"([{"content": "x"}])", "message 0: has no \"role\" string"},
      {R"([{"role": "user", "content": 5}])", "message 0: \"content\" must be a string"},
      {R"([{"role": "user", "content": "a"}, {"role": "user", "content": [{"type": "x"}]}])",
       "message 1: content part 0 of type \"x\" is not supported yet"},
      {R"([{"role": "user", "content": [{"text": 3}]}])", "\"text\" must be a string"},
      {R"([{"role": "assistant", "reasoning_content": 1}])", "\"reasoning_content\" must be"},
      {R"([{"role": "assistant", "tool_calls": {}}])", "\"tool_calls\" must be a list"},
      {R"([{"role": "assistant", "tool_calls": [{"function": {}}]}])",
       "message 0: tool call 0 has no \"name\" string"},
      {R"([{"role": "assistant", "tool_calls": [{"name": "f", "arguments": "[1]"}]}])",
       "tool call 0 (\"f\"): \"arguments\" is a string but not a JSON object"},
      {R"([{"role": "tool", "tool_call_id": 7}])", "\"tool_call_id\" must be a string"},
  };
  for (const Case& c : cases) {
    const std::string e = error_of(Json::parse(c.json));
    EXPECT_NE(e.find(c.want), std::string::npos) << c.json << " -> " << e;
  }
  try {
    (void)chat_tools_from_json(Json::parse(R"([{"name": "a"}, "b"])"));
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("tool 1: must be a JSON object"), std::string::npos);
  }
}

}  // namespace
}  // namespace hostlm
