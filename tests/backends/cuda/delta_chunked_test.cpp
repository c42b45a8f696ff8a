// The chunked delta rule on the GPU (HOSTLM_CUDA_DELTA_CHUNKED=N: sequences of N or more
// tokens take it): a batch mixing decode rows, short prefills (the recurrent kernel) and long
// ones (the chunked kernels) against the CPU backend's recurrence, with the state carried over
// several calls as a prompt split into batches leaves it; and the 9B head shape at 4,096
// tokens. The kernels' arithmetic also runs on the host in delta_chunked_host_test.cpp.
// Skipped where no GPU can be used.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "cuda_test_support.h"
#include "hostlm/ops.h"

namespace hostlm {
namespace {

using testing::ScopedEnv;

using testing::expect_close;

struct ChunkedCase {
  Backend::DeltaRuleShape shape;
  std::vector<int64_t> lengths;  // per sequence, per call
  int calls;
};

void PrintTo(const ChunkedCase& c, std::ostream* os) {
  *os << "k" << c.shape.n_k_heads << "_v" << c.shape.n_v_heads << "_dk" << c.shape.dk << "_dv"
      << c.shape.dv << "_" << c.lengths.size() << "seqs_" << c.calls << "calls_"
      << dtype_name(c.shape.state);
}

class CudaDeltaChunked : public ::testing::TestWithParam<ChunkedCase> {};

// Both ways of the scan: the triangular factors staged in shared memory, or read through L1.
void check_against_cpu(Backend& gpu, const ChunkedCase& cs, const std::string& way) {
  auto cpu = create_backend("cpu");
  const Backend::DeltaRuleShape sh = cs.shape;
  std::mt19937 rng(99);
  auto random = [&](size_t n, float lo, float hi) {
    return testing::uniform_floats(rng, n, lo, hi);
  };
  const int64_t row = 2 * sh.n_k_heads * sh.dk + sh.n_v_heads * sh.dv;
  const int64_t state_size = sh.state_floats();
  const auto n_seqs = static_cast<int64_t>(cs.lengths.size());
  const std::vector<float> a_neg = random(static_cast<size_t>(sh.n_v_heads), -2.f, -0.1f);
  const std::vector<float> dt_bias = random(static_cast<size_t>(sh.n_v_heads), -1.f, 1.f);
  std::vector<float> states = testing::stored_states(
      sh, n_seqs, random(static_cast<size_t>(n_seqs * sh.state_values()), -0.5f, 0.5f));
  auto state_d = gpu.alloc(states.size());
  gpu.upload(state_d->data(), states.data(), states.size());
  int64_t rows = 0;
  for (int64_t T : cs.lengths) rows += T;
  for (int call = 0; call < cs.calls; ++call) {
    std::vector<SequenceSlice> cpu_seqs, gpu_seqs;
    int64_t r = 0;
    for (int64_t i = 0; i < n_seqs; ++i) {
      const int64_t T = cs.lengths[static_cast<size_t>(i)];
      cpu_seqs.push_back({r, T, 0, nullptr, states.data() + i * state_size});
      gpu_seqs.push_back({r, T, 0, nullptr, state_d->data() + i * state_size});
      r += T;
    }
    const std::vector<float> qkv = random(static_cast<size_t>(rows * row), -1.f, 1.f);
    const std::vector<float> alpha = random(static_cast<size_t>(rows * sh.n_v_heads), -3.f, 3.f);
    const std::vector<float> beta = random(alpha.size(), -3.f, 3.f);
    std::vector<float> want(static_cast<size_t>(rows * sh.n_v_heads * sh.dv));
    for (const SequenceSlice& sl : cpu_seqs)
      cpu->gated_delta_rule(qkv.data() + sl.row * row, alpha.data() + sl.row * sh.n_v_heads,
                            beta.data() + sl.row * sh.n_v_heads, a_neg.data(), dt_bias.data(), sl.T,
                            sh, sl.recurrent_state, want.data() + sl.row * sh.n_v_heads * sh.dv);
    auto qd = gpu.alloc(qkv.size()), ad = gpu.alloc(alpha.size()), bd = gpu.alloc(beta.size());
    auto od = gpu.alloc(want.size());
    gpu.upload(qd->data(), qkv.data(), qkv.size());
    gpu.upload(ad->data(), alpha.data(), alpha.size());
    gpu.upload(bd->data(), beta.data(), beta.size());
    gpu.gated_delta_rule_seqs(gpu_seqs, qd->data(), ad->data(), bd->data(), a_neg.data(),
                              dt_bias.data(), sh, od->data());
    std::vector<float> got(want.size()), got_states(states.size());
    gpu.download(got.data(), od->data(), got.size());
    gpu.download(got_states.data(), state_d->data(), got_states.size());
    const double tolerance = testing::state_tolerance(sh.state);
    expect_close(want, got, way + ": out, call " + std::to_string(call), tolerance);
    expect_close(testing::state_values(sh, states), testing::state_values(sh, got_states),
                 way + ": states, call " + std::to_string(call), tolerance);
  }
}

TEST_P(CudaDeltaChunked, MatchesCpuRecurrence) {
  const ScopedEnv chunked("HOSTLM_CUDA_DELTA_CHUNKED", "64");
  for (const char* staged : {"1", "0"}) {
    const ScopedEnv way("HOSTLM_CUDA_DELTA_CHUNKED_STAGED", staged);
    std::string why;
    auto gpu = testing::cuda_backend_or_reason(why);
    if (!gpu) GTEST_SKIP() << "no usable CUDA backend: " << why;
    check_against_cpu(*gpu, GetParam(), std::string("staged=") + staged);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Batches, CudaDeltaChunked,
    ::testing::Values(
        // Decode rows and short prefills (recurrent kernel) beside long ones (chunked), the
        // state carried over three calls.
        ChunkedCase{{2, 4, 32, 16}, {1, 200, 3, 64, 1, 77, 130}, 3},
        ChunkedCase{{1, 2, 128, 128}, {65, 1, 300}, 2},
        // Column blocks with a partial last one; dk not a multiple of 4.
        ChunkedCase{{2, 6, 128, 40}, {150, 90}, 2}, ChunkedCase{{1, 1, 18, 33}, {128, 2}, 2},
        // The 9B shape: 16 key heads, 32 value heads of 128 x 128, one 4,096-token prompt.
        ChunkedCase{{16, 32, 128, 128}, {4096}, 1},
        // 16-bit states (--state-type): read at a sequence's first chunk, written at its last.
        ChunkedCase{{2, 4, 32, 16, DType::F16}, {1, 200, 3, 64, 1, 77, 130}, 3},
        ChunkedCase{{1, 2, 128, 128, DType::BF16}, {65, 1, 300}, 2}));

}  // namespace
}  // namespace hostlm
