// Given conversations rendered by Python jinja2 with the real Qwen3.5 chat template
// (tools/make_chat_reference.py -> tests/data/chat/qwen35_cases.json), the plugin's native
// renderer produces the same prompt byte for byte, and refuses what the template refuses.
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "chat_support.h"
#include "hostlm/error.h"
#include "hostlm/model_loader.h"
#include "reference_data.h"

namespace hostlm {
namespace {

using Json = nlohmann::ordered_json;
using testing::qwen35_formats;

const std::vector<Json>& reference_cases() {
  static const std::vector<Json> cases = [] {
    std::ifstream in(testing::source_dir() / "tests" / "data" / "chat" / "qwen35_cases.json");
    if (!in) return std::vector<Json>{};
    return Json::parse(in).at("cases").get<std::vector<Json>>();
  }();
  return cases;
}

std::vector<std::string> case_names() {
  std::vector<std::string> names;
  for (const Json& c : reference_cases()) names.push_back(c.at("name").get<std::string>());
  return names;
}

const Json& reference_case(const std::string& name) {
  for (const Json& c : reference_cases())
    if (c.at("name") == name) return c;
  throw std::runtime_error("no case " + name);
}

// The OpenAI / transformers message shape, as a client sends it.
std::string text_of(const Json& content) {
  if (content.is_string()) return content.get<std::string>();
  std::string text;
  if (content.is_array())
    for (const Json& part : content) text += part.value("text", "");
  return text;
}

Conversation conversation_of(const Json& c) {
  Conversation conv;
  for (const Json& m : c.at("messages")) {
    ChatMessage msg;
    msg.role = m.at("role").get<std::string>();
    msg.content = text_of(m.value("content", Json()));
    if (m.contains("reasoning_content") && m["reasoning_content"].is_string())
      msg.reasoning_content = m["reasoning_content"].get<std::string>();
    for (const Json& tc : m.value("tool_calls", Json::array())) {
      const Json& fn = tc.contains("function") ? tc["function"] : tc;
      ToolCall call;
      call.id = tc.value("id", "");
      call.name = fn.at("name").get<std::string>();
      if (fn.contains("arguments")) call.arguments = fn["arguments"];
      msg.tool_calls.push_back(std::move(call));
    }
    msg.tool_call_id = m.value("tool_call_id", "");
    msg.name = m.value("name", "");
    conv.messages.push_back(std::move(msg));
  }
  for (const Json& tool : c.value("tools", Json::array())) conv.tools.push_back(tool);
  return conv;
}

ChatRenderOptions options_of(const Json& c) {
  const Json& o = c.at("options");
  ChatRenderOptions options;
  options.add_generation_prompt = o.at("add_generation_prompt").get<bool>();
  if (o.contains("enable_thinking"))
    options.thinking = o["enable_thinking"].get<bool>() ? Thinking::kOn : Thinking::kOff;
  return options;
}

std::string where_they_differ(const std::string& got, const std::string& want) {
  size_t i = 0;
  while (i < got.size() && i < want.size() && got[i] == want[i]) ++i;
  const size_t from = i < 60 ? 0 : i - 60;
  return "first difference at byte " + std::to_string(i) + "\n--- got:\n" + got.substr(from, 160) +
         "\n--- want:\n" + want.substr(from, 160);
}

TEST(Qwen35ChatReference, HasAtLeastThirtyConversations) {
  EXPECT_GE(reference_cases().size(), 30u);
}

class Qwen35ChatRender : public ::testing::TestWithParam<std::string> {};

TEST_P(Qwen35ChatRender, MatchesJinjaByteForByte) {
  const Json& c = reference_case(GetParam());
  const ChatFormat& format = c.at("variant") == "thinking_off_default"
                                 ? *qwen35_formats().thinking_off_default
                                 : *qwen35_formats().bare;
  const Conversation conv = conversation_of(c);
  const ChatRenderOptions options = options_of(c);
  if (c.contains("error")) {
    try {
      const std::string prompt = format.render(conv, options);
      ADD_FAILURE() << "rendered although the template raises \"" << c["error"] << "\":\n"
                    << prompt;
    } catch (const Error& e) {
      // Messages of the template's own raise_exception are kept word for word.
      if (c.at("error_type") == "TemplateError") {
        EXPECT_NE(std::string(e.what()).find(c["error"].get<std::string>()), std::string::npos)
            << e.what();
      }
    }
    return;
  }
  const std::string want = c.at("prompt").get<std::string>();
  const std::string got = format.render(conv, options);
  EXPECT_EQ(got, want) << where_they_differ(got, want);
}

INSTANTIATE_TEST_SUITE_P(Cases, Qwen35ChatRender, ::testing::ValuesIn(case_names()),
                         [](const auto& param_info) { return param_info.param; });

TEST(Qwen35ChatFormatChoice, ThinkingDefaultFollowsTheModelsTemplate) {
  auto& formats = testing::qwen35_formats();
  EXPECT_TRUE(formats.bare->thinks_by_default());
  EXPECT_FALSE(formats.thinking_off_default->thinks_by_default());
  EXPECT_TRUE(formats.from_gguf_template(testing::kThinkingOnBranch)->thinks_by_default());
  EXPECT_TRUE(formats.from_gguf_template("")->thinks_by_default());
}

TEST(Qwen35ChatFormatChoice, HfFolderTemplateIsRead) {
  // The tiny test models carry the real template in tokenizer_config.json.
  const OpenedModelFiles hf(testing::source_dir() / "tests" / "data" / "models" / "tiny-tied-f32");
  const auto format = testing::qwen35_formats().plugin.chat_format(hf.files());
  ASSERT_NE(format, nullptr);
  EXPECT_TRUE(format->thinks_by_default());
}

TEST(Qwen35ChatRenderErrors, NameTheMessageAtFault) {
  Conversation conv;
  conv.messages.resize(3);
  conv.messages[0].role = "user";
  conv.messages[1].role = "assistant";
  conv.messages[2].role = "developer";
  try {
    (void)qwen35_formats().bare->render(conv, {});
    FAIL() << "rendered an unknown role";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("message 2 has role \"developer\""), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace hostlm
