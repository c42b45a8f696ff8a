// The per-lane arithmetic of the CUDA kernels for quantized weights (cuda/quants/pieces.h),
// run on the host: it compiles for both, so these checks need no GPU and run everywhere.
//   - Every piece decoder, reading the split layout, reproduces gguf's dequantization bit for
//     bit on the reference blocks of tests/data/quants, and the pieces cover each element once.
//   - The decode GEMV's lane loop, summed over a warp's 32 lanes, equals the exact product of
//     the dequantized weights with the int8-quantized activations.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "cuda/quants/quant_types.h"
#include "cuda/quants/split_layout.h"
#include "cuda/quants/stage_layout.h"
#include "quant_test_support.h"

namespace hostlm {
namespace {

using cuda::quants::QuantActs;
using cuda::quants::QuantMatrix;
using testing::QuantCase;

std::vector<uint8_t> split(DType type, const uint8_t* blocks, size_t n_blocks) {
  const cuda::quants::SplitLayout l = cuda::quants::split_layout(type);
  std::vector<uint8_t> out(n_blocks * static_cast<size_t>(l.block_bytes));
  cuda::quants::split_blocks(l, blocks, n_blocks, out.data());
  return out;
}

uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

class QuantPieces : public ::testing::TestWithParam<QuantCase> {};

TEST_P(QuantPieces, DecodeIsBitIdenticalToGguf) {
  const QuantCase& c = GetParam();
  const testing::QuantReference ref = testing::load_quant_reference(c);
  const auto l = cuda::quants::split_layout(c.type);
  const size_t n_blocks = ref.blocks.size() / static_cast<size_t>(l.block_bytes);
  ASSERT_EQ(ref.values.size(), n_blocks * static_cast<size_t>(l.block_elems));
  // One block per row, then three per row: block n of the tensor is block b of row r.
  for (int64_t nb : {1, 3}) {
    const int64_t rows = static_cast<int64_t>(n_blocks) / nb;
    const std::vector<uint8_t> data =
        split(c.type, ref.blocks.data(), static_cast<size_t>(rows * nb));
    const QuantMatrix m = cuda::quants::quant_matrix(c.type, data.data(), rows, nb * l.block_elems);
    ASSERT_EQ(m.nb, nb);
    std::vector<int> seen(static_cast<size_t>(rows * nb * l.block_elems), 0);
    int mismatches = 0;
    cuda::quants::with_quant_type(c.type, [&](auto q) {
      using Q = decltype(q);
      for (int64_t n = 0; n < rows * nb; ++n)
        for (int k = 0; k < Q::kPieces; ++k) {
          const auto p = Q::load(m, n, k);
          for (int g = 0; g < Q::kRanges; ++g) {
            float v[16];
            cuda::quants::decode_range<Q>(p, g, v);
            for (int i = 0; i < 16; ++i) {
              const size_t at = static_cast<size_t>(n * l.block_elems + p.off[g] + i);
              ++seen[at];
              if (bits(v[i]) != bits(ref.values[at]) && ++mismatches <= 5)
                ADD_FAILURE() << c.file << " element " << at << " (block " << n << ", piece " << k
                              << ", range " << g << "): " << v[i] << " vs gguf " << ref.values[at];
            }
          }
        }
    });
    EXPECT_EQ(mismatches, 0) << c.file << ", " << nb << " blocks per row";
    EXPECT_TRUE(std::all_of(seen.begin(), seen.end(), [](int s) { return s == 1; }))
        << c.file << ": the pieces must cover every element exactly once";
  }
}

// T tokens of activations quantized per 32 as the device's quantize_acts does.
struct HostActs {
  std::vector<int8_t> q;
  std::vector<float> d, s16;
  QuantActs view(int64_t cols) const { return {q.data(), d.data(), s16.data(), cols}; }
};

HostActs quantize(const std::vector<float>& x) {
  HostActs a;
  a.q.resize(x.size());
  a.d.resize(x.size() / 32);
  a.s16.resize(x.size() / 16);
  for (size_t b = 0; b < x.size() / 32; ++b)
    cuda::quants::quantize_block32(x.data() + 32 * b, a.q.data() + 32 * b, &a.d[b], &a.s16[2 * b]);
  return a;
}

// y[t, r] as a warp of the GEMV kernel computes it: each lane's lane_dot, summed over lanes.
template <class Q, int kT, int kR>
std::vector<double> warp_gemv(const QuantMatrix& m, const QuantActs& x, int T) {
  std::vector<double> y(static_cast<size_t>(T * m.rows));
  for (int64_t row0 = 0; row0 < m.rows; row0 += kR) {
    double total[kR][kT] = {};
    for (int lane = 0; lane < 32; ++lane) {
      float acc[kR][kT] = {};
      cuda::quants::lane_dot<Q, kT, kR>(m, x, row0, lane, T, acc);
      for (int r = 0; r < kR; ++r)
        for (int t = 0; t < kT; ++t) total[r][t] += acc[r][t];
    }
    for (int r = 0; r < kR && row0 + r < m.rows; ++r)
      for (int t = 0; t < T; ++t) y[static_cast<size_t>(t * m.rows + row0 + r)] = total[r][t];
  }
  return y;
}

TEST_P(QuantPieces, LaneDotEqualsProductWithQuantizedActivations) {
  const QuantCase& c = GetParam();
  const auto l = cuda::quants::split_layout(c.type);
  std::mt19937 rng(7);
  // 5 rows (odd: the last pair of rows per warp is half empty); rows of 45 or 5 blocks, so
  // the lanes of a warp get unequal numbers of pieces.
  const int64_t rows = 5, nb = l.block_elems == 32 ? 45 : 5, cols = nb * l.block_elems;
  const std::vector<uint8_t> blocks =
      testing::random_blocks(c, static_cast<size_t>(rows * nb), rng);
  const std::vector<float> w = testing::dequantize(c, blocks);
  const std::vector<uint8_t> data = split(c.type, blocks.data(), blocks.size() / l.block_bytes);
  const QuantMatrix m = cuda::quants::quant_matrix(c.type, data.data(), rows, cols);
  const int T = 8;
  std::normal_distribution<float> normal(0.f, 1.f);
  std::vector<float> x(static_cast<size_t>(T * cols));
  for (float& v : x) v = normal(rng);
  std::fill(x.begin(), x.begin() + 32, 0.f);  // an all-zero block: scale 0
  const HostActs acts = quantize(x);
  const QuantActs xa = acts.view(cols);

  cuda::quants::with_quant_type(c.type, [&](auto q) {
    using Q = decltype(q);
    const std::vector<double> y1 = warp_gemv<Q, 1, 1>(m, xa, 1);
    const std::vector<double> y4 = warp_gemv<Q, 4, 2>(m, xa, 3);
    const std::vector<double> y8 = warp_gemv<Q, 8, 2>(m, xa, T);
    for (int t = 0; t < T; ++t)
      for (int64_t r = 0; r < rows; ++r) {
        double want = 0, mass = 0, step = 0, exact = 0;
        for (int64_t i = 0; i < cols; ++i) {
          const size_t xi = static_cast<size_t>(t * cols + i);
          const double wi = w[static_cast<size_t>(r * cols + i)];
          const double xq = static_cast<double>(acts.d[xi / 32]) * acts.q[xi];
          want += wi * xq;
          mass += std::abs(wi * xq);
          exact += wi * x[xi];
          step += std::abs(wi) * acts.d[xi / 32] / 2;
        }
        const double tol = 1e-5 * mass + 1e-30;
        const size_t at = static_cast<size_t>(t * rows + r);
        EXPECT_NEAR(y8[at], want, tol) << c.file << " T=8 row " << r << " token " << t;
        if (t < 3) {
          EXPECT_NEAR(y4[at], want, tol) << c.file << " T=3 row " << r << " token " << t;
        }
        if (t < 1) {
          EXPECT_NEAR(y1[at], want, tol) << c.file << " T=1 row " << r;
        }
        // And against float activations: off by at most half a step per element.
        EXPECT_NEAR(y8[at], exact, step + tol) << c.file << " row " << r << " token " << t;
      }
  });
}

INSTANTIATE_TEST_SUITE_P(Types, QuantPieces, ::testing::ValuesIn(testing::quant_cases()),
                         [](const auto& p) { return std::string(p.param.file); });

TEST(QuantActivations, RoundWithinHalfAStepAndSumPerSixteen) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-4.f, 4.f);
  std::vector<float> x(32 * 50);
  for (float& v : x) v = u(rng) * std::exp2(u(rng) * 4);
  const HostActs a = quantize(x);
  for (size_t b = 0; b < 50; ++b) {
    float amax = 0;
    for (int i = 0; i < 32; ++i) amax = std::max(amax, std::abs(x[32 * b + i]));
    EXPECT_FLOAT_EQ(a.d[b], amax / 127.f);
    int sums[2] = {0, 0};
    for (int i = 0; i < 32; ++i) {
      const int q = a.q[32 * b + i];
      EXPECT_LE(std::abs(q), 127);
      EXPECT_LE(std::abs(x[32 * b + i] - a.d[b] * static_cast<float>(q)), a.d[b] * 0.5001f);
      sums[i / 16] += q;
    }
    EXPECT_FLOAT_EQ(a.s16[2 * b], a.d[b] * static_cast<float>(sums[0]));
    EXPECT_FLOAT_EQ(a.s16[2 * b + 1], a.d[b] * static_cast<float>(sums[1]));
  }
}

}  // namespace
}  // namespace hostlm

