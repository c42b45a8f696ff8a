// Every op of the CUDA backend against the CPU backend (the reference) on random inputs,
// including strided layouts, in-place use and state carried across calls. Skipped where no
// GPU can be used.
#include "hostlm/ops.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "backends/delta_shape_print.h"
#include "cuda_test_support.h"
#include "hostlm/half.h"

namespace hostlm {
namespace {

// Float32 arithmetic in a different order: agreement to a few ulps of the largest value.
constexpr double kTolerance = 1e-5;

using testing::expect_close;

class CudaOps : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    gpu_ = testing::cuda_backend_or_reason(why);
    if (!gpu_) GTEST_SKIP() << "no usable CUDA backend: " << why;
    cpu_ = create_backend("cpu");
  }

  std::vector<float> random(size_t n, float lo = -1.f, float hi = 1.f) {
    std::uniform_real_distribution<float> dist(lo, hi);
    std::vector<float> v(n);
    for (float& x : v) x = dist(rng_);
    return v;
  }

  std::unique_ptr<Buffer> to_gpu(const std::vector<float>& host) {
    auto b = gpu_->alloc(host.size());
    gpu_->upload(b->data(), host.data(), host.size());
    return b;
  }

  std::vector<float> from_gpu(const float* device, size_t n) {
    std::vector<float> host(n);
    gpu_->download(host.data(), device, n);
    return host;
  }

  std::unique_ptr<Backend> cpu_, gpu_;
  // One case of RecurrentOpsOverManySequencesMatchPerSequence.
  void recurrent_ops_over_many_sequences(const Backend::DeltaRuleShape& sh);
  // `v`, kept alive until the test ends: the backend finds the small weight arrays that ops take
  // on the host (a_neg, dt_bias, conv and norm weights) by their address, and a freed vector's
  // address may come back with other values in a later case of the same test.
  const std::vector<float>& kept(std::vector<float> v) { return kept_.emplace_back(std::move(v)); }
  std::deque<std::vector<float>> kept_;
  std::mt19937 rng_{20240611};
};

using testing::store_as;
using testing::weight_view;

struct MatmulCase {
  DType type;
  int64_t rows, cols, T;
};

class CudaMatmul : public CudaOps, public ::testing::WithParamInterface<MatmulCase> {};

// T <= 8 takes the GEMV kernel (vector path when cols % 8 == 0, scalar otherwise; one token of
// 16-bit weights its own kernel); larger T takes cuBLAS, in this binary's exact mode
// (exact_mode_default.cpp) with float32 activations.
TEST_P(CudaMatmul, MatchesCpu) {
  const MatmulCase c = GetParam();
  std::vector<float> values = random(static_cast<size_t>(c.rows * c.cols));
  const std::vector<uint8_t> bytes = store_as(c.type, values);
  const Weight wc = cpu_->load_weight(weight_view(c.type, c.rows, c.cols, bytes));
  const Weight wg = gpu_->load_weight(weight_view(c.type, c.rows, c.cols, bytes));
  const std::vector<float> x = random(static_cast<size_t>(c.T * c.cols));
  std::vector<float> want(static_cast<size_t>(c.T * c.rows));
  cpu_->matmul(wc, x.data(), c.T, want.data());
  auto xd = to_gpu(x);
  auto yd = gpu_->alloc(want.size());
  gpu_->matmul(wg, xd->data(), c.T, yd->data());
  expect_close(want, from_gpu(yd->data(), want.size()), "matmul");
}

std::vector<MatmulCase> matmul_cases() {
  std::vector<MatmulCase> cases;
  for (DType type : {DType::F32, DType::F16, DType::BF16})
    for (int64_t T : {1, 3, 8, 9, 40})
      for (auto [rows, cols] : {std::pair<int64_t, int64_t>{67, 96}, {33, 50}, {300, 1024}})
        cases.push_back({type, rows, cols, T});
  // Rows long enough for every depth of the 16-bit one-token kernel, with a tail after them.
  for (DType type : {DType::F16, DType::BF16})
    for (int64_t T : {1, 2}) cases.push_back({type, 37, 4096 + 3 * 256 + 8, T});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Types, CudaMatmul, ::testing::ValuesIn(matmul_cases()), [](const auto& p) {
  return std::string(dtype_name(p.param.type)) + "_" + std::to_string(p.param.rows) + "x" +
         std::to_string(p.param.cols) + "_T" + std::to_string(p.param.T);
});

// The 16-bit one-token kernel sums each row in the batched kernel's order, so a token gives
// the same bits alone as beside another: a stream's logits do not depend on whether it was
// decoded alone or in a small batch.
TEST_F(CudaOps, OneToken16BitProductEqualsTheBatchedKernelBitForBit) {
  for (DType type : {DType::F16, DType::BF16})
    for (auto [rows, cols] : {std::pair<int64_t, int64_t>{301, 12288 + 8}, {37, 4096 + 3 * 256}}) {
      SCOPED_TRACE(std::string(dtype_name(type)) + " " + std::to_string(rows) + "x" +
                   std::to_string(cols));
      const std::vector<uint8_t> bytes = store_as(type, random(static_cast<size_t>(rows * cols)));
      const Weight w = gpu_->load_weight(weight_view(type, rows, cols, bytes));
      const std::vector<float> x = random(static_cast<size_t>(cols));
      std::vector<float> pair(x);
      pair.insert(pair.end(), x.begin(), x.end());
      auto x1 = to_gpu(x), x2 = to_gpu(pair);
      auto y1 = gpu_->alloc(static_cast<size_t>(rows));
      auto y2 = gpu_->alloc(static_cast<size_t>(2 * rows));
      gpu_->matmul(w, x1->data(), 1, y1->data());
      gpu_->matmul(w, x2->data(), 2, y2->data());
      const std::vector<float> one = from_gpu(y1->data(), static_cast<size_t>(rows));
      const std::vector<float> two = from_gpu(y2->data(), static_cast<size_t>(rows));
      for (int64_t r = 0; r < rows; ++r)
        ASSERT_EQ(std::memcmp(&one[r], &two[r], sizeof(float)), 0)
            << "row " << r << ": " << one[r] << " alone, " << two[r] << " in a pair";
    }
}

