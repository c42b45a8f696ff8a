// A five-turn chat with thinking on, rendered by the model's own chat format: the Qwen3.5
// template drops each earlier answer's reasoning when it renders the history again, so a
// turn's prompt is not an extension of the previous one. With a snapshot where the previous
// prompt and its re-rendering part (chat_reuse_points), each turn computes only the tokens
// that are new, and its logits equal a cold run's bit for bit (F32 KV).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>

#include "engine_support.h"
#include "hostlm/tokenizer.h"
#include "model/chat_prompt.h"

namespace hostlm {
namespace {

ChatMessage message(std::string role, std::string content) {
  ChatMessage m;
  m.role = std::move(role);
  m.content = std::move(content);
  return m;
}

struct Turn {
  GenerationResult result;
  std::vector<std::vector<float>> logits;
};

Turn run(Engine& engine, GenerationRequest request) {
  Turn t;
  request.on_logits = [&t](std::span<const float> l) { t.logits.emplace_back(l.begin(), l.end()); };
  t.result = engine.generate(std::move(request));
  return t;
}

TEST(MultiTurnChat, EachTurnComputesOnlyWhatIsNewAndMatchesAColdRun) {
  PluginRegistry registry;
  LoadedModel loaded(registry, testing::tiny_model_dir(), testing::cpu_batches_of(64));
  const Tokenizer tokenizer = Tokenizer::load(testing::tiny_model_dir());
  const auto format = registry.plugin_for(loaded.files().architecture).chat_format(loaded.files());
  ASSERT_TRUE(format);
  EngineOptions options = testing::quiet_options();
  options.kv_type = DType::F32;
  options.context = 2048;
  options.prefill_chunk = 48;
  EngineOptions cold_options = options;
  cold_options.prefix_cache = false;
  Engine engine(loaded.model(), options);
  ChatRenderOptions render;
  render.thinking = Thinking::kOn;
  Conversation chat;
  chat.messages = {message("system", "You answer in one short sentence."),
                   message("user", "What is the capital of France?")};
  const std::vector<int32_t> ends = end_of_generation_ids(tokenizer);
  std::vector<int32_t> previous;
  for (int turn = 1; turn <= 5; ++turn) {
    SCOPED_TRACE("turn " + std::to_string(turn));
    const std::string text = format->render(chat, render);
    // Only the generation prompt opens a <think>: the history's reasoning is gone.
    size_t opens = 0;
    for (size_t at = text.find("<think>"); at != std::string::npos;
         at = text.find("<think>", at + 1))
      ++opens;
    EXPECT_EQ(opens, 1u);
    const std::vector<int32_t> prompt = tokenize_chat_prompt(tokenizer, *format, chat, render);
    auto request = testing::greedy_request(prompt, 20);
    request.stop_tokens = ends;
    request.snapshot_at = chat_reuse_points(tokenizer, *format, chat, render, prompt);
    ASSERT_FALSE(request.snapshot_at.empty());
    const Turn warm = run(engine, request);

    const int64_t shared = static_cast<int64_t>(
        std::mismatch(previous.begin(), previous.end(), prompt.begin(), prompt.end()).first -
        previous.begin());
    EXPECT_EQ(warm.result.cached_tokens, shared);
    EXPECT_EQ(warm.result.prompt_eval_count, static_cast<int64_t>(prompt.size()) - shared);
    if (turn > 1) {
      EXPECT_GT(shared, 0);
    }

    Engine cold_engine(loaded.model(), cold_options);
    const Turn cold = run(cold_engine, request);
    EXPECT_EQ(cold.result.prompt_eval_count, static_cast<int64_t>(prompt.size()));
    ASSERT_EQ(warm.logits.size(), cold.logits.size());
    for (size_t i = 0; i < warm.logits.size(); ++i)
      ASSERT_EQ(0, std::memcmp(warm.logits[i].data(), cold.logits[i].data(),
                               warm.logits[i].size() * sizeof(float)))
          << "logits of generated token " << i;

    // The answer as a client sends it back: reasoning and content parsed from the text.
    std::vector<int32_t> answer = warm.result.tokens;
    if (!answer.empty() && std::find(ends.begin(), ends.end(), answer.back()) != ends.end())
      answer.pop_back();
    const ChatOutput parsed = format->parse(tokenizer.decode(answer), {}, render);
    ChatMessage reply =
        message("assistant", parsed.content.empty() ? "Answer number " + std::to_string(turn) + "."
                                                    : parsed.content);
    reply.reasoning_content = parsed.reasoning;
    chat.messages.push_back(reply);
    chat.messages.push_back(message("user", "And question " + std::to_string(turn + 1) + "?"));
    previous = prompt;
  }
}

}  // namespace
}  // namespace hostlm
