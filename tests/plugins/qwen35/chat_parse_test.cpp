// Given text as Qwen3.5 generates it (well formed, or with the quirks of spec pitfall 24), the
// plugin's parser splits it into reasoning, content and tool calls, and gets the same result
// whether the text arrives at once or in chunks of any size, split inside tags or characters.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "chat_support.h"

namespace hostlm {
namespace {

using Json = nlohmann::ordered_json;
using testing::qwen35_formats;

const std::vector<ToolDefinition>& typed_tools() {
  static const std::vector<ToolDefinition> tools = {Json::parse(R"({
    "type": "function", "function": {"name": "get_weather", "parameters": {
      "type": "object", "properties": {
        "city": {"type": "string"}, "days": {"type": "integer"}, "ratio": {"type": "number"},
        "metric": {"type": "boolean"}, "tags": {"type": "array"}, "opts": {"type": "object"},
        "limit": {"type": ["integer", "null"]}, "label": {"type": ["string", "null"]},
        "either": {"anyOf": [{"type": "integer"}, {"type": "null"}]}, "code": {"type": "string"}
      }}}})"),
                                                    Json::parse(R"({
    "name": "calc", "parameters": {"type": "object", "properties": {"n": {"type": "integer"}}}})")};
  return tools;
}

struct ParseCase {
  const char* name;
  bool thinking;  // the prompt opened a think block
  bool tools;     // the request declared typed_tools()
  const char* text;
  const char* reasoning;
  const char* content;
  const char* calls;  // JSON: [{"name": …, "arguments": {…}}, …]
};

const ParseCase kCases[] = {
    {"ReasoningThenAnswer", true, false, "Let me think.\n</think>\n\nThe answer is 4.",
     "Let me think.", "The answer is 4.", "[]"},
    {"ThinkingOffIsAllContent", false, false, "Hello there.\n", "", "Hello there.", "[]"},
    {"RepeatedThinkTagSkipped", true, false, "\n<think>\nHmm.\n</think>\n\nHi", "Hmm.", "Hi", "[]"},
    {"ThinkTagLaterIsText", true, false, "a <think> b</think>c", "a <think> b", "c", "[]"},
    {"UnfinishedReasoning", true, false, "still thinking...\n\n", "still thinking...", "", "[]"},
    {"EmptyReasoning", true, false, "\n</think>\n\nHi", "", "Hi", "[]"},
    {"EmptyOutput", true, false, "", "", "", "[]"},
    {"SecondThinkCloseIsContent", true, false, "r</think>x</think>y", "r", "x</think>y", "[]"},
    {"ToolCallAfterPreamble", true, true,
     "Need weather.\n</think>\n\nLet me check.\n\n<tool_call>\n<function=get_weather>\n"
     "<parameter=city>\nParis\n</parameter>\n<parameter=days>\n3\n</parameter>\n</function>\n"
     "</tool_call>",
     "Need weather.", "Let me check.",
     R"([{"name":"get_weather","arguments":{"city":"Paris","days":3}}])"},
    {"ToolCallEndsReasoningWithoutThinkClose", true, true,
     "I need the weather.\n<tool_call>\n<function=get_weather>\n<parameter=city>\nOslo\n"
     "</parameter>\n</function>\n</tool_call>",
     "I need the weather.", "", R"([{"name":"get_weather","arguments":{"city":"Oslo"}}])"},
    {"FunctionWithoutToolCallTag", true, true,
     "ok\n</think>\n\n<function=get_weather>\n<parameter=city>\nRome\n</parameter>\n</function>\n"
     "</tool_call>\nDone.",
     "ok", "Done.", R"([{"name":"get_weather","arguments":{"city":"Rome"}}])"},
    {"FunctionTagWithoutToolsIsText", false, false, "Use <function=x> like this.", "",
     "Use <function=x> like this.", "[]"},
    {"TwoCalls", false, true,
     "<tool_call>\n<function=get_weather>\n<parameter=city>\nA\n</parameter>\n</function>\n"
     "</tool_call>\n<tool_call>\n<function=calc>\n<parameter=n>\n7\n</parameter>\n</function>\n"
     "</tool_call>",
     "", "",
     R"([{"name":"get_weather","arguments":{"city":"A"}},{"name":"calc","arguments":{"n":7}}])"},
    {"OneNewlineStrippedEachSide", false, true,
     "<tool_call>\n<function=get_weather>\n<parameter=code>\n\nif a < b:\n    pass\n\n"
     "</parameter>\n</function>\n</tool_call>",
     "", "", R"([{"name":"get_weather","arguments":{"code":"\nif a < b:\n    pass\n"}}])"},
    {"ValuesTypedBySchema", false, true,
     "<tool_call>\n<function=get_weather>\n"
     "<parameter=days>\n42\n</parameter>\n<parameter=ratio>\n2.5\n</parameter>\n"
     "<parameter=metric>\nTrue\n</parameter>\n<parameter=tags>\n[1, \"b\"]\n</parameter>\n"
     "<parameter=opts>\n{\"a\": {\"b\": "
     "null}}\n</parameter>\n<parameter=limit>\nNULL\n</parameter>\n"
     "<parameter=label>\nnull\n</parameter>\n<parameter=either>\n5\n</parameter>\n"
     "<parameter=city>\n123\n</parameter>\n<parameter=unknown>\n7\n</parameter>\n"
     "</function>\n</tool_call>",
     "", "",
     R"([{"name":"get_weather","arguments":{"days":42,"ratio":2.5,"metric":true,"tags":[1,"b"],
         "opts":{"a":{"b":null}},"limit":null,"label":null,"either":5,"city":"123","unknown":"7"}}])"},
    {"UnreadableValueStaysString", false, true,
     "<tool_call>\n<function=get_weather>\n<parameter=days>\nthree\n</parameter>\n"
     "<parameter=tags>\n[1, 2\n</parameter>\n</function>\n</tool_call>",
     "", "", R"([{"name":"get_weather","arguments":{"days":"three","tags":"[1, 2"}}])"},
    {"UnknownToolGetsStrings", false, true,
     "<tool_call>\n<function=other>\n<parameter=n>\n1\n</parameter>\n</function>\n</tool_call>", "",
     "", R"([{"name":"other","arguments":{"n":"1"}}])"},
    {"NoToolsAllStrings", false, false,
     "<tool_call>\n<function=calc>\n<parameter=n>\n1\n</parameter>\n</function>\n</tool_call>", "",
     "", R"([{"name":"calc","arguments":{"n":"1"}}])"},
    {"ArgumentOrderKept", false, true,
     "<tool_call>\n<function=calc>\n<parameter=z>\n1\n</parameter>\n<parameter=a>\n2\n"
     "</parameter>\n</function>\n</tool_call>",
     "", "", R"([{"name":"calc","arguments":{"z":"1","a":"2"}}])"},
    {"MissingParameterClose", false, true,
     "<tool_call>\n<function=calc>\n<parameter=a>\nx\n<parameter=b>\ny\n</function>\n</tool_call>",
     "", "", R"([{"name":"calc","arguments":{"a":"x","b":"y"}}])"},
    {"SpacedFunctionName", false, true, "<tool_call>\n<function= calc >\n</function>\n</tool_call>",
     "", "", R"([{"name":"calc","arguments":{}}])"},
    {"WhitespaceAroundCallCollapses", false, true,
     "Before.\n\n<tool_call>\n<function=calc>\n</function>\n</tool_call>\n\n  After.", "",
     "Before.\n\nAfter.", R"([{"name":"calc","arguments":{}}])"},
    {"CallWithoutFunctionIsText", false, true,
     "See:\n<tool_call>\nno function here\n</tool_call>\nok", "",
     "See:\n<tool_call>\nno function here\n</tool_call>\nok", "[]"},
    {"CallClosedByEndOfText", false, true,
     "<tool_call>\n<function=calc>\n<parameter=n>\n1\n</parameter>\n</function>\n", "", "",
     R"([{"name":"calc","arguments":{"n":1}}])"},
    {"TruncatedCallIsText", false, true,
     "Sure.\n\n<tool_call>\n<function=get_weather>\n<parameter=city>\nPar", "",
     "Sure.\n\n<tool_call>\n<function=get_weather>\n<parameter=city>\nPar", "[]"},
    {"StrayToolCallCloseIsText", false, true, "a</tool_call>b", "", "a</tool_call>b", "[]"},
    {"AlmostTagsAreText", false, true, "a < b, c <tool and <functio", "",
     "a < b, c <tool and <functio", "[]"},
    {"AlmostThinkClose", true, false, "x </thin", "x </thin", "", "[]"},
    {"Unicode", true, true,
     "思考中…🤔 "
     "é\n</"
     "think>\n\n答えは４です。👩‍👩‍👧\n<tool_call>\n<function=get_weather>\n"
     "<parameter=city>\n東京\n</parameter>\n</function>\n</tool_call>",
     "思考中…🤔 é", "答えは４です。👩‍👩‍👧",
     R"([{"name":"get_weather","arguments":{"city":"東京"}}])"},
};

