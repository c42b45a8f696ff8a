// modules::scratch_widths sizes each scratch buffer for its own widest use, and the modules
// refuse a scratch narrower than what they write instead of writing past it.
#include <gtest/gtest.h>

#include "hostlm/error.h"
#include "hostlm/modules.h"

namespace hostlm {
namespace {

// The Qwen3.5-9B shape: 16 query heads and 4 KV heads of 256, 16 key and 32 value heads of
// 128 in the delta rule (conv channels 2 * 16 * 128 + 32 * 128), FFN 12,288.
constexpr modules::ScratchNeeds k9b{16, 4, 256, 8192, 4096, 32, 12288};

TEST(ScratchWidths, EachBufferFitsItsWidestUseAndNoMore) {
  const std::vector<int64_t> w = modules::scratch_widths(k9b);
  ASSERT_EQ(w.size(), 4u);
  EXPECT_EQ(w[0], 12288);          // gate (FFN) over q + gates (8,192) and qkv (8,192)
  EXPECT_EQ(w[1], 12288);          // up
  EXPECT_EQ(w[2], 4096 + 2 * 32);  // z, alpha and beta over v and the gates (4,096)
  EXPECT_EQ(w[3], 4096);           // attention and delta-rule outputs
  // A model whose attention is the widest part moves the maxima there.
  const std::vector<int64_t> wide = modules::scratch_widths({64, 8, 128, 1024, 512, 4, 2048});
  EXPECT_EQ(wide[0], 2 * 64 * 128);
  EXPECT_EQ(wide[2], 64 * 128);
}

TEST(ScratchWidths, ModulesRefuseAScratchTooNarrow) {
  auto cpu = create_backend("cpu");
  std::vector<int64_t> w = modules::scratch_widths(k9b);
  w[3] = 1024;  // narrower than the delta rule's output
  modules::Scratch scratch(*cpu, 2, w);
  modules::GatedDeltaNet delta;
  delta.shape = {16, 32, 128, 128};
  try {
    delta.forward(*cpu, scratch, nullptr, 1, {}, nullptr);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("scratch too small for the delta rule"), std::string::npos)
        << e.what();
  }
  modules::SwigluMlp mlp;
  mlp.w_gate.rows = mlp.w_up.rows = 20000;
  EXPECT_THROW(mlp.forward(*cpu, scratch, nullptr, 1, nullptr), Error);
}

}  // namespace
}  // namespace hostlm
