// The C API as a binding sees it: only hostlm.h, no C++ library types.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "hostlm.h"

extern "C" int hostlm_capi_c_smoke(void);  // header_check.c, compiled as C

namespace {

std::string model_path() {
  const char* src = std::getenv("HOSTLM_SOURCE_DIR");
  return std::string(src ? src : ".") + "/tests/data/models/tiny-tied-f32";
}

struct Collected {
  std::string content, reasoning;
  int calls = 0;
  int stop_after = -1;  // return 0 on this call (1-based); -1: never
};

int32_t collect(const char* text, int32_t kind, void* user) {
  auto* c = static_cast<Collected*>(user);
  (kind == HOSTLM_TEXT_REASONING ? c->reasoning : c->content) += text;
  ++c->calls;
  return c->calls == c->stop_after ? 0 : 1;
}

class CapiTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    hostlm_model_params p = hostlm_model_default_params();
    p.backend = "cpu";
    p.context = 512;
    model_ = hostlm_model_load(model_path().c_str(), p);
    ASSERT_NE(model_, nullptr) << hostlm_last_error();
  }
  static void TearDownTestSuite() {
    hostlm_model_free(model_);
    model_ = nullptr;
  }

  static hostlm_generate_params greedy(const char* messages, int32_t max_tokens) {
    hostlm_generate_params g = hostlm_generate_default_params();
    g.messages_json = messages;
    g.temperature = 0.f;
    g.max_tokens = max_tokens;
    return g;
  }

  static hostlm_model* model_;
};
hostlm_model* CapiTest::model_ = nullptr;

constexpr const char* kHello = R"([{"role": "user", "content": "Hello there"}])";

TEST(CapiHeader, CompilesAsCAndReportsItsVersion) {
  EXPECT_EQ(hostlm_capi_c_smoke(), HOSTLM_C_API_VERSION);
}

TEST(CapiLoad, BadPathReturnsNullWithAMessageNamingIt) {
  hostlm_model* m = hostlm_model_load("/nonexistent/hostlm-model", hostlm_model_default_params());
  EXPECT_EQ(m, nullptr);
  EXPECT_NE(std::string(hostlm_last_error()).find("/nonexistent/hostlm-model"), std::string::npos)
      << hostlm_last_error();
  hostlm_model_free(nullptr);  // ignored
}

// gpu_layers as --gpu-layers: -1 by default, 0 the CPU backend, a bad count named, and a
// contradiction with the asked backend refused (a split needs a GPU: the CUDA tests).
TEST(CapiLoad, GpuLayersAreCheckedAndUsed) {
  hostlm_model_params p = hostlm_model_default_params();
  EXPECT_EQ(p.gpu_layers, -1);
  p.context = 256;
  p.gpu_layers = 0;
  hostlm_model* m = hostlm_model_load(model_path().c_str(), p);
  ASSERT_NE(m, nullptr) << hostlm_last_error();
  EXPECT_STREQ(hostlm_model_backend(m), "cpu");
  hostlm_model_free(m);
  p.gpu_layers = -2;
  EXPECT_EQ(hostlm_model_load(model_path().c_str(), p), nullptr);
  EXPECT_NE(std::string(hostlm_last_error()).find("-2"), std::string::npos) << hostlm_last_error();
  p.gpu_layers = 0;
  p.backend = "cuda";
  EXPECT_EQ(hostlm_model_load(model_path().c_str(), p), nullptr);
  EXPECT_NE(std::string(hostlm_last_error()).find("gpu layers 0"), std::string::npos)
      << hostlm_last_error();
}

// cpu_moe_layers as --n-cpu-moe: 0 by default, a bad count named, nothing to do on the CPU
// backend (the split itself: tests/plugins/qwen35/cpu_moe_test.cpp and the CUDA tests).
TEST(CapiLoad, CpuMoeLayersAreChecked) {
  hostlm_model_params p = hostlm_model_default_params();
  EXPECT_EQ(p.cpu_moe_layers, 0);
  p.context = 256;
  p.backend = "cpu";
  p.cpu_moe_layers = -2;
  EXPECT_EQ(hostlm_model_load(model_path().c_str(), p), nullptr);
  EXPECT_NE(std::string(hostlm_last_error()).find("cpu moe layers: -2"), std::string::npos)
      << hostlm_last_error();
  p.cpu_moe_layers = -1;
  hostlm_model* m = hostlm_model_load(model_path().c_str(), p);
  ASSERT_NE(m, nullptr) << hostlm_last_error();
  EXPECT_STREQ(hostlm_model_backend(m), "cpu");
  hostlm_model_free(m);
}

