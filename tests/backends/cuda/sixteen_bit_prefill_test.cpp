// The default prefill of 16-bit weights (CudaBackend::matmul): the activations are rounded to
// the weights' type (BF16, or half after a per-token power of two for F16) and multiplied in
// one tensor-core product, as llama.cpp does. Checked against the CPU's float32 products with
// a bound from the rounding itself, and end to end on the tiny BF16 and F16 models against
// transformers and against the exact mode. Skipped where no GPU can be used.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "cuda_test_support.h"
#include "hostlm/dtype.h"
#include "hostlm/half.h"
#include "hostlm/model_loader.h"
#include "plugins/qwen35/reference_data.h"

namespace hostlm {
namespace {

// Runs its scope in the default mode, then restores the binary's exact mode.
class DefaultSixteenBitMode {
 public:
  DefaultSixteenBitMode() {
    if (const char* v = std::getenv(kVar)) saved_ = v;
    unsetenv(kVar);
  }
  ~DefaultSixteenBitMode() {
    if (!saved_.empty()) setenv(kVar, saved_.c_str(), 1);
  }

 private:
  static constexpr const char* kVar = "HOSTLM_CUDA_EXACT_16BIT";
  std::string saved_;
};

float value16(DType type, float v) {
  return type == DType::F16 ? f16_to_f32(f32_to_f16(v)) : bf16_to_f32(f32_to_bf16(v));
}

// Each output is within the activations' rounding (2^-8 relative for BF16, 2^-11 for half)
// times sum |w x| of the float32 product, plus float32 summation slack; a wrong kernel or
// scale misses that by orders of magnitude. Activations span 2^-6 .. 2^6 and one token is
// large (5,000), so the per-token half scale is exercised.
TEST(CudaSixteenBitPrefill, ProductsAreWithinTheActivationsRounding) {
  if (!testing::cuda_usable()) GTEST_SKIP() << "no usable CUDA backend";
  DefaultSixteenBitMode mode;
  auto gpu = create_backend("cuda");
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> uni(-1.f, 1.f), expo(-6.f, 6.f);
  for (DType type : {DType::BF16, DType::F16})
    for (auto [rows, cols, T] :
         {std::tuple<int64_t, int64_t, int64_t>{67, 96, 9}, {300, 1024, 40}, {129, 520, 300}}) {
      std::vector<float> w(static_cast<size_t>(rows * cols)), x(static_cast<size_t>(T * cols));
      for (auto& v : w) v = value16(type, uni(rng));
      for (auto& v : x) v = uni(rng) * std::exp2(expo(rng));
      for (int64_t c = 0; c < cols; ++c) x[static_cast<size_t>(cols + c)] *= 5000.f;
      const std::vector<uint8_t> bytes = testing::store_as(type, w);
      const Weight wg = gpu->load_weight(testing::weight_view(type, rows, cols, bytes));
      auto xd = gpu->alloc(x.size());
      gpu->upload(xd->data(), x.data(), x.size());
      auto yd = gpu->alloc(static_cast<size_t>(T * rows));
      gpu->matmul(wg, xd->data(), T, yd->data());
      std::vector<float> y(static_cast<size_t>(T * rows));
      gpu->download(y.data(), yd->data(), y.size());
      const double unit = type == DType::BF16 ? std::exp2(-8) : std::exp2(-11);
      int bad = 0;
      double worst = 0;
      for (int64_t t = 0; t < T; ++t)
        for (int64_t r = 0; r < rows; ++r) {
          double exact = 0, magnitude = 0;
          for (int64_t c = 0; c < cols; ++c) {
            const double p = static_cast<double>(w[static_cast<size_t>(r * cols + c)]) *
                             x[static_cast<size_t>(t * cols + c)];
            exact += p;
            magnitude += std::abs(p);
          }
          const double err = std::abs(exact - y[static_cast<size_t>(t * rows + r)]);
          const double bound = (unit + 1e-5) * magnitude + 1e-30;
          worst = std::max(worst, err / bound);
          bad += err > bound;
        }
      EXPECT_EQ(bad, 0) << dtype_name(type) << " " << rows << "x" << cols << " T=" << T
                        << ": worst error / bound " << worst;
    }
}

struct Diff {
  double rms = 0, max = 0;  // relative to the first vector's std
};

Diff diff(const std::vector<float>& ref, const std::vector<float>& got) {
  double mean = 0;
  for (float v : ref) mean += v;
  mean /= static_cast<double>(ref.size());
  double var = 0, sq = 0, mx = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    var += (ref[i] - mean) * (ref[i] - mean);
    const double e = std::abs(static_cast<double>(ref[i]) - got[i]);
    sq += e * e;
    mx = std::isnan(e) ? INFINITY : std::max(mx, e);
  }
  const double sd = std::sqrt(var / static_cast<double>(ref.size()));
  return {std::sqrt(sq / static_cast<double>(ref.size())) / sd, mx / sd};
}

ModelLoadOptions cuda_options() {
  ModelLoadOptions o;
  o.backend = "cuda";
  o.max_batch = 256;
  return o;
}

// Whole prompts through the default mode against the exact mode (float32 activations, which
// match transformers to 1e-4). These random tiny models amplify small perturbations a lot
// (quant_logits_test.cpp measured it): rounding activations to half moves their logits by an
// rms of about 0.001 of the spread, to BF16 (3 bits fewer) about 0.015. A wrong product,
// scale or dispatch gives an rms of the order of 1.
TEST(CudaSixteenBitPrefill, TinyModelsStayCloseToTheExactMode) {
  if (!testing::cuda_usable()) GTEST_SKIP() << "no usable CUDA backend";
  for (const char* name : {"tiny-untied-bf16", "tiny-vl-dkdv-f16"}) {
    const testing::ReferenceModel ref = testing::load_reference(name);
    // The longest sequence: prompts of more than 8 tokens take the prefill products.
    const auto longest = std::max_element(
        ref.sequences.begin(), ref.sequences.end(),
        [](const auto& a, const auto& b) { return a.tokens.size() < b.tokens.size(); });
    const auto& tokens = longest->tokens;
    ASSERT_GT(tokens.size(), 8u) << name;
    PluginRegistry registry;
    std::vector<float> exact, fast;
    {
      LoadedModel loaded(registry, ref.folder, cuda_options());
      exact = testing::all_logits(loaded.model(), tokens);
    }
    {
      DefaultSixteenBitMode mode;
      LoadedModel loaded(registry, ref.folder, cuda_options());
      fast = testing::all_logits(loaded.model(), tokens);
    }
    ASSERT_EQ(exact.size(), fast.size());
    const Diff d = diff(exact, fast);
    const bool bf16 = std::string(name).find("bf16") != std::string::npos;
    // Measured on an H200 (2026-12-01): BF16 rms 0.0151, max 0.459; F16 rms 0.0012, max 0.030.
    EXPECT_LT(d.rms, bf16 ? 0.05 : 0.005) << name;
    EXPECT_LT(d.max, bf16 ? 1.5 : 0.15) << name;
    EXPECT_GT(d.max, 0.0) << name << ": the default mode should round, and here did not";
    ::testing::Test::RecordProperty(std::string(name) + ".rms", std::to_string(d.rms));
    ::testing::Test::RecordProperty(std::string(name) + ".max", std::to_string(d.max));
    std::printf("%s: default vs exact 16-bit prefill: rms %.4f, max %.4f of the logit std\n", name,
                d.rms, d.max);
  }
}

}  // namespace
}  // namespace hostlm
