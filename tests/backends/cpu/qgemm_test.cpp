// The integer kernels (quantized activations) against the float64 product of the exactly
// dequantized weights with the float32 activations.
//
// Tolerance: quantizing an activation moves it by at most half a step (d/2 of its block), so
// |y - exact| <= sum_i |w_i| * d(i) / 2, plus 1e-5 of sum_i |w_i| (|x_i| + d(i)/2) for the
// float rounding of the block scales and of the sums. The test also checks the activation
// blocks themselves and that every instruction-set path agrees with the scalar one.
#include "cpu/quants/qgemm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "cpu/cpu_backend.h"
#include "cpu/dot.h"
#include "hostlm/dtype.h"
#include "hostlm/tensor_view.h"

namespace hostlm::cpu {
namespace {

using quants::ActKind;
using quants::QGemm;

struct TypeCase {
  DType type;
  const char* file;
};
void PrintTo(const TypeCase& c, std::ostream* os) { *os << c.file; }

const TypeCase kTypes[] = {
    {DType::Q4_0, "q4_0"},
    {DType::Q4_1, "q4_1"},
    {DType::Q5_0, "q5_0"},
    {DType::Q5_1, "q5_1"},
    {DType::Q8_0, "q8_0"},
    {DType::IQ4_NL, "iq4_nl"},
    {DType::Q2_K, "q2_k"},
    {DType::Q3_K, "q3_k"},
    {DType::Q4_K, "q4_k"},
    {DType::Q5_K, "q5_k"},
    {DType::Q6_K, "q6_k"},
    {DType::IQ4_XS, "iq4_xs"},
    // The codebook types, TQ2_0 and MXFP4 (since session 35).
    {DType::IQ2_XXS, "iq2_xxs"},
    {DType::IQ2_XS, "iq2_xs"},
    {DType::IQ2_S, "iq2_s"},
    {DType::IQ3_XXS, "iq3_xxs"},
    {DType::IQ3_S, "iq3_s"},
    {DType::IQ1_S, "iq1_s"},
    {DType::IQ1_M, "iq1_m"},
    {DType::TQ2_0, "tq2_0"},
    {DType::MXFP4, "mxfp4"},
};

std::vector<uint8_t> reference_blocks(const std::string& stem) {
  std::filesystem::path dir;
  if (const char* src = std::getenv("HOSTLM_SOURCE_DIR"); src != nullptr && *src != '\0')
    dir = std::filesystem::path(src) / "tests/data/quants";
  else
    dir = std::filesystem::path(__FILE__).parent_path() / "../../data/quants";
  std::ifstream in(dir / (stem + ".blocks"), std::ios::binary);
  if (!in) throw std::runtime_error("cannot open reference blocks for " + stem);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Activation rows with magnitudes over several decades and a few exact zeros.
std::vector<float> random_activations(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.f, 1.f);
  std::uniform_int_distribution<int> decade(-2, 2), zero(0, 40);
  std::vector<float> x(n);
  for (float& v : x)
    v = zero(rng) == 0 ? 0.f : normal(rng) * std::pow(10.f, static_cast<float>(decade(rng)));
  return x;
}

// Per-element activation step d of its block, from the quantized rows.
std::vector<float> act_steps(ActKind kind, const std::vector<uint8_t>& act, int64_t n) {
  std::vector<float> d(n);
  if (kind == ActKind::Q8_0) {
    const auto* a = reinterpret_cast<const quants::ActQ8_0*>(act.data());
    for (int64_t i = 0; i < n; ++i) d[i] = a[i / 32].d;
  } else {
    const auto* a = reinterpret_cast<const quants::ActQ8_K*>(act.data());
    for (int64_t i = 0; i < n; ++i) d[i] = a[i / 256].d;
  }
  return d;
}

TEST(ActQuant, ScalarAndVectorBlocksIdenticalAndWithinHalfAStep) {
  const int64_t n = 4096;
  for (uint32_t seed = 1; seed <= 4; ++seed) {
    std::vector<float> x = random_activations(n, seed);
    if (seed == 4) std::fill(x.begin(), x.begin() + 300, 0.f);  // all-zero blocks
    std::vector<quants::ActQ8_0> a0(n / 32), b0(n / 32);
    std::vector<quants::ActQ8_K> ak(n / 256), bk(n / 256);
    quants::quantize_act_q8_0_scalar(x.data(), a0.data(), n);
    quants::quantize_act_q8_0(x.data(), b0.data(), n);
    quants::quantize_act_q8_k_scalar(x.data(), ak.data(), n);
    quants::quantize_act_q8_k(x.data(), bk.data(), n);
    EXPECT_EQ(std::memcmp(a0.data(), b0.data(), a0.size() * sizeof(a0[0])), 0);
    EXPECT_EQ(std::memcmp(ak.data(), bk.data(), ak.size() * sizeof(ak[0])), 0);
    for (int64_t i = 0; i < n; ++i) {
      const auto& b = a0[i / 32];
      EXPECT_LE(std::fabs(x[i] - b.d * b.qs[i % 32]), 0.5001f * b.d) << i;
      const auto& k = ak[i / 256];
      EXPECT_LE(std::fabs(x[i] - k.d * k.qs[i % 256]), 0.5001f * k.d) << i;
    }
    for (const auto& b : a0) {
      int s = 0;
      for (int8_t q : b.qs) s += q;
      EXPECT_EQ(s, b.sum);
    }
    for (const auto& k : ak)
      for (int g = 0; g < 16; ++g) {
        int s = 0;
        for (int i = 0; i < 16; ++i) s += k.qs[16 * g + i];
        EXPECT_EQ(s, k.bsums[g]);
      }
  }
}

class QGemmTypes : public ::testing::TestWithParam<TypeCase> {};

TEST_P(QGemmTypes, EveryPathWithinActivationRoundingOfExactProduct) {
  const TypeCase tc = GetParam();
  const std::vector<uint8_t> blocks = reference_blocks(tc.file);
  const DTypeTraits tr = dtype_traits(tc.type);
  const size_t n_ref = blocks.size() / tr.block_bytes;
  const int64_t cols = 1024, rows = 9;
  const int64_t n_blocks = cols / tr.block_size;
  const size_t row_bytes = static_cast<size_t>(n_blocks) * tr.block_bytes;

  std::mt19937 rng(17);
  std::uniform_int_distribution<size_t> pick(0, n_ref - 1);
  std::vector<uint8_t> w(rows * row_bytes);
  for (size_t b = 0; b < w.size() / tr.block_bytes; ++b)
    std::memcpy(w.data() + b * tr.block_bytes, blocks.data() + pick(rng) * tr.block_bytes,
                tr.block_bytes);
  std::vector<float> wf(rows * cols);
  for (int64_t r = 0; r < rows; ++r)
    row_to_f32_kernel(tc.type)(w.data() + r * row_bytes, wf.data() + r * cols, cols);

  struct Path {
    const char* name;
    const QGemm* k;
    bool packed = false;  // the batch form over interleaved groups of 8 tokens
  };
  std::vector<Path> paths = {{"scalar", quants::qgemm_scalar(tc.type)},
                             {"best", quants::qgemm_best(tc.type)}};
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
      __builtin_cpu_supports("f16c"))
    paths.push_back({"avx2", quants::qgemm_avx2(tc.type)});
  if (quants::cpu_has_avx512_vnni()) {
    paths.push_back({"vnni", quants::qgemm_vnni(tc.type)});
    paths.push_back({"vnni packed", quants::qgemm_vnni(tc.type), true});
    ASSERT_NE(quants::qgemm_vnni(tc.type)->gemm_packed, nullptr);
  }
  for (const Path& p : paths) ASSERT_NE(p.k, nullptr) << p.name;
  const ActKind kind = paths[0].k->act;
  const size_t stride = quants::act_row_bytes(kind, cols);

