// The experts of the first layers on the CPU and the rest of the model on a GPU (--n-cpu-moe,
// LoadOptions::cpu_moe_layers), with a second CPU backend standing in for the GPU as in
// split_model_test.cpp: those layers' mixture-of-experts blocks load on the host backend,
// their input crosses over and their output back, every cache stays on the device, and the
// logits are bit-identical to the unsplit model's (the same CPU arithmetic on other buffers),
// also combined with --gpu-layers and through the engine. Decode steps that cross are not
// recorded. On a GPU: tests/backends/cuda/logits_test.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "host/engine/engine_support.h"
#include "hostlm/engine.h"
#include "hostlm/engine_stats.h"
#include "hostlm/kv_cache.h"
#include "hostlm/model_loader.h"
#include "step_contract_support.h"

namespace hostlm {
namespace {

std::filesystem::path tiny_moe_dir() {
  return testing::source_dir() / "tests" / "data" / "models" / "tiny-moe-f32";
}

// The host backend, counting the ops it is given (each runs at once).
class CountingCpu final : public testing::ForwardingBackend {
 public:
  explicit CountingCpu(Backend& cpu) : ForwardingBackend(cpu) {}
  int ops = 0;

 protected:
  void issue(std::function<void()> op) override {
    ++ops;
    op();
  }
};

// A device that says it is not the CPU (the engine warms such a backend up) and records the
// longest product it was given.
class NamedDevice final : public testing::ForwardingBackend {
 public:
  explicit NamedDevice(Backend& cpu) : ForwardingBackend(cpu) {}
  int64_t longest = 0;
  std::string name() const override { return "device-stand-in"; }
  void matmul(const Weight& w, const float* x, int64_t T, float* y) override {
    longest = std::max(longest, T);
    ForwardingBackend::matmul(w, x, T, y);
  }
};

class CpuMoe : public ::testing::Test {
 protected:
  // The tiny MoE model has 4 layers (3 linear, then attention), each with 8 experts.
  std::unique_ptr<Model> load(Backend& on, int64_t cpu_moe_layers, int64_t gpu_layers = -1) {
    LoadOptions options;
    options.max_batch = 64;
    options.host_backend = &host;
    options.cpu_moe_layers = cpu_moe_layers;
    options.gpu_layers = gpu_layers;
    return registry.plugin_for(files.files().architecture).load(files.files(), on, options);
  }

  // All logits of a 70-token prompt (a 64-token chunk and a short one), then three steps.
  std::vector<float> run(Model& model) {
    const int64_t V = model.info().n_vocab;
    const std::vector<int32_t> prompt = testing::tokens(70, 5);
    auto seq = model.new_sequence(128);
    std::vector<float> out(prompt.size() * static_cast<size_t>(V));
    model.eval(*seq, prompt, true, out);
    std::vector<float> step(static_cast<size_t>(V));
    for (int32_t token : {4, 8, 15}) {
      model.eval(*seq, std::span<const int32_t>(&token, 1), false, step);
      out.insert(out.end(), step.begin(), step.end());
    }
    return out;
  }