Json calls_json(const std::vector<ToolCall>& calls) {
  Json out = Json::array();
  for (const ToolCall& c : calls) out.push_back({{"name", c.name}, {"arguments", c.arguments}});
  return out;
}

bool whole_utf8(const std::string& s) {
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    const size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (n == 0 || i + n > s.size()) return false;
    for (size_t k = 1; k < n; ++k)
      if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return false;
    i += n;
  }
  return true;
}

ChatRenderOptions options_for(bool thinking) {
  ChatRenderOptions o;
  o.thinking = thinking ? Thinking::kOn : Thinking::kOff;
  return o;
}

// Feeds `pieces` one by one; every text event must be whole characters.
ChatOutput parse_pieces(const std::vector<std::string>& pieces, bool thinking, bool tools) {
  static const std::vector<ToolDefinition> kNoTools;
  auto parser =
      qwen35_formats().bare->new_parser(tools ? typed_tools() : kNoTools, options_for(thinking));
  ChatOutput out;
  auto take = [&](const std::vector<ChatEvent>& events) {
    for (const ChatEvent& e : events) {
      if (e.kind != ChatEvent::Kind::kToolCall) {
        EXPECT_FALSE(e.text.empty()) << "an empty delta";
        EXPECT_TRUE(whole_utf8(e.text)) << "a delta splits a character: " << e.text;
      }
      out.add(e);
    }
  };
  for (const std::string& p : pieces) take(parser->feed(p));
  take(parser->finish());
  return out;
}

