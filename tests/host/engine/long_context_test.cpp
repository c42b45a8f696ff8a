// Far out in a long context, evaluating a prompt in one forward pass, in chunks of 509 or of
// 4096 tokens, or its last stretch one token at a time gives the same logits: the pages,
// positions and carried recurrent state line up beyond 32K tokens.
#include <gtest/gtest.h>

#include "engine_support.h"
#include "far_logits.h"

namespace hostlm {
namespace {

#if defined(__SANITIZE_ADDRESS__) || !defined(NDEBUG)
constexpr bool kSlowBuild = true;
#else
constexpr bool kSlowBuild = false;
#endif

constexpr int64_t kFar = 32768;  // positions compared: kFar .. kTokens - 1
constexpr int64_t kTokens = kFar + 192;
constexpr int64_t kStepwise = 48;  // the last tokens, one at a time

constexpr testing::FarWindow kWindow{kFar, kTokens, kStepwise};

TEST(LongContext, ChunkedAndStepwiseAgreeWithOneShotBeyond32K) {
  if (kSlowBuild)
    GTEST_SKIP() << "needs a Release build: a " << kTokens
                 << "-token prompt takes minutes in Debug or under sanitizers";
  const auto tokens = testing::tokens(static_cast<size_t>(kTokens), 42);
  PluginRegistry registry;
  // One forward pass for the whole prompt.
  LoadedModel whole(registry, testing::tiny_model_dir(), testing::cpu_batches_of(kTokens));
  const std::vector<float> one_shot =
      testing::far_logits(whole.model(), tokens, kWindow, kTokens, false);
  struct Variant {
    int64_t chunk;
    bool stepwise;
  };
  for (const Variant v : {Variant{509, false}, Variant{4096, true}}) {
    LoadedModel chunked(registry, testing::tiny_model_dir(), testing::cpu_batches_of(v.chunk));
    const std::vector<float> got =
        testing::far_logits(chunked.model(), tokens, kWindow, v.chunk, v.stepwise);
    const double diff = testing::max_relative_diff(one_shot, got);
    EXPECT_LT(diff, 1e-5) << "chunks of " << v.chunk << (v.stepwise ? ", then steps" : "");
    RecordProperty("max_rel_diff_chunk_" + std::to_string(v.chunk), std::to_string(diff));
  }
}

}  // namespace
}  // namespace hostlm
