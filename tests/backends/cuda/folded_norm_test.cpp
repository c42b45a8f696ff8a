// A decode step's RMSNorm folded into the one-token product that reads it (QuantMatmul's
// deferred norm, gemv_group_folded_norm; HOSTLM_CUDA_FOLD_NORM=1) against the norm and the
// product run separately (the default): the products, the residual written back and the
// norm's output equal bit for bit, for the widths of the 0.8B, 9B and 27B models, groups of one
// type, a type without the fold first, norms with and without the residual add, and several folds
// in a row (the launch counter must come back to zero each time).
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "cuda_test_support.h"
#include "hostlm/ops.h"
#include "quant_test_support.h"

namespace hostlm {
namespace {

const testing::QuantCase& case_of(DType type) {
  for (const testing::QuantCase& c : testing::quant_cases())
    if (c.type == type) return c;
  throw Error("no test case for the type");
}

struct Shape {
  int64_t cols;
  std::vector<std::pair<DType, int64_t>> matrices;  // one matmul_same_input group
};

// What one backend computes for `rounds` norm-then-products in a row over the same buffers.
struct Outputs {
  std::vector<float> x, out;
  std::vector<std::vector<float>> ys;
};

// `norm_w` outlives both backends' runs: a backend keeps a norm weight's device copy by its
// host address, so a freed array's address reused with other values would read stale ones.
Outputs run(Backend& gpu, const Shape& s, const std::vector<std::vector<uint8_t>>& blocks,
            const std::vector<float>& norm_w, bool with_add, int rounds, uint32_t seed) {
  std::vector<Weight> ws;
  for (size_t j = 0; j < s.matrices.size(); ++j) {
    TensorView v;
    v.name = "fold.weight";
    v.type = s.matrices[j].first;
    v.shape = {s.matrices[j].second, s.cols};
    v.data = blocks[j].data();
    v.nbytes = blocks[j].size();
    ws.push_back(gpu.load_weight(v));
  }
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-2.f, 2.f);
  const auto n = static_cast<size_t>(s.cols);
  std::vector<float> x(n), y(n);
  for (float& f : x) f = u(rng);
  for (float& f : y) f = u(rng);
  auto xd = gpu.alloc(n), yd = gpu.alloc(n), out = gpu.alloc(n);
  gpu.upload(xd->data(), x.data(), n);
  gpu.upload(yd->data(), y.data(), n);
  std::vector<std::unique_ptr<Buffer>> ys;
  std::vector<MatmulOut> outs;
  for (const Weight& w : ws) {
    ys.push_back(gpu.alloc(static_cast<size_t>(w.rows)));
    outs.push_back({&w, ys.back()->data()});
  }
  for (int r = 0; r < rounds; ++r) {
    if (with_add)
      gpu.add_rms_norm(xd->data(), yd->data(), 1, s.cols, norm_w.data(), 1e-6f, out->data());
    else
      gpu.rms_norm(xd->data(), n, out->data(), n, 1, s.cols, norm_w.data(), 1e-6f);
    gpu.matmul_same_input(outs, out->data(), 1);
  }
  Outputs result;
  result.x.resize(n);
  result.out.resize(n);
  gpu.download(result.x.data(), xd->data(), n);
  gpu.download(result.out.data(), out->data(), n);
  for (size_t j = 0; j < ws.size(); ++j) {
    result.ys.emplace_back(static_cast<size_t>(ws[j].rows));
    gpu.download(result.ys.back().data(), ys[j]->data(), result.ys.back().size());
  }
  return result;
}

// Empty when equal bit for bit, else where they first differ and how many do.
std::string differences(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size())
    return "sizes " + std::to_string(a.size()) + " and " + std::to_string(b.size());
  size_t first = a.size(), count = 0;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::memcmp(&a[i], &b[i], sizeof(float)) != 0) {
      if (count++ == 0) first = i;
    }
  if (count == 0) return "";
  return std::to_string(count) + " of " + std::to_string(a.size()) + " differ, first at " +
         std::to_string(first) + ": " + std::to_string(a[first]) + " folded, " +
         std::to_string(b[first]) + " apart";
}

TEST(CudaFoldedNorm, EqualsTheNormThenTheProducts) {
  std::string why;
  auto separate = testing::cuda_backend_or_reason(why);  // the default: folding off
  if (!separate) GTEST_SKIP() << "no usable CUDA backend: " << why;
  setenv("HOSTLM_CUDA_FOLD_NORM", "1", 1);
  auto folded = testing::cuda_backend_or_reason(why);
  unsetenv("HOSTLM_CUDA_FOLD_NORM");
  ASSERT_TRUE(folded) << why;
  const Shape shapes[] = {
      // A delta-rule layer's inputs (qkv, z, b, a) and an MLP's (gate, up), 9B width.
      {4096, {{DType::Q4_K, 8192}, {DType::Q4_K, 4096}, {DType::Q4_K, 32}, {DType::Q4_K, 32}}},
      {4096, {{DType::Q4_K, 12288}, {DType::Q4_K, 12288}}},
      // 0.8B and 27B widths (27B: two warps share each row), Q5_K.
      {1024, {{DType::Q4_K, 3584}, {DType::Q4_K, 3584}}},
      {5120, {{DType::Q5_K, 1000}, {DType::Q5_K, 17}}},
      // Q4_K with a Q6_K after it (the second launch reads the quantized copy the first
      // one's last block wrote), and a Q6_K first (no fold: the norm runs on its own).
      {2048, {{DType::Q4_K, 700}, {DType::Q6_K, 300}, {DType::Q4_K, 64}}},
      {2048, {{DType::Q6_K, 300}, {DType::Q4_K, 700}}},
  };
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-2.f, 2.f);
  uint32_t seed = 100;
  std::vector<std::vector<float>> norm_weights;  // alive to the end (see run)
  norm_weights.reserve(std::size(shapes));
  for (const Shape& s : shapes) {
    norm_weights.emplace_back(static_cast<size_t>(s.cols));
    for (float& f : norm_weights.back()) f = u(rng);
    std::vector<std::vector<uint8_t>> blocks;
    for (auto [type, rows] : s.matrices)
      blocks.push_back(
          testing::random_blocks(case_of(type), static_cast<size_t>(rows * s.cols / 256), rng));
    for (bool with_add : {true, false}) {
      for (int rounds : {1, 3}) {
        SCOPED_TRACE("cols " + std::to_string(s.cols) + ", first type " +
                     std::string(dtype_name(s.matrices[0].first)) + (with_add ? ", add" : "") +
                     ", rounds " + std::to_string(rounds));
        ++seed;
        const Outputs a = run(*folded, s, blocks, norm_weights.back(), with_add, rounds, seed);
        const Outputs b = run(*separate, s, blocks, norm_weights.back(), with_add, rounds, seed);
        EXPECT_EQ(differences(a.x, b.x), "") << "residual";
        EXPECT_EQ(differences(a.out, b.out), "") << "norm output";
        for (size_t j = 0; j < a.ys.size(); ++j)
          EXPECT_EQ(differences(a.ys[j], b.ys[j]), "") << "product " << j;
      }
    }
  }
}

}  // namespace
}  // namespace hostlm
