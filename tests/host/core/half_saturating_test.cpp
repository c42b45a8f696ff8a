// f32_to_f16_saturating, how 16-bit recurrent states are stored: f32_to_f16 inside half's
// range, its largest finite value (signed) beyond it, NaN kept.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>

#include "hostlm/half.h"

namespace hostlm {
namespace {

TEST(HalfSaturating, EqualsPlainRoundingInRangeAndClampsBeyond) {
  for (const float f : {0.f, -0.f, 1.f, -2.5f, 1e-6f, 3.14159f, 65504.f, -65504.f, 65519.f})
    EXPECT_EQ(f32_to_f16_saturating(f), f32_to_f16(f)) << f;
  EXPECT_EQ(f32_to_f16(70000.f), 0x7c00u);  // plain rounding overflows to infinity
  for (const float f : {65520.f, 70000.f, 1e30f, std::numeric_limits<float>::infinity()}) {
    EXPECT_EQ(f32_to_f16_saturating(f), 0x7bffu) << f;  // 65504
    EXPECT_EQ(f32_to_f16_saturating(-f), 0xfbffu) << -f;
  }
  EXPECT_TRUE(std::isnan(f16_to_f32(f32_to_f16_saturating(std::nanf("")))));
}

}  // namespace
}  // namespace hostlm