// The one-token product streamed through shared memory (gemv16_staged.cu), with each ring it
// has and with it off, gives the batched kernel's bits: rows with a short last chunk, an odd
// row count, more row pairs than resident warps (several pairs a warp, the ring running on
// across rows) and rows shorter than one chunk.
TEST_F(CudaOps, OneToken16BitRingsEqualTheBatchedKernelBitForBit) {
  const testing::RestoreEnv restore{"HOSTLM_CUDA_GEMV16_RING"};
  const std::pair<int64_t, int64_t> shapes[] = {
      {301, 12288 + 8}, {37, 4096 + 3 * 256}, {9001, 1032}, {67, 96}};
  for (const char* ring : {"1024x3", "512x6", "0"}) {
    setenv("HOSTLM_CUDA_GEMV16_RING", ring, 1);
    std::string why;
    std::unique_ptr<Backend> gpu = testing::cuda_backend_or_reason(why);
    ASSERT_NE(gpu, nullptr) << why;
    for (DType type : {DType::BF16, DType::F16})
      for (auto [rows, cols] : shapes) {
        SCOPED_TRACE(std::string("ring ") + ring + ", " + std::string(dtype_name(type)) + " " +
                     std::to_string(rows) + "x" + std::to_string(cols));
        const std::vector<uint8_t> bytes = store_as(type, random(static_cast<size_t>(rows * cols)));
        const Weight w = gpu->load_weight(weight_view(type, rows, cols, bytes));
        const std::vector<float> x = random(static_cast<size_t>(cols));
        std::vector<float> pair(x);
        pair.insert(pair.end(), x.begin(), x.end());
        auto x1 = gpu->alloc(x.size()), x2 = gpu->alloc(pair.size());
        gpu->upload(x1->data(), x.data(), x.size());
        gpu->upload(x2->data(), pair.data(), pair.size());
        auto y1 = gpu->alloc(static_cast<size_t>(rows));
        auto y2 = gpu->alloc(static_cast<size_t>(2 * rows));
        gpu->matmul(w, x1->data(), 1, y1->data());
        gpu->matmul(w, x2->data(), 2, y2->data());
        std::vector<float> one(static_cast<size_t>(rows)), two(static_cast<size_t>(2 * rows));
        gpu->download(one.data(), y1->data(), one.size());
        gpu->download(two.data(), y2->data(), two.size());
        for (int64_t r = 0; r < rows; ++r)
          ASSERT_EQ(std::memcmp(&one[r], &two[r], sizeof(float)), 0)
              << "row " << r << ": " << one[r] << " alone, " << two[r] << " in a pair";
      }
  }
}

// One token through several 16-bit matrices that read the same input (one launch of the ring
// for the group) gives each matrix the bits of its product alone, with the ring and without.
TEST_F(CudaOps, GroupedOneToken16BitProductsEqualEachAlone) {
  const testing::RestoreEnv restore{"HOSTLM_CUDA_GEMV16_RING"};
  const int64_t cols = 2048 + 8;
  const int64_t row_counts[] = {301, 37, 4501};
  for (const char* ring : {"1024x3", "0"}) {
    setenv("HOSTLM_CUDA_GEMV16_RING", ring, 1);
    std::string why;
    std::unique_ptr<Backend> gpu = testing::cuda_backend_or_reason(why);
    ASSERT_NE(gpu, nullptr) << why;
    for (DType type : {DType::BF16, DType::F16}) {
      SCOPED_TRACE(std::string("ring ") + ring + ", " + std::string(dtype_name(type)));
      std::vector<std::vector<uint8_t>> bytes;
      std::vector<Weight> ws;
      for (int64_t rows : row_counts) {
        bytes.push_back(store_as(type, random(static_cast<size_t>(rows * cols))));
        ws.push_back(gpu->load_weight(weight_view(type, rows, cols, bytes.back())));
      }
      const std::vector<float> x = random(static_cast<size_t>(cols));
      auto xd = gpu->alloc(x.size());
      gpu->upload(xd->data(), x.data(), x.size());
      std::vector<std::unique_ptr<Buffer>> grouped, alone;
      std::vector<MatmulOut> outs;
      for (size_t j = 0; j < ws.size(); ++j) {
        grouped.push_back(gpu->alloc(static_cast<size_t>(ws[j].rows)));
        alone.push_back(gpu->alloc(static_cast<size_t>(ws[j].rows)));
        outs.push_back({&ws[j], grouped.back()->data()});
        gpu->matmul(ws[j], xd->data(), 1, alone.back()->data());
      }
      gpu->matmul_same_input(outs, xd->data(), 1);
      for (size_t j = 0; j < ws.size(); ++j) {
        std::vector<float> a(static_cast<size_t>(ws[j].rows)), b(a.size());
        gpu->download(a.data(), grouped[j]->data(), a.size());
        gpu->download(b.data(), alone[j]->data(), b.size());
        for (size_t r = 0; r < a.size(); ++r)
          ASSERT_EQ(std::memcmp(&a[r], &b[r], sizeof(float)), 0)
              << "matrix " << j << " row " << r << ": " << a[r] << " grouped, " << b[r] << " alone";
      }
    }
  }
}

// A delta-rule layer's decode input projections in 16 bits with the convolution in the
// ring's epilogue (matmul_same_input_conv1d) give the bits of the grouped products and then
// conv1d_silu: the convolved rows, the moved state and the other products, over two steps,
// with an odd channel count (a warp's last pair has one row). The first product's own output
// is left unwritten when fused, which shows that it was (on sm_90, where the ring runs).
TEST_F(CudaOps, OneToken16BitConvInTheProductEqualsProductThenConv) {
  const bool ring = testing::device_major() >= 9;  // where the ring (sm_90+) runs
  // Off by default (slower on the 9B BF16): this backend has it on.
  const testing::RestoreEnv restore{"HOSTLM_CUDA_FUSE_CONV16"};
  setenv("HOSTLM_CUDA_FUSE_CONV16", "1", 1);
  std::string why;
  gpu_ = testing::cuda_backend_or_reason(why);
  ASSERT_NE(gpu_, nullptr) << why;
  constexpr int64_t K = 4;
  const int64_t channels = 301, z_rows = 96, b_rows = 32;
  for (DType type : {DType::BF16, DType::F16})
    for (int64_t cols : {int64_t{1024}, int64_t{2048 + 8}}) {
      std::vector<std::vector<uint8_t>> bytes;
      const auto load = [&](int64_t rows) {
        bytes.push_back(store_as(type, random(static_cast<size_t>(rows * cols))));
        return gpu_->load_weight(weight_view(type, rows, cols, bytes.back()));
      };
      const Weight w_qkv = load(channels), w_z = load(z_rows), w_b = load(b_rows);
      const std::vector<float> conv_w = random(static_cast<size_t>(channels * K));
      const std::vector<float> state0 = random(static_cast<size_t>((K - 1) * channels));
      const std::vector<std::vector<float>> xs = {random(static_cast<size_t>(cols)),
                                                  random(static_cast<size_t>(cols))};
      testing::expect_conv_in_product_equals_apart(
          *gpu_, w_qkv, w_z, w_b, K, conv_w, state0, xs, ring,
          std::string(dtype_name(type)) + " cols " + std::to_string(cols));
    }
}

// An MLP's 16-bit gate and up products with the SwiGLU where the ring's warp has both sums of
// a row (matmul_swiglu) give the bits of the grouped products and then swiglu; the up
// product's output is left unwritten when fused, which shows that it was (on sm_90).
TEST_F(CudaOps, OneToken16BitSwigluInTheProductEqualsProductsThenSwiglu) {
  const bool ring = testing::device_major() >= 9;  // where the ring (sm_90+) runs
  for (DType type : {DType::BF16, DType::F16})
    for (auto [rows, cols] : {std::pair<int64_t, int64_t>{301, 2048 + 8}, {4608, 1024}}) {
      SCOPED_TRACE(std::string(dtype_name(type)) + " " + std::to_string(rows) + "x" +
                   std::to_string(cols));
      const std::vector<uint8_t> gate_bytes =
          store_as(type, random(static_cast<size_t>(rows * cols)));
      const std::vector<uint8_t> up_bytes =
          store_as(type, random(static_cast<size_t>(rows * cols)));
      const Weight w_gate = gpu_->load_weight(weight_view(type, rows, cols, gate_bytes));
      const Weight w_up = gpu_->load_weight(weight_view(type, rows, cols, up_bytes));
      const std::vector<float> x = random(static_cast<size_t>(cols));
      auto xd = to_gpu(x);
      const std::vector<float> nan(static_cast<size_t>(rows), std::nanf(""));
      auto gate_apart = gpu_->alloc(nan.size()), up_apart = gpu_->alloc(nan.size());
      auto gate_fused = gpu_->alloc(nan.size()), up_fused = to_gpu(nan);
      const MatmulOut outs[] = {{&w_gate, gate_apart->data()}, {&w_up, up_apart->data()}};
      gpu_->matmul_same_input(outs, xd->data(), 1);
      gpu_->swiglu(gate_apart->data(), up_apart->data(), gate_apart->data(), nan.size());
      gpu_->matmul_swiglu(w_gate, w_up, xd->data(), 1, gate_fused->data(), up_fused->data());
      const std::vector<float> want = from_gpu(gate_apart->data(), nan.size());
      const std::vector<float> got = from_gpu(gate_fused->data(), nan.size());
      for (size_t r = 0; r < want.size(); ++r)
        ASSERT_EQ(std::memcmp(&want[r], &got[r], sizeof(float)), 0)
            << "row " << r << ": " << want[r] << " apart, " << got[r] << " fused";
      if (!ring) continue;
      const std::vector<float> left = from_gpu(up_fused->data(), nan.size());
      EXPECT_TRUE(std::all_of(left.begin(), left.end(), [](float v) { return std::isnan(v); }))
          << "the fused product wrote the up rows, so it was not fused";
    }
}