// Every chunk size 1..7, starting at every offset inside the first chunk.
std::vector<std::vector<std::string>> chunkings(const std::string& text) {
  std::vector<std::vector<std::string>> all;
  for (size_t size = 1; size <= 7; ++size) {
    for (size_t first = 1; first <= size; ++first) {
      std::vector<std::string> pieces;
      for (size_t i = 0; i < text.size();) {
        const size_t n = i == 0 ? first : size;
        pieces.push_back(text.substr(i, n));
        i += n;
      }
      all.push_back(std::move(pieces));
    }
  }
  return all;
}

void expect_same(const ChatOutput& got, const ChatOutput& want, const std::string& how) {
  EXPECT_EQ(got.reasoning, want.reasoning) << how;
  EXPECT_EQ(got.content, want.content) << how;
  EXPECT_EQ(calls_json(got.tool_calls), calls_json(want.tool_calls)) << how;
}

class Qwen35ChatParse : public ::testing::TestWithParam<ParseCase> {};

TEST_P(Qwen35ChatParse, WholeTextGivesTheExpectedParts) {
  const ParseCase& c = GetParam();
  const ChatOutput out = parse_pieces({c.text}, c.thinking, c.tools);
  EXPECT_EQ(out.reasoning, c.reasoning);
  EXPECT_EQ(out.content, c.content);
  EXPECT_EQ(calls_json(out.tool_calls), Json::parse(c.calls));
}

