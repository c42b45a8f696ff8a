// The chat engine of `hostlm run` against a scripted model and a format whose history renders
// exactly as it was generated: a prompt that extends the evaluated tokens only evaluates the
// new part, anything else starts a fresh sequence. (Qwen3.5's template drops the previous
// turn's thinking, so with it the prefix rarely survives; this is where reuse is proven.)
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "hostlm/error.h"
#include "text_chat.h"

namespace hostlm::cli {
namespace {

// ChatML without any of Qwen's history rewriting; the answer is all content.
class PlainChatFormat final : public ChatFormat {
 public:
  std::string render(const Conversation& c, const ChatRenderOptions& options) const override {
    std::string out;
    for (const ChatMessage& m : c.messages)
      out += "<|im_start|>" + m.role + "\n" + m.content + "<|im_end|>\n";
    if (options.add_generation_prompt) out += "<|im_start|>assistant\n";
    return out;
  }
  bool thinks_by_default() const override { return false; }
  std::unique_ptr<ChatParser> new_parser(const std::vector<ToolDefinition>&,
                                         const ChatRenderOptions&) const override {
    struct Passthrough final : ChatParser {
      std::vector<ChatEvent> feed(std::string_view text) override {
        return {ChatEvent{
            .kind = ChatEvent::Kind::kContent, .text = std::string(text), .tool_call = {}}};
      }
      std::vector<ChatEvent> finish() override { return {}; }
    };
    return std::make_unique<Passthrough>();
  }
};

class ScriptedSequence final : public Sequence {
 public:
  explicit ScriptedSequence(int64_t capacity) : capacity_(capacity) {}
  int64_t n_past() const override { return n_past_; }
  int64_t capacity() const override { return capacity_; }
  int64_t n_past_ = 0;
  int64_t capacity_;
};

// After a prompt, answers `answer` then `end`, one token per evaluation.
class ScriptedModel final : public Model {
 public:
  ScriptedModel(std::vector<int32_t> answer, int32_t end) : answer_(std::move(answer)), end_(end) {
    info_.n_vocab = 2048;
  }
  const ModelInfo& info() const override { return info_; }
  std::unique_ptr<Sequence> new_sequence(int64_t capacity) override {
    ++sequences_made;
    return std::make_unique<ScriptedSequence>(capacity);
  }
  void eval(Sequence& seq, std::span<const int32_t> tokens, bool,
            std::span<float> logits) override {
    auto& s = static_cast<ScriptedSequence&>(seq);
    s.n_past_ += static_cast<int64_t>(tokens.size());
    eval_sizes.push_back(tokens.size());
    step_ = tokens.size() > 1 ? 0 : step_ + 1;
    std::fill(logits.begin(), logits.end(), 0.f);
    logits[step_ < answer_.size() ? answer_[step_] : end_] = 10.f;
  }

  int sequences_made = 0;
  std::vector<size_t> eval_sizes;

 private:
  ModelInfo info_;
  std::vector<int32_t> answer_;
  int32_t end_;
  size_t step_ = 0;
};

const Tokenizer& tiny_tokenizer() {
  static const Tokenizer tokenizer = Tokenizer::load(
      std::filesystem::path(std::getenv("HOSTLM_SOURCE_DIR")) / "tests/data/models/tiny-tied-f32");
  return tokenizer;
}

TEST(ChatEngine, ReusesTheSequenceWhenThePromptExtendsIt) {
  const Tokenizer& tok = tiny_tokenizer();
  const std::vector<int32_t> answer_ids = tok.encode("Sure.");
  const int32_t im_end = *tok.token_id("<|im_end|>");
  ScriptedModel model(answer_ids, im_end);
  PlainChatFormat format;
  ChatEngine engine(model, tok, format, 512);
  GenerationSettings settings;
  settings.sampling.temperature = 0.f;
  Sampler sampler(settings.sampling);

  Conversation c;
  c.messages.push_back(text_message("user", "Hi"));
  const std::vector<int32_t> first = tokenize_chat_prompt(tok, format, c, {});
  ChatOutput out = engine.respond(c, {}, settings, sampler);
  EXPECT_EQ(out.content, "Sure.");
  EXPECT_EQ(model.sequences_made, 1);
  EXPECT_EQ(model.eval_sizes.front(), first.size());

  // The history renders as generated: only the new part is evaluated.
  c.messages.push_back(text_message("assistant", out.content));
  c.messages.push_back(text_message("user", "Again"));
  const std::vector<int32_t> second = tokenize_chat_prompt(tok, format, c, {});
  const size_t evaluated = first.size() + answer_ids.size();  // the end token is not evaluated
  model.eval_sizes.clear();
  out = engine.respond(c, {}, settings, sampler);
  EXPECT_EQ(model.sequences_made, 1);
  EXPECT_EQ(model.eval_sizes.front(), second.size() - evaluated);

  // A prompt that does not extend it (a new system message) starts over.
  Conversation changed = c;
  changed.messages.insert(changed.messages.begin(), text_message("system", "New."));
  model.eval_sizes.clear();
  (void)engine.respond(changed, {}, settings, sampler);
  EXPECT_EQ(model.sequences_made, 2);
  EXPECT_EQ(model.eval_sizes.front(), tokenize_chat_prompt(tok, format, changed, {}).size());

  // So does the same prompt again (nothing new to evaluate for the first logits), and reset().
  (void)engine.respond(changed, {}, settings, sampler);
  EXPECT_EQ(model.sequences_made, 3);
  engine.reset();
  c.messages.resize(1);
  (void)engine.respond(c, {}, settings, sampler);
  EXPECT_EQ(model.sequences_made, 4);
}

TEST(ChatEngine, StopsAtNumPredictAndWhenTheContextIsFull) {
  const Tokenizer& tok = tiny_tokenizer();
  const int32_t a = tok.encode("a").at(0);
  ScriptedModel model(std::vector<int32_t>(100, a), *tok.token_id("<|im_end|>"));
  PlainChatFormat format;
  Conversation c;
  c.messages.push_back(text_message("user", "Hi"));
  const size_t prompt = tokenize_chat_prompt(tok, format, c, {}).size();
  GenerationSettings settings;
  settings.sampling.temperature = 0.f;
  Sampler sampler(settings.sampling);
  {
    ChatEngine engine(model, tok, format, 512);
    settings.num_predict = 5;
    EXPECT_EQ(engine.respond(c, {}, settings, sampler).content, "aaaaa");
  }
  {
    ChatEngine engine(model, tok, format, static_cast<int64_t>(prompt) + 3);
    settings.num_predict = -1;
    EXPECT_EQ(engine.respond(c, {}, settings, sampler).content, "aaaa");  // 3 fit, 1 more sampled
  }
  ChatEngine small(model, tok, format, static_cast<int64_t>(prompt));
  EXPECT_THROW(small.respond(c, {}, settings, sampler), Error);
}

}  // namespace
}  // namespace hostlm::cli
