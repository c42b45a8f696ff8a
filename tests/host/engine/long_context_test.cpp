// Far out in a long context, evaluating a prompt in one forward pass, in chunks of 509 or of
// 4096 tokens, or its last stretch one token at a time gives the same logits: the pages,
// positions and carried recurrent state line up beyond 32K tokens.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "engine_support.h"

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

// Logits of positions [kFar, kTokens) when the prompt goes through in chunks of `chunk`
// (the last kStepwise tokens one by one when `stepwise`).
std::vector<float> far_logits(Model& model, const std::vector<int32_t>& tokens, int64_t chunk,
                              bool stepwise) {
  const int64_t V = model.info().n_vocab;
  auto seq = model.new_sequence(kTokens);
  std::vector<float> out(static_cast<size_t>((kTokens - kFar) * V)), logits;
  const int64_t chunked_end = stepwise ? kTokens - kStepwise : kTokens;
  for (int64_t at = 0; at < kTokens;) {
    const int64_t n = at < chunked_end ? std::min(chunk, chunked_end - at) : 1;
    const bool wanted = at + n > kFar;
    logits.resize(static_cast<size_t>((wanted ? n : 1) * V));
    model.eval(*seq, std::span(tokens).subspan(static_cast<size_t>(at), static_cast<size_t>(n)),
               wanted, logits);
    for (int64_t t = std::max(at, kFar); wanted && t < at + n; ++t)
      std::copy_n(logits.begin() + (t - at) * V, V, out.begin() + (t - kFar) * V);
    at += n;
  }
  return out;
}

TEST(LongContext, ChunkedAndStepwiseAgreeWithOneShotBeyond32K) {
  if (kSlowBuild)
    GTEST_SKIP() << "needs a Release build: a " << kTokens
                 << "-token prompt takes minutes in Debug or under sanitizers";
  const auto tokens = testing::tokens(static_cast<size_t>(kTokens), 42);
  PluginRegistry registry;
  // One forward pass for the whole prompt.
  LoadedModel whole(registry, testing::tiny_model_dir(), testing::cpu_batches_of(kTokens));
  const std::vector<float> one_shot = far_logits(whole.model(), tokens, kTokens, false);
  double scale = 0;
  for (float v : one_shot) scale = std::max(scale, static_cast<double>(std::abs(v)));
  ASSERT_GT(scale, 0);
  struct Variant {
    int64_t chunk;
    bool stepwise;
  };
  for (const Variant v : {Variant{509, false}, Variant{4096, true}}) {
    LoadedModel chunked(registry, testing::tiny_model_dir(), testing::cpu_batches_of(v.chunk));
    const std::vector<float> got = far_logits(chunked.model(), tokens, v.chunk, v.stepwise);
    double worst = 0;
    for (size_t i = 0; i < got.size(); ++i)
      worst = std::max(worst, static_cast<double>(std::abs(got[i] - one_shot[i])));
    EXPECT_LT(worst / scale, 1e-5) << "chunks of " << v.chunk << (v.stepwise ? ", then steps" : "");
    RecordProperty("max_rel_diff_chunk_" + std::to_string(v.chunk), std::to_string(worst / scale));
  }
}

}  // namespace
}  // namespace hostlm