TEST_P(Qwen35ChatParse, EveryChunkingGivesTheSameResult) {
  const ParseCase& c = GetParam();
  const ChatOutput whole = parse_pieces({c.text}, c.thinking, c.tools);
  for (const auto& pieces : chunkings(c.text)) {
    std::string how = "chunks:";
    for (const std::string& p : pieces) how += " " + std::to_string(p.size());
    expect_same(parse_pieces(pieces, c.thinking, c.tools), whole, how);
  }
}

TEST_P(Qwen35ChatParse, ParseAtOnceIsTheSame) {
  const ParseCase& c = GetParam();
  static const std::vector<ToolDefinition> kNoTools;
  expect_same(qwen35_formats().bare->parse(c.text, c.tools ? typed_tools() : kNoTools,
                                           options_for(c.thinking)),
              parse_pieces({c.text}, c.thinking, c.tools), "ChatFormat::parse");
}

INSTANTIATE_TEST_SUITE_P(Cases, Qwen35ChatParse, ::testing::ValuesIn(kCases),
                         [](const auto& param_info) { return std::string(param_info.param.name); });

// Random text made of tag fragments: never throws, and chunking never changes the result.
TEST(Qwen35ChatParseFuzz, RandomTagSoupIsChunkingInvariant) {
  const std::vector<std::string> fragments = {"<think>",
                                              "</think>",
                                              "<tool_call>",
                                              "</tool_call>",
                                              "<function=calc>",
                                              "<function=",
                                              "</function>",
                                              "<parameter=n>",
                                              "</parameter>",
                                              "\n",
                                              " ",
                                              "x",
                                              "é",
                                              "🤔",
                                              "<",
                                              ">",
                                              "=",
                                              "1",
                                              "null",
                                              "</",
                                              "<tool",
                                              "[1,",
                                              "}"};
  std::mt19937 rng(1234);
  for (int round = 0; round < 2000; ++round) {
    std::string text;
    const int n = static_cast<int>(rng() % 40);
    for (int i = 0; i < n; ++i) text += fragments[rng() % fragments.size()];
    const bool thinking = rng() % 2 == 0;
    const bool tools = rng() % 2 == 0;
    const ChatOutput whole = parse_pieces({text}, thinking, tools);
    for (int k = 0; k < 5; ++k) {
      std::vector<std::string> pieces;
      for (size_t i = 0; i < text.size();) {
        const size_t len = 1 + rng() % 7;
        pieces.push_back(text.substr(i, len));
        i += len;
      }
      expect_same(parse_pieces(pieces, thinking, tools), whole, "text: " + text);
    }
  }
}

// What the renderer writes for an assistant turn, the parser reads back.
TEST(Qwen35ChatRoundTrip, RenderedToolCallParsesBack) {
  Conversation conv;
  conv.tools = typed_tools();
  conv.messages.resize(2);
  conv.messages[0].role = "user";
  conv.messages[0].content = "Weather?";
  ChatMessage& answer = conv.messages[1];
  answer.role = "assistant";
  answer.content = "Checking.";
  answer.reasoning_content = "Call the tool.";
  ToolCall call;
  call.name = "get_weather";
  call.arguments = Json::parse(
      R"({"city": "Zürich\nnorth", "days": 3, "ratio": 0.25, "tags": ["a", 1], "opts": {"k": null}})");
  answer.tool_calls = {call, call};
  ChatRenderOptions options;
  options.add_generation_prompt = false;
  const std::string prompt = qwen35_formats().bare->render(conv, options);
  const std::string opening = "<|im_start|>assistant\n<think>\n";
  const size_t begin = prompt.rfind(opening) + opening.size();
  const std::string generated = prompt.substr(begin, prompt.rfind("<|im_end|>") - begin);

  const ChatOutput out = qwen35_formats().bare->parse(generated, conv.tools, ChatRenderOptions{});
  EXPECT_EQ(out.reasoning, "Call the tool.");
  EXPECT_EQ(out.content, "Checking.");
  ASSERT_EQ(out.tool_calls.size(), 2u);
  EXPECT_EQ(out.tool_calls[0].name, "get_weather");
  EXPECT_EQ(out.tool_calls[0].arguments, call.arguments);
  EXPECT_EQ(out.tool_calls[1].arguments, call.arguments);
}

}  // namespace
}  // namespace hostlm
