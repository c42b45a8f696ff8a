// The CUDA backend far out in the context: logits against transformers over the whole
// 65,536-token reference sequence (tools/make_long_reference.py), prefilled in chunks that
// do not divide the window boundaries. Skipped where no GPU can be used.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "cuda_test_support.h"
#include "hostlm/model_loader.h"
#include "plugins/qwen35/long_reference.h"

namespace hostlm {
namespace {

constexpr double kTolerance = 1e-4;  // relative to the reference logit std, as on the CPU

TEST(CudaLongContext, LogitsMatchTransformersFarOut) {
  std::string why;
  if (!testing::cuda_backend_or_reason(why)) GTEST_SKIP() << "no usable CUDA backend: " << why;
  const testing::LongReference ref = testing::load_long_reference();
  const int64_t n = testing::long_context_tokens(static_cast<int64_t>(ref.tokens.size()));
  PluginRegistry registry;
  ModelLoadOptions options;
  options.backend = "cuda";
  options.max_batch = 512;
  LoadedModel loaded(registry, ref.folder, options);
  ASSERT_EQ(loaded.backend().name(), "cuda");
  const auto errors = testing::compare_long_reference(loaded.model(), ref, n, 4093);
  ASSERT_FALSE(errors.empty());
  for (const auto& e : errors) {
    EXPECT_LT(e.max_rel_err, kTolerance) << "window at " << e.start << "+" << e.length;
    RecordProperty("cuda_window_" + std::to_string(e.start) + "_max_rel_err",
                   std::to_string(e.max_rel_err));
    std::printf("cuda window %lld+%lld: max |diff|/std = %.3g\n", static_cast<long long>(e.start),
                static_cast<long long>(e.length), e.max_rel_err);
  }
}

}  // namespace
}  // namespace hostlm
