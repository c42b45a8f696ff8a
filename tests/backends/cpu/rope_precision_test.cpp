// Rotary angles far out in the context: at position 262,143 with theta 1e7 a float32 angle
// (position * inv_freq rounded to 24 bits) is off by up to ~0.016 rad for the fastest pair,
// which moves logits visibly. The backend computes angles in double; this checks it against
// a long double rotation at the positions a 262K context reaches.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "hostlm/ops.h"

namespace hostlm {
namespace {

constexpr double kTheta = 1e7;    // Qwen3.5's rope_theta
constexpr int64_t kRotDims = 64;  // head_dim 256 x partial_rotary_factor 0.25
constexpr int64_t kHeadDim = 256;
const int32_t kPositions[] = {0, 1, 4095, 32767, 65535, 131071, 200003, 262143};

// x rotated by the exact angle; x[i] pairs with x[i + half] (NeoX layout).
std::vector<long double> exact_rotation(const std::vector<float>& x, int32_t position) {
  const int64_t half = kRotDims / 2;
  std::vector<long double> out(x.begin(), x.end());
  for (int64_t i = 0; i < half; ++i) {
    const long double inv_freq =
        std::pow(static_cast<long double>(kTheta), -2.0L * static_cast<long double>(i) / kRotDims);
    const long double angle = static_cast<long double>(position) * inv_freq;
    const long double c = std::cos(angle), s = std::sin(angle);
    out[i] = x[i] * c - x[i + half] * s;
    out[i + half] = x[i + half] * c + x[i] * s;
  }
  return out;
}

TEST(RopePrecision, AnglesExactUpTo262K) {
  auto backend = create_backend("cpu");
  std::vector<float> base(kHeadDim);
  for (int64_t i = 0; i < kHeadDim; ++i) base[i] = std::sin(0.37f * static_cast<float>(i)) + 0.5f;
  const int64_t T = std::size(kPositions);
  std::vector<float> x;
  for (int64_t t = 0; t < T; ++t) x.insert(x.end(), base.begin(), base.end());
  backend->rope_neox(x.data(), kHeadDim, T, 1, kHeadDim, kRotDims, kPositions, kTheta);
  for (int64_t t = 0; t < T; ++t) {
    const auto want = exact_rotation(base, kPositions[t]);
    double worst = 0;
    for (int64_t i = 0; i < kHeadDim; ++i)
      worst = std::max(worst, static_cast<double>(std::fabs(x[t * kHeadDim + i] - want[i])));
    // Only the final float32 rounding of cos/sin and of the products remains.
    EXPECT_LT(worst, 1e-6) << "position " << kPositions[t];
  }
}

// The check above can fail: the same rotation with float32 angles misses by far more at the
// end of the window, which is the drift the double angles avoid.
TEST(RopePrecision, Float32AnglesWouldDrift) {
  const int32_t position = 262143;
  const float inv_freq = 1.0f;  // pair 0: theta^0
  const float inv_freq_1 = std::pow(static_cast<float>(kTheta), -2.0f / kRotDims);
  const float angle_f = static_cast<float>(position) * inv_freq_1;
  const long double angle_exact =
      position * std::pow(static_cast<long double>(kTheta), -2.0L / kRotDims);
  EXPECT_GT(std::fabs(static_cast<long double>(angle_f) - angle_exact), 1e-4L);
  EXPECT_EQ(static_cast<float>(position) * inv_freq, 262143.0f);
}

}  // namespace
}  // namespace hostlm