TEST_F(CudaOps, EmbedGathersRowsOfEveryType) {
  const int64_t rows = 50, cols = 24;
  const std::vector<int32_t> tokens = {0, 7, 49, 7, 3};
  const int64_t T = static_cast<int64_t>(tokens.size());
  for (DType type : {DType::F32, DType::F16, DType::BF16}) {
    std::vector<float> values = random(static_cast<size_t>(rows * cols));
    const std::vector<uint8_t> bytes = store_as(type, values);
    std::vector<float> want(static_cast<size_t>(T * cols));
    cpu_->embed(cpu_->load_weight(weight_view(type, rows, cols, bytes)), tokens.data(), T,
                want.data());
    auto out = gpu_->alloc(want.size());
    gpu_->embed(gpu_->load_weight(weight_view(type, rows, cols, bytes)), tokens.data(), T,
                out->data());
    expect_close(want, from_gpu(out->data(), want.size()), "embed", 0.0);
    // The table in mapped host memory, as an untied model's token embedding is kept.
    auto host_out = gpu_->alloc(want.size());
    gpu_->embed(gpu_->load_embedding_table(weight_view(type, rows, cols, bytes)), tokens.data(), T,
                host_out->data());
    expect_close(want, from_gpu(host_out->data(), want.size()), "embed from host memory", 0.0);
  }
  std::vector<float> zeros(static_cast<size_t>(rows * cols));
  const std::vector<uint8_t> zero_bytes = store_as(DType::F32, zeros);
  const Weight w = gpu_->load_weight(weight_view(DType::F32, rows, cols, zero_bytes));
  const int32_t bad = 50;
  auto out = gpu_->alloc(static_cast<size_t>(cols));
  EXPECT_THROW(gpu_->embed(w, &bad, 1, out->data()), Error);
}

TEST_F(CudaOps, RmsNormStridedAndInPlace) {
  const int64_t rows = 7, n = 96;
  const std::vector<float> weight = random(static_cast<size_t>(n), 0.5f, 1.5f);
  // Strided input into a packed output.
  const size_t x_stride = 100;
  const std::vector<float> x = random(rows * x_stride, -3.f, 3.f);
  std::vector<float> want(static_cast<size_t>(rows * n));
  cpu_->rms_norm(x.data(), x_stride, want.data(), n, rows, n, weight.data(), 1e-6f);
  auto xd = to_gpu(x);
  auto od = gpu_->alloc(want.size());
  gpu_->rms_norm(xd->data(), x_stride, od->data(), n, rows, n, weight.data(), 1e-6f);
  expect_close(want, from_gpu(od->data(), want.size()), "rms_norm strided");
  // In place on every other head-sized run, as the attention query norm uses it.
  std::vector<float> inplace = random(static_cast<size_t>(rows * 2 * n));
  auto id = to_gpu(inplace);
  cpu_->rms_norm(inplace.data(), 2 * n, inplace.data(), 2 * n, rows, n, weight.data(), 1e-6f);
  gpu_->rms_norm(id->data(), 2 * n, id->data(), 2 * n, rows, n, weight.data(), 1e-6f);
  expect_close(inplace, from_gpu(id->data(), inplace.size()), "rms_norm in place");
}

TEST_F(CudaOps, RopeNeoxPartialStridedAndFarPositions) {
  const int64_t T = 4, n_heads = 3, rot_dims = 16;
  const size_t head_stride = 40, token_stride = n_heads * head_stride + 5;
  const std::vector<int32_t> positions = {0, 7, 262000, 131071};
  std::vector<float> x = random(T * token_stride);
  auto xd = to_gpu(x);
  cpu_->rope_neox(x.data(), token_stride, T, n_heads, head_stride, rot_dims, positions.data(), 1e7);
  gpu_->rope_neox(xd->data(), token_stride, T, n_heads, head_stride, rot_dims, positions.data(),
                  1e7);
  expect_close(x, from_gpu(xd->data(), x.size()), "rope_neox");
  // Same buffer, new positions: the device copy of the positions must follow.
  const std::vector<int32_t> later = {8, 9, 10, 11};
  cpu_->rope_neox(x.data(), token_stride, T, n_heads, head_stride, rot_dims, later.data(), 1e7);
  gpu_->rope_neox(xd->data(), token_stride, T, n_heads, head_stride, rot_dims, later.data(), 1e7);
  expect_close(x, from_gpu(xd->data(), x.size()), "rope_neox, second call");
}

