// The mixture-of-experts block routed on the backend (MoeMlp's path for small decode steps
// where the backend offers it, as CUDA does; longer inputs take the backend's routes back to
// the host), run on the CPU: a forwarding backend offers the CPU backend's implementations of
// those ops, so the block's own arithmetic (combined experts, scaled SwiGLU segments, the gated
// shared expert, routes sent back) is checked here, without a GPU, against the host-routed path
// and against transformers.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "hostlm/model_loader.h"
#include "hostlm/modules.h"
#include "step_contract_support.h"

namespace hostlm {
namespace {

struct Routed {
  PluginRegistry registry;
  testing::ReferenceModel ref = testing::load_reference("tiny-moe-f32");
  OpenedModelFiles files{ref.folder};
  std::unique_ptr<Backend> cpu = create_backend("cpu");
  testing::RoutingCpu backend{*cpu};
  std::unique_ptr<Model> model =
      registry.plugin_for(files.files().architecture).load(files.files(), backend, {});
};

// Token by token every block runs the combined experts; one prompt runs each expert over its
// rows, with the routes the backend picked. Float32 both ways, summed in other orders.
TEST(Qwen35MoeBackendRouting, StepsMatchThePrompt) {
  Routed r;
  const auto& tokens = r.ref.sequences.back().tokens;
  const std::vector<float> prompt = testing::all_logits(*r.model, tokens);
  EXPECT_EQ(r.backend.routes, 0);
  EXPECT_GT(r.backend.prompt_routes, 0);
  const auto V = static_cast<size_t>(r.ref.vocab);
  auto seq = r.model->new_sequence(static_cast<int64_t>(tokens.size()));
  std::vector<float> step(V);
  double worst = 0, scale = 0;
  for (size_t t = 0; t < tokens.size(); ++t) {
    r.model->eval(*seq, std::span<const int32_t>(&tokens[t], 1), false, step);
    for (size_t v = 0; v < V; ++v) {
      worst = std::max(worst, static_cast<double>(std::abs(step[v] - prompt[t * V + v])));
      scale = std::max(scale, static_cast<double>(std::abs(prompt[t * V + v])));
    }
  }
  EXPECT_EQ(r.backend.routes, static_cast<int>(tokens.size() * 4));  // 4 layers a token
  EXPECT_LT(worst / scale, 1e-5);
}

TEST(Qwen35MoeBackendRouting, GreedyGenerationMatchesTransformers) {
  Routed r;
  EXPECT_EQ(testing::greedy_generate(*r.model, r.ref.greedy_prompt, r.ref.greedy_generated.size()),
            r.ref.greedy_generated);
  EXPECT_GT(r.backend.routes, 0);
}

// Two sequences decoded together are two rows of one step: routed on the backend, as the
// plain CPU backend's host routing gives them.
TEST(Qwen35MoeBackendRouting, TwoSequencesInOneStepMatchHostRouting) {
  const auto nobody = [](int) { return false; };
  Routed r;
  const std::vector<float> routed = testing::decode_two(*r.model, 6, nobody);
  EXPECT_EQ(r.backend.routes, 6 * 4);
  EXPECT_EQ(r.backend.prompt_routes, 2 * 4);  // the two prompts
  ModelLoadOptions cpu;
  cpu.backend = "cpu";
  LoadedModel plain(r.registry, r.ref.folder, cpu);
  const std::vector<float> host = testing::decode_two(plain.model(), 6, nobody);
  ASSERT_EQ(routed.size(), host.size());
  double worst = 0, scale = 0;
  for (size_t i = 0; i < routed.size(); ++i) {
    worst = std::max(worst, static_cast<double>(std::abs(routed[i] - host[i])));
    scale = std::max(scale, static_cast<double>(std::abs(host[i])));
  }
  EXPECT_LT(worst / scale, 1e-5);
}

// A prompt whose routes the backend picked and sent back has the logits of one routed on the
// host: here both pick them with the same function (route_experts), so the bits are equal.
TEST(Qwen35MoeBackendRouting, PromptRoutedOnTheBackendEqualsHostRouted) {
  Routed r;
  const auto& tokens = r.ref.sequences.back().tokens;
  const std::vector<float> routed = testing::all_logits(*r.model, tokens);
  EXPECT_GT(r.backend.prompt_routes, 0);
  ModelLoadOptions cpu;
  cpu.backend = "cpu";
  LoadedModel plain(r.registry, r.ref.folder, cpu);
  EXPECT_EQ(routed, testing::all_logits(plain.model(), tokens));
}

}  // namespace
}  // namespace hostlm
