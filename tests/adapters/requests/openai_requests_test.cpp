// OpenAI request bodies, with the extensions llama-server, vLLM and Ollama's /v1 accept.
#include <gtest/gtest.h>

#include "hostlm/http/server.h"
#include "hostlm/openai/requests.h"

namespace hostlm::openai {
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

Json chat(const std::string& extra) {
  return Json::parse(R"({"model": "m", "messages": [{"role": "user", "content": "hi"}])" + extra +
                     "}");
}

TEST(OpenAiRequests, SamplingLengthAndStreamFields) {
  const CompletionCall c = parse_chat_completion(chat(R"(, "stream": true,
    "stream_options": {"include_usage": true}, "max_completion_tokens": 9, "max_tokens": 100,
    "temperature": 0, "top_p": 0.5, "seed": 3, "stop": ["a", "b"], "presence_penalty": 0.5,
    "frequency_penalty": -0.5, "logit_bias": {"42": -100}, "n": 1, "top_k": 5, "min_p": 0.1,
    "user": "someone", "unknown_field": {"x": 1})"));
  EXPECT_TRUE(c.stream);
  EXPECT_TRUE(c.include_usage);
  const GenerationOptions& o = c.request.options;
  EXPECT_EQ(*o.num_predict, 9);  // max_completion_tokens wins over max_tokens
  EXPECT_FLOAT_EQ(*o.temperature, 0.f);
  EXPECT_EQ(*o.seed, 3);
  EXPECT_EQ(o.stop->size(), 2u);
  EXPECT_FLOAT_EQ(o.logit_bias.at(42), -100.f);
  EXPECT_EQ(*o.top_k, 5);
  EXPECT_FLOAT_EQ(*o.presence_penalty, 0.5f);
}

TEST(OpenAiRequests, ThinkingSwitches) {
  EXPECT_EQ(parse_chat_completion(chat("")).request.think, Thinking::kDefault);
  EXPECT_EQ(parse_chat_completion(chat(R"(, "chat_template_kwargs": {"enable_thinking": false})"))
                .request.think,
            Thinking::kOff);
  EXPECT_EQ(parse_chat_completion(chat(R"(, "reasoning_effort": "none")")).request.think,
            Thinking::kOff);
  EXPECT_EQ(parse_chat_completion(chat(R"(, "reasoning": {"effort": "high"})")).request.think,
            Thinking::kOn);
  // The explicit `think` is the strongest.
  EXPECT_EQ(parse_chat_completion(
                chat(R"(, "think": true, "chat_template_kwargs": {"enable_thinking": false})"))
                .request.think,
            Thinking::kOn);
}

TEST(OpenAiRequests, ToolsToolChoiceAndHistory) {
  const CompletionCall c = parse_chat_completion(Json::parse(R"({"model": "m",
    "messages": [{"role": "developer", "content": "rules"},
                 {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
                 {"role": "assistant", "content": null, "reasoning": "thought",
                  "tool_calls": [{"id": "call_1", "type": "function",
                                  "function": {"name": "f", "arguments": "{\"x\": 2}"}}]},
                 {"role": "tool", "tool_call_id": "call_1", "content": "ok"}],
    "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}],
    "tool_choice": {"type": "function", "function": {"name": "f"}}, "parallel_tool_calls": false})"));
  const Conversation& conv = *c.request.chat;
  EXPECT_EQ(conv.messages[0].role, "system");
  EXPECT_EQ(conv.messages[1].content, "ab");
  EXPECT_EQ(*conv.messages[2].reasoning_content, "thought");
  EXPECT_EQ(conv.messages[2].tool_calls[0].arguments["x"], 2);  // the string was decoded
  EXPECT_EQ(conv.messages[3].tool_call_id, "call_1");
  EXPECT_EQ(c.request.tool_choice.kind, ToolChoice::Kind::kFunction);
  EXPECT_FALSE(c.request.parallel_tool_calls);
}

TEST(OpenAiRequests, ResponseFormats) {
  EXPECT_EQ(parse_chat_completion(chat(R"(, "response_format": {"type": "json_object"})"))
                .request.format.kind,
            ResponseFormat::Kind::kJson);
  const auto schema = parse_chat_completion(chat(R"(, "response_format": {"type": "json_schema",
      "json_schema": {"name": "x", "strict": true, "schema": {"type": "object", "properties": {"b": {}, "a": {}}}}})"));
  EXPECT_EQ(schema.request.format.kind, ResponseFormat::Kind::kJsonSchema);
  EXPECT_LT(schema.request.format.schema.find("\"b\""), schema.request.format.schema.find("\"a\""));
  EXPECT_EQ(
      parse_chat_completion(chat(R"(, "response_format": {"type": "text"})")).request.format.kind,
      ResponseFormat::Kind::kText);
  EXPECT_EQ(parse_chat_completion(chat(R"(, "grammar": "root ::= \"x\"")")).request.format.kind,
            ResponseFormat::Kind::kGrammar);
}

TEST(OpenAiRequests, Completions) {
  const CompletionCall text =
      parse_completion(Json::parse(R"({"model": "m", "prompt": ["once"], "echo": true})"));
  EXPECT_EQ(text.request.prompt, "once");
  EXPECT_FALSE(text.request.chat);
  EXPECT_TRUE(text.echo);
  const CompletionCall ids =
      parse_completion(Json::parse(R"({"model": "m", "prompt": [1, 2, 3]})"));
  EXPECT_EQ(ids.request.context_tokens, (std::vector<int32_t>{1, 2, 3}));
  EXPECT_EQ(parse_completion(Json::parse(R"({"model": "m", "prompt": "a", "logprobs": 2})"))
                .request.top_logprobs,
            2);
}

TEST(OpenAiRequests, MistakesAreBadRequests) {
  for (
      const char* body :
      {R"({"messages": [{"role": "user", "content": "x"}]})", R"({"model": "m", "messages": []})",
       R"({"model": "m", "messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:x"}}]}]})",
       R"({"model": "m", "messages": [{"role": "user", "content": "x"}], "n": 2})",
       R"({"model": "m", "messages": [{"role": "user", "content": "x"}], "temperature": 3})",
       R"({"model": "m", "messages": [{"role": "user", "content": "x"}], "response_format": {"type": "yaml"}})",
       R"({"model": "m", "messages": [{"role": "user", "content": "x"}], "logit_bias": {"word": 1}})",
       R"({"model": "m", "messages": [{"role": "user", "content": "x"}], "tool_choice": "sometimes"})",
       R"({"model": "m", "messages": [{"role": "user", "content": "x"}], "tools": [{"type": "retrieval"}]})",
       R"({"model": "m", "messages": [{"role": "user", "content": "x"}], "top_logprobs": 2})",
       // A role or a tool type of another JSON type was a library type error (a 500); found by
       // fuzz_api_requests.
       R"({"model": "m", "messages": [{"role": {"name": "add"}, "content": "x"}]})",
       R"({"model": "m", "messages": [{"role": "user", "content": "x"}], "tools": [{"type": 5, "function": {"name": "f"}}]})",
       R"(["model", "messages"])"})
    EXPECT_EQ(status_of([&] { parse_chat_completion(Json::parse(body)); }), 400) << body;
  EXPECT_EQ(status_of([] {
              parse_completion(Json::parse(R"({"model": "m", "prompt": "a", "suffix": "b"})"));
            }),
            400);
  EXPECT_EQ(
      status_of([] { parse_completion(Json::parse(R"({"model": "m", "prompt": ["a", "b"]})")); }),
      400);
  // Token ids past int32 wrapped into the vocabulary's range (4294967297 read as token 1).
  for (const char* prompt : {"[4294967297]", "[[1, -4294967296]]", "[18446744073709551615]"})
    EXPECT_EQ(
        status_of([&] {
          parse_completion(Json::parse(std::string(R"({"model": "m", "prompt": )") + prompt + "}"));
        }),
        400)
        << prompt;
}

}  // namespace
}  // namespace hostlm::openai