// The fused query and key preparation gives the bits of the ops it replaces (the Backend
// default: norms, rotations, then the query copy), run on the GPU too, and the CPU's values.
TEST_F(CudaOps, QkNormRopeEqualsNormsRotationsAndCopy) {
  struct Shape {
    int64_t T, n_head, n_head_kv, head_dim, rot_dims;
    bool gates;
  };
  // Norm weights are uploaded once per host array (by address), as model weights that live
  // as long as the model; each shape's weights stay alive so that no address is reused.
  std::vector<std::vector<float>> weights;
  weights.reserve(8);  // two per shape; references to them are held
  for (const Shape sh : {Shape{3, 4, 2, 256, 64, true}, Shape{2, 3, 1, 128, 96, false},
                         Shape{1, 2, 2, 96, 0, true}, Shape{5, 16, 4, 256, 64, true}}) {
    const std::string what = "head_dim " + std::to_string(sh.head_dim) + " rot " +
                             std::to_string(sh.rot_dims) + " T " + std::to_string(sh.T);
    const size_t q_head_stride = static_cast<size_t>(sh.gates ? 2 * sh.head_dim : sh.head_dim);
    const size_t qg_n = static_cast<size_t>(sh.T * sh.n_head) * q_head_stride;
    const size_t k_n = static_cast<size_t>(sh.T * sh.n_head_kv * sh.head_dim);
    const size_t q_n = static_cast<size_t>(sh.T * sh.n_head * sh.head_dim);
    const std::vector<float> qg = random(qg_n, -3.f, 3.f), k = random(k_n, -3.f, 3.f);
    const std::vector<float>& qw =
        weights.emplace_back(random(static_cast<size_t>(sh.head_dim), 0.5f, 1.5f));
    const std::vector<float>& kw =
        weights.emplace_back(random(static_cast<size_t>(sh.head_dim), 0.5f, 1.5f));
    std::vector<int32_t> positions;
    for (int64_t t = 0; t < sh.T; ++t) positions.push_back(static_cast<int32_t>(t * 65521 + 3));
    // The CPU's values.
    std::vector<float> qg_cpu = qg, k_cpu = k, q_cpu(q_n);
    cpu_->qk_norm_rope(qg_cpu.data(), q_head_stride, sh.n_head, k_cpu.data(), sh.n_head_kv, sh.T,
                       sh.head_dim, qw.data(), 1e-6f, kw.data(), 1e-5f, sh.rot_dims,
                       positions.data(), 1e7, q_cpu.data());
    // The GPU, fused and through the separate ops.
    auto qg_fused = to_gpu(qg), k_fused = to_gpu(k), qg_ops = to_gpu(qg), k_ops = to_gpu(k);
    auto q_fused = gpu_->alloc(q_n), q_ops = gpu_->alloc(q_n);
    gpu_->qk_norm_rope(qg_fused->data(), q_head_stride, sh.n_head, k_fused->data(), sh.n_head_kv,
                       sh.T, sh.head_dim, qw.data(), 1e-6f, kw.data(), 1e-5f, sh.rot_dims,
                       positions.data(), 1e7, q_fused->data());
    gpu_->Backend::qk_norm_rope(qg_ops->data(), q_head_stride, sh.n_head, k_ops->data(),
                                sh.n_head_kv, sh.T, sh.head_dim, qw.data(), 1e-6f, kw.data(), 1e-5f,
                                sh.rot_dims, positions.data(), 1e7, q_ops->data());
    const std::vector<float> q_got = from_gpu(q_fused->data(), q_n);
    const std::vector<float> k_got = from_gpu(k_fused->data(), k_n);
    expect_close(from_gpu(q_ops->data(), q_n), q_got, what + ": queries, fused vs ops", 0.0);
    expect_close(from_gpu(k_ops->data(), k_n), k_got, what + ": keys, fused vs ops", 0.0);
    expect_close(q_cpu, q_got, what + ": queries vs cpu");
    expect_close(k_cpu, k_got, what + ": keys vs cpu");
    // The gates, between the query rows, are untouched.
    if (sh.gates) {
      const std::vector<float> qg_got = from_gpu(qg_fused->data(), qg_n);
      for (size_t r = 0; r < static_cast<size_t>(sh.T * sh.n_head); ++r)
        for (size_t i = 0; i < static_cast<size_t>(sh.head_dim); ++i) {
          const size_t at = r * q_head_stride + static_cast<size_t>(sh.head_dim) + i;
          ASSERT_EQ(qg_got[at], qg[at]) << what << ": gate " << r << "," << i;
        }
    }
  }
}

// Paged attention and kv_store: paged_attention_test.cpp.

TEST_F(CudaOps, ElementwiseOps) {
  const size_t n = 1000;
  const std::vector<float> a = random(n, -6.f, 6.f), b = random(n, -6.f, 6.f);
  auto ad = to_gpu(a), bd = to_gpu(b);
  std::vector<float> sum = a;
  cpu_->add(sum.data(), b.data(), n);
  gpu_->add(ad->data(), bd->data(), n);
  expect_close(sum, from_gpu(ad->data(), n), "add");

  std::vector<float> sw(n);
  cpu_->swiglu(a.data(), b.data(), sw.data(), n);
  auto ad2 = to_gpu(a);
  gpu_->swiglu(ad2->data(), bd->data(), ad2->data(),
               n);  // in place over the gate, as SwigluMlp does
  expect_close(sw, from_gpu(ad2->data(), n), "swiglu");

  const int64_t T = 10, width = 40;
  const size_t gate_stride = 64;
  std::vector<float> x = random(static_cast<size_t>(T * width), -3.f, 3.f);
  const std::vector<float> gate = random(T * gate_stride, -6.f, 6.f);
  auto xd = to_gpu(x), gd = to_gpu(gate);
  cpu_->mul_sigmoid(x.data(), gate.data(), gate_stride, T, width);
  gpu_->mul_sigmoid(xd->data(), gd->data(), gate_stride, T, width);
  expect_close(x, from_gpu(xd->data(), x.size()), "mul_sigmoid");

  gpu_->fill(xd->data(), 2.5f, x.size());
  expect_close(std::vector<float>(x.size(), 2.5f), from_gpu(xd->data(), x.size()), "fill", 0.0);
  // Zeros go by memset: exactly the n floats asked, from an unaligned start.
  gpu_->fill(xd->data() + 3, 0.f, 7);
  std::vector<float> zeroed(x.size(), 2.5f);
  std::fill(zeroed.begin() + 3, zeroed.begin() + 10, 0.f);
  expect_close(zeroed, from_gpu(xd->data(), x.size()), "fill with zeros", 0.0);

  // copy_rows between strided layouts.
  const std::vector<float> src = random(12 * 30);
  std::vector<float> dst(12 * 20, 0.f);
  auto sd = to_gpu(src), dd = to_gpu(dst);
  cpu_->copy_rows(dst.data(), 20, src.data() + 3, 30, 12, 17);
  gpu_->copy_rows(dd->data(), 20, sd->data() + 3, 30, 12, 17);
  expect_close(dst, from_gpu(dd->data(), dst.size()), "copy_rows", 0.0);
}

// A mixture-of-experts block's row movements: rows gathered (repeats included) and weighted
// sums of rows per token, over more rows than one launch's grid holds.
TEST_F(CudaOps, GatherRowsAndWeightedRowSumsMatchCpu) {
  const int64_t width = 300, src_rows = 40;
  const std::vector<float> src = random(static_cast<size_t>(src_rows * width));
  std::uniform_int_distribution<int32_t> pick(0, src_rows - 1);
  std::vector<int32_t> rows(70000);
  for (int32_t& r : rows) r = pick(rng_);
  auto sd = to_gpu(src);
  auto gathered = gpu_->alloc(rows.size() * static_cast<size_t>(width));
  gpu_->gather_rows(gathered->data(), sd->data(), width, rows);
  std::vector<float> want(rows.size() * static_cast<size_t>(width));
  cpu_->gather_rows(want.data(), src.data(), width, rows);
  expect_close(want, from_gpu(gathered->data(), want.size()), "gather_rows", 0.0);

  const int64_t m = 9, T = static_cast<int64_t>(rows.size()) / m;
  const std::vector<float> weights = random(static_cast<size_t>(T * m), 0.f, 1.f);
  const std::span<const int32_t> sum_rows(rows.data(), static_cast<size_t>(T * m));
  std::vector<float> sums(static_cast<size_t>(T * width));
  cpu_->weighted_row_sums(sums.data(), src.data(), width, T, m, sum_rows, weights);
  auto sums_d = gpu_->alloc(sums.size());
  gpu_->weighted_row_sums(sums_d->data(), sd->data(), width, T, m, sum_rows, weights);
  expect_close(sums, from_gpu(sums_d->data(), sums.size()), "weighted_row_sums");
}

TEST_F(CudaOps, FreshBuffersAreZero) {
  auto b = gpu_->alloc(333);
  expect_close(std::vector<float>(333, 0.f), from_gpu(b->data(), 333), "alloc", 0.0);
}