namespace hostlm::cuda::quants {
namespace {

// The single-token GEMV's stage layout: for every split type and row width it accepts, each
// region's copies are aligned at every row and segment start, the regions of a stage do not
// overlap, and the segment's bytes are all there. The widths of the Qwen3.5 shapes it must
// accept (Q4_K and Q6_K at 2,560 to 17,408 columns) are accepted.
TEST(OneTokenStageLayout, CopiesAlignedRegionsApartWidthsOfTheShapesAccepted) {
  for (const testing::QuantCase& c : testing::quant_cases()) {
    const SplitLayout l = split_layout(c.type);
    if (l.n_regions == 0) continue;
    int pieces_per_block = 0;
    with_quant_type(c.type, [&](auto q) { pieces_per_block = decltype(q)::kPieces; });
    const int seg_blocks = 128 / pieces_per_block;  // a segment: 32 lanes x 4 pieces
    for (int64_t nb = 1; nb <= 80; ++nb) {
      const StageLayout s = stage_layout(l, nb, seg_blocks);
      if (s.bytes == 0) continue;
      EXPECT_EQ(s.bytes % 16, 0) << c.file;
      int end = 0;
      for (int j = 0; j < l.n_regions; ++j) {
        const int64_t size = l.regions[j].size;
        EXPECT_TRUE(s.chunk[j] == 4 || s.chunk[j] == 8 || s.chunk[j] == 16) << c.file;
        EXPECT_EQ(size * nb % s.chunk[j], 0) << c.file << " nb " << nb << " region " << j;
        EXPECT_EQ(size * seg_blocks % s.chunk[j], 0) << c.file << " region " << j;
        EXPECT_EQ(s.offset[j] % 16, 0) << c.file;
        EXPECT_GE(s.offset[j], end) << c.file << " region " << j << " overlaps";
        end = s.offset[j] + static_cast<int>(size) * seg_blocks;
      }
      EXPECT_LE(end, s.bytes) << c.file;
    }
  }
  for (DType type : {DType::Q4_K, DType::Q6_K})
    for (int64_t cols : {2560, 4096, 5120, 9216, 12288, 17408})
      EXPECT_GT(stage_layout(split_layout(type), cols / 256, 16).bytes, 0)
          << static_cast<int>(type) << " " << cols;
  EXPECT_EQ(stage_layout(split_layout(DType::Q4_K), 16, 16).bytes, 16 * 144);
}

}  // namespace
}  // namespace hostlm::cuda::quants
