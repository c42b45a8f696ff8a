// The tiny Qwen3.5 models with quantized linear weights, end to end on the CUDA backend.
// Each model is converted to GGUF, its linear weights quantized (quant_gguf.h), and the CUDA
// logits are compared with (a) the CPU backend on a file holding the very same weight values
// dequantized to F32 (float activations: the exact reference) and (b) the CPU backend on the
// quantized file. Skipped where no GPU can be used.
//
// Tolerances, as |difference| / std(reference logits). These random tiny models amplify small
// perturbations a lot: measured on the CPU (2026-11-30), rounding only the weights to F16
// moves the logits by rms 0.0015-0.004 (max 0.18), and rounding the activations to int8 per
// 32 values (what the GPU's decode GEMV and the CPU's integer kernels do) by rms 0.03-0.085
// (max 2.7) against float activations. Hence:
//   prefill (T > 8: half weights and activations, float32 sums) vs (a): rms < 0.02, max < 1.
//   decode chunks of 1, 2, 3, 5 and 8 tokens (int8 activations) vs (a): rms < 0.25, max < 4.
//   either vs (b), whose activations are int8 too: rms < 0.25, max < 4.
// A wrong kernel or dispatch gives an rms of the order of 1.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include "cuda_test_support.h"
#include "hostlm/model_loader.h"
#include "plugins/qwen35/reference_data.h"
#include "quant_gguf.h"

