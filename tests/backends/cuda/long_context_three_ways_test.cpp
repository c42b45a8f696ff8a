// The CUDA backend at the far end of Qwen3.5's 262,144-token window: one forward pass, chunks
// of 509 (which divide nothing) and of 4096 followed by single-token steps all give the same
// logits over the last positions. Skipped where no GPU can be used.
#include <gtest/gtest.h>

#include <cstdio>

#include "cuda_test_support.h"
#include "host/engine/engine_support.h"
#include "host/engine/far_logits.h"

namespace hostlm {
namespace {

constexpr int64_t kTokens = 262144;
constexpr testing::FarWindow kWindow{kTokens - 192, kTokens, 48};

ModelLoadOptions cuda_batches_of(int64_t max_batch) {
  ModelLoadOptions o;
  o.backend = "cuda";
  o.max_batch = max_batch;
  return o;
}

TEST(CudaLongContext, ChunkedAndStepwiseAgreeWithOneShotAt262K) {
  std::string why;
  if (!testing::cuda_backend_or_reason(why)) GTEST_SKIP() << "no usable CUDA backend: " << why;
  const auto tokens = testing::tokens(static_cast<size_t>(kTokens), 7);
  PluginRegistry registry;
  LoadedModel whole(registry, testing::tiny_model_dir(), cuda_batches_of(kTokens));
  ASSERT_EQ(whole.backend().name(), "cuda");
  const std::vector<float> one_shot =
      testing::far_logits(whole.model(), tokens, kWindow, kTokens, false);
  struct Variant {
    int64_t chunk;
    bool stepwise;
  };
  for (const Variant v : {Variant{509, false}, Variant{4096, true}}) {
    LoadedModel chunked(registry, testing::tiny_model_dir(), cuda_batches_of(v.chunk));
    const std::vector<float> got =
        testing::far_logits(chunked.model(), tokens, kWindow, v.chunk, v.stepwise);
    const double diff = testing::max_relative_diff(one_shot, got);
    EXPECT_LT(diff, 1e-4) << "chunks of " << v.chunk << (v.stepwise ? ", then steps" : "");
    std::printf("cuda at %lld tokens, chunks of %lld%s: max |diff| / max |logit| = %.3g\n",
                static_cast<long long>(kTokens), static_cast<long long>(v.chunk),
                v.stepwise ? " then steps" : "", diff);
    RecordProperty("max_rel_diff_chunk_" + std::to_string(v.chunk), std::to_string(diff));
  }
}

}  // namespace
}  // namespace hostlm