// K = 4 (Qwen3.5's) runs a kernel with the kernel size fixed at compile time; the others the
// general one.
TEST_F(CudaOps, Conv1dSiluCarriesItsStateAcrossCalls) {
  for (const int64_t K : {4, 3, 6}) {
    const int64_t channels = 37;
    const std::vector<float> weight = random(static_cast<size_t>(channels * K));
    std::vector<float> state = random(static_cast<size_t>((K - 1) * channels));
    auto sd = to_gpu(state);
    for (int64_t T : {5, 1, 2, 1, 3, 40}) {
      const std::string what = "K=" + std::to_string(K) + ", T=" + std::to_string(T);
      const std::vector<float> x = random(static_cast<size_t>(T * channels), -2.f, 2.f);
      std::vector<float> want(x.size());
      cpu_->conv1d_silu(x.data(), T, channels, K, weight.data(), state.data(), want.data());
      auto xd = to_gpu(x);
      auto od = gpu_->alloc(x.size());
      gpu_->conv1d_silu(xd->data(), T, channels, K, weight.data(), sd->data(), od->data());
      expect_close(want, from_gpu(od->data(), want.size()), "conv1d out, " + what);
      expect_close(state, from_gpu(sd->data(), state.size()), "conv1d state, " + what);
    }
  }
}

class CudaDeltaRule : public CudaOps,
                      public ::testing::WithParamInterface<Backend::DeltaRuleShape> {};

