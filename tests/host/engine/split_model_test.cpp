// A model split between two backends (--gpu-layers: the first layers and the embedding on the
// CPU, the rest on a GPU), with a second CPU backend standing in for the GPU so that it runs
// here: each layer's weights, KV pages and recurrent state live on that layer's backend, the
// hidden state crosses once per forward, and the results are bit-identical to the unsplit
// model (the same CPU arithmetic on other buffers) through eval, the engine, its prefix cache
// and state snapshots. The CUDA split itself: tests/backends/cuda/logits_test.cpp.
#include <gtest/gtest.h>

#include <memory>

#include "engine_support.h"
#include "hostlm/kv_cache.h"

namespace hostlm {
namespace {

class SplitModel : public ::testing::Test {
 protected:
  // The tiny model has 3 linear layers then 1 attention layer; 2 "GPU" layers put linear
  // layer 2 and the attention layer on `device`, linear layers 0 and 1 on `host`.
  static constexpr int64_t kGpuLayers = 2;

  void SetUp() override {
    LoadOptions options;
    options.max_batch = 64;
    options.host_backend = host.get();
    options.gpu_layers = kGpuLayers;
    split = registry.plugin_for(files.files().architecture).load(files.files(), *device, options);
  }

  PluginRegistry registry;
  LoadedModel whole{registry, testing::tiny_model_dir(), testing::cpu_batches_of(64)};
  OpenedModelFiles files{testing::tiny_model_dir()};
  std::unique_ptr<Backend> device = create_backend("cpu");
  std::unique_ptr<Backend> host = create_backend("cpu");
  std::unique_ptr<Model> split;
};

TEST_F(SplitModel, LayersAndTheirCachesLiveOnTheirBackends) {
  const ModelInfo& info = split->info();
  EXPECT_EQ(info.host_layers, info.n_layers - kGpuLayers);
  EXPECT_GT(info.host_weight_bytes, 0u);
  EXPECT_LT(info.host_weight_bytes, info.weight_bytes);
  EXPECT_EQ(split->backend(), device.get());
  const CachePlacement placement = CachePlacement::of(*split);
  ASSERT_EQ(placement.state_layers.size(), 3u);
  EXPECT_EQ(placement.state_layers[0], host.get());
  EXPECT_EQ(placement.state_layers[1], host.get());
  EXPECT_EQ(placement.state_layers[2], device.get());
  ASSERT_EQ(placement.kv_layers.size(), 1u);
  EXPECT_EQ(placement.kv_layers[0], device.get());
  // The state slots keep one array per run of layers on one backend.
  RecurrentStateSlots slots(placement, split->cache_layout(), 2);
  ASSERT_EQ(slots.parts().size(), 2u);
  EXPECT_EQ(slots.parts()[0].backend, host.get());
  EXPECT_EQ(slots.parts()[0].n_layers, 2);
  EXPECT_EQ(slots.parts()[1].backend, device.get());
  EXPECT_EQ(slots.conv(1, 2), slots.part_slot(slots.parts()[1], 1));
}

TEST_F(SplitModel, LogitsAreBitIdenticalToTheWholeModel) {
  const std::vector<int32_t> prompt = testing::tokens(100, 7);
  const int64_t V = whole.model().info().n_vocab;
  auto a = whole.model().new_sequence(128);
  auto b = split->new_sequence(128);
  std::vector<float> want(static_cast<size_t>(100 * V)), got(want.size());
  // Chunks of the 64-token batch limit, then single steps.
  whole.model().eval(*a, prompt, true, want);
  split->eval(*b, prompt, true, got);
  EXPECT_EQ(want, got);
  std::vector<float> step_want(static_cast<size_t>(V)), step_got(step_want.size());
  for (int32_t token : {3, 9, 27}) {
    whole.model().eval(*a, std::span<const int32_t>(&token, 1), false, step_want);
    split->eval(*b, std::span<const int32_t>(&token, 1), false, step_got);
    EXPECT_EQ(step_want, step_got) << "token " << token;
  }
}

TEST_F(SplitModel, EngineWithPrefixCacheGivesTheWholeModelsTokens) {
  EngineOptions options = testing::quiet_options();
  options.max_sequences = 3;
  options.prefill_chunk = 40;
  const std::vector<int32_t> first = testing::tokens(150, 11);
  // The follow-up shares the first prompt: the prefix cache restores pages and a state
  // snapshot from both backends.
  const std::vector<int32_t> follow_up = testing::concat(first, testing::tokens(20, 12));
  std::vector<std::vector<int32_t>> want, got;
  for (Model* model : {&whole.model(), split.get()}) {
    Engine engine(*model, options);
    auto& out = model == split.get() ? got : want;
    out.push_back(engine.generate(testing::greedy_request(first, 16)).tokens);
    const auto again = engine.generate(testing::greedy_request(follow_up, 16));
    EXPECT_GT(again.cached_tokens, 0);
    out.push_back(again.tokens);
  }
  EXPECT_EQ(want, got);
}

}  // namespace
}  // namespace hostlm