// state_type as --state-type: "f32" by default, f16 and bf16 load, anything else is named.
TEST(CapiLoad, StateTypeIsCheckedAndUsed) {
  hostlm_model_params p = hostlm_model_default_params();
  EXPECT_STREQ(p.state_type, "f32");
  p.context = 256;
  p.backend = "cpu";
  p.state_type = "q4_0";
  EXPECT_EQ(hostlm_model_load(model_path().c_str(), p), nullptr);
  EXPECT_NE(std::string(hostlm_last_error()).find("q4_0"), std::string::npos)
      << hostlm_last_error();
  for (const char* type : {"f16", "bf16", static_cast<const char*>(nullptr)}) {
    p.state_type = type;
    hostlm_model* m = hostlm_model_load(model_path().c_str(), p);
    ASSERT_NE(m, nullptr) << hostlm_last_error();
    hostlm_model_free(m);
  }
}

TEST(CapiLoad, CacheOptionsAreCheckedAndUsed) {
  hostlm_model_params p = hostlm_model_default_params();
  EXPECT_STREQ(p.kv_type, "f16");
  EXPECT_EQ(p.prefix_cache, 1);
  EXPECT_EQ(p.kv_cache_mib, 0);
  p.backend = "cpu";
  p.context = 256;
  p.kv_type = "q5_k";
  EXPECT_EQ(hostlm_model_load(model_path().c_str(), p), nullptr);
  EXPECT_NE(std::string(hostlm_last_error()).find("q5_k"), std::string::npos)
      << hostlm_last_error();
  p.kv_type = "f16";
  p.kv_cache_mib = -1;
  EXPECT_EQ(hostlm_model_load(model_path().c_str(), p), nullptr);
  EXPECT_NE(std::string(hostlm_last_error()).find("kv_cache_mib"), std::string::npos);
  // Q8_0 rows, no prefix cache, a small pool: generations still run and stay deterministic.
  p.kv_type = "q8_0";
  p.prefix_cache = 0;
  p.kv_cache_mib = 1;
  hostlm_model* m = hostlm_model_load(model_path().c_str(), p);
  ASSERT_NE(m, nullptr) << hostlm_last_error();
  hostlm_generate_params g = hostlm_generate_default_params();
  g.messages_json = R"([{"role": "user", "content": "Hello there"}])";
  g.temperature = 0;
  g.max_tokens = 8;
  Collected first, second;
  ASSERT_EQ(hostlm_chat(m, &g, collect, &first, nullptr), HOSTLM_OK) << hostlm_last_error();
  ASSERT_EQ(hostlm_chat(m, &g, collect, &second, nullptr), HOSTLM_OK) << hostlm_last_error();
  EXPECT_EQ(first.content + first.reasoning, second.content + second.reasoning);
  EXPECT_GT(first.calls, 0);
  hostlm_model_free(m);
}

TEST_F(CapiTest, VocabIsPositive) { EXPECT_GT(hostlm_model_n_vocab(model_), 0); }

TEST_F(CapiTest, TokenizeRoundTripsAndAsksForRoomWhenShort) {
  const char* text = "Hello, world! ünïcode";
  const int32_t needed = hostlm_tokenize(model_, text, 0, nullptr, 0);
  ASSERT_LT(needed, 0) << hostlm_last_error();
  std::vector<int32_t> ids(static_cast<size_t>(-needed));
  ASSERT_EQ(hostlm_tokenize(model_, text, 0, ids.data(), ids.size()), -needed);

  char small[2];
  const int32_t text_needed = hostlm_detokenize(model_, ids.data(), ids.size(), 0, small, 2);
  ASSERT_LT(text_needed, 0);
  std::string out(static_cast<size_t>(-text_needed), '\0');
  const int32_t len = hostlm_detokenize(model_, ids.data(), ids.size(), 0, out.data(), out.size());
  ASSERT_GE(len, 0);
  out.resize(static_cast<size_t>(len));
  EXPECT_EQ(out, text);
}

