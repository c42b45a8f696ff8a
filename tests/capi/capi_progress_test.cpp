// The additions bindings use to drive a progress bar and describe a loaded model:
// hostlm_chat_with_progress and the hostlm_model_* getters.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "hostlm.h"

namespace {

std::string tiny_model_path() {
  const char* src = std::getenv("HOSTLM_SOURCE_DIR");
  return std::string(src ? src : ".") + "/tests/data/models/tiny-tied-f32";
}

struct Progress {
  std::vector<int32_t> generated;  // what each progress call reported
  int32_t max_tokens = -1;
  int32_t stop_at = -1;  // return 0 when generated reaches this; -1: never
  std::string content;
  int text_calls = 0;
};

int32_t on_progress(int32_t generated, int32_t max_tokens, void* user) {
  auto* p = static_cast<Progress*>(user);
  p->generated.push_back(generated);
  p->max_tokens = max_tokens;
  return generated == p->stop_at ? 0 : 1;
}

int32_t on_text(const char* text, int32_t kind, void* user) {
  auto* p = static_cast<Progress*>(user);
  if (kind == HOSTLM_TEXT_CONTENT) p->content += text;
  ++p->text_calls;
  return 1;
}

class CapiProgressTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    hostlm_model_params p = hostlm_model_default_params();
    p.backend = "cpu";
    p.context = 256;
    model_ = hostlm_model_load(tiny_model_path().c_str(), p);
    ASSERT_NE(model_, nullptr) << hostlm_last_error();
  }
  static void TearDownTestSuite() {
    hostlm_model_free(model_);
    model_ = nullptr;
  }
  static hostlm_generate_params raw_greedy(int32_t max_tokens) {
    hostlm_generate_params g = hostlm_generate_default_params();
    g.prompt = "Once upon a time";
    g.temperature = 0.f;
    g.max_tokens = max_tokens;
    return g;
  }
  static hostlm_model* model_;
};
hostlm_model* CapiProgressTest::model_ = nullptr;

TEST_F(CapiProgressTest, CountsEveryGeneratedTokenOnceInOrder) {
  const hostlm_generate_params g = raw_greedy(10);
  Progress p;
  hostlm_generation_stats s{};
  ASSERT_EQ(hostlm_chat_with_progress(model_, &g, on_text, on_progress, &p, &s), HOSTLM_OK)
      << hostlm_last_error();
  ASSERT_EQ(static_cast<int32_t>(p.generated.size()), s.generated_tokens);
  for (size_t i = 0; i < p.generated.size(); ++i)
    EXPECT_EQ(p.generated[i], static_cast<int32_t>(i + 1));
  EXPECT_EQ(p.max_tokens, 10);
  EXPECT_GT(p.text_calls, 0);  // the same `user` reached the text callback
}

TEST_F(CapiProgressTest, GivesTheSameTextAsPlainChat) {
  const hostlm_generate_params g = raw_greedy(10);
  Progress with, without;
  ASSERT_EQ(hostlm_chat_with_progress(model_, &g, on_text, on_progress, &with, nullptr), HOSTLM_OK);
  ASSERT_EQ(hostlm_chat(model_, &g, on_text, &without, nullptr), HOSTLM_OK);
  EXPECT_EQ(with.content, without.content);
}

TEST_F(CapiProgressTest, MaxTokensIsClampedToTheContextLeft) {
  hostlm_generate_params g = raw_greedy(-1);
  Progress p;
  p.stop_at = 1;
  hostlm_generation_stats s{};
  ASSERT_EQ(hostlm_chat_with_progress(model_, &g, nullptr, on_progress, &p, &s), HOSTLM_OK)
      << hostlm_last_error();
  EXPECT_EQ(p.max_tokens, 256 - s.prompt_tokens);
}

TEST_F(CapiProgressTest, ReturningZeroCancelsAtThatToken) {
  const hostlm_generate_params g = raw_greedy(20);
  Progress p;
  p.stop_at = 3;
  hostlm_generation_stats s{};
  ASSERT_EQ(hostlm_chat_with_progress(model_, &g, on_text, on_progress, &p, &s), HOSTLM_OK)
      << hostlm_last_error();
  if (p.generated.size() < 3) GTEST_SKIP() << "the tiny model stopped before 3 tokens";
  EXPECT_EQ(p.generated.size(), 3u);
  EXPECT_EQ(s.done_reason, HOSTLM_DONE_CANCELLED);
}

TEST_F(CapiProgressTest, NullModelIsAnInvalidArgument) {
  const hostlm_generate_params g = raw_greedy(2);
  EXPECT_EQ(hostlm_chat_with_progress(nullptr, &g, nullptr, nullptr, nullptr, nullptr),
            HOSTLM_ERR_INVALID_ARGUMENT);
  EXPECT_STRNE(hostlm_last_error(), "");
}

TEST_F(CapiProgressTest, ModelGettersDescribeTheLoadedModel) {
  ASSERT_NE(hostlm_model_backend(model_), nullptr);
  EXPECT_STREQ(hostlm_model_backend(model_), "cpu");
  EXPECT_EQ(hostlm_model_n_layers(model_), 4);         // config.json num_hidden_layers
  EXPECT_EQ(hostlm_model_n_ctx_train(model_), 32768);  // max_position_embeddings
  EXPECT_EQ(hostlm_model_context(model_), 256);
}

TEST(CapiModelGetters, NullModelGivesErrorsNotCrashes) {
  EXPECT_EQ(hostlm_model_backend(nullptr), nullptr);
  EXPECT_NE(std::string(hostlm_last_error()).find("NULL"), std::string::npos);
  EXPECT_LT(hostlm_model_n_layers(nullptr), 0);
  EXPECT_LT(hostlm_model_n_ctx_train(nullptr), 0);
  EXPECT_LT(hostlm_model_context(nullptr), 0);
}

}  // namespace
