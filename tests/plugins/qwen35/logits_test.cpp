// Given tiny random Qwen3.5 checkpoints and logits computed by Hugging Face transformers,
// hostlm's forward pass reproduces them from the HF folder and from a GGUF it converted.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <numeric>

#include "hostlm/error.h"
#include "hostlm/model_loader.h"
#include "reference_data.h"

namespace hostlm {
namespace {

using testing::all_logits;
using testing::load_reference;
using testing::max_relative_error;
using testing::ReferenceModel;

// Weights are used as stored (F32/BF16/F16) by both sides and all arithmetic is float32,
// so every dtype is held to the same tolerance, relative to the reference logit std.
constexpr double kTolerance = 1e-4;

const char* kModels[] = {"tiny-tied-f32", "tiny-untied-bf16", "tiny-vl-dkdv-f16", "tiny-moe-f32"};

void expect_matches_reference(Model& model, const ReferenceModel& ref, const std::string& what) {
  ASSERT_EQ(model.info().n_vocab, ref.vocab);
  for (const auto& seq : ref.sequences) {
    const double err = max_relative_error(seq, all_logits(model, seq.tokens), ref.vocab);
    EXPECT_LT(err, kTolerance) << what << " sequence " << seq.name << " (" << seq.tokens.size()
                               << " tokens): max |diff| / std = " << err;
    ::testing::Test::RecordProperty(what + "." + seq.name + ".max_rel_err", std::to_string(err));
  }
}

class Qwen35Reference : public ::testing::TestWithParam<const char*> {};

TEST_P(Qwen35Reference, HfFolderLogitsMatchTransformers) {
  const ReferenceModel ref = load_reference(GetParam());
  PluginRegistry registry;
  LoadedModel loaded(registry, ref.folder, {});
  expect_matches_reference(loaded.model(), ref, "hf");
}

TEST_P(Qwen35Reference, ConvertedGgufLogitsMatchTransformers) {
  const ReferenceModel ref = load_reference(GetParam());
  PluginRegistry registry;
  OpenedModelFiles hf(ref.folder);
  const auto out = std::filesystem::temp_directory_path() /
                   ("hostlm-test-" + ref.name + "-" + std::to_string(::getpid()) + ".gguf");
  ArchitecturePlugin& plugin = registry.plugin_for(hf.files().architecture);
  if (ref.name == "tiny-vl-dkdv-f16") {
    // dk != dv has no GGUF form in llama.cpp's format: conversion must refuse clearly.
    EXPECT_THROW(plugin.convert_to_gguf(*hf.files().hf, DType::F16, out), Error);
    return;
  }
  // Store the weights losslessly: F32 stays F32, BF16 stays BF16.
  const DType type = ref.name == "tiny-untied-bf16" ? DType::BF16 : DType::F32;
  plugin.convert_to_gguf(*hf.files().hf, type, out);
  {
    LoadedModel loaded(registry, out, {});
    expect_matches_reference(loaded.model(), ref, "gguf");
  }
  std::filesystem::remove(out);
}

TEST_P(Qwen35Reference, GreedyGenerationMatchesTransformers) {
  const ReferenceModel ref = load_reference(GetParam());
  PluginRegistry registry;
  LoadedModel loaded(registry, ref.folder, {});
  EXPECT_EQ(
      testing::greedy_generate(loaded.model(), ref.greedy_prompt, ref.greedy_generated.size()),
      ref.greedy_generated);
}

// Prefill in one call, in uneven chunks, and token by token must give the same logits:
// the KV cache, conv state and recurrent state are carried correctly between calls.
TEST_P(Qwen35Reference, PrefillChunkedAndTokenByTokenAgree) {
  const ReferenceModel ref = load_reference(GetParam());
  const auto& tokens = ref.sequences.back().tokens;  // the longest sequence
  PluginRegistry registry;
  ModelLoadOptions small_batches;
  small_batches.max_batch = 37;  // does not divide the length
  LoadedModel whole(registry, ref.folder, {});
  LoadedModel chunked(registry, ref.folder, small_batches);
  const int64_t V = ref.vocab;
  const std::vector<float> one_shot = all_logits(whole.model(), tokens);
  const std::vector<float> in_chunks = all_logits(chunked.model(), tokens);

  Model& model = whole.model();
  auto seq = model.new_sequence(static_cast<int64_t>(tokens.size()));
  std::vector<float> step(static_cast<size_t>(V));
  double worst_chunked = 0, worst_steps = 0, scale = 0;
  for (float v : one_shot) scale = std::max(scale, static_cast<double>(std::abs(v)));
  for (size_t t = 0; t < tokens.size(); ++t) {
    model.eval(*seq, std::span<const int32_t>(&tokens[t], 1), false, step);
    for (int64_t v = 0; v < V; ++v) {
      const size_t i = t * static_cast<size_t>(V) + static_cast<size_t>(v);
      worst_steps = std::max(worst_steps, static_cast<double>(std::abs(step[v] - one_shot[i])));
      worst_chunked =
          std::max(worst_chunked, static_cast<double>(std::abs(in_chunks[i] - one_shot[i])));
    }
  }
  EXPECT_LT(worst_steps / scale, 1e-5);
  EXPECT_LT(worst_chunked / scale, 1e-5);
}

// Recurrent states stored as 16 bits (--state-type f16 / bf16) take half the memory and stay
// close to transformers' float32 states. Prefilled in one call only the final state is
// rounded; decoded token by token each step rounds the state it stores, and the error, relative
// to the logit std, was at most (this machine): one call 5e-5 for both; by steps f16 3.3e-3 on
// the dense models and 9.7e-3 on the MoE one, bf16 3.3e-2 on the dense ones. bf16 by steps on
// the MoE model flips near-tied expert choices of its random router (0.46 at worst), so that
// case is held to the one-call bound only. The bounds leave a factor of 2 to 3.
TEST_P(Qwen35Reference, SixteenBitStatesStayCloseToTransformers) {
  const ReferenceModel ref = load_reference(GetParam());
  PluginRegistry registry;
  LoadedModel exact(registry, ref.folder, {});
  const CacheLayout f32_layout = exact.model().cache_layout();
  for (const DType type : {DType::F16, DType::BF16}) {
    const std::string name(dtype_name(type));
    ModelLoadOptions options;
    options.recurrent_state = type;
    LoadedModel loaded(registry, ref.folder, options);
    Model& model = loaded.model();
    const CacheLayout layout = model.cache_layout();
    EXPECT_EQ(layout.recurrent_state, (f32_layout.recurrent_state + 1) / 2) << name;
    EXPECT_EQ(layout.conv_state, f32_layout.conv_state) << name;
    const double one_call_bound = 2e-4;
    const bool moe = ref.name == "tiny-moe-f32";
    const double steps_bound = type == DType::F16 ? (moe ? 2.5e-2 : 1e-2) : 1e-1;
    for (const auto& seq : ref.sequences) {
      const double one_call = max_relative_error(seq, all_logits(model, seq.tokens), ref.vocab);
      std::vector<float> stepped;
      auto cache = model.new_sequence(static_cast<int64_t>(seq.tokens.size()));
      std::vector<float> step(static_cast<size_t>(ref.vocab));
      for (const int32_t token : seq.tokens) {
        model.eval(*cache, std::span<const int32_t>(&token, 1), false, step);
        stepped.insert(stepped.end(), step.begin(), step.end());
      }
      const double steps = max_relative_error(seq, stepped, ref.vocab);
      EXPECT_LT(one_call, one_call_bound) << name << " states, " << seq.name << ", one call";
      if (!(moe && type == DType::BF16)) {
        EXPECT_LT(steps, steps_bound) << name << " states, " << seq.name << ", token by token";
      }
      std::printf("[ info ] %s %s states, %s: max |diff| / std %.3g in one call, %.3g by steps\n",
                  ref.name.c_str(), name.c_str(), seq.name.c_str(), one_call, steps);
    }
  }
}

// The same experts stored in transformers' fused form (mlp.experts.gate_up_proj and
// mlp.experts.down_proj, written by fuse_moe_experts.py) give the same logits, bit for bit.
TEST(Qwen35Moe, FusedExpertTensorsEqualPerExpertTensors) {
  const ReferenceModel ref = load_reference("tiny-moe-f32");
  const auto fused =
      std::filesystem::temp_directory_path() / ("hostlm-moe-fused-" + std::to_string(::getpid()));
  const std::string cmd =
      "python3 '" + (testing::source_dir() / "tests/plugins/qwen35/fuse_moe_experts.py").string() +
      "' '" + ref.folder.string() + "' '" + fused.string() + "'";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  PluginRegistry registry;
  const auto& tokens = ref.sequences.back().tokens;
  std::vector<float> separate, together;
  {
    LoadedModel loaded(registry, ref.folder, {});
    separate = all_logits(loaded.model(), tokens);
  }
  {
    LoadedModel loaded(registry, fused, {});
    together = all_logits(loaded.model(), tokens);
  }
  std::filesystem::remove_all(fused);
  EXPECT_EQ(separate, together);
}

// A mixture-of-experts model loads on the backend "auto" picks like any other (the CUDA
// backend's side is tests/backends/cuda/logits_test.cpp).
TEST(Qwen35Moe, AutoBackendLoadsIt) {
  const ReferenceModel ref = load_reference("tiny-moe-f32");
  PluginRegistry registry;
  LoadedModel loaded(registry, ref.folder, {});
  EXPECT_EQ(loaded.model().info().architecture, "qwen35moe");
  EXPECT_EQ(loaded.model().info().n_vocab, ref.vocab);
}

INSTANTIATE_TEST_SUITE_P(TinyModels, Qwen35Reference, ::testing::ValuesIn(kModels),
                         [](const auto& p) {
                           std::string n = p.param;
                           std::replace(n.begin(), n.end(), '-', '_');
                           return n;
                         });

TEST(Qwen35Errors, SequenceOverflowIsAnError) {
  PluginRegistry registry;
  LoadedModel loaded(registry, load_reference("tiny-tied-f32").folder, {});
  auto seq = loaded.model().new_sequence(2);
  std::vector<float> logits(static_cast<size_t>(loaded.model().info().n_vocab));
  const std::vector<int32_t> three = {1, 2, 3};
  EXPECT_THROW(loaded.model().eval(*seq, three, false, logits), Error);
}

TEST(Qwen35Errors, TokenOutsideVocabularyIsAnError) {
  PluginRegistry registry;
  LoadedModel loaded(registry, load_reference("tiny-tied-f32").folder, {});
  auto seq = loaded.model().new_sequence(4);
  std::vector<float> logits(static_cast<size_t>(loaded.model().info().n_vocab));
  const std::vector<int32_t> bad = {1, 999999};
  EXPECT_THROW(loaded.model().eval(*seq, bad, false, logits), Error);
}

}  // namespace
}  // namespace hostlm