TEST_F(CapiTest, ParseSpecialDecidesWhetherControlTokensMatch) {
  std::vector<int32_t> ids(64);
  const int32_t special = hostlm_tokenize(model_, "<|im_start|>", 1, ids.data(), ids.size());
  const int32_t plain = hostlm_tokenize(model_, "<|im_start|>", 0, ids.data(), ids.size());
  EXPECT_EQ(special, 1);
  EXPECT_GT(plain, 1);
}

TEST_F(CapiTest, GreedyChatIsDeterministicAndFillsStats) {
  const hostlm_generate_params g = greedy(kHello, 12);
  Collected first, second;
  hostlm_generation_stats s1{}, s2{};
  ASSERT_EQ(hostlm_chat(model_, &g, collect, &first, &s1), HOSTLM_OK) << hostlm_last_error();
  ASSERT_EQ(hostlm_chat(model_, &g, collect, &second, &s2), HOSTLM_OK) << hostlm_last_error();
  EXPECT_EQ(first.content, second.content);
  EXPECT_EQ(first.reasoning, second.reasoning);
  EXPECT_GT(s1.prompt_tokens, 0);
  EXPECT_GT(s1.generated_tokens, 0);
  EXPECT_LE(s1.generated_tokens, 12);
  EXPECT_EQ(s1.generated_tokens, s2.generated_tokens);
  EXPECT_TRUE(s1.done_reason == HOSTLM_DONE_STOP || s1.done_reason == HOSTLM_DONE_LENGTH);
  EXPECT_GE(s1.generate_ms, 0.0);
}

TEST_F(CapiTest, RawPromptGeneratesContent) {
  hostlm_generate_params g = greedy(nullptr, 6);
  g.prompt = "The capital of France is";
  Collected c;
  hostlm_generation_stats s{};
  ASSERT_EQ(hostlm_chat(model_, &g, collect, &c, &s), HOSTLM_OK) << hostlm_last_error();
  EXPECT_TRUE(c.reasoning.empty());
  EXPECT_GT(s.generated_tokens, 0);
}

TEST_F(CapiTest, CallbackReturningZeroStopsEarly) {
  hostlm_generate_params g = greedy(kHello, 40);
  g.think = 0;
  Collected all;
  ASSERT_EQ(hostlm_chat(model_, &g, collect, &all, nullptr), HOSTLM_OK) << hostlm_last_error();
  if (all.calls < 2) GTEST_SKIP() << "the tiny model answered in one piece";
  Collected stopped;
  stopped.stop_after = 1;
  hostlm_generation_stats s{};
  ASSERT_EQ(hostlm_chat(model_, &g, collect, &stopped, &s), HOSTLM_OK) << hostlm_last_error();
  EXPECT_EQ(stopped.calls, 1);
  EXPECT_EQ(s.done_reason, HOSTLM_DONE_CANCELLED);
}

TEST_F(CapiTest, BadInputIsAnInvalidArgumentWithAMessage) {
  const char* bad[] = {
      "not json",
      R"({"role": "user"})",
      R"([{"role": "user", "content": 5}])",
      "[]",
  };
  for (const char* messages : bad) {
    const hostlm_generate_params g = greedy(messages, 4);
    EXPECT_EQ(hostlm_chat(model_, &g, collect, nullptr, nullptr), HOSTLM_ERR_INVALID_ARGUMENT)
        << messages;
    EXPECT_STRNE(hostlm_last_error(), "") << messages;
  }
  hostlm_generate_params both = greedy(kHello, 4);
  both.prompt = "x";
  EXPECT_EQ(hostlm_chat(model_, &both, nullptr, nullptr, nullptr), HOSTLM_ERR_INVALID_ARGUMENT);
  hostlm_generate_params think = greedy(kHello, 4);
  think.think = 7;
  EXPECT_EQ(hostlm_chat(model_, &think, nullptr, nullptr, nullptr), HOSTLM_ERR_INVALID_ARGUMENT);
  hostlm_generate_params penalty = greedy(kHello, 4);
  penalty.repeat_penalty = 0.f;
  EXPECT_EQ(hostlm_chat(model_, &penalty, nullptr, nullptr, nullptr), HOSTLM_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(hostlm_chat(nullptr, &penalty, nullptr, nullptr, nullptr), HOSTLM_ERR_INVALID_ARGUMENT);
}

}  // namespace