TEST_P(CudaDeltaRule, MatchesCpuWithStateCarried) {
  for (const DType type : {DType::F32, DType::F16, DType::BF16}) {
    Backend::DeltaRuleShape sh = GetParam();
    sh.state = type;
    const std::string kind = std::string(dtype_name(type)) + " state, T=";
    const int64_t row = 2 * sh.n_k_heads * sh.dk + sh.n_v_heads * sh.dv;
    const auto& a_neg = kept(random(static_cast<size_t>(sh.n_v_heads), -2.f, -0.1f));
    const auto& dt_bias = kept(random(static_cast<size_t>(sh.n_v_heads)));
    std::vector<float> state =
        testing::stored_states(sh, 1, random(static_cast<size_t>(sh.state_values()), -0.5f, 0.5f));
    auto sd = to_gpu(state);
    // 77 tokens span three of the kernel's token chunks and end inside one.
    for (int64_t T : {3, 1, 6, 77}) {
      const std::vector<float> qkv = random(static_cast<size_t>(T * row));
      const std::vector<float> alpha = random(static_cast<size_t>(T * sh.n_v_heads), -3.f, 3.f);
      const std::vector<float> beta = random(alpha.size(), -3.f, 3.f);
      std::vector<float> want(static_cast<size_t>(T * sh.n_v_heads * sh.dv));
      cpu_->gated_delta_rule(qkv.data(), alpha.data(), beta.data(), a_neg.data(), dt_bias.data(), T,
                             sh, state.data(), want.data());
      auto qd = to_gpu(qkv), ad = to_gpu(alpha), bd = to_gpu(beta);
      auto od = gpu_->alloc(want.size());
      gpu_->gated_delta_rule(qd->data(), ad->data(), bd->data(), a_neg.data(), dt_bias.data(), T,
                             sh, sd->data(), od->data());
      const std::string what = kind + std::to_string(T);
      expect_close(want, from_gpu(od->data(), want.size()), "delta rule out, " + what,
                   testing::state_tolerance(type));
      expect_close(testing::state_values(sh, state),
                   testing::state_values(sh, from_gpu(sd->data(), state.size())),
                   "delta rule state, " + what, testing::state_tolerance(type));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, CudaDeltaRule,
                         ::testing::Values(Backend::DeltaRuleShape{2, 4, 16, 16},
                                           Backend::DeltaRuleShape{1, 2, 128, 128},
                                           Backend::DeltaRuleShape{2, 4, 32, 16},
                                           Backend::DeltaRuleShape{2, 2, 48, 24},
                                           Backend::DeltaRuleShape{2, 6, 128, 40},
                                           Backend::DeltaRuleShape{1, 2, 256, 16}),
                         // Named by the shape: the default name prints the struct's bytes,
                         // padding included, which differ between runs.
                         [](const ::testing::TestParamInfo<Backend::DeltaRuleShape>& p) {
                           const Backend::DeltaRuleShape& s = p.param;
                           return "k" + std::to_string(s.n_k_heads) + "v" +
                                  std::to_string(s.n_v_heads) + "_" + std::to_string(s.dk) + "x" +
                                  std::to_string(s.dv);
                         });

// A decode-and-prefill batch through the several-sequence ops: each sequence's rows, conv
// state and delta-rule state end as the CPU's per-sequence ops leave them. 70 sequences, so
// the CUDA side needs two launch tables.
TEST_F(CudaOps, RecurrentOpsOverManySequencesMatchPerSequence) {
  for (const DType type : {DType::F32, DType::F16, DType::BF16})
    recurrent_ops_over_many_sequences({2, 4, 32, 16, type});
}

void CudaOps::recurrent_ops_over_many_sequences(const Backend::DeltaRuleShape& sh) {
  SCOPED_TRACE(std::string(dtype_name(sh.state)) + " states");
  const int64_t K = 4, channels = 2 * sh.n_k_heads * sh.dk + sh.n_v_heads * sh.dv;
  const int64_t state_size = sh.state_floats(), conv_size = (K - 1) * channels;
  const auto& weight = kept(random(static_cast<size_t>(channels * K)));
  const auto& a_neg = kept(random(static_cast<size_t>(sh.n_v_heads), -2.f, -0.1f));
  const auto& dt_bias = kept(random(static_cast<size_t>(sh.n_v_heads)));
  std::vector<int64_t> lengths(70, 1);
  lengths[3] = 5;  // prefill chunks between decode rows, one shorter than the conv history
  lengths[40] = 2;
  lengths[69] = 9;
  lengths[20] = 45;  // more than one token chunk of the delta-rule kernel
  int64_t rows = 0;
  for (int64_t T : lengths) rows += T;
  std::vector<float> conv_states = random(static_cast<size_t>(70 * conv_size));
  std::vector<float> states = testing::stored_states(
      sh, 70, random(static_cast<size_t>(70 * sh.state_values()), -0.5f, 0.5f));
  auto conv_d = to_gpu(conv_states), state_d = to_gpu(states);
  std::vector<SequenceSlice> cpu_seqs, gpu_seqs;
  int64_t row = 0;
  for (size_t i = 0; i < lengths.size(); ++i) {
    const auto c = static_cast<int64_t>(i) * conv_size, st = static_cast<int64_t>(i) * state_size;
    cpu_seqs.push_back({row, lengths[i], 0, conv_states.data() + c, states.data() + st});
    gpu_seqs.push_back({row, lengths[i], 0, conv_d->data() + c, state_d->data() + st});
    row += lengths[i];
  }
  const std::vector<float> x = random(static_cast<size_t>(rows * channels), -2.f, 2.f);
  const std::vector<float> alpha = random(static_cast<size_t>(rows * sh.n_v_heads), -3.f, 3.f);
  const std::vector<float> beta = random(alpha.size(), -3.f, 3.f);
  std::vector<float> conv_out(x.size()), want(static_cast<size_t>(rows * sh.n_v_heads * sh.dv));
  for (const SequenceSlice& sl : cpu_seqs) {  // the reference: one sequence at a time
    cpu_->conv1d_silu(x.data() + sl.row * channels, sl.T, channels, K, weight.data(), sl.conv_state,
                      conv_out.data() + sl.row * channels);
    cpu_->gated_delta_rule(conv_out.data() + sl.row * channels,
                           alpha.data() + sl.row * sh.n_v_heads,
                           beta.data() + sl.row * sh.n_v_heads, a_neg.data(), dt_bias.data(), sl.T,
                           sh, sl.recurrent_state, want.data() + sl.row * sh.n_v_heads * sh.dv);
  }
  auto xd = to_gpu(x), ad = to_gpu(alpha), bd = to_gpu(beta);
  auto cd = gpu_->alloc(x.size()), od = gpu_->alloc(want.size());
  gpu_->conv1d_silu_seqs(gpu_seqs, xd->data(), channels, K, weight.data(), cd->data());
  gpu_->gated_delta_rule_seqs(gpu_seqs, cd->data(), ad->data(), bd->data(), a_neg.data(),
                              dt_bias.data(), sh, od->data());
  expect_close(conv_out, from_gpu(cd->data(), conv_out.size()), "conv1d over sequences");
  expect_close(conv_states, from_gpu(conv_d->data(), conv_states.size()), "conv states");
  expect_close(want, from_gpu(od->data(), want.size()), "delta rule over sequences",
               testing::state_tolerance(sh.state));
  expect_close(testing::state_values(sh, states),
               testing::state_values(sh, from_gpu(state_d->data(), states.size())),
               "delta-rule states", testing::state_tolerance(sh.state));
}

// Decode steps over 16-bit states (every sequence one token) take delta_step16.cu's kernel,
// and with HOSTLM_CUDA_DELTA_STEP16=0 the general one: both against the CPU, the states carried
// over three steps of 70 sequences (two launch tables). The shapes: the 9B's heads, dk 64,
// dk 20 (padded to the 32 a lane group holds) with dv 40 (a partial block), dk 100.
TEST_F(CudaOps, SixteenBitDecodeStepsMatchCpu) {
  std::string why;
  std::unique_ptr<Backend> general;
  {
    const testing::ScopedEnv off("HOSTLM_CUDA_DELTA_STEP16", "0");
    general = testing::cuda_backend_or_reason(why);
  }
  ASSERT_TRUE(general) << why;
  for (const DType type : {DType::F16, DType::BF16})
    for (Backend::DeltaRuleShape sh :
         {Backend::DeltaRuleShape{16, 32, 128, 128}, Backend::DeltaRuleShape{2, 4, 64, 64},
          Backend::DeltaRuleShape{2, 4, 20, 40}, Backend::DeltaRuleShape{1, 2, 100, 24}}) {
      sh.state = type;
      const std::string what = std::string(dtype_name(type)) + " dk " + std::to_string(sh.dk) +
                               " dv " + std::to_string(sh.dv);
      const int64_t n = 70, row = 2 * sh.n_k_heads * sh.dk + sh.n_v_heads * sh.dv;
      const auto& a_neg = kept(random(static_cast<size_t>(sh.n_v_heads), -2.f, -0.1f));
      const auto& dt_bias = kept(random(static_cast<size_t>(sh.n_v_heads)));
      std::vector<float> states = testing::stored_states(
          sh, n, random(static_cast<size_t>(n * sh.state_values()), -0.5f, 0.5f));
      auto step_states = to_gpu(states);
      auto general_states = general->alloc(states.size());
      general->upload(general_states->data(), states.data(), states.size());
      std::vector<SequenceSlice> cpu_seqs, step_seqs, general_seqs;
      for (int64_t i = 0; i < n; ++i) {
        const int64_t st = i * sh.state_floats();
        cpu_seqs.push_back({i, 1, 0, nullptr, states.data() + st});
        step_seqs.push_back({i, 1, 0, nullptr, step_states->data() + st});
        general_seqs.push_back({i, 1, 0, nullptr, general_states->data() + st});
      }
      for (int step = 0; step < 3; ++step) {
        const std::vector<float> qkv = random(static_cast<size_t>(n * row));
        const std::vector<float> alpha = random(static_cast<size_t>(n * sh.n_v_heads), -3.f, 3.f);
        const std::vector<float> beta = random(alpha.size(), -3.f, 3.f);
        std::vector<float> want(static_cast<size_t>(n * sh.n_v_heads * sh.dv));
        cpu_->gated_delta_rule_seqs(cpu_seqs, qkv.data(), alpha.data(), beta.data(), a_neg.data(),
                                    dt_bias.data(), sh, want.data());
        auto qd = to_gpu(qkv), ad = to_gpu(alpha), bd = to_gpu(beta);
        auto od = gpu_->alloc(want.size());
        gpu_->gated_delta_rule_seqs(step_seqs, qd->data(), ad->data(), bd->data(), a_neg.data(),
                                    dt_bias.data(), sh, od->data());
        std::vector<float> general_out(want.size());
        {
          auto gq = general->alloc(qkv.size()), ga = general->alloc(alpha.size());
          auto gb = general->alloc(beta.size()), go = general->alloc(want.size());
          general->upload(gq->data(), qkv.data(), qkv.size());
          general->upload(ga->data(), alpha.data(), alpha.size());
          general->upload(gb->data(), beta.data(), beta.size());
          general->gated_delta_rule_seqs(general_seqs, gq->data(), ga->data(), gb->data(),
                                         a_neg.data(), dt_bias.data(), sh, go->data());
          general->download(general_out.data(), go->data(), general_out.size());
        }
        std::vector<float> general_state_now(states.size());
        general->download(general_state_now.data(), general_states->data(), states.size());
        const std::string at = what + ", step " + std::to_string(step);
        const double tolerance = testing::state_tolerance(type);
        expect_close(want, from_gpu(od->data(), want.size()), "step kernel out, " + at, tolerance);
        expect_close(want, general_out, "general kernel out, " + at, tolerance);
        expect_close(testing::state_values(sh, states),
                     testing::state_values(sh, from_gpu(step_states->data(), states.size())),
                     "step kernel states, " + at, tolerance);
        expect_close(testing::state_values(sh, states),
                     testing::state_values(sh, general_state_now), "general kernel states, " + at,
                     tolerance);
      }
    }
}

// The delta rule with the layer's gated norm in one call: a decode step (every T <= 4) takes
// them in one launch, whose numbers must be the two ops' bits; a step with a longer sequence
// runs the two ops. 70 sequences, so two launch tables; a profiled backend shows the fused
// launch ran.
TEST_F(CudaOps, DeltaRuleWithItsNormEqualsTheTwoOps) {
  // The backend finds host arrays by their address (model weights never change), so every
  // case's arrays stay alive: a freed vector's address may come back with other values.
  std::deque<std::vector<float>> host_arrays;
  const auto kept = [&](std::vector<float> v) -> const std::vector<float>& {
    return host_arrays.emplace_back(std::move(v));
  };
  for (const Backend::DeltaRuleShape sh :
       {Backend::DeltaRuleShape{16, 32, 128, 128}, Backend::DeltaRuleShape{2, 4, 64, 64},
        Backend::DeltaRuleShape{1, 3, 32, 32}, Backend::DeltaRuleShape{2, 2, 16, 32},
        Backend::DeltaRuleShape{2, 4, 100, 128}, Backend::DeltaRuleShape{2, 4, 32, 16},
        Backend::DeltaRuleShape{16, 32, 128, 128, DType::F16},
        Backend::DeltaRuleShape{2, 4, 64, 64, DType::BF16}}) {
    for (const int64_t longest : {4, 9}) {
      const std::string what = "dk " + std::to_string(sh.dk) + " dv " + std::to_string(sh.dv) +
                               ", longest " + std::to_string(longest) + ", " +
                               std::string(dtype_name(sh.state)) + " states";
      const int64_t row = 2 * sh.n_k_heads * sh.dk + sh.n_v_heads * sh.dv;
      const int64_t width = sh.n_v_heads * sh.dv, state_size = sh.state_floats();
      std::vector<int64_t> lengths(70, 1);
      lengths[2] = 3;
      lengths[41] = 2;
      lengths[69] = longest;
      int64_t T = 0;
      for (int64_t t : lengths) T += t;
      const auto& a_neg = kept(random(static_cast<size_t>(sh.n_v_heads), -2.f, -0.1f));
      const auto& dt_bias = kept(random(static_cast<size_t>(sh.n_v_heads)));
      const auto& norm_weight = kept(random(static_cast<size_t>(sh.dv), 0.5f, 1.5f));
      const std::vector<float> qkv = random(static_cast<size_t>(T * row));
      const std::vector<float> alpha = random(static_cast<size_t>(T * sh.n_v_heads), -3.f, 3.f);
      const std::vector<float> beta = random(alpha.size(), -3.f, 3.f);
      const std::vector<float> z = random(static_cast<size_t>(T * width), -3.f, 3.f);
      const std::vector<float> states0 = testing::stored_states(
          sh, 70, random(static_cast<size_t>(70 * sh.state_values()), -0.5f, 0.5f));
      auto qd = to_gpu(qkv), ad = to_gpu(alpha), bd = to_gpu(beta), zd = to_gpu(z);
      auto fused_states = to_gpu(states0), split_states = to_gpu(states0);
      auto fused_out = gpu_->alloc(z.size()), split_out = gpu_->alloc(z.size());
      std::vector<float> states = states0, want(z.size());
      std::vector<SequenceSlice> cpu_seqs, fused_seqs, split_seqs;
      int64_t r = 0;
      for (size_t i = 0; i < lengths.size(); ++i) {
        const int64_t st = static_cast<int64_t>(i) * state_size;
        cpu_seqs.push_back({r, lengths[i], 0, nullptr, states.data() + st});
        fused_seqs.push_back({r, lengths[i], 0, nullptr, fused_states->data() + st});
        split_seqs.push_back({r, lengths[i], 0, nullptr, split_states->data() + st});
        r += lengths[i];
      }
      cpu_->gated_delta_rule_norm_seqs(cpu_seqs, qkv.data(), alpha.data(), beta.data(),
                                       a_neg.data(), dt_bias.data(), sh, z.data(),
                                       norm_weight.data(), 1e-6f, T, want.data());
      gpu_->gated_delta_rule_norm_seqs(fused_seqs, qd->data(), ad->data(), bd->data(), a_neg.data(),
                                       dt_bias.data(), sh, zd->data(), norm_weight.data(), 1e-6f, T,
                                       fused_out->data());
      gpu_->gated_delta_rule_seqs(split_seqs, qd->data(), ad->data(), bd->data(), a_neg.data(),
                                  dt_bias.data(), sh, split_out->data());
      gpu_->gated_rms_norm(split_out->data(), zd->data(), norm_weight.data(), T * sh.n_v_heads,
                           sh.dv, 1e-6f, split_out->data());
      const std::vector<float> fused = from_gpu(fused_out->data(), z.size());
      const std::vector<float> split = from_gpu(split_out->data(), z.size());
      EXPECT_EQ(0, std::memcmp(fused.data(), split.data(), fused.size() * sizeof(float))) << what;
      const std::vector<float> fs = from_gpu(fused_states->data(), states.size());
      const std::vector<float> ss = from_gpu(split_states->data(), states.size());
      EXPECT_EQ(0, std::memcmp(fs.data(), ss.data(), fs.size() * sizeof(float))) << what;
      const double tolerance = std::max(1e-4, testing::state_tolerance(sh.state));
      expect_close(want, fused, "normed delta rule against the CPU, " + what, tolerance);
      expect_close(testing::state_values(sh, states), testing::state_values(sh, fs),
                   "states against the CPU, " + what, testing::state_tolerance(sh.state));
    }
  }
  // The 9B's shape through a profiled backend: the decode step is one fused launch.
  setenv("HOSTLM_CUDA_PROFILE", "1", 1);
  ::testing::internal::CaptureStderr();
  {
    std::string why;
    auto profiled = testing::cuda_backend_or_reason(why);
    ASSERT_TRUE(profiled) << why;
    const Backend::DeltaRuleShape sh{16, 32, 128, 128};
    const int64_t row = 2 * sh.n_k_heads * sh.dk + sh.n_v_heads * sh.dv;
    auto qd = profiled->alloc(static_cast<size_t>(row)), zd = profiled->alloc(4096);
    auto ad = profiled->alloc(32), bd = profiled->alloc(32), od = profiled->alloc(4096);
    auto sd = profiled->alloc(static_cast<size_t>(32 * 128 * 128));
    const std::vector<float> a_neg(32, -0.5f), dt_bias(32, 0.f), norm_weight(128, 1.f);
    const SequenceSlice one{0, 1, 0, nullptr, sd->data()};
    profiled->gated_delta_rule_norm_seqs({&one, 1}, qd->data(), ad->data(), bd->data(),
                                         a_neg.data(), dt_bias.data(), sh, zd->data(),
                                         norm_weight.data(), 1e-6f, 1, od->data());
    std::vector<float> out(4096);
    profiled->download(out.data(), od->data(), out.size());
  }
  const std::string profile = ::testing::internal::GetCapturedStderr();
  unsetenv("HOSTLM_CUDA_PROFILE");
  EXPECT_NE(profile.find("gated_delta_rule_norm"), std::string::npos) << profile;
}

TEST_F(CudaOps, AddRmsNormEqualsAddThenNorm) {
  const int64_t rows = 5, n = 1000;
  const std::vector<float> weight = random(static_cast<size_t>(n), 0.5f, 1.5f);
  std::vector<float> x = random(static_cast<size_t>(rows * n), -3.f, 3.f);
  const std::vector<float> y = random(x.size(), -3.f, 3.f);
  std::vector<float> out(x.size());
  auto xd = to_gpu(x), yd = to_gpu(y);
  auto od = gpu_->alloc(x.size());
  cpu_->add_rms_norm(x.data(), y.data(), rows, n, weight.data(), 1e-6f, out.data());
  gpu_->add_rms_norm(xd->data(), yd->data(), rows, n, weight.data(), 1e-6f, od->data());
  expect_close(x, from_gpu(xd->data(), x.size()), "residual sum", 0.0);
  expect_close(out, from_gpu(od->data(), out.size()), "norm of the sum");
}

// Some kernels read buffers before their programmatic wait when the op before them is known
// not to have written those buffers (cuda_backend.cpp, LastWrites). Each chain below puts
// right before a reader either a writer of its input (which must keep the read after the
// wait) or a product of another buffer (which lets it read early); both must give the CPU's
// results.
TEST_F(CudaOps, ResidualNormRightAfterAProduct) {
  const int64_t rows = 256, cols = 96;
  const std::vector<float> values = random(static_cast<size_t>(rows * cols));
  const std::vector<uint8_t> bytes = store_as(DType::F32, values);
  const Weight wc = cpu_->load_weight(weight_view(DType::F32, rows, cols, bytes));
  const Weight wg = gpu_->load_weight(weight_view(DType::F32, rows, cols, bytes));
  const std::vector<float> in = random(static_cast<size_t>(cols));
  const std::vector<float> weight = random(static_cast<size_t>(rows), 0.5f, 1.5f);
  for (const bool product_into_x : {true, false}) {
    std::vector<float> x = random(static_cast<size_t>(rows), -3.f, 3.f);
    std::vector<float> y = random(x.size(), -3.f, 3.f), out(x.size());
    auto ind = to_gpu(in), xd = to_gpu(x), yd = to_gpu(y);
    auto od = gpu_->alloc(x.size());
    cpu_->matmul(wc, in.data(), 1, product_into_x ? x.data() : y.data());
    cpu_->add_rms_norm(x.data(), y.data(), 1, rows, weight.data(), 1e-6f, out.data());
    gpu_->matmul(wg, ind->data(), 1, product_into_x ? xd->data() : yd->data());
    gpu_->add_rms_norm(xd->data(), yd->data(), 1, rows, weight.data(), 1e-6f, od->data());
    const std::string what = product_into_x ? "product into x" : "product into y";
    expect_close(x, from_gpu(xd->data(), x.size()), what + ": residual sum");
    expect_close(out, from_gpu(od->data(), out.size()), what + ": norm of the sum");
  }
}

TEST_F(CudaOps, OutputGateRightAfterAProduct) {
  const int64_t T = 2, n = 64, rows = 2 * n, cols = 32;  // a product of two gate rows per token
  const std::vector<float> values = random(static_cast<size_t>(rows * cols));
  const std::vector<uint8_t> bytes = store_as(DType::F32, values);
  const Weight wc = cpu_->load_weight(weight_view(DType::F32, rows, cols, bytes));
  const Weight wg = gpu_->load_weight(weight_view(DType::F32, rows, cols, bytes));
  const std::vector<float> in = random(static_cast<size_t>(T * cols));
  for (const bool product_into_gate : {true, false}) {
    std::vector<float> x = random(static_cast<size_t>(T * n), -3.f, 3.f);
    std::vector<float> gate = random(static_cast<size_t>(T * rows), -3.f, 3.f);
    std::vector<float> other(gate.size());
    auto ind = to_gpu(in), xd = to_gpu(x), gd = to_gpu(gate), od = gpu_->alloc(other.size());
    // The gates are every other run of n values (a stride of 2n), as the q rows hold them.
    cpu_->matmul(wc, in.data(), T, product_into_gate ? gate.data() : other.data());
    cpu_->mul_sigmoid(x.data(), gate.data() + n, static_cast<size_t>(rows), T, n);
    gpu_->matmul(wg, ind->data(), T, product_into_gate ? gd->data() : od->data());
    gpu_->mul_sigmoid(xd->data(), gd->data() + n, static_cast<size_t>(rows), T, n);
    expect_close(x, from_gpu(xd->data(), x.size()),
                 product_into_gate ? "product into the gates" : "product elsewhere");
  }
}

TEST_F(CudaOps, DeltaRuleRightAfterAWriterOfItsState) {
  const Backend::DeltaRuleShape sh{2, 4, 128, 128};
  const int64_t row = 2 * sh.n_k_heads * sh.dk + sh.n_v_heads * sh.dv;
  const size_t state_floats = static_cast<size_t>(sh.n_v_heads * sh.dv * sh.dk);
  const std::vector<float> a_neg = random(static_cast<size_t>(sh.n_v_heads), -2.f, -0.1f);
  const std::vector<float> dt_bias = random(static_cast<size_t>(sh.n_v_heads));
  const std::vector<float> qkv = random(static_cast<size_t>(row));
  const std::vector<float> alpha = random(static_cast<size_t>(sh.n_v_heads), -3.f, 3.f);
  const std::vector<float> beta = random(alpha.size(), -3.f, 3.f);
  const std::vector<float> z = random(static_cast<size_t>(sh.n_v_heads * sh.dv), -3.f, 3.f);
  const std::vector<float> norm_weight = random(static_cast<size_t>(sh.dv), 0.5f, 1.5f);
  auto qd = to_gpu(qkv), ad = to_gpu(alpha), bd = to_gpu(beta), zd = to_gpu(z);
  auto sd = gpu_->alloc(state_floats);
  auto od = gpu_->alloc(z.size()), nd = gpu_->alloc(z.size());
  std::vector<float> state(state_floats, 0.25f), out(z.size()), normed(z.size());
  // A fill of the state, then the delta rule twice (the second one right after the first,
  // which wrote the state), then the gated norm of its output with a gate it did not write.
  gpu_->fill(sd->data(), 0.25f, state_floats);
  for (int step = 0; step < 2; ++step) {
    cpu_->gated_delta_rule(qkv.data(), alpha.data(), beta.data(), a_neg.data(), dt_bias.data(), 1,
                           sh, state.data(), out.data());
    gpu_->gated_delta_rule(qd->data(), ad->data(), bd->data(), a_neg.data(), dt_bias.data(), 1, sh,
                           sd->data(), od->data());
  }
  cpu_->gated_rms_norm(out.data(), z.data(), norm_weight.data(), sh.n_v_heads, sh.dv, 1e-6f,
                       normed.data());
  gpu_->gated_rms_norm(od->data(), zd->data(), norm_weight.data(), sh.n_v_heads, sh.dv, 1e-6f,
                       nd->data());
  expect_close(out, from_gpu(od->data(), out.size()), "delta rule out");
  expect_close(state, from_gpu(sd->data(), state.size()), "delta rule state");
  expect_close(normed, from_gpu(nd->data(), normed.size()), "gated norm");
}

TEST_F(CudaOps, DownloadRowsToScatteredHostArrays) {
  const std::vector<float> src = random(5 * 7);
  auto sd = to_gpu(src);
  std::vector<std::vector<float>> dst(5, std::vector<float>(7, 0.f));
  std::vector<float> pinned(7, 0.f);
  gpu_->pin_host(pinned.data(), pinned.size() * sizeof(float));
  std::vector<float*> targets = {dst[3].data(), dst[0].data(), pinned.data(), dst[4].data(),
                                 dst[1].data()};
  gpu_->download_rows(targets, sd->data(), 7);
  gpu_->unpin_host(pinned.data());
  for (size_t i = 0; i < targets.size(); ++i)
    for (size_t j = 0; j < 7; ++j) EXPECT_EQ(targets[i][j], src[i * 7 + j]) << i << "," << j;
}

// Widths below a warp, not a multiple of 32, and the widest a warp takes (256); 19 rows so the
// last block of 8 rows is partly empty.
TEST_F(CudaOps, GatedRmsNormInPlace) {
  for (int64_t dv : {16, 40, 128, 256}) {
    const int64_t rows = 19;
    const std::vector<float> weight = random(static_cast<size_t>(dv), 0.5f, 1.5f);
    std::vector<float> x = random(static_cast<size_t>(rows * dv), -2.f, 2.f);
    const std::vector<float> z = random(x.size(), -4.f, 4.f);
    auto xd = to_gpu(x), zd = to_gpu(z);
    cpu_->gated_rms_norm(x.data(), z.data(), weight.data(), rows, dv, 1e-6f, x.data());
    gpu_->gated_rms_norm(xd->data(), zd->data(), weight.data(), rows, dv, 1e-6f, xd->data());
    expect_close(x, from_gpu(xd->data(), x.size()), "gated_rms_norm dv=" + std::to_string(dv));
  }
}

}  // namespace
}  // namespace hostlm
