// Weights share one device range (backends/cuda/weight_arena.h): many megabyte-sized matrices
// take their own bytes of GPU memory, not a 2 MiB granule each, every weight keeps its values
// while later ones are packed behind it, and a 16-bit and a quantized weight loaded in turn
// lie back to back. Skipped where no GPU can be used.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "cuda/quants/quant_matmul.h"
#include "cuda_test_support.h"
#include "hostlm/half.h"
#include "hostlm/ops.h"

namespace hostlm {
namespace {

constexpr int64_t kRows = 129, kCols = 4096;  // 1,056,768 bytes in F16: just over a MiB
constexpr int kWeights = 96;

// Weight i's element (r, c): a small integer, exact in half, different for every weight.
float element(int i, int64_t r, int64_t c) {
  return static_cast<float>((i * 7 + r * 3 + c) % 61 - 30);
}

std::vector<uint8_t> f16_weight(int i) {
  std::vector<uint8_t> bytes(static_cast<size_t>(kRows * kCols) * 2);
  for (int64_t r = 0; r < kRows; ++r)
    for (int64_t c = 0; c < kCols; ++c) {
      const uint16_t h = f32_to_f16(element(i, r, c));
      std::memcpy(bytes.data() + 2 * (r * kCols + c), &h, 2);
    }
  return bytes;
}

size_t free_device_bytes() {
#ifdef HOSTLM_TEST_CUDART
  size_t free_bytes = 0, total = 0;
  if (cudaMemGetInfo(&free_bytes, &total) == cudaSuccess) return free_bytes;
#endif
  return 0;
}

// Column c of every weight, read back through a product with the unit vector e_c.
void expect_columns_intact(Backend& gpu, const std::vector<Weight>& weights, int64_t c,
                           const std::string& label) {
  std::vector<float> unit(static_cast<size_t>(kCols), 0.f);
  unit[static_cast<size_t>(c)] = 1.f;
  auto x = gpu.alloc(unit.size());
  gpu.upload(x->data(), unit.data(), unit.size());
  auto y = gpu.alloc(kRows);
  std::vector<float> got(static_cast<size_t>(kRows));
  for (int i = 0; i < static_cast<int>(weights.size()); ++i) {
    gpu.matmul(weights[i], x->data(), 1, y->data());
    gpu.download(got.data(), y->data(), got.size());
    for (int64_t r = 0; r < kRows; ++r)
      ASSERT_EQ(got[static_cast<size_t>(r)], element(i, r, c))
          << label << ": weight " << i << " row " << r << " column " << c;
  }
}

TEST(CudaWeightMemory, ManyMatricesTakeTheirOwnBytesNotAGranuleEach) {
#ifndef HOSTLM_TEST_CUDART
  GTEST_SKIP() << "this test binary cannot read the GPU's free memory";
#endif
  std::string why;
  std::unique_ptr<Backend> gpu = testing::cuda_backend_or_reason(why);
  if (!gpu) GTEST_SKIP() << "no usable CUDA backend: " << why;
  const size_t before = free_device_bytes();
  std::vector<Weight> weights;
  size_t total = 0;
  for (int i = 0; i < kWeights; ++i) {
    const std::vector<uint8_t> bytes = f16_weight(i);
    weights.push_back(gpu->load_weight(testing::weight_view(DType::F16, kRows, kCols, bytes)));
    total += bytes.size();
  }
  const size_t after = free_device_bytes();
  // One allocation a matrix would take 2 MiB each (192 MiB); packed, the 96.8 MiB of
  // weights round up once, plus the driver's own bookkeeping.
  EXPECT_LE(before - after, total + (size_t{6} << 20))
      << "weights of " << total << " bytes took " << before - after << " bytes of GPU memory";
  for (int64_t c : {int64_t{0}, int64_t{1234}, kCols - 1})
    expect_columns_intact(*gpu, weights, c, "packed");
}

TEST(CudaWeightMemory, SixteenBitAndQuantizedWeightsLieBackToBack) {
  std::string why;
  std::unique_ptr<Backend> gpu = testing::cuda_backend_or_reason(why);
  if (!gpu) GTEST_SKIP() << "no usable CUDA backend: " << why;
  const std::vector<uint8_t> f16 = f16_weight(0);
  // Q8_0 blocks of zero scale and zero values: 34 bytes per 32 weights.
  const std::vector<uint8_t> q8(static_cast<size_t>(kRows * (kCols / 32) * 34), 0);
  const Weight a = gpu->load_weight(testing::weight_view(DType::F16, kRows, kCols, f16));
  const Weight b = gpu->load_weight(testing::weight_view(DType::Q8_0, kRows, kCols, q8));
  const Weight c = gpu->load_weight(testing::weight_view(DType::F16, kRows, kCols, f16));
  const auto at = [](const Weight& w) { return reinterpret_cast<uintptr_t>(w.data); };
  const auto aligned = [](size_t n) { return (n + 255) / 256 * 256; };
  EXPECT_EQ(at(b), at(a) + aligned(f16.size()));
  // A split tensor has the few bytes after it that kernels may read.
  EXPECT_EQ(at(c), at(b) + aligned(q8.size() + cuda::quants::QuantMatmul::kTailBytes));
}

TEST(CudaWeightMemory, OneAllocationAWeightWhenTheArenaIsOff) {
  testing::RestoreEnv restore({"HOSTLM_CUDA_WEIGHT_ARENA"});
  setenv("HOSTLM_CUDA_WEIGHT_ARENA", "0", 1);
  std::string why;
  std::unique_ptr<Backend> gpu = testing::cuda_backend_or_reason(why);
  if (!gpu) GTEST_SKIP() << "no usable CUDA backend: " << why;
  std::vector<Weight> weights;
  for (int i = 0; i < 8; ++i) {
    const std::vector<uint8_t> bytes = f16_weight(i);
    weights.push_back(gpu->load_weight(testing::weight_view(DType::F16, kRows, kCols, bytes)));
  }
  expect_columns_intact(*gpu, weights, 77, "one allocation a weight");
}

}  // namespace
}  // namespace hostlm
