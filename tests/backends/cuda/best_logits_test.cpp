// The CUDA backend's best logits (selected on the device) against the host's selection
// (best_logits.h), which the sampler's order defines: values and ids equal, bit for bit,
// over rows whose logits spread widely, crowd into a few values, tie, or hold NaN, infinities
// and both zeros.
#include "hostlm/best_logits.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "cuda_test_support.h"
#include "hostlm/ops.h"

namespace hostlm {
namespace {

enum class Kind { Spread, FewValues, AllEqual, Specials, Tiny };

std::vector<float> make_row(Kind kind, size_t n, std::mt19937& rng) {
  std::vector<float> row(n);
  std::normal_distribution<float> normal(0.f, 3.f);
  std::uniform_int_distribution<int> small(-3, 3);
  for (size_t i = 0; i < n; ++i) {
    switch (kind) {
      case Kind::Spread:
        row[i] = normal(rng);
        break;
      case Kind::FewValues:
        row[i] = static_cast<float>(small(rng)) * 0.5f;
        break;
      case Kind::AllEqual:
        row[i] = 1.25f;
        break;
      case Kind::Tiny:
        row[i] = normal(rng) * 1e-30f;
        break;
      case Kind::Specials: {
        const float specials[] = {std::numeric_limits<float>::quiet_NaN(),
                                  std::numeric_limits<float>::infinity(),
                                  -std::numeric_limits<float>::infinity(),
                                  0.f,
                                  -0.f,
                                  std::numeric_limits<float>::denorm_min(),
                                  -std::numeric_limits<float>::denorm_min(),
                                  std::numeric_limits<float>::max(),
                                  -std::numeric_limits<float>::max()};
        row[i] = specials[static_cast<size_t>(rng()) % std::size(specials)];
        break;
      }
    }
  }
  return row;
}

struct Case {
  Kind kind;
  size_t rows, n, k;
};

TEST(CudaBestLogits, RowsMatchTheHostSelection) {
  std::string why;
  auto backend = testing::cuda_backend_or_reason(why);
  if (!backend) GTEST_SKIP() << "no usable CUDA backend: " << why;
  EXPECT_TRUE(backend->prefers_best_logits());
  const Case cases[] = {
      {Kind::Spread, 64, 248320, 40},   {Kind::Spread, 1, 248320, 1},
      {Kind::Spread, 3, 248320, 256},   {Kind::Spread, 2, 248320, 1024},
      {Kind::FewValues, 5, 248320, 40}, {Kind::AllEqual, 2, 248320, 100},
      {Kind::AllEqual, 1, 5000, 1},     {Kind::Specials, 4, 70000, 300},
      {Kind::Specials, 3, 17, 17},      {Kind::Tiny, 3, 100000, 64},
      {Kind::Spread, 7, 1, 1},          {Kind::FewValues, 9, 4097, 2000},
  };
  std::mt19937 rng(1234);
  for (const Case& c : cases) {
    SCOPED_TRACE("kind " + std::to_string(static_cast<int>(c.kind)) + ", rows " +
                 std::to_string(c.rows) + ", n " + std::to_string(c.n) + ", k " +
                 std::to_string(c.k));
    std::vector<float> host(c.rows * c.n);
    for (size_t r = 0; r < c.rows; ++r) {
      const auto row = make_row(c.kind, c.n, rng);
      std::copy(row.begin(), row.end(), host.begin() + static_cast<ptrdiff_t>(r * c.n));
    }
    auto device = backend->alloc(host.size());
    backend->upload(device->data(), host.data(), host.size());
    const size_t k = std::min(c.k, c.n);
    std::vector<std::vector<float>> values(c.rows, std::vector<float>(k));
    std::vector<std::vector<int32_t>> ids(c.rows, std::vector<int32_t>(k, -7));
    std::vector<float*> value_ptrs;
    std::vector<int32_t*> id_ptrs;
    for (size_t r = 0; r < c.rows; ++r) {
      value_ptrs.push_back(values[r].data());
      id_ptrs.push_back(ids[r].data());
    }
    // Twice: the second call reuses the first one's scratch.
    for (int round = 0; round < 2; ++round) {
      backend->best_logits_rows(value_ptrs, id_ptrs, device->data(), c.n, c.k);
      for (size_t r = 0; r < c.rows; ++r) {
        std::vector<float> want_values(k);
        std::vector<int32_t> want_ids(k);
        best_logits(std::span<const float>(host.data() + r * c.n, c.n), c.k, want_values.data(),
                    want_ids.data());
        ASSERT_EQ(ids[r], want_ids) << "row " << r;
        for (size_t i = 0; i < k; ++i) {
          uint32_t got_bits, want_bits;
          std::memcpy(&got_bits, &values[r][i], 4);
          std::memcpy(&want_bits, &want_values[i], 4);
          ASSERT_EQ(got_bits, want_bits) << "row " << r << ", rank " << i;
        }
      }
    }
  }
}

}  // namespace
}  // namespace hostlm
