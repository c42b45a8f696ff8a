// A single sequence's decode logits written by the output product straight into pinned host
// memory (Backend::matmul_to_host) equal, bit for bit, those multiplied into device memory and
// downloaded (an array that is not pinned, or HOSTLM_CUDA_LOGITS_TO_HOST=0), through recorded
// and replayed decode steps, for a quantized and a BF16 head; a profiled run shows the direct
// product ran. Skipped where no GPU can be used.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "cuda_test_support.h"
#include "hostlm/model_loader.h"
#include "plugins/qwen35/reference_data.h"
#include "quant_gguf.h"

namespace hostlm {
namespace {

ModelLoadOptions on_cuda() {
  ModelLoadOptions o;
  o.backend = "cuda";
  return o;
}

// Logits of 40 decode steps after a 5-token prompt, one sequence, into `row` each step.
std::vector<float> decode(LoadedModel& m, std::vector<float>& row, int64_t vocab) {
  auto seq = m.model().new_sequence(64);
  std::vector<int32_t> prompt = {1, 5, 9, 13, 17};
  m.model().eval(*seq, prompt, false, row);
  std::vector<float> all;
  for (int step = 0; step < 40; ++step) {
    const int32_t token = static_cast<int32_t>((step * 31 + 7) % vocab);
    m.model().eval(*seq, std::span<const int32_t>(&token, 1), false, row);
    all.insert(all.end(), row.begin(), row.end());
  }
  return all;
}

// Decodes `file` into a pinned row (the product writes it), a row that is not pinned
// (downloaded) and a pinned row with HOSTLM_CUDA_LOGITS_TO_HOST=0: the same bits; a profiled
// run shows the direct product ran.
void expect_product_into_pinned_equals_download(PluginRegistry& registry,
                                                const std::filesystem::path& file, int64_t vocab) {
  const auto V = static_cast<size_t>(vocab);
  std::vector<float> pinned_row(V), plain_row(V), off_row(V);
  std::vector<float> direct, downloaded, switched_off;
  {
    LoadedModel m(registry, file, on_cuda());
    m.backend().pin_host(pinned_row.data(), V * sizeof(float));
    direct = decode(m, pinned_row, vocab);
    downloaded = decode(m, plain_row, vocab);
    m.backend().unpin_host(pinned_row.data());
  }
  setenv("HOSTLM_CUDA_LOGITS_TO_HOST", "0", 1);
  {
    LoadedModel m(registry, file, on_cuda());
    unsetenv("HOSTLM_CUDA_LOGITS_TO_HOST");
    m.backend().pin_host(off_row.data(), V * sizeof(float));
    switched_off = decode(m, off_row, vocab);
    m.backend().unpin_host(off_row.data());
  }
  unsetenv("HOSTLM_CUDA_LOGITS_TO_HOST");
  setenv("HOSTLM_CUDA_PROFILE", "1", 1);
  ::testing::internal::CaptureStderr();
  {
    LoadedModel m(registry, file, on_cuda());
    m.backend().pin_host(pinned_row.data(), V * sizeof(float));
    decode(m, pinned_row, vocab);
    m.backend().unpin_host(pinned_row.data());
  }
  const std::string profile = ::testing::internal::GetCapturedStderr();
  unsetenv("HOSTLM_CUDA_PROFILE");

  ASSERT_EQ(direct.size(), downloaded.size());
  EXPECT_EQ(0, std::memcmp(direct.data(), downloaded.data(), direct.size() * sizeof(float)))
      << "pinned (written by the product) against not pinned (downloaded)";
  EXPECT_EQ(0, std::memcmp(direct.data(), switched_off.data(), direct.size() * sizeof(float)))
      << "against HOSTLM_CUDA_LOGITS_TO_HOST=0";
  EXPECT_NE(profile.find("matmul to host"), std::string::npos) << profile;
}

TEST(CudaHostLogits, ProductIntoPinnedMemoryEqualsDownload) {
  std::string why;
  if (!testing::cuda_backend_or_reason(why)) GTEST_SKIP() << "no usable CUDA backend: " << why;
  const testing::ReferenceModel ref = testing::load_reference("tiny-untied-bf16");
  const std::string stem = "hostlm-hostlogits-" + std::to_string(::getpid());
  const auto dir = std::filesystem::temp_directory_path();
  const auto f32 = dir / (stem + "-f32.gguf"), quant = dir / (stem + "-q.gguf"),
             exact = dir / (stem + "-deq.gguf");
  PluginRegistry registry;
  {
    OpenedModelFiles hf(ref.folder);
    registry.plugin_for(hf.files().architecture).convert_to_gguf(*hf.files().hf, DType::F32, f32);
  }
  testing::write_quantized_pair(f32, DType::Q8_0, quant, exact);
  expect_product_into_pinned_equals_download(registry, quant, ref.vocab);
  for (const auto& p : {f32, quant, exact}) std::filesystem::remove(p);
}

// The BF16 checkpoint's head: the 16-bit ring product (gemv16_staged.cu) writes the pinned
// row, 32 rows of a warp at a time, where the GPU has that kernel (sm_90 and later).
TEST(CudaHostLogits, SixteenBitProductIntoPinnedMemoryEqualsDownload) {
  std::string why;
  if (!testing::cuda_backend_or_reason(why)) GTEST_SKIP() << "no usable CUDA backend: " << why;
  if (testing::device_major() < 9) GTEST_SKIP() << "the 16-bit ring product needs sm_90";
  const testing::ReferenceModel ref = testing::load_reference("tiny-untied-bf16");
  PluginRegistry registry;
  expect_product_into_pinned_equals_download(registry, ref.folder, ref.vocab);
}

}  // namespace
}  // namespace hostlm