  PluginRegistry registry;
  LoadedModel whole{registry, tiny_moe_dir(), testing::cpu_batches_of(64)};
  OpenedModelFiles files{tiny_moe_dir()};
  std::unique_ptr<Backend> device = create_backend("cpu");
  std::unique_ptr<Backend> host_cpu = create_backend("cpu");
  CountingCpu host{*host_cpu};
};

TEST_F(CpuMoe, ExpertsOfTheFirstLayersLiveOnTheHostAndCachesOnTheDevice) {
  auto split = load(*device, 2);
  const ModelInfo& info = split->info();
  EXPECT_EQ(info.host_layers, 0);
  EXPECT_EQ(info.host_moe_layers, 2);
  // Two of four layers' blocks: router, 8 x 3 experts and the shared expert, half of all
  // mixture-of-experts weights, which are most of this model's.
  EXPECT_GT(info.host_weight_bytes, 0u);
  EXPECT_LT(info.host_weight_bytes, info.weight_bytes / 2);
  auto all = load(*device, -1);
  EXPECT_EQ(all->info().host_moe_layers, 4);
  EXPECT_EQ(all->info().host_weight_bytes, 2 * info.host_weight_bytes);
  EXPECT_EQ(load(*device, 99)->info().host_moe_layers, 4);
  EXPECT_EQ(load(*device, 0)->info().host_moe_layers, 0);
  const CachePlacement placement = CachePlacement::of(*split);
  ASSERT_EQ(placement.state_layers.size(), 3u);
  for (Backend* b : placement.state_layers) EXPECT_EQ(b, device.get());
  for (Backend* b : placement.kv_layers) EXPECT_EQ(b, device.get());
}

TEST_F(CpuMoe, LogitsAreBitIdenticalToTheWholeModel) {
  const std::vector<float> want = run(whole.model());
  for (int64_t n : {1, 3, -1}) {
    auto split = load(*device, n);
    host.ops = 0;
    EXPECT_EQ(run(*split), want) << n << " layers' experts on the host";
    EXPECT_GT(host.ops, 0) << "the blocks ran on the device";
  }
  auto resident = load(*device, 0);
  host.ops = 0;
  run(*resident);
  EXPECT_EQ(host.ops, 0);
}

// Layers 0 and 1 on the host (--gpu-layers 2), layer 2's experts too (--n-cpu-moe 3).
TEST_F(CpuMoe, CombinesWithGpuLayers) {
  auto split = load(*device, 3, 2);
  EXPECT_EQ(split->info().host_layers, 2);
  EXPECT_EQ(split->info().host_moe_layers, 1);
  EXPECT_EQ(run(*split), run(whole.model()));
  // Fewer experts' layers than host layers add nothing.
  EXPECT_EQ(load(*device, 1, 2)->info().host_moe_layers, 0);
}

// A device that routes experts itself would record decode steps (as CUDA does); one whose
// step crosses to the host in the middle may not.
TEST_F(CpuMoe, StepsThatCrossAreNotRecorded) {
  testing::RoutingCpu routing(*device);
  auto crossing = load(routing, 1);
  run(*crossing);
  EXPECT_EQ(routing.recorded_steps, 0);
  auto resident = load(routing, 0);
  run(*resident);
  EXPECT_GT(routing.recorded_steps, 0) << "the count checks nothing";
}

// The engine's warm-up at construction takes a whole prefill chunk on a GPU, but only a short
// prompt when part of the model runs on the CPU.
TEST_F(CpuMoe, WarmUpIsShortWithExpertsOnTheHost) {
  EngineOptions options = testing::quiet_options();
  options.max_sequences = 2;
  NamedDevice named(*device);
  auto resident = load(named, 0);
  { Engine engine(*resident, options); }
  EXPECT_EQ(named.longest, 64);  // the model's batch limit, below the default chunk
  named.longest = 0;
  auto split = load(named, 1);
  { Engine engine(*split, options); }
  EXPECT_GT(named.longest, 1);
  EXPECT_LE(named.longest, 32);
}

TEST_F(CpuMoe, EngineGivesTheWholeModelsTokens) {
  EngineOptions options = testing::quiet_options();
  options.max_sequences = 3;
  options.prefill_chunk = 40;
  const std::vector<int32_t> first = testing::tokens(90, 21);
  const std::vector<int32_t> follow_up = testing::concat(first, testing::tokens(20, 22));

  auto split = load(*device, 2);
  std::vector<std::vector<int32_t>> want, got;
  for (Model* model : {&whole.model(), split.get()}) {
    Engine engine(*model, options);
    auto& out = model == split.get() ? got : want;
    out.push_back(engine.generate(testing::greedy_request(first, 12)).tokens);
    // The follow-up shares the first prompt: pages and a state snapshot come from the cache.
    const GenerationResult again = engine.generate(testing::greedy_request(follow_up, 12));
    EXPECT_GT(again.cached_tokens, 0);
    out.push_back(again.tokens);
  }
  EXPECT_EQ(want, got);
}

// The load line and the memory plan name what runs on the CPU.
TEST(CpuShare, NamesTheLayersAndTheExperts) {
  EXPECT_EQ(describe_cpu_share(0, 0), "");
  EXPECT_EQ(describe_cpu_share(1, 0), "layer 0 and the token embedding");
  EXPECT_EQ(describe_cpu_share(0, 3), "the experts of layers 0-2");
  EXPECT_EQ(describe_cpu_share(2, 1), "layers 0-1 and the token embedding, the experts of layer 2");
  MemoryPlan plan;
  plan.host_moe_layers = 2;
  plan.host_weight_bytes = 3 << 20;
  const std::string text = plan.describe();
  EXPECT_NE(text.find("of which on the cpu"), std::string::npos) << text;
  EXPECT_NE(text.find("the experts of layers 0-1: weights 3"), std::string::npos) << text;
  plan.host_moe_layers = 0;
  EXPECT_EQ(plan.describe().find("of which on the cpu"), std::string::npos);
}

}  // namespace
}  // namespace hostlm
