// `hostlm quantize` end to end: every scheme written from the tiny reference models (Hugging
// Face folders, F32 and BF16) and from a random model whose rows are whole K-quant
// super-blocks (tools/make_shape_gguf.py test256, F16), loaded back and evaluated. Against
// the unquantized model's logits on 48 tokens, each scheme must keep
//   top-1 agreement >= min_top1 (share of positions with the same argmax) and
//   max |logit - reference| / std(reference logits) <= max_rel.
// The bounds are the measured values below with about 1.5x room. Prefill (the batch
// kernels) and token-by-token decode (the matrix-vector kernels) must also agree.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "hostlm/error.h"
#include "hostlm/gguf.h"
#include "hostlm/model_loader.h"
#include "hostlm/quantize.h"
#include "reference_data.h"

namespace hostlm {
namespace {

struct Bound {
  QuantScheme scheme;
  double min_top1, max_rel, max_decode;
};

struct Metrics {
  double top1 = 0, max_rel = 0;
};

std::vector<int32_t> test_tokens(int64_t vocab) {
  std::vector<int32_t> t;
  uint32_t s = 7;
  for (int i = 0; i < 48; ++i) {
    s = s * 1103515245u + 12345u;
    t.push_back(static_cast<int32_t>((s >> 8) % static_cast<uint32_t>(vocab)));
  }
  return t;
}

Metrics compare(const std::vector<float>& ref, const std::vector<float>& got, int64_t vocab) {
  double mean = 0, var = 0;
  for (float v : ref) mean += v;
  mean /= static_cast<double>(ref.size());
  for (float v : ref) var += (v - mean) * (v - mean);
  const double sd = std::sqrt(var / static_cast<double>(ref.size()));
  Metrics m;
  const size_t n_pos = ref.size() / static_cast<size_t>(vocab);
  int same = 0;
  for (size_t p = 0; p < n_pos; ++p) {
    const float* a = ref.data() + p * vocab;
    const float* b = got.data() + p * vocab;
    same += std::max_element(a, a + vocab) - a == std::max_element(b, b + vocab) - b;
    for (int64_t i = 0; i < vocab; ++i)
      m.max_rel = std::max(m.max_rel, std::fabs(double{a[i]} - b[i]) / sd);
  }
  m.top1 = static_cast<double>(same) / static_cast<double>(n_pos);
  return m;
}

std::vector<float> logits_of(PluginRegistry& registry, const std::filesystem::path& model,
                             const std::vector<int32_t>& tokens) {
  ModelLoadOptions o;
  o.backend = "cpu";
  LoadedModel loaded(registry, model, o);
  return testing::all_logits(loaded.model(), tokens);
}

// tools/make_shape_gguf.py test256: rows of 256 and 512, F16.
bool make_test256(const std::filesystem::path& out) {
  const std::string cmd = "python3 '" +
                          (testing::source_dir() / "tools/make_shape_gguf.py").string() +
                          "' test256 '" + out.string() + "' 2>/dev/null";
  return std::system(cmd.c_str()) == 0;
}

class QuantizedLogits : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ =
        std::filesystem::temp_directory_path() / ("hostlm-quantized-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  void check_model(const std::filesystem::path& model, const std::vector<Bound>& bounds) {
    PluginRegistry registry;
    const std::vector<float> ref_probe = logits_of(registry, model, {1});
    const int64_t vocab = static_cast<int64_t>(ref_probe.size());
    const std::vector<int32_t> tokens = test_tokens(vocab);
    const std::vector<float> ref = logits_of(registry, model, tokens);
    for (const Bound& b : bounds) {
      const std::string name(quant_scheme_name(b.scheme));
      const auto out = dir_ / (model.stem().string() + "-" + name + ".gguf");
      quantize_model(registry, model, out, b.scheme);
      ModelLoadOptions o;
      o.backend = "cpu";
      LoadedModel loaded(registry, out, o);
      const std::vector<float> got = testing::all_logits(loaded.model(), tokens);
      const Metrics m = compare(ref, got, vocab);
      EXPECT_GE(m.top1, b.min_top1) << model << " " << name;
      EXPECT_LE(m.max_rel, b.max_rel) << model << " " << name;
      std::printf("[ quantized ] %-20s %-7s top-1 %.3f  max|d|/std %.4f\n",
                  model.filename().c_str(), name.c_str(), m.top1, m.max_rel);
      // Decode one token at a time: the matrix-vector kernels see the same quantized
      // activations as the batch kernels, so only the float summation order differs.
      auto seq = loaded.model().new_sequence(static_cast<int64_t>(tokens.size()));
      std::vector<float> step(static_cast<size_t>(vocab));
      double worst = 0;
      for (size_t i = 0; i < tokens.size(); ++i) {
        loaded.model().eval(*seq, std::span<const int32_t>(&tokens[i], 1), false, step);
        for (int64_t v = 0; v < vocab; ++v)
          worst = std::max(worst, std::fabs(double{step[v]} - got[i * vocab + v]));
      }
      double sd = 0, mean = 0;
      for (float v : got) mean += v;
      mean /= static_cast<double>(got.size());
      for (float v : got) sd += (v - mean) * (v - mean);
      sd = std::sqrt(sd / static_cast<double>(got.size()));
      // Activations that differ in the last bits between the two orders can round to
      // different 8-bit steps, and these small random models amplify every difference.
      EXPECT_LE(worst / sd, b.max_decode)
          << model << " " << name << ": prefill and decode disagree";
      std::printf("[ quantized ] %-20s %-7s prefill vs decode max|d|/std %.4f\n",
                  model.filename().c_str(), name.c_str(), worst / sd);
    }
  }