namespace hostlm {
namespace {

struct Diff {
  double rms = 0, max = 0;  // relative to the reference's std
};

Diff diff(const std::vector<float>& ref, const std::vector<float>& got, size_t n) {
  double mean = 0;
  for (size_t i = 0; i < n; ++i) mean += ref[i];
  mean /= static_cast<double>(n);
  double var = 0, sq = 0, mx = 0;
  for (size_t i = 0; i < n; ++i) {
    var += (ref[i] - mean) * (ref[i] - mean);
    const double e = std::abs(static_cast<double>(ref[i]) - got[i]);
    sq += e * e;
    mx = std::isnan(e) ? INFINITY : std::max(mx, e);
  }
  const double sd = std::sqrt(var / static_cast<double>(n));
  return {std::sqrt(sq / static_cast<double>(n)) / sd, mx / sd};
}

ModelLoadOptions on(const std::string& backend) {
  ModelLoadOptions o;
  o.backend = backend;
  return o;
}

// Logits of the first n tokens evaluated in chunks of 1, 2, 3, 5, 8, 1, 2, ... tokens.
std::vector<float> chunked_logits(Model& model, const std::vector<int32_t>& tokens, size_t n) {
  const auto V = static_cast<size_t>(model.info().n_vocab);
  std::vector<float> out(n * V);
  auto seq = model.new_sequence(static_cast<int64_t>(n));
  const size_t sizes[] = {1, 2, 3, 5, 8};
  for (size_t at = 0, i = 0; at < n; ++i) {
    const size_t len = std::min(sizes[i % 5], n - at);
    model.eval(*seq, std::span<const int32_t>(tokens.data() + at, len), true,
               std::span<float>(out.data() + at * V, len * V));
    at += len;
  }
  return out;
}

class CudaQuantizedModel : public ::testing::TestWithParam<std::tuple<const char*, DType>> {
 protected:
  void SetUp() override {
    std::string why;
    if (!testing::cuda_backend_or_reason(why)) GTEST_SKIP() << "no usable CUDA backend: " << why;
  }
};

TEST_P(CudaQuantizedModel, LogitsMatchTheSameWeightsOnTheCpu) {
  const auto [name, type] = GetParam();
  const testing::ReferenceModel ref = testing::load_reference(name);
  const auto& tokens = std::max_element(ref.sequences.begin(), ref.sequences.end(),
                                        [](const auto& a, const auto& b) {
                                          return a.tokens.size() < b.tokens.size();
                                        })
                           ->tokens;
  const std::string stem = "hostlm-cudaq-" + std::string(name) + "-" +
                           std::string(dtype_name(type)) + "-" + std::to_string(::getpid());
  const auto dir = std::filesystem::temp_directory_path();
  const auto f32 = dir / (stem + "-f32.gguf"), quant = dir / (stem + "-q.gguf"),
             exact = dir / (stem + "-deq.gguf");
  PluginRegistry registry;
  {
    OpenedModelFiles hf(ref.folder);
    registry.plugin_for(hf.files().architecture).convert_to_gguf(*hf.files().hf, DType::F32, f32);
  }
  testing::write_quantized_pair(f32, type, quant, exact);

  const size_t V = static_cast<size_t>(ref.vocab), n_decode = 64;
  std::vector<float> want, cpu_q, gpu_prefill, gpu_decode;
  {
    LoadedModel m(registry, exact, on("cpu"));
    want = testing::all_logits(m.model(), tokens);
  }
  {
    LoadedModel m(registry, quant, on("cpu"));
    cpu_q = testing::all_logits(m.model(), tokens);
  }
  {
    LoadedModel m(registry, quant, on("cuda"));
    ASSERT_EQ(m.backend().name(), "cuda");
    gpu_prefill = testing::all_logits(m.model(), tokens);
    gpu_decode = chunked_logits(m.model(), tokens, n_decode);
  }
  for (const auto& p : {f32, quant, exact}) std::filesystem::remove(p);

  const Diff prefill = diff(want, gpu_prefill, want.size());
  const Diff decode = diff(want, gpu_decode, n_decode * V);
  const Diff prefill_cpu = diff(cpu_q, gpu_prefill, cpu_q.size());
  const Diff decode_cpu = diff(cpu_q, gpu_decode, n_decode * V);
  EXPECT_LT(prefill.rms, 0.02) << "prefill vs exact, max " << prefill.max;
  EXPECT_LT(prefill.max, 1.0) << "prefill vs exact, rms " << prefill.rms;
  EXPECT_LT(decode.rms, 0.25) << "decode vs exact, max " << decode.max;
  EXPECT_LT(decode.max, 4.0) << "decode vs exact, rms " << decode.rms;
  EXPECT_LT(prefill_cpu.rms, 0.25) << "prefill vs cpu, max " << prefill_cpu.max;
  EXPECT_LT(prefill_cpu.max, 4.0) << "prefill vs cpu, rms " << prefill_cpu.rms;
  EXPECT_LT(decode_cpu.rms, 0.25) << "decode vs cpu, max " << decode_cpu.max;
  EXPECT_LT(decode_cpu.max, 4.0) << "decode vs cpu, rms " << decode_cpu.rms;
  for (const auto& [key, d] : {std::pair{"prefill", prefill},
                               {"decode", decode},
                               {"prefill_vs_cpu", prefill_cpu},
                               {"decode_vs_cpu", decode_cpu}}) {
    ::testing::Test::RecordProperty(std::string(key) + "_rms", std::to_string(d.rms));
    ::testing::Test::RecordProperty(std::string(key) + "_max", std::to_string(d.max));
  }
}

INSTANTIATE_TEST_SUITE_P(TinyModels, CudaQuantizedModel,
                         ::testing::Combine(::testing::Values("tiny-tied-f32", "tiny-untied-bf16"),
                                            ::testing::Values(DType::Q8_0, DType::Q4_0, DType::Q4_1,
                                                              DType::Q5_0, DType::Q5_1,
                                                              DType::IQ4_NL)),
                         [](const auto& p) {
                           std::string n = std::string(std::get<0>(p.param)) + "_" +
                                           std::string(dtype_name(std::get<1>(p.param)));
                           std::replace(n.begin(), n.end(), '-', '_');
                           return n;
                         });

// The mixture-of-experts model: its decode steps route on the device (combined experts in
// the split layouts of a 34-byte and an 18-byte block), its prefill on the host.
INSTANTIATE_TEST_SUITE_P(TinyMoe, CudaQuantizedModel,
                         ::testing::Combine(::testing::Values("tiny-moe-f32"),
                                            ::testing::Values(DType::Q8_0, DType::Q4_0)),
                         [](const auto& p) {
                           return "tiny_moe_f32_" + std::string(dtype_name(std::get<1>(p.param)));
                         });

}  // namespace
}  // namespace hostlm