namespace hostlm {
namespace {

// Continuous batching: sequences at different stages (prefilling, decoding) evaluated in
// one forward pass give the logits each would get alone. Also with the logits buffer sized
// for one sequence (max_sequences 1), so that the batch's three rows are projected in pieces.
TEST(Qwen35Batch, MixedBatchEqualsSeparateEvaluation) {
  for (int64_t max_sequences : {0, 1})
    for (const char* name : {"tiny-tied-f32", "tiny-untied-bf16", "tiny-moe-f32"}) {
      SCOPED_TRACE("max_sequences " + std::to_string(max_sequences));
      const auto ref = testing::load_reference(name);
      PluginRegistry registry;
      ModelLoadOptions options;
      options.max_sequences = max_sequences;
      LoadedModel loaded(registry, ref.folder, options);
      Model& model = loaded.model();
      const int64_t V = model.info().n_vocab;
      const auto& a = ref.sequences[0].tokens;  // 7 tokens
      const auto& b = ref.sequences[1].tokens;  // 100 tokens
      // Alone: a's first 5 tokens then 2 more; b's first 40 tokens then 1.
      auto sa = model.new_sequence(64), sb = model.new_sequence(128);
      std::vector<float> la(static_cast<size_t>(V)), lb(static_cast<size_t>(V));
      model.eval(*sa, std::span(a).first(5), false, la);
      model.eval(*sb, std::span(b).first(40), false, lb);
      std::vector<float> alone_a(2 * static_cast<size_t>(V)), alone_b(static_cast<size_t>(V));
      model.eval(*sa, std::span(a).subspan(5, 2), true, alone_a);
      model.eval(*sb, std::span(b).subspan(40, 1), false, alone_b);

      // Together: same prefixes, then both continuations in one batch.
      auto ta = model.new_sequence(64), tb = model.new_sequence(128);
      std::vector<float> ba(2 * static_cast<size_t>(V)), bb(static_cast<size_t>(V));
      Model::BatchItem first[2] = {{ta.get(), std::span(a).first(5), false, la, {}, {}},
                                   {tb.get(), std::span(b).first(40), false, lb, {}, {}}};
      model.eval_batch(first);
      Model::BatchItem second[2] = {{ta.get(), std::span(a).subspan(5, 2), true, ba, {}, {}},
                                    {tb.get(), std::span(b).subspan(40, 1), false, bb, {}, {}}};
      model.eval_batch(second);
      EXPECT_EQ(ta->n_past(), 7);
      EXPECT_EQ(tb->n_past(), 41);
      for (size_t i = 0; i < ba.size(); ++i)
        ASSERT_NEAR(ba[i], alone_a[i], 1e-4) << name << " a " << i;
      for (size_t i = 0; i < bb.size(); ++i)
        ASSERT_NEAR(bb[i], alone_b[i], 1e-4) << name << " b " << i;
    }
}

}  // namespace
}  // namespace hostlm
