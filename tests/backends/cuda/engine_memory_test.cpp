// The engine's memory plan on a GPU, where the KV pool is allocated whole at load: running
// contexts of 65,536 tokens or more get no prefix-cache reserve beyond them (memory_plan.cpp),
// shorter ones keep it, and without the reserve the cache still lives in the pages a running
// request leaves free, so a request that extends an earlier prompt computes only what is new.
// Long windows also get two state snapshots per sequence instead of four, and 512-token
// prefill steps instead of 2048 unless the caller names a step. Skipped where no GPU can be used.
#include <gtest/gtest.h>

#include <string>

#include "cuda_test_support.h"
#include "host/engine/engine_support.h"
#include "hostlm/kv_cache.h"

namespace hostlm {
namespace {

TEST(CudaEngineMemory, LongWindowsHaveNoCacheReserveAndStillReusePrefixes) {
  std::string why;
  if (!testing::cuda_backend_or_reason(why)) GTEST_SKIP() << "no usable CUDA backend: " << why;
  PluginRegistry registry;
  ModelLoadOptions on_cuda;
  on_cuda.backend = "cuda";
  LoadedModel loaded(registry, testing::tiny_model_dir(), on_cuda);
  for (int64_t context : {int64_t{32768}, int64_t{65536}}) {
    SCOPED_TRACE("context " + std::to_string(context));
    EngineOptions options = testing::quiet_options();
    options.context = context;
    options.max_sequences = 1;
    options.snapshot_interval = 64;
    Engine engine(loaded.model(), options);
    const MemoryPlan& plan = engine.memory_plan();
    if (context < 65536) {
      EXPECT_GE(plan.kv_pages_for_cache, 64);
      EXPECT_EQ(plan.snapshot_slots, 4);
    } else {
      EXPECT_EQ(plan.kv_pages_for_cache, 0);
      EXPECT_EQ(plan.snapshot_slots, 2);
    }
    EXPECT_EQ(plan.kv_pages, context / kKvPageTokens + plan.kv_pages_for_cache);

    const auto first = testing::tokens(150, 1);
    const GenerationResult cold = engine.generate(testing::greedy_request(first, 4));
    EXPECT_EQ(cold.cached_tokens, 0);
    const GenerationResult warm =
        engine.generate(testing::greedy_request(testing::concat(first, testing::tokens(20, 3)), 4));
    EXPECT_EQ(warm.cached_tokens, 150);
    EXPECT_EQ(warm.prompt_eval_count, 20);
  }
}

// The default prefill step on a GPU: 2048 tokens, 512 (llama.cpp's micro-batch) for a long
// window, 4096 for kManySequences or more sequences with shorter windows; whatever the caller
// gives wins.
TEST(CudaEngineMemory, LongWindowsGetShorterPrefillStepsByDefault) {
  std::string why;
  if (!testing::cuda_backend_or_reason(why)) GTEST_SKIP() << "no usable CUDA backend: " << why;
  PluginRegistry registry;
  struct Case {
    int64_t context, max_batch, sequences, expected;
  };
  for (const Case c :
       {Case{0, 0, 0, 2048}, Case{32768, 0, 1, 2048}, Case{kLongWindowTokens, 0, 1, 512},
        Case{262144, 0, 1, 512}, Case{262144, 2048, 1, 2048},
        Case{4096, 0, kManySequences - 1, 2048}, Case{4096, 0, kManySequences, 4096},
        Case{kLongWindowTokens, 0, 64, 512}, Case{4096, 2048, 64, 2048}}) {
    SCOPED_TRACE("context " + std::to_string(c.context) + ", max_batch " +
                 std::to_string(c.max_batch) + ", sequences " + std::to_string(c.sequences));
    ModelLoadOptions options;
    options.backend = "cuda";
    options.context = c.context;
    options.max_batch = c.max_batch;
    options.max_sequences = c.sequences;
    LoadedModel loaded(registry, testing::tiny_model_dir(), options);
    EXPECT_EQ(loaded.model().max_batch_tokens(), c.expected);
  }
}

}  // namespace
}  // namespace hostlm