  std::filesystem::path dir_;
};

// Measured (top-1, max|d|/std) on 2026-11-30, for the README table:
//              F16          BF16         Q8_0         Q6_K         Q5_K_M       Q4_K_M       Q4_K_S
//              IQ4_XS       Q4_0
// tiny-tied    1.00 0.029   1.00 0.113   0.96 0.44    0.96 0.44    0.85 1.30    0.85 1.07 0.85 1.42
// 0.73 3.03    0.63 3.00 tiny-untied  1.00 0       1.00 0       0.92 0.38    0.92 0.38    0.73 1.76
// 0.44 3.83    0.56 2.33    0.46 3.69    0.25 3.47 test256      -            1.00 0.086   0.98 0.70
// 0.79 1.53    0.85 1.47    0.75 2.56    0.83 2.18    0.65 2.94    0.60 3.61 The tiny models (rows
// of 64-192 values) take the fallbacks: Q4_K -> Q5_0, Q5_K -> Q5_1, Q6_K -> Q8_0, IQ4_XS -> IQ4_NL.
// Random small models amplify weight errors: on test256 the same Q8_0 file evaluated with float32
// activations (exact dequantization) gives 0.46, so most of the error is the weights', as in
// llama.cpp. Prefill against decode: at most 0.15.
const std::vector<Bound> kTinyTied = {
    {QuantScheme::F16, 0.97, 0.05, 0.3},    {QuantScheme::BF16, 0.97, 0.17, 0.3},
    {QuantScheme::Q8_0, 0.90, 0.66, 0.3},   {QuantScheme::Q6_K, 0.90, 0.66, 0.3},
    {QuantScheme::Q5_K_M, 0.75, 1.95, 0.3}, {QuantScheme::Q4_K_M, 0.75, 1.6, 0.3},
    {QuantScheme::Q4_K_S, 0.75, 2.15, 0.3}, {QuantScheme::IQ4_XS, 0.60, 4.5, 0.3},
    {QuantScheme::Q4_0, 0.50, 4.5, 0.3},
};
const std::vector<Bound> kTinyUntied = {
    {QuantScheme::F16, 1.0, 1e-4, 0.3},     {QuantScheme::BF16, 1.0, 1e-4, 0.3},
    {QuantScheme::Q8_0, 0.80, 0.57, 0.3},   {QuantScheme::Q6_K, 0.80, 0.57, 0.3},
    {QuantScheme::Q5_K_M, 0.60, 2.65, 0.3}, {QuantScheme::Q4_K_M, 0.30, 5.7, 0.3},
    {QuantScheme::Q4_K_S, 0.45, 3.5, 0.3},  {QuantScheme::IQ4_XS, 0.35, 5.5, 0.3},
    {QuantScheme::Q4_0, 0.15, 5.2, 0.3},
};
const std::vector<Bound> kTest256 = {
    {QuantScheme::BF16, 0.97, 0.13, 0.3},   {QuantScheme::Q8_0, 0.90, 1.05, 0.3},
    {QuantScheme::Q6_K, 0.70, 2.3, 0.3},    {QuantScheme::Q5_K_M, 0.75, 2.2, 0.3},
    {QuantScheme::Q4_K_M, 0.60, 3.85, 0.3}, {QuantScheme::Q4_K_S, 0.70, 3.3, 0.3},
    {QuantScheme::IQ4_XS, 0.50, 4.4, 0.3},  {QuantScheme::Q4_0, 0.45, 5.4, 0.3},
};

TEST_F(QuantizedLogits, TinyTiedF32FromHuggingFaceFolder) {
  check_model(testing::source_dir() / "tests/data/models/tiny-tied-f32", kTinyTied);
}

TEST_F(QuantizedLogits, TinyUntiedBf16FromHuggingFaceFolder) {
  check_model(testing::source_dir() / "tests/data/models/tiny-untied-bf16", kTinyUntied);
}

// Rows of 256 and 512: the K-quant and IQ4_XS kernels themselves, not their fallbacks.
TEST_F(QuantizedLogits, SuperBlockShapesFromF16Gguf) {
  const auto model = dir_ / "test256.gguf";
  ASSERT_TRUE(make_test256(model));
  check_model(model, kTest256);
}

// The file of test256 with one matrix (blk.1.ffn_up.weight) replaced by `data` of `type`.
std::filesystem::path with_ffn_up(const GgufFile& src, DType type, const void* data, size_t bytes,
                                  const std::filesystem::path& out) {
  GgufWriter w(src.alignment());
  for (const auto& [key, value] : src.metadata()) w.set(key, value);
  for (const GgufTensorInfo& t : src.tensors()) {
    if (t.name == "blk.1.ffn_up.weight")
      w.add_tensor(t.name, type, t.ne, data, bytes);
    else
      w.add_tensor(t.name, t.type, t.ne, src.view(t).data, t.nbytes);
  }
  w.write(out);
  return out;
}

std::vector<uint8_t> read_file_bytes(const std::filesystem::path& path) {
  std::vector<uint8_t> out(std::filesystem::file_size(path));
  FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr || std::fread(out.data(), 1, out.size(), f) != out.size()) out.clear();
  if (f != nullptr) std::fclose(f);
  return out;
}