  // Token counts around the kernels' token groups (4, 6 and 8), and one long batch.
  for (const int64_t T : {1, 2, 3, 4, 5, 6, 7, 8, 9, 11, 13, 16, 33}) {
    const std::vector<float> x = random_activations(T * cols, static_cast<uint32_t>(100 + T));
    std::vector<uint8_t> act(stride * T);
    for (int64_t t = 0; t < T; ++t)
      quants::quantize_act_row(kind, x.data() + t * cols, act.data() + t * stride, cols);
    std::vector<float> ref_y;
    for (const Path& p : paths) {
      std::vector<float> y(T * rows, NAN);
      if (p.packed) {
        const int64_t groups = (T + quants::kPackTokens - 1) / quants::kPackTokens;
        std::vector<uint8_t> packed(quants::packed_group_bytes(kind, cols) * groups);
        quants::pack_acts(kind, x.data(), cols, T, 0, T, packed.data());
        p.k->gemm_packed(w.data(), row_bytes, rows, packed.data(), T, n_blocks, y.data(), rows);
      } else {
        p.k->gemm(w.data(), row_bytes, rows, act.data(), stride, T, n_blocks, y.data(), rows);
      }
      for (int64_t t = 0; t < T; ++t) {
        std::vector<uint8_t> one(act.begin() + t * stride, act.begin() + (t + 1) * stride);
        const std::vector<float> d = act_steps(kind, one, cols);
        for (int64_t r = 0; r < rows; ++r) {
          double exact = 0.0, rounding = 0.0, magnitude = 0.0;
          for (int64_t i = 0; i < cols; ++i) {
            const double wi = wf[r * cols + i], xi = x[t * cols + i];
            exact += wi * xi;
            rounding += std::fabs(wi) * d[i] / 2;
            magnitude += std::fabs(wi) * (std::fabs(xi) + d[i] / 2);
          }
          const double got = y[t * rows + r];
          EXPECT_LE(std::fabs(got - exact), rounding + 1e-5 * magnitude + 1e-30)
              << p.name << " T=" << T << " row " << r << " token " << t << ": got " << got
              << ", exact " << exact;
          if (!ref_y.empty()) {
            EXPECT_LE(std::fabs(got - ref_y[t * rows + r]), 1e-5 * magnitude + 1e-30)
                << p.name << " vs scalar, T=" << T << " row " << r << " token " << t;
          }
        }
      }
      if (ref_y.empty()) ref_y = y;
    }
  }
}

// The backend's matmul runs the integer kernel for block types, over several threads.
TEST_P(QGemmTypes, BackendMatmulUsesIntegerKernel) {
  const TypeCase tc = GetParam();
  const std::vector<uint8_t> blocks = reference_blocks(tc.file);
  const DTypeTraits tr = dtype_traits(tc.type);
  const int64_t cols = 512, rows = 70;
  const size_t row_bytes = static_cast<size_t>(cols / tr.block_size) * tr.block_bytes;
  std::vector<uint8_t> w(rows * row_bytes);
  const size_t n_ref = blocks.size() / tr.block_bytes;
  for (size_t b = 0; b < w.size() / tr.block_bytes; ++b)
    std::memcpy(w.data() + b * tr.block_bytes, blocks.data() + ((b * 7) % n_ref) * tr.block_bytes,
                tr.block_bytes);
  TensorView view;
  view.name = "blk.0.ffn_up.weight";
  view.type = tc.type;
  view.shape = {rows, cols};
  view.data = w.data();
  view.nbytes = w.size();
  auto backend = make_cpu_backend();
  backend->set_threads(3);
  const Weight wt = backend->load_weight(view);
  const QGemm* k = quants::qgemm_scalar(tc.type);
  const size_t stride = quants::act_row_bytes(k->act, cols);
  for (const int64_t T : {1, 9}) {
    const std::vector<float> x = random_activations(T * cols, 7);
    std::vector<float> y(T * rows), want(T * rows);
    backend->matmul(wt, x.data(), T, y.data());
    std::vector<uint8_t> act(stride * T);
    for (int64_t t = 0; t < T; ++t)
      quants::quantize_act_row(k->act, x.data() + t * cols, act.data() + t * stride, cols);
    k->gemm(w.data(), row_bytes, rows, act.data(), stride, T, cols / tr.block_size, want.data(),
            rows);
    std::vector<float> wr(cols);
    for (int64_t r = 0; r < rows; ++r) {
      row_to_f32_kernel(tc.type)(w.data() + r * row_bytes, wr.data(), cols);
      for (int64_t t = 0; t < T; ++t) {
        double magnitude = 0.0;
        for (int64_t i = 0; i < cols; ++i) magnitude += std::fabs(double{wr[i]} * x[t * cols + i]);
        EXPECT_LE(std::fabs(y[t * rows + r] - want[t * rows + r]), 1e-4 * magnitude + 1e-30)
            << "T=" << T << " row " << r << " token " << t;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Cpu, QGemmTypes, ::testing::ValuesIn(kTypes),
                         [](const ::testing::TestParamInfo<TypeCase>& p) {
                           return std::string(p.param.file);
                         });

}  // namespace
}  // namespace hostlm::cpu
