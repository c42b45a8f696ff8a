// The CUDA backend's paged-KV ops against the CPU backend's: the same keys and values stored
// through each backend's kv_store into scattered pages of every type, then attention of a
// batch mixing a prompt, a decode token and a chunk. Skipped where no GPU can be used.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>

#include "backends/paged_kv_cases.h"
#include "cuda_test_support.h"
#include "hostlm/half.h"

namespace hostlm {
namespace {

using testing::PagedCase;

class CudaPagedKv : public ::testing::TestWithParam<PagedCase> {
 protected:
  void SetUp() override {
    std::string why;
    gpu_ = testing::cuda_backend_or_reason(why);
    if (!gpu_) GTEST_SKIP() << "no usable CUDA backend: " << why;
    cpu_ = create_backend("cpu");
  }
  std::unique_ptr<Backend> cpu_, gpu_;
};

// The bytes of every page, as the backend holds them.
std::vector<uint8_t> page_bytes(Backend& be, const KvPages& kv, bool keys) {
  const size_t n = kv.page_bytes * testing::kScenarioPages / sizeof(float);
  std::vector<float> host(n);
  be.download(host.data(), static_cast<const float*>(keys ? kv.k : kv.v), n);
  std::vector<uint8_t> bytes(n * sizeof(float));
  std::memcpy(bytes.data(), host.data(), bytes.size());
  return bytes;
}

TEST_P(CudaPagedKv, StoreAndAttentionMatchCpu) {
  const PagedCase c = GetParam();
  const auto sc = testing::make_scenario(c, 23);
  KvPagePool cpu_pool(*cpu_, sc.layout, c.type, testing::kScenarioPages);
  KvPagePool gpu_pool(*gpu_, sc.layout, c.type, testing::kScenarioPages);
  const auto cpu_batch = testing::fill_pages(*cpu_, cpu_pool, sc);
  const auto gpu_batch = testing::fill_pages(*gpu_, gpu_pool, sc);

  // Stored rows: f32 and f16 exactly; Q8_0 to within one step of its scale.
  const size_t row = kv_row_bytes(c.type, sc.width());
  for (bool keys : {true, false}) {
    const auto want = page_bytes(*cpu_, cpu_pool.layer(0), keys);
    const auto got = page_bytes(*gpu_, gpu_pool.layer(0), keys);
    for (size_t s = 0; s < sc.T.size(); ++s)
      for (int64_t pos = 0; pos < sc.n_past[s] + sc.T[s]; ++pos) {
        const size_t at =
            cpu_pool.page_bytes() * static_cast<size_t>(sc.tables[s][pos / kKvPageTokens]) +
            row * static_cast<size_t>(pos % kKvPageTokens);
        if (c.type != DType::Q8_0) {
          ASSERT_EQ(0, std::memcmp(want.data() + at, got.data() + at, row))
              << c.name << (keys ? " keys" : " values") << " seq " << s << " pos " << pos;
          continue;
        }
        for (size_t b = 0; b < row; b += 34) {
          uint16_t dw, dg;
          std::memcpy(&dw, want.data() + at + b, 2);
          std::memcpy(&dg, got.data() + at + b, 2);
          ASSERT_EQ(dw, dg) << c.name << " scale, seq " << s << " pos " << pos;
          for (size_t i = 2; i < 34; ++i)
            ASSERT_LE(std::abs(int{static_cast<int8_t>(want[at + b + i])} -
                               int{static_cast<int8_t>(got[at + b + i])}),
                      1)
                << c.name << " seq " << s << " pos " << pos;
        }
      }
  }

  const int64_t width = c.n_head * c.head_dim;
  const float scale = 1.f / std::sqrt(static_cast<float>(c.head_dim));
  std::vector<float> want(static_cast<size_t>(sc.rows * width));
  cpu_->paged_attention(cpu_batch, sc.q.data(), static_cast<size_t>(width), c.n_head, scale,
                        want.data());
  // The GPU reads the CPU's pages too, so the attention itself is compared on equal input.
  for (size_t i = 0; i < 2; ++i) {
    const bool own = i == 0;
    std::vector<PagedSequence> batch = gpu_batch;
    if (!own) {
      for (bool keys : {true, false}) {
        const auto bytes = page_bytes(*cpu_, cpu_pool.layer(0), keys);
        std::vector<float> host(bytes.size() / sizeof(float));
        std::memcpy(host.data(), bytes.data(), bytes.size());
        gpu_->upload(static_cast<float*>(keys ? gpu_pool.layer(0).k : gpu_pool.layer(0).v),
                     host.data(), host.size());
      }
    }
    auto q = testing::on_backend(*gpu_, sc.q);
    auto out = gpu_->alloc(want.size());
    gpu_->paged_attention(batch, q->data(), static_cast<size_t>(width), c.n_head, scale,
                          out->data());
    std::vector<float> got(want.size());
    gpu_->download(got.data(), out->data(), got.size());
    double worst = 0, top = 1e-30;
    for (size_t j = 0; j < got.size(); ++j) {
      worst = std::max(worst, static_cast<double>(std::abs(got[j] - want[j])));
      top = std::max(top, static_cast<double>(std::abs(want[j])));
    }
    // Own pages: Q8_0 rows may differ by one step, which moves results by ~1e-2 of a value.
    const double tolerance = (own && c.type == DType::Q8_0) ? 2e-2 : 1e-5;
    EXPECT_LE(worst, tolerance * top) << c.name << (own ? " (own pages)" : " (CPU's pages)");
  }
}

// Decode rows a few thousand keys out, where the split kernel's warps run many pipelined
// steps (each step's key rows requested one step ahead), with every query-group size Qwen3.5
// has and a short head; a chunk of four rows rides along. The same outputs as the CPU's.
TEST(CudaPagedKvLong, DecodeRowsFarOutMatchCpu) {
  std::string why;
  auto gpu = testing::cuda_backend_or_reason(why);
  if (!gpu) GTEST_SKIP() << "no usable CUDA backend: " << why;
  auto cpu = create_backend("cpu");
  const std::vector<PagedCase> cases = {{DType::F16, 16, 4, 256, "f16_gqa4_hd256"},
                                        {DType::F16, 24, 4, 256, "f16_gqa6_hd256"},
                                        {DType::F16, 8, 4, 64, "f16_gqa2_hd64"}};
  for (const PagedCase& c : cases) {
    constexpr int64_t kPages = 320;
    const auto sc = testing::make_scenario(c, 41, {3000, 4100, 2500}, {1, 1, 4}, kPages);
    KvPagePool cpu_pool(*cpu, sc.layout, c.type, kPages);
    KvPagePool gpu_pool(*gpu, sc.layout, c.type, kPages);
    const auto cpu_batch = testing::fill_pages(*cpu, cpu_pool, sc);
    const auto gpu_batch = testing::fill_pages(*gpu, gpu_pool, sc);
    const int64_t width = c.n_head * c.head_dim;
    const float scale = 1.f / std::sqrt(static_cast<float>(c.head_dim));
    std::vector<float> want(static_cast<size_t>(sc.rows * width)), got(want.size());
    cpu->paged_attention(cpu_batch, sc.q.data(), static_cast<size_t>(width), c.n_head, scale,
                         want.data());
    auto q = testing::on_backend(*gpu, sc.q);
    auto out = gpu->alloc(want.size());
    gpu->paged_attention(gpu_batch, q->data(), static_cast<size_t>(width), c.n_head, scale,
                         out->data());
    gpu->download(got.data(), out->data(), got.size());
    double worst = 0, top = 1e-30;
    for (size_t j = 0; j < got.size(); ++j) {
      worst = std::max(worst, static_cast<double>(std::abs(got[j] - want[j])));
      top = std::max(top, static_cast<double>(std::abs(want[j])));
    }
    EXPECT_LE(worst, 1e-5 * top) << c.name;
  }
}

// The keys' norm and rotation with the store into the pages in one call: the same queries,
// keys and page bytes as qk_norm_rope followed by kv_store (F32 and F16 pages take one launch,
// Q8_0 the two ops), over the scenario's mixed batch with a partial rotation.
TEST_P(CudaPagedKv, NormRopeStoreEqualsNormRopeThenStore) {
  const PagedCase c = GetParam();
  const auto sc = testing::make_scenario(c, 37);
  KvPagePool fused_pool(*gpu_, sc.layout, c.type, testing::kScenarioPages);
  KvPagePool apart_pool(*gpu_, sc.layout, c.type, testing::kScenarioPages);
  const auto fused_batch = testing::fill_pages(*gpu_, fused_pool, sc);
  const auto apart_batch = testing::fill_pages(*gpu_, apart_pool, sc);
  const int64_t hd = c.head_dim, kv_width = c.n_head_kv * hd, q_width = c.n_head * hd;
  std::mt19937 rng(41);
  std::uniform_real_distribution<float> dist(-2.f, 2.f);
  auto random = [&](int64_t n) {
    std::vector<float> v(static_cast<size_t>(n));
    for (float& x : v) x = dist(rng);
    return v;
  };
  const std::vector<float> qg = random(sc.rows * 2 * q_width), k = random(sc.rows * kv_width),
                           v = random(sc.rows * kv_width), q_w = random(hd), k_w = random(hd);
  std::vector<int32_t> positions;
  for (size_t s = 0; s < sc.T.size(); ++s)
    for (int64_t t = 0; t < sc.T[s]; ++t)
      positions.push_back(static_cast<int32_t>(sc.n_past[s] + t));
  const int64_t rot = std::max<int64_t>(2, hd / 4 / 2 * 2);  // partial, as Qwen3.5's
  auto qg_f = testing::on_backend(*gpu_, qg), qg_a = testing::on_backend(*gpu_, qg);
  auto k_f = testing::on_backend(*gpu_, k), k_a = testing::on_backend(*gpu_, k);
  auto vd = testing::on_backend(*gpu_, v);
  auto q_f = gpu_->alloc(static_cast<size_t>(sc.rows * q_width));
  auto q_a = gpu_->alloc(static_cast<size_t>(sc.rows * q_width));
  const auto stride = static_cast<size_t>(2 * hd);
  gpu_->qk_norm_rope_store(fused_batch, qg_f->data(), stride, c.n_head, k_f->data(), vd->data(),
                           c.n_head_kv, sc.rows, hd, q_w.data(), 1e-6f, k_w.data(), 1e-6f, rot,
                           positions.data(), 1e7, q_f->data());
  gpu_->qk_norm_rope(qg_a->data(), stride, c.n_head, k_a->data(), c.n_head_kv, sc.rows, hd,
                     q_w.data(), 1e-6f, k_w.data(), 1e-6f, rot, positions.data(), 1e7, q_a->data());
  gpu_->kv_store(apart_batch, k_a->data(), vd->data());
  const auto same = [&](const float* a, const float* b, size_t n, const char* what) {
    std::vector<float> x(n), y(n);
    gpu_->download(x.data(), a, n);
    gpu_->download(y.data(), b, n);
    EXPECT_EQ(0, std::memcmp(x.data(), y.data(), n * sizeof(float))) << c.name << ": " << what;
  };
  same(q_f->data(), q_a->data(), static_cast<size_t>(sc.rows * q_width), "queries");
  same(k_f->data(), k_a->data(), static_cast<size_t>(sc.rows * kv_width), "keys");
  for (bool keys : {true, false})
    EXPECT_EQ(page_bytes(*gpu_, fused_pool.layer(0), keys),
              page_bytes(*gpu_, apart_pool.layer(0), keys))
        << c.name << (keys ? " key pages" : " value pages");

  // Which launches ran, from a profiled backend: one for F32 and F16 pages, the two ops for
  // Q8_0.
  setenv("HOSTLM_CUDA_PROFILE", "1", 1);
  ::testing::internal::CaptureStderr();
  {
    std::string why;
    auto profiled = testing::cuda_backend_or_reason(why);
    ASSERT_TRUE(profiled) << why;
    KvPagePool pool(*profiled, sc.layout, c.type, testing::kScenarioPages);
    const auto batch = testing::fill_pages(*profiled, pool, sc);
    auto qgp = testing::on_backend(*profiled, qg), kp = testing::on_backend(*profiled, k);
    auto vp = testing::on_backend(*profiled, v);
    auto qp = profiled->alloc(static_cast<size_t>(sc.rows * q_width));
    profiled->qk_norm_rope_store(batch, qgp->data(), stride, c.n_head, kp->data(), vp->data(),
                                 c.n_head_kv, sc.rows, hd, q_w.data(), 1e-6f, k_w.data(), 1e-6f,
                                 rot, positions.data(), 1e7, qp->data());
    std::vector<float> out(static_cast<size_t>(sc.rows * q_width));
    profiled->download(out.data(), qp->data(), out.size());
  }
  const std::string profile = ::testing::internal::GetCapturedStderr();
  unsetenv("HOSTLM_CUDA_PROFILE");
  const bool one_launch = c.type != DType::Q8_0;
  EXPECT_EQ(one_launch, profile.find("qk_norm_rope_store") != std::string::npos) << c.name << "\n"
                                                                                 << profile;
  // fill_pages stores with kv_store too: the earlier tokens in four calls (the first sequence
  // has none) and the new ones in one, plus one more where the store ran apart.
  const auto kv_store_calls = [&] {
    const size_t at = profile.find("\nkv_store ");
    if (at == std::string::npos) return -1L;
    return std::strtol(profile.c_str() + at + 10, nullptr, 10);
  };
  EXPECT_EQ(one_launch ? 5 : 6, kv_store_calls()) << c.name << "\n" << profile;
}

// Attention launched right after the store of its batch's new keys and values reads the
// older ones before its programmatic wait (the first pass: fill_pages ends with that store,
// and the scenario's decode row and chunk have whole steps of older keys); its output has the
// bits of the same attention launched after another op (the fill), which waits first.
TEST_P(CudaPagedKv, AttentionRightAfterTheStoreEqualsAttentionAfterAnotherOp) {
  const PagedCase c = GetParam();
  const auto sc = testing::make_scenario(c, 61);
  const int64_t width = c.n_head * c.head_dim;
  const float scale = 1.f / std::sqrt(static_cast<float>(c.head_dim));
  const size_t n = static_cast<size_t>(sc.rows * width);
  std::vector<std::vector<float>> outs;
  for (bool right_after : {true, false}) {
    KvPagePool pool(*gpu_, sc.layout, c.type, testing::kScenarioPages);
    auto q = testing::on_backend(*gpu_, sc.q);
    auto out = gpu_->alloc(n);
    const auto batch = testing::fill_pages(*gpu_, pool, sc);  // its last op: the new rows' store
    if (!right_after) gpu_->fill(out->data(), 0.f, n);
    gpu_->paged_attention(batch, q->data(), static_cast<size_t>(width), c.n_head, scale,
                          out->data());
    outs.emplace_back(n);
    gpu_->download(outs.back().data(), out->data(), n);
  }
  EXPECT_EQ(0, std::memcmp(outs[0].data(), outs[1].data(), n * sizeof(float))) << c.name;
}

INSTANTIATE_TEST_SUITE_P(Types, CudaPagedKv, ::testing::ValuesIn(testing::paged_cases()),
                         [](const auto& p) { return p.param.name; });

}  // namespace
}  // namespace hostlm
