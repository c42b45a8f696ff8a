// CudaBackend's record of what the last op wrote (cuda/last_writes.h): it lets a kernel read a
// buffer before waiting for the kernel before, so every answer of "untouched" must be right.
// Plain C++: runs without a GPU.
#include "cuda/last_writes.h"

#include <gtest/gtest.h>

#include <vector>

namespace hostlm::cuda {
namespace {

TEST(LastWrites, NothingIsUntouchedUntilAnOpStatesItsWrites) {
  std::vector<float> a(64);
  LastWrites w;
  EXPECT_FALSE(w.untouched(a.data(), a.size()));
  w.start(true);
  EXPECT_TRUE(w.untouched(a.data(), a.size()));  // an op that wrote nothing
  w.forget();
  EXPECT_FALSE(w.untouched(a.data(), a.size()));
  w.start(false);  // writes that cannot be stated
  EXPECT_FALSE(w.untouched(a.data(), a.size()));
}

TEST(LastWrites, OverlapsAtEitherEndAreTouched) {
  std::vector<float> buf(100);
  float* p = buf.data();
  LastWrites w;
  w.start(true);
  w.add(p + 10, 10);                      // [10, 20)
  w.add(p + 50, 5);                       // [50, 55)
  EXPECT_TRUE(w.untouched(p, 10));        // [0, 10): ends where the write begins
  EXPECT_TRUE(w.untouched(p + 20, 30));   // [20, 50): between the two
  EXPECT_TRUE(w.untouched(p + 55, 45));   // after the second
  EXPECT_FALSE(w.untouched(p, 11));       // its last value is the write's first
  EXPECT_FALSE(w.untouched(p + 19, 1));   // the write's last value
  EXPECT_FALSE(w.untouched(p + 12, 2));   // inside
  EXPECT_FALSE(w.untouched(p, 100));      // around both
  EXPECT_FALSE(w.untouched(p + 40, 11));  // reaches into the second
  EXPECT_FALSE(w.untouched(nullptr, 4));
}

TEST(LastWrites, ANewOpReplacesTheWritesOfTheLast) {
  std::vector<float> buf(40);
  float* p = buf.data();
  LastWrites w;
  w.start(true);
  w.add(p, 20);
  EXPECT_FALSE(w.untouched(p, 4));
  w.start(true);
  w.add(p + 20, 20);
  EXPECT_TRUE(w.untouched(p, 4));
  EXPECT_FALSE(w.untouched(p + 20, 4));
}

TEST(LastWrites, MoreRangesThanItHoldsMakeTheWritesUnknown) {
  std::vector<float> buf(4 * (LastWrites::kMaxRanges + 2));
  LastWrites w;
  w.start(true);
  for (int i = 0; i < LastWrites::kMaxRanges; ++i) w.add(buf.data() + 4 * i, 2);
  EXPECT_TRUE(w.untouched(buf.data() + 2, 2));  // between two recorded ranges
  w.add(buf.data() + 4 * LastWrites::kMaxRanges, 2);
  EXPECT_FALSE(w.untouched(buf.data() + 2, 2));
}

}  // namespace
}  // namespace hostlm::cuda
