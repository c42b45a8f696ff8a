// Model::eval_hidden (embeddings) gives the states the logits are made from: for the tied
// tiny model, each token's hidden state times the embedding matrix is its row of logits.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>

#include "hostlm/model_loader.h"
#include "hostlm/safetensors.h"
#include "hostlm/tensor_convert.h"

namespace hostlm {
namespace {

std::filesystem::path tiny_tied() {
  const char* src = std::getenv("HOSTLM_SOURCE_DIR");
  return std::filesystem::path(src ? src : ".") / "tests/data/models/tiny-tied-f32";
}

TEST(Qwen35HiddenStates, ProjectThroughTheTiedEmbeddingsOntoTheLogits) {
  PluginRegistry registry;
  ModelLoadOptions options;
  options.backend = "cpu";
  options.max_batch = 8;  // several forward calls for the prompt below
  LoadedModel loaded(registry, tiny_tied(), options);
  Model& model = loaded.model();
  const int64_t H = model.embedding_size();
  const int64_t V = model.info().n_vocab;
  ASSERT_EQ(H, 64);
  const std::vector<int32_t> tokens = {1, 17, 42, 1999, 5, 5, 300, 7, 8, 9, 10, 11, 12};
  const auto T = static_cast<int64_t>(tokens.size());

  std::vector<float> logits(static_cast<size_t>(T * V));
  auto a = model.new_sequence(T);
  model.eval(*a, tokens, true, logits);
  std::vector<float> hidden(static_cast<size_t>(T * H));
  auto b = model.new_sequence(T);
  model.eval_hidden(*b, tokens, hidden);
  EXPECT_EQ(b->n_past(), T);

  const auto hf = HfCheckpoint::open(tiny_tied());
  const TensorView* embed = hf->find("model.embed_tokens.weight");
  ASSERT_NE(embed, nullptr);
  const std::vector<float> E = tensor_to_f32(*embed);  // [V, H]
  double worst = 0, scale = 0;
  for (int64_t t = 0; t < T; ++t)
    for (int64_t v = 0; v < V; ++v) {
      double dot = 0;
      for (int64_t d = 0; d < H; ++d) dot += static_cast<double>(hidden[t * H + d]) * E[v * H + d];
      worst = std::max(worst, std::fabs(dot - logits[t * V + v]));
      scale = std::max(scale, std::fabs(static_cast<double>(logits[t * V + v])));
    }
  EXPECT_LT(worst, 1e-4 * std::max(1.0, scale));
}

}  // namespace
}  // namespace hostlm
