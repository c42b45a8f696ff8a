// Ollama request bodies as the official clients send them, read into serving requests.
#include <gtest/gtest.h>

#include "hostlm/http/server.h"
#include "hostlm/ollama/api_requests.h"

namespace hostlm::ollama {
namespace {

using Json = nlohmann::ordered_json;

int status_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const http::HttpError& e) {
    return e.status();
  }
  return 0;
}

TEST(OllamaRequests, ChatWithOptionsThinkToolsAndFormat) {
  const Json body = Json::parse(R"({
    "model": "qwen3.5", "stream": false, "think": false, "keep_alive": "10m",
    "messages": [{"role": "System", "content": "be brief"},
                 {"role": "user", "content": "hi"},
                 {"role": "assistant", "content": "", "thinking": "hmm",
                  "tool_calls": [{"function": {"name": "f", "arguments": {"a": 1}}}]},
                 {"role": "tool", "content": "42", "tool_name": "f"}],
    "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}],
    "format": {"type": "object"},
    "options": {"temperature": 0.2, "num_predict": 5, "stop": "END", "seed": 7,
                "mirostat": 1, "tfs_z": 1.0, "numa": false, "made_up": 3, "num_ctx": 2048,
                "num_gpu": 0}})");
  const ApiCall call = parse_chat_request(body);
  EXPECT_EQ(call.model, "qwen3.5");
  EXPECT_FALSE(call.stream);
  EXPECT_EQ(*call.keep_alive, std::chrono::minutes(10));
  const TextRequest& r = call.request;
  ASSERT_TRUE(r.chat);
  ASSERT_EQ(r.chat->messages.size(), 4u);
  EXPECT_EQ(r.chat->messages[0].role, "system");  // lower-cased, as Ollama does
  EXPECT_EQ(*r.chat->messages[2].reasoning_content, "hmm");
  EXPECT_EQ(r.chat->messages[2].tool_calls.at(0).arguments["a"], 1);
  EXPECT_EQ(r.chat->messages[3].name, "f");
  EXPECT_EQ(r.chat->tools.size(), 1u);
  EXPECT_EQ(r.think, Thinking::kOff);
  EXPECT_EQ(r.format.kind, ResponseFormat::Kind::kJsonSchema);
  EXPECT_FLOAT_EQ(*r.options.temperature, 0.2f);
  EXPECT_EQ(*r.options.num_predict, 5);
  EXPECT_EQ(r.options.stop->at(0), "END");
  EXPECT_EQ(*r.options.seed, 7);
  EXPECT_EQ(*r.options.num_ctx, 2048);
  EXPECT_EQ(*r.options.num_gpu, 0);
  // Unknown and deprecated options are ignored, never an error (clients still send them).
  EXPECT_EQ(call.ignored_options.size(), 4u);
  EXPECT_FALSE(call.load_only);
}

TEST(OllamaRequests, ThinkLevelsKeepAliveNumbersAndLoad) {
  const ApiCall call = parse_chat_request(
      Json::parse(R"({"model": "m", "think": "high", "keep_alive": -1, "messages": []})"));
  EXPECT_EQ(call.request.think, Thinking::kOn);
  EXPECT_LT(call.keep_alive->count(), 0);  // forever
  EXPECT_TRUE(call.load_only);
  EXPECT_TRUE(call.stream);  // Ollama streams unless told not to
  EXPECT_EQ(parse_keep_alive(Json(0))->count(), 0);
  EXPECT_EQ(*parse_keep_alive(Json(1.5)), std::chrono::milliseconds(1500));
}

TEST(OllamaRequests, ToolChoiceExtension) {
  const ApiCall top = parse_chat_request(Json::parse(
      R"({"model": "m", "messages": [{"role": "user", "content": "x"}], "tool_choice": "required"})"));
  EXPECT_EQ(top.request.tool_choice.kind, ToolChoice::Kind::kRequired);
  const ApiCall in_options = parse_chat_request(Json::parse(
      R"({"model": "m", "messages": [], "options": {"tool_choice": {"type": "function", "function": {"name": "g"}}}})"));
  EXPECT_EQ(in_options.request.tool_choice.kind, ToolChoice::Kind::kFunction);
  EXPECT_EQ(in_options.request.tool_choice.function, "g");
  EXPECT_TRUE(in_options.ignored_options.empty());
}

TEST(OllamaRequests, GenerateBuildsAConversationUnlessRaw) {
  const ApiCall g = parse_generate_request(
      Json::parse(R"({"model": "m", "prompt": "hi", "system": "sys", "context": [1, 2]})"));
  ASSERT_TRUE(g.request.chat);
  ASSERT_EQ(g.request.chat->messages.size(), 2u);
  EXPECT_EQ(g.request.chat->messages[0].content, "sys");
  EXPECT_EQ(g.request.context_tokens, (std::vector<int32_t>{1, 2}));
  const ApiCall raw = parse_generate_request(
      Json::parse(R"({"model": "m", "prompt": "<|im_start|>", "raw": true})"));
  EXPECT_FALSE(raw.request.chat);
  EXPECT_EQ(raw.request.prompt, "<|im_start|>");
  EXPECT_TRUE(parse_generate_request(Json::parse(R"({"model": "m"})")).load_only);
}

TEST(OllamaRequests, MistakesAreBadRequestsNamingTheField) {
  EXPECT_EQ(status_of([] { parse_chat_request(Json::parse(R"({"messages": []})")); }), 400);
  EXPECT_EQ(
      status_of([] {
        parse_chat_request(Json::parse(
            R"({"model": "m", "messages": [{"role": "user", "content": "x", "images": ["aGk="]}]})"));
      }),
      400);
  EXPECT_EQ(status_of([] { parse_chat_request(Json::parse(R"({"model": "m", "think": 3})")); }),
            400);
  EXPECT_EQ(
      status_of([] {
        parse_chat_request(Json::parse(R"({"model": "m", "options": {"temperature": "hot"}})"));
      }),
      400);
  EXPECT_EQ(
      status_of([] { parse_chat_request(Json::parse(R"({"model": "m", "format": "xml"})")); }),
      400);
  EXPECT_EQ(status_of([] {
              parse_chat_request(Json::parse(R"({"model": "m", "options": {"num_gpu": -2}})"));
            }),
            400);
  EXPECT_EQ(status_of([] {
              parse_generate_request(Json::parse(R"({"model": "m", "raw": true, "system": "s"})"));
            }),
            400);
  EXPECT_EQ(
      status_of([] {
        parse_generate_request(Json::parse(R"({"model": "m", "prompt": "a", "suffix": "b"})"));
      }),
      400);
  EXPECT_EQ(status_of([] {
              parse_chat_request(Json::parse(R"({"model": "m", "keep_alive": "5 minutes"})"));
            }),
            400);
  try {
    parse_chat_request(Json::parse(R"({"model": "m", "messages": [{"content": "no role"}]})"));
    ADD_FAILURE();
  } catch (const http::HttpError& e) {
    EXPECT_NE(std::string(e.what()).find("role"), std::string::npos);
  }
}

}  // namespace
}  // namespace hostlm::ollama
