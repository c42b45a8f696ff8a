// The three tiny checkpoints written by transformers, read through both public entry points.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "hostlm/safetensors.h"
#include "st_test_util.h"

namespace hostlm {
namespace {

using st_test::element;
using st_test::model_dir;
using Shape = std::vector<int64_t>;

void expect_tensor(const HfCheckpoint& ckpt, const std::string& name, DType type,
                   const Shape& shape) {
  const TensorView* t = ckpt.find(name);
  ASSERT_NE(t, nullptr) << name;
  EXPECT_EQ(t->name, name);
  EXPECT_EQ(t->type, type) << name;
  EXPECT_EQ(t->shape, shape) << name;
  EXPECT_EQ(t->nbytes, static_cast<size_t>(t->n_elements()) * dtype_traits(type).block_bytes);
}

// Trained-from-init tiny weights: finite and of modest size. A wrong decode (byte order,
// bf16 vs f16) produces NaNs, infinities or huge magnitudes almost at once.
void expect_plausible(const TensorView& t) {
  for (size_t i = 0; i < static_cast<size_t>(t.n_elements()); ++i) {
    const float v = element(t, i);
    ASSERT_TRUE(std::isfinite(v)) << t.name << "[" << i << "]";
    ASSERT_LT(std::fabs(v), 16.0f) << t.name << "[" << i << "]";
  }
}

size_t count_prefix(const HfCheckpoint& ckpt, const std::string& prefix) {
  return std::count_if(ckpt.tensors().begin(), ckpt.tensors().end(),
                       [&](const TensorView& t) { return t.name.rfind(prefix, 0) == 0; });
}

void expect_sorted(const std::vector<TensorView>& tensors) {
  EXPECT_TRUE(
      std::is_sorted(tensors.begin(), tensors.end(),
                     [](const TensorView& a, const TensorView& b) { return a.name < b.name; }));
}

TEST(RealCheckpoint, TiedF32) {
  const auto ckpt = HfCheckpoint::open(model_dir("tiny-tied-f32"));
  EXPECT_EQ(ckpt->folder(), model_dir("tiny-tied-f32"));
  EXPECT_EQ(ckpt->config().at("tie_word_embeddings"), true);
  EXPECT_EQ(ckpt->tensors().size(), 55u);
  expect_sorted(ckpt->tensors());
  expect_tensor(*ckpt, "model.embed_tokens.weight", DType::F32, {2048, 64});
  expect_tensor(*ckpt, "model.norm.weight", DType::F32, {64});
  expect_tensor(*ckpt, "model.layers.0.linear_attn.A_log", DType::F32, {4});
  EXPECT_EQ(ckpt->find("lm_head.weight"), nullptr);  // tied
  const TensorView* embed = ckpt->find("model.embed_tokens.weight");
  EXPECT_FLOAT_EQ(element(*embed, 0), -0.11171857f);
  EXPECT_FLOAT_EQ(element(*embed, 3), -0.88168776f);
  for (const TensorView& t : ckpt->tensors()) expect_plausible(t);
}

TEST(RealCheckpoint, UntiedBf16DecodesToPlausibleValues) {
  const auto ckpt = HfCheckpoint::open(model_dir("tiny-untied-bf16"));
  EXPECT_EQ(ckpt->tensors().size(), 81u);
  expect_sorted(ckpt->tensors());
  expect_tensor(*ckpt, "lm_head.weight", DType::BF16, {2048, 96});
  expect_tensor(*ckpt, "model.embed_tokens.weight", DType::BF16, {2048, 96});
  expect_tensor(*ckpt, "model.layers.0.linear_attn.A_log", DType::BF16, {6});
  // bf16 values are exact in float, so the reference (read with numpy) compares exactly.
  const TensorView* embed = ckpt->find("model.embed_tokens.weight");
  EXPECT_EQ(element(*embed, 0), -0.98046875f);
  EXPECT_EQ(element(*embed, 1), 0.38671875f);
  EXPECT_EQ(element(*embed, 2), -1.3515625f);
  EXPECT_EQ(element(*ckpt->find("lm_head.weight"), 0), -0.31640625f);
  for (const TensorView& t : ckpt->tensors()) expect_plausible(t);
}

TEST(RealCheckpoint, VisionLanguageF16WithMtp) {
  const auto ckpt = HfCheckpoint::open(model_dir("tiny-vl-dkdv-f16"));
  EXPECT_EQ(ckpt->config().at("text_config").at("hidden_size"), 64);
  EXPECT_EQ(ckpt->tensors().size(), 75u);
  EXPECT_EQ(count_prefix(*ckpt, "mtp."), 2u);
  EXPECT_EQ(count_prefix(*ckpt, "model.visual."), 21u);
  expect_sorted(ckpt->tensors());
  expect_tensor(*ckpt, "model.language_model.embed_tokens.weight", DType::F16, {2048, 64});
  expect_tensor(*ckpt, "model.language_model.norm.weight", DType::F16, {64});
  expect_tensor(*ckpt, "model.visual.patch_embed.proj.weight", DType::F16, {32, 3, 2, 4, 4});
  expect_tensor(*ckpt, "mtp.fc.weight", DType::F16, {64, 128});
  const TensorView* embed = ckpt->find("model.language_model.embed_tokens.weight");
  EXPECT_NEAR(element(*embed, 0), 0.975f, 1e-3);
  EXPECT_NEAR(element(*embed, 1), -0.5815f, 1e-3);
  for (const TensorView& t : ckpt->tensors()) expect_plausible(t);
}

TEST(RealCheckpoint, SingleFileMatchesFolder) {
  for (const char* name : {"tiny-tied-f32", "tiny-untied-bf16", "tiny-vl-dkdv-f16"}) {
    const auto file = SafetensorsFile::open(model_dir(name) / "model.safetensors");
    const auto ckpt = HfCheckpoint::open(model_dir(name));
    EXPECT_EQ(file->path(), model_dir(name) / "model.safetensors");
    EXPECT_EQ(file->metadata(), nlohmann::json({{"format", "pt"}}));
    ASSERT_EQ(file->tensors().size(), ckpt->tensors().size()) << name;
    for (size_t i = 0; i < file->tensors().size(); ++i) {
      const TensorView& a = file->tensors()[i];
      const TensorView& b = ckpt->tensors()[i];
      EXPECT_EQ(a.name, b.name);
      EXPECT_EQ(file->find(a.name), &a);
      EXPECT_EQ(a.type, b.type);
      EXPECT_EQ(a.shape, b.shape);
      ASSERT_EQ(a.nbytes, b.nbytes);
      EXPECT_EQ(std::memcmp(a.data, b.data, a.nbytes), 0) << a.name;
    }
    EXPECT_EQ(file->find("no.such.tensor"), nullptr);
    EXPECT_EQ(ckpt->find("no.such.tensor"), nullptr);
  }
}

}  // namespace
}  // namespace hostlm
