// The grammar Qwen3.5's format gives for required tool calls accepts exactly the calls the
// template renders, and the parser reads each back into the same call.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "chat_support.h"
#include "hostlm/grammar.h"

namespace hostlm::testing {
namespace {

using Json = nlohmann::ordered_json;

std::vector<ToolDefinition> weather_tools() {
  return {Json::parse(R"({"type": "function", "function": {"name": "get_weather",
            "parameters": {"type": "object", "properties": {
              "city": {"type": "string", "enum": ["Paris", "Tokyo"]},
              "days": {"type": "integer"},
              "metric": {"type": "boolean"},
              "note": {"type": "string"}},
            "required": ["city", "days"]}}})"),
          Json::parse(R"({"type": "function", "function": {"name": "now",
            "parameters": {"type": "object", "properties": {}}}})")};
}

// A matcher over single-byte tokens: the grammar is checked on text, byte by byte.
bool accepts(const std::string& gbnf, const std::string& text) {
  std::vector<std::string> bytes;
  for (int b = 0; b < 256; ++b) bytes.push_back(std::string(1, static_cast<char>(b)));
  bytes.push_back("");  // id 256: the end token
  auto vocab = std::make_shared<const GrammarVocab>(bytes, std::vector<int32_t>{256});
  GrammarMatcher m(Grammar::from_gbnf(gbnf), vocab);
  return m.accept_bytes(text) && m.can_end();
}

const std::string kCall =
    "<tool_call>\n<function=get_weather>\n<parameter=city>\nTokyo\n</parameter>\n"
    "<parameter=days>\n3\n</parameter>\n<parameter=note>\nbring an umbrella\n</parameter>\n"
    "</function>\n</tool_call>";

TEST(Qwen35ToolGrammar, AcceptsWellFormedCallsAndTheParserReadsThemBack) {
  Qwen35Formats formats;
  const auto tools = weather_tools();
  const std::string gbnf = formats.bare->tool_call_grammar(tools, "", true);
  ASSERT_FALSE(gbnf.empty());
  EXPECT_TRUE(accepts(gbnf, kCall));
  EXPECT_TRUE(accepts(gbnf, kCall + "\n<tool_call>\n<function=now>\n</function>\n</tool_call>"));
  ChatRenderOptions off;
  off.thinking = Thinking::kOff;
  const ChatOutput out = formats.bare->parse(kCall, tools, off);
  ASSERT_EQ(out.tool_calls.size(), 1u);
  EXPECT_EQ(out.tool_calls[0].name, "get_weather");
  EXPECT_EQ(out.tool_calls[0].arguments["city"], "Tokyo");
  EXPECT_EQ(out.tool_calls[0].arguments["days"], 3);  // typed by the schema
  EXPECT_EQ(out.tool_calls[0].arguments["note"], "bring an umbrella");
  EXPECT_TRUE(out.content.empty());
}

TEST(Qwen35ToolGrammar, RefusesWhatTheSchemaOrTheFormatForbids) {
  Qwen35Formats formats;
  const std::string gbnf = formats.bare->tool_call_grammar(weather_tools(), "", false);
  // A value outside the enum, a missing required parameter, an unknown function, prose
  // before the call, a second call when parallel calls are off.
  EXPECT_FALSE(
      accepts(gbnf,
              "<tool_call>\n<function=get_weather>\n<parameter=city>\nRome\n"
              "</parameter>\n<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>"));
  EXPECT_FALSE(accepts(gbnf,
                       "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n"
                       "</parameter>\n</function>\n</tool_call>"));
  EXPECT_FALSE(accepts(gbnf, "<tool_call>\n<function=rm_rf>\n</function>\n</tool_call>"));
  EXPECT_FALSE(accepts(gbnf, "Sure! " + kCall));
  EXPECT_FALSE(accepts(gbnf, kCall + "\n" + kCall));
  EXPECT_FALSE(
      accepts(gbnf,
              "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n"
              "</parameter>\n<parameter=days>\nthree\n</parameter>\n</function>\n</tool_call>"));
}

TEST(Qwen35ToolGrammar, NamedFunctionOnly) {
  Qwen35Formats formats;
  const std::string gbnf = formats.bare->tool_call_grammar(weather_tools(), "now", true);
  EXPECT_TRUE(accepts(gbnf, "<tool_call>\n<function=now>\n</function>\n</tool_call>"));
  EXPECT_FALSE(accepts(gbnf, kCall));
  EXPECT_TRUE(formats.bare->tool_call_grammar(weather_tools(), "missing", true).empty());
}

}  // namespace
}  // namespace hostlm::testing
