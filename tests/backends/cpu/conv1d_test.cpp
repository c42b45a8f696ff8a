// The CPU conv1d + SiLU: the scalar reference against a float64 transcription of spec 2.5,
// and every vector path this CPU runs against the scalar reference, on random inputs with
// sums from tiny to far past expf's overflow, odd channel counts (vector tails), kernels of
// 1 to 7 taps, calls shorter than the history (T < K-1), T = 1 and longer prompts; then the
// backend's batched form (several sequences in one call) against per-sequence calls.
//
// Tolerance: the vector paths add the taps with the reference's roundings, so the sums are
// the same bits; SiLU's exponential differs from expf by rounding only. The worst seen on
// this machine was 3 units in the last place (kMaxUlps leaves a factor of 2.7). States are
// copies of inputs and must match exactly.
#include "cpu/conv1d.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "cpu/delta_rule.h"
#include "cpu/thread_pool.h"
#include "hostlm/ops.h"

namespace hostlm::cpu {
namespace {

constexpr int64_t kMaxUlps = 8;

struct Case {
  int64_t T, channels, K;
  std::vector<float> x, weight, state;
};

Case random_case(int64_t T, int64_t channels, int64_t K, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.f, 1.f);
  std::uniform_real_distribution<float> uniform(0.f, 1.f);
  Case c{T, channels, K, {}, {}, {}};
  // Mostly unit-scale values; some channels far larger, so that sums reach +-200 (exp(-s)
  // overflows or vanishes); some exact zeros (and with them -0 products).
  auto value = [&](int64_t ch) {
    const float u = uniform(rng);
    if (u < 0.05f) return 0.f;
    return normal(rng) * (ch % 11 == 3 ? 60.f : 1.f);
  };
  for (int64_t t = 0; t < T; ++t)
    for (int64_t ch = 0; ch < channels; ++ch) c.x.push_back(value(ch));
  for (int64_t i = 0; i < (K - 1) * channels; ++i) c.state.push_back(value(i % channels));
  for (int64_t i = 0; i < K * channels; ++i) c.weight.push_back(normal(rng) * 0.6f);
  return c;
}

// Runs tokens [t0, t1) of the case on `state` with one instruction set, channels in one call.
void run_path(const Case& c, int64_t t0, int64_t t1, ConvIsa isa, std::vector<float>& state,
              std::vector<float>& out) {
  const Conv1dArgs a{
      c.x.data() + t0 * c.channels, t1 - t0, c.channels, c.K, c.weight.data(), state.data(),
      out.data() + t0 * c.channels};
  conv1d_silu_channels(a, 0, c.channels, isa);
}

// Spec 2.5 in float64: outputs, the sum of |products| of each (what float32 rounding
// scales with) and the new state.
void exact(const Case& c, std::vector<double>& out, std::vector<double>& mag,
           std::vector<float>& state) {
  const int64_t hist = c.K - 1;
  auto input = [&](int64_t s, int64_t ch) {
    return double{s < 0 ? c.state[(hist + s) * c.channels + ch] : c.x[s * c.channels + ch]};
  };
  out.assign(static_cast<size_t>(c.T * c.channels), 0.0);
  mag.assign(out.size(), 0.0);
  for (int64_t t = 0; t < c.T; ++t)
    for (int64_t ch = 0; ch < c.channels; ++ch) {
      double s = 0, m = 0;
      for (int64_t r = 0; r < c.K; ++r) {
        const double p = c.weight[ch * c.K + r] * input(t - hist + r, ch);
        s += p;
        m += std::fabs(p);
      }
      out[t * c.channels + ch] = s / (1.0 + std::exp(-s));
      mag[t * c.channels + ch] = m;
    }
  state.assign(c.state.size(), 0.f);
  for (int64_t r = 0; r < hist; ++r)
    for (int64_t ch = 0; ch < c.channels; ++ch)
      state[r * c.channels + ch] = static_cast<float>(input(c.T - hist + r, ch));
}

// Units in the last place between two floats of the same sign class (+0 and -0 are 1 apart).
int64_t ulps(float a, float b) {
  auto ordered = [](float f) {
    const auto i = static_cast<int64_t>(std::bit_cast<int32_t>(f));
    return i < 0 ? int64_t{INT32_MIN} - i : i;
  };
  return std::llabs(ordered(a) - ordered(b));
}

const char* isa_name(ConvIsa isa) {
  switch (isa) {
    case ConvIsa::Reference:
      return "reference";
    case ConvIsa::Avx2:
      return "avx2";
    case ConvIsa::Avx512:
      return "avx512";
  }
  return "?";
}

constexpr ConvIsa kVectorIsas[] = {ConvIsa::Avx2, ConvIsa::Avx512};

struct Shape {
  int64_t channels, K;
};

class Conv1d : public ::testing::TestWithParam<Shape> {};

TEST_P(Conv1d, ReferenceMatchesFloat64) {
  const auto [channels, K] = GetParam();
  for (const int64_t T : {int64_t{1}, std::max<int64_t>(1, K - 2), int64_t{37}}) {
    const Case c = random_case(T, channels, K, static_cast<uint32_t>(T * 31 + K));
    std::vector<double> want, mag;
    std::vector<float> want_state, state = c.state, out(c.x.size(), -1.f);
    exact(c, want, mag, want_state);
    run_path(c, 0, T, ConvIsa::Reference, state, out);
    // K roundings of the sum, each at most half an ulp of the running magnitude, and a few
    // ulps from expf and the division.
    for (size_t i = 0; i < out.size(); ++i)
      ASSERT_NEAR(out[i], want[i], 1e-6 * (mag[i] + std::fabs(want[i])) + 1e-30)
          << "T=" << T << " element " << i;
    EXPECT_EQ(state, want_state) << "T=" << T;
  }
}

TEST_P(Conv1d, VectorPathsMatchTheReference) {
  const auto [channels, K] = GetParam();
  int checked = 0;
  for (const ConvIsa isa : kVectorIsas) {
    if (!conv1d_isa_supported(isa, K)) continue;
    int64_t worst = 0;
    for (const int64_t T : {int64_t{1}, int64_t{2}, std::max<int64_t>(1, K - 2), int64_t{37}}) {
      const Case c = random_case(T, channels, K, static_cast<uint32_t>(T * 7 + K));
      std::vector<float> ref_state = c.state, ref(c.x.size(), -1.f);
      run_path(c, 0, T, ConvIsa::Reference, ref_state, ref);
      std::vector<float> state = c.state, out(c.x.size(), -1.f);
      run_path(c, 0, T, isa, state, out);
      for (size_t i = 0; i < out.size(); ++i) {
        const int64_t d = ulps(out[i], ref[i]);
        worst = std::max(worst, d);
        ASSERT_LE(d, kMaxUlps) << isa_name(isa) << " T=" << T << " element " << i << ": " << out[i]
                               << " vs " << ref[i];
      }
      EXPECT_EQ(state, ref_state) << isa_name(isa) << " T=" << T;
    }
    std::printf("[ info ] %s: worst %lld ulp\n", isa_name(isa), static_cast<long long>(worst));
    ++checked;
  }
  if (checked == 0) GTEST_SKIP() << "this CPU runs no vector path for K=" << K;
}

// A prompt fed in pieces, some shorter than the history, gives the bits of one call.
TEST_P(Conv1d, SplitCallsGiveTheSameBitsAsOneCall) {
  const auto [channels, K] = GetParam();
  const Case c = random_case(40, channels, K, 5);
  for (const ConvIsa isa : {ConvIsa::Reference, ConvIsa::Avx2, ConvIsa::Avx512}) {
    if (!conv1d_isa_supported(isa, K)) continue;
    std::vector<float> state_one = c.state, out_one(c.x.size());
    run_path(c, 0, c.T, isa, state_one, out_one);
    std::vector<float> state_split = c.state, out_split(c.x.size());
    int64_t t0 = 0;
    for (const int64_t piece : {1, 1, 2, 3, 33}) {
      run_path(c, t0, t0 + piece, isa, state_split, out_split);
      t0 += piece;
    }
    ASSERT_EQ(t0, c.T);
    EXPECT_EQ(state_one, state_split) << isa_name(isa);
    EXPECT_EQ(out_one, out_split) << isa_name(isa);
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, Conv1d,
                         ::testing::Values(Shape{6144, 4},  // Qwen3.5 0.8B/2B
                                           Shape{1, 4}, Shape{13, 4}, Shape{261, 4}, Shape{301, 3},
                                           Shape{45, 2}, Shape{17, 1}, Shape{531, 7}, Shape{40, 5}),
                         [](const ::testing::TestParamInfo<Shape>& p) {
                           return "c" + std::to_string(p.param.channels) + "_k" +
                                  std::to_string(p.param.K);
                         });

// The pooled entry (channel blocks over threads) gives the bits of one call over all channels.
TEST(Conv1dPool, BlocksOverThreadsGiveTheBitsOfOneCall) {
  const Case c = random_case(9, 1000, 4, 3);
  ThreadPool pool(3);
  std::vector<float> state_pool = c.state, out_pool(c.x.size());
  conv1d_silu(pool, {c.x.data(), c.T, c.channels, c.K, c.weight.data(), state_pool.data(),
                     out_pool.data()});
  std::vector<float> state = c.state, out(c.x.size());
  run_path(c, 0, c.T, conv1d_isa(c.K), state, out);
  EXPECT_EQ(state, state_pool);
  EXPECT_EQ(out, out_pool);
  std::printf("[ info ] instruction set chosen: %s\n", isa_name(conv1d_isa(c.K)));
}

// ---- Several sequences in one call (Backend::conv1d_silu_seqs, gated_delta_rule_seqs) ------

// A batch of sequences with mixed lengths (decode steps of one token, a prefill, one with
// no new token); each has its own states, at different alignments.
struct Batch {
  std::vector<int64_t> lengths{1, 1, 5, 1, 0, 17, 1, 2, 1, 1};
  std::vector<std::vector<float>> conv, rec;
  std::vector<SequenceSlice> slices() {
    std::vector<SequenceSlice> s;
    int64_t row = 0;
    for (size_t i = 0; i < lengths.size(); ++i) {
      s.push_back({row, lengths[i], 3, conv[i].data() + i % 4, rec[i].data() + i % 4});
      row += lengths[i];
    }
    return s;
  }
  int64_t rows() const {
    int64_t n = 0;
    for (int64_t t : lengths) n += t;
    return n;
  }
};

std::vector<float> random_floats(size_t n, float scale, std::mt19937& rng) {
  std::normal_distribution<float> normal(0.f, 1.f);
  std::vector<float> v(n);
  for (float& x : v) x = normal(rng) * scale;
  return v;
}

TEST(SequenceBatch, Conv1dSeqsEqualsPerSequenceCalls) {
  const int64_t channels = 2 * 4 * 32 + 4 * 32 + 3, K = 4;  // an odd count: vector tails
  std::mt19937 rng(17);
  Batch b;
  for (size_t i = 0; i < b.lengths.size(); ++i)
    b.conv.push_back(random_floats(static_cast<size_t>((K - 1) * channels + 4), 1.f, rng));
  b.rec.resize(b.lengths.size(), std::vector<float>(4));
  const std::vector<float> x = random_floats(static_cast<size_t>(b.rows() * channels), 1.f, rng);
  const std::vector<float> w = random_floats(static_cast<size_t>(channels * K), 0.6f, rng);
  auto backend = create_backend("cpu");
  backend->set_threads(2);

  Batch one = b;  // the per-sequence calls work on a copy of the states
  std::vector<float> out_seqs(x.size(), -1.f), out_one(x.size(), -1.f);
  backend->conv1d_silu_seqs(b.slices(), x.data(), channels, K, w.data(), out_seqs.data());
  for (const SequenceSlice& sl : one.slices())
    backend->conv1d_silu(x.data() + sl.row * channels, sl.T, channels, K, w.data(), sl.conv_state,
                         out_one.data() + sl.row * channels);
  EXPECT_EQ(out_seqs, out_one);
  for (size_t i = 0; i < b.conv.size(); ++i) EXPECT_EQ(b.conv[i], one.conv[i]) << "sequence " << i;
}

TEST(SequenceBatch, GatedDeltaRuleSeqsEqualsPerSequenceCalls) {
  for (const Backend::DeltaRuleShape sh :
       {Backend::DeltaRuleShape{16, 16, 128, 128}, Backend::DeltaRuleShape{2, 3, 20, 8}}) {
    std::mt19937 rng(23);
    Batch b;
    const auto state_n = static_cast<size_t>(sh.n_v_heads * sh.dv * sh.dk);
    for (size_t i = 0; i < b.lengths.size(); ++i) {
      b.rec.push_back(random_floats(state_n + 4, 0.5f, rng));
      b.conv.emplace_back(4);
    }
    const int64_t row = 2 * sh.n_k_heads * sh.dk + sh.n_v_heads * sh.dv, T = b.rows();
    const std::vector<float> qkv = random_floats(static_cast<size_t>(T * row), 0.7f, rng);
    const std::vector<float> alpha = random_floats(static_cast<size_t>(T * sh.n_v_heads), 2.f, rng);
    const std::vector<float> beta = random_floats(alpha.size(), 2.f, rng);
    std::vector<float> a_neg = random_floats(static_cast<size_t>(sh.n_v_heads), 1.f, rng);
    for (float& a : a_neg) a = -std::exp(a);
    const std::vector<float> dt_bias = random_floats(a_neg.size(), 1.f, rng);
    auto backend = create_backend("cpu");
    backend->set_threads(2);

    Batch one = b;
    const auto out_n = static_cast<size_t>(T * sh.n_v_heads * sh.dv);
    std::vector<float> out_seqs(out_n, -1.f), out_one(out_n, -1.f);
    backend->gated_delta_rule_seqs(b.slices(), qkv.data(), alpha.data(), beta.data(), a_neg.data(),
                                   dt_bias.data(), sh, out_seqs.data());
    for (const SequenceSlice& sl : one.slices())
      backend->gated_delta_rule(qkv.data() + sl.row * row, alpha.data() + sl.row * sh.n_v_heads,
                                beta.data() + sl.row * sh.n_v_heads, a_neg.data(), dt_bias.data(),
                                sl.T, sh, sl.recurrent_state,
                                out_one.data() + sl.row * sh.n_v_heads * sh.dv);
    const std::string what = "dk=" + std::to_string(sh.dk);
    EXPECT_EQ(out_seqs, out_one) << what;
    for (size_t i = 0; i < b.rec.size(); ++i)
      EXPECT_EQ(b.rec[i], one.rec[i]) << what << " sequence " << i;
  }
}

}  // namespace
}  // namespace hostlm::cpu