// The codebook (IQ1/IQ2/IQ3), ternary and MXFP4 types: a model whose ffn_up holds random blocks
// of the type (small scales, make_iq_blocks.py) gives the logits of the same model with that
// matrix stored as float32 values that gguf.quants.dequantize made of those blocks, up to the
// activation rounding of the integer kernels (exactly, up to summation order, for TQ1_0's float
// path).
TEST_F(QuantizedLogits, CodebookAndTernaryTypesMatchTheirGgufDequantization) {
  const auto model = dir_ / "test256.gguf";
  ASSERT_TRUE(make_test256(model));
  const auto src = GgufFile::open(model);
  const GgufTensorInfo* up = src->find_tensor("blk.1.ffn_up.weight");
  ASSERT_NE(up, nullptr);
  const int64_t n = up->ne[0] * up->ne[1];
  PluginRegistry registry;
  const std::vector<int32_t> tokens = test_tokens(256);
  for (const DType type :
       {DType::IQ2_XXS, DType::IQ2_XS, DType::IQ2_S, DType::IQ3_XXS, DType::IQ3_S, DType::IQ1_S,
        DType::IQ1_M, DType::TQ1_0, DType::TQ2_0, DType::MXFP4}) {
    std::string name(dtype_name(type));
    std::transform(name.begin(), name.end(), name.begin(), ::toupper);
    const auto prefix = dir_ / name;
    const std::string blocks_cmd =
        "python3 '" + (testing::source_dir() / "tests/plugins/qwen35/make_iq_blocks.py").string() +
        "' " + name + " " + std::to_string(n / dtype_traits(type).block_size) + " '" +
        prefix.string() + "'";
    ASSERT_EQ(std::system(blocks_cmd.c_str()), 0) << blocks_cmd;
    const std::vector<uint8_t> blocks = read_file_bytes(prefix.string() + ".blocks");
    const std::vector<uint8_t> values = read_file_bytes(prefix.string() + ".f32");
    ASSERT_EQ(blocks.size(), *dtype_bytes(type, n)) << name;
    ASSERT_EQ(values.size(), static_cast<size_t>(n) * sizeof(float)) << name;
    const auto quantized =
        with_ffn_up(*src, type, blocks.data(), blocks.size(), dir_ / (name + ".gguf"));
    const auto reference =
        with_ffn_up(*src, DType::F32, values.data(), values.size(), dir_ / (name + "-f32.gguf"));
    const std::vector<float> want = logits_of(registry, reference, tokens);
    const std::vector<float> got = logits_of(registry, quantized, tokens);
    ASSERT_EQ(got.size(), want.size());
    const Metrics m = compare(want, got, static_cast<int64_t>(want.size() / tokens.size()));
    // TQ1_0 goes through the float path (exact up to summation order); the others through the
    // integer kernels, whose int8 activations move these logits by 1-4% of their spread
    // (2026-12-05: 1.2e-2 to 3.6e-2, one top-1 flip of 48 for IQ1_S).
    const bool float_path = type == DType::TQ1_0;
    EXPECT_GE(m.top1, float_path ? 1.0 : 0.95) << name;
    EXPECT_LE(m.max_rel, float_path ? 1e-3 : 0.1) << name;
    std::printf("[ same weights ] %-8s top-1 %.3f  max|d|/std %.2e\n", name.c_str(), m.top1,
                m.max_rel);
  }
}

// A file holding a type hostlm cannot compute with (Q8_1, which no model file holds) is refused
// when it loads, with an error naming the tensor and the type.
TEST_F(QuantizedLogits, UnsupportedTypesRefusedNamingTensorAndType) {
  const auto model = dir_ / "test256.gguf";
  ASSERT_TRUE(make_test256(model));
  const auto src = GgufFile::open(model);
  PluginRegistry registry;
  const GgufTensorInfo* up = src->find_tensor("blk.1.ffn_up.weight");
  ASSERT_NE(up, nullptr);
  std::vector<uint8_t> junk(*dtype_bytes(DType::Q8_1, up->ne[0] * up->ne[1]), 0);
  const auto bad = with_ffn_up(*src, DType::Q8_1, junk.data(), junk.size(), dir_ / "q8_1.gguf");
  try {
    ModelLoadOptions o;
    o.backend = "cpu";
    LoadedModel loaded(registry, bad, o);
    ADD_FAILURE() << "q8_1 was accepted";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("blk.1.ffn_up.weight"), std::string::npos) << msg;
    EXPECT_NE(msg.find("q8_1"), std::string::npos) << msg;
  }
}

}  // namespace
}  // namespace hostlm
