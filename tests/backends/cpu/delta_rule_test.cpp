// The CPU gated delta rule against a float64 transcription of the recurrence (spec 2.5),
// for every instruction-set path this CPU runs, on random inputs: lengths around the
// kernel's 64-token chunk (1, 63, 64, 65, 509), zero and random initial states, value heads
// sharing key heads, and head sizes that leave SIMD tails. The state carried out is checked
// as closely as the outputs, and a prompt split over several calls must give the same bits
// as one call.
//
// Tolerance: the float32 paths differ from float64 by rounding alone. Unit-norm keys make
// the update a contraction, so errors do not grow with the length; the worst error seen on
// this machine was 2.5e-7 relative to the largest magnitude, for every path (kTolerance
// leaves a factor of 40).
#include "cpu/delta_rule.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "backends/delta_shape_print.h"
#include "hostlm/half.h"
#include "hostlm/ops.h"

namespace hostlm::cpu {
namespace {

using Shape = Backend::DeltaRuleShape;

// Max |got - want| / max(1, max |want|).
constexpr double kTolerance = 1e-5;

struct Inputs {
  Shape sh;
  int64_t T;
  std::vector<float> qkv, alpha, beta, a_neg, dt_bias, state;
};

Inputs random_inputs(const Shape& sh, int64_t T, bool initial_state, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.f, 1.f);
  std::uniform_real_distribution<float> uniform(0.f, 1.f);
  Inputs in{sh, T, {}, {}, {}, {}, {}, {}};
  const int64_t row = 2 * sh.n_k_heads * sh.dk + sh.n_v_heads * sh.dv;
  // After conv + SiLU the channels are mostly small and positive-leaning; a few are large.
  in.qkv.resize(static_cast<size_t>(T * row));
  for (float& x : in.qkv) x = normal(rng) * (uniform(rng) < 0.05f ? 4.f : 0.7f);
  in.alpha.resize(static_cast<size_t>(T * sh.n_v_heads));
  in.beta.resize(in.alpha.size());
  for (float& x : in.alpha) x = 2.f * normal(rng);
  for (float& x : in.beta) x = 2.f * normal(rng);
  // -exp(A_log) over slow and fast heads; one strong dt_bias reaches the softplus threshold.
  for (int64_t j = 0; j < sh.n_v_heads; ++j) {
    in.a_neg.push_back(-std::exp(4.f * uniform(rng) - 3.f));
    in.dt_bias.push_back(j == 0 ? 25.f : normal(rng));
  }
  in.state.assign(static_cast<size_t>(sh.n_v_heads * sh.dv * sh.dk), 0.f);
  if (initial_state)
    for (float& x : in.state) x = 0.5f * normal(rng);
  return in;
}

struct Result {
  std::vector<double> out, state;
};

// Spec 2.5 in float64, HF state convention S[k][v].
Result exact(const Inputs& in) {
  const Shape& sh = in.sh;
  const int64_t key_dim = sh.n_k_heads * sh.dk, row = 2 * key_dim + sh.n_v_heads * sh.dv;
  Result r;
  r.out.assign(static_cast<size_t>(in.T * sh.n_v_heads * sh.dv), 0.0);
  r.state.assign(in.state.begin(), in.state.end());
  std::vector<double> q(sh.dk), k(sh.dk), S(sh.dk * sh.dv), kv(sh.dv);
  for (int64_t j = 0; j < sh.n_v_heads; ++j) {
    const int64_t i = j % sh.n_k_heads;
    for (int64_t d = 0; d < sh.dk; ++d)
      for (int64_t c = 0; c < sh.dv; ++c) S[d * sh.dv + c] = r.state[(j * sh.dv + c) * sh.dk + d];
    for (int64_t t = 0; t < in.T; ++t) {
      const float* x = in.qkv.data() + t * row;
      double qq = 0, kk = 0;
      for (int64_t d = 0; d < sh.dk; ++d) {
        q[d] = x[i * sh.dk + d];
        k[d] = x[key_dim + i * sh.dk + d];
        qq += q[d] * q[d];
        kk += k[d] * k[d];
      }
      for (int64_t d = 0; d < sh.dk; ++d) {
        q[d] /= std::sqrt(qq + 1e-6) * std::sqrt(static_cast<double>(sh.dk));
        k[d] /= std::sqrt(kk + 1e-6);
      }
      const double b = 1.0 / (1.0 + std::exp(-double{in.beta[t * sh.n_v_heads + j]}));
      const double z = double{in.alpha[t * sh.n_v_heads + j]} + in.dt_bias[j];
      const double g = in.a_neg[j] * (z > 20 ? z : std::log1p(std::exp(z)));
      for (double& s : S) s *= std::exp(g);
      std::fill(kv.begin(), kv.end(), 0.0);
      for (int64_t d = 0; d < sh.dk; ++d)
        for (int64_t c = 0; c < sh.dv; ++c) kv[c] += S[d * sh.dv + c] * k[d];
      for (int64_t d = 0; d < sh.dk; ++d)
        for (int64_t c = 0; c < sh.dv; ++c)
          S[d * sh.dv + c] += k[d] * b * (x[2 * key_dim + j * sh.dv + c] - kv[c]);
      for (int64_t d = 0; d < sh.dk; ++d)
        for (int64_t c = 0; c < sh.dv; ++c)
          r.out[(t * sh.n_v_heads + j) * sh.dv + c] += S[d * sh.dv + c] * q[d];
    }
    for (int64_t d = 0; d < sh.dk; ++d)
      for (int64_t c = 0; c < sh.dv; ++c) r.state[(j * sh.dv + c) * sh.dk + d] = S[d * sh.dv + c];
  }
  return r;
}

// Runs tokens [t0, t1) of `in` on `state` with one instruction set, into out rows t0..t1-1.
// The kernel sees the state on a 64-byte boundary, or 16 bytes past one when `misaligned`
// (as a plain heap allocation gives it), which it then works on in an aligned copy.
void run_range(const Inputs& in, int64_t t0, int64_t t1, DeltaIsa isa, std::vector<float>& state,
               std::vector<float>& out, bool misaligned = false) {
  const Shape& sh = in.sh;
  const int64_t row = 2 * sh.n_k_heads * sh.dk + sh.n_v_heads * sh.dv;
  std::vector<float> storage(state.size() + 32);
  float* at = storage.data();
  while (reinterpret_cast<uintptr_t>(at) % 64 != 0) ++at;
  if (misaligned) at += 4;
  std::copy(state.begin(), state.end(), at);
  const DeltaRuleArgs args{in.qkv.data() + t0 * row,
                           in.alpha.data() + t0 * sh.n_v_heads,
                           in.beta.data() + t0 * sh.n_v_heads,
                           in.a_neg.data(),
                           in.dt_bias.data(),
                           t1 - t0,
                           sh,
                           at,
                           out.data() + t0 * sh.n_v_heads * sh.dv};
  gated_delta_rule_heads(args, 0, sh.n_v_heads, isa);
  std::copy(at, at + state.size(), state.begin());
}

double rel_error(const std::vector<float>& got, const std::vector<double>& want) {
  double scale = 1, worst = 0;
  for (double w : want) scale = std::max(scale, std::fabs(w));
  for (size_t i = 0; i < got.size(); ++i) worst = std::max(worst, std::fabs(got[i] - want[i]));
  return worst / scale;
}

const char* isa_name(DeltaIsa isa) {
  switch (isa) {
    case DeltaIsa::Reference:
      return "reference";
    case DeltaIsa::Avx2:
      return "avx2";
    case DeltaIsa::Avx512:
      return "avx512";
  }
  return "?";
}

constexpr DeltaIsa kIsas[] = {DeltaIsa::Reference, DeltaIsa::Avx2, DeltaIsa::Avx512};

class DeltaRule : public ::testing::TestWithParam<Shape> {};

TEST_P(DeltaRule, EveryPathMatchesFloat64WithStateCarriedOut) {
  const Shape sh = GetParam();
  double worst[std::size(kIsas)] = {};
  for (const int64_t T : {1, 63, 64, 65, 509})
    for (const bool initial : {false, true}) {
      const Inputs in = random_inputs(sh, T, initial, static_cast<uint32_t>(T * 2 + initial));
      const Result want = exact(in);
      for (const DeltaIsa isa : kIsas) {
        if (!delta_rule_isa_supported(isa, sh)) continue;
        std::vector<float> state = in.state, out(want.out.size(), -1.f);
        run_range(in, 0, T, isa, state, out);
        const std::string what = std::string(isa_name(isa)) + " T=" + std::to_string(T) +
                                 (initial ? " from a random state" : " from zero");
        const double e_out = rel_error(out, want.out), e_state = rel_error(state, want.state);
        EXPECT_LT(e_out, kTolerance) << what << ": output";
        EXPECT_LT(e_state, kTolerance) << what << ": state";
        double& w = worst[static_cast<int>(isa)];
        w = std::max({w, e_out, e_state});
        // Where the state lies in memory changes nothing (the vector paths copy a misaligned
        // state to an aligned place).
        if (isa == DeltaIsa::Reference) continue;
        std::vector<float> state_m = in.state, out_m(want.out.size(), -1.f);
        run_range(in, 0, T, isa, state_m, out_m, /*misaligned=*/true);
        EXPECT_EQ(state_m, state) << what << ": misaligned state";
        EXPECT_EQ(out_m, out) << what << ": misaligned state";
      }
    }
  for (const DeltaIsa isa : kIsas)
    if (delta_rule_isa_supported(isa, sh))
      std::printf("[ info ] %s: worst relative error %.3g\n", isa_name(isa),
                  worst[static_cast<int>(isa)]);
}

// A prompt fed in pieces (as the engine does for long prompts and cached prefixes) gives
// exactly the bits of one call: no path's arithmetic depends on where a call starts.
TEST_P(DeltaRule, SplitCallsGiveTheSameBitsAsOneCall) {
  const Shape sh = GetParam();
  const Inputs in = random_inputs(sh, 509, true, 7);
  for (const DeltaIsa isa : kIsas) {
    if (!delta_rule_isa_supported(isa, sh)) continue;
    std::vector<float> state_one = in.state, out_one(in.T * sh.n_v_heads * sh.dv);
    run_range(in, 0, in.T, isa, state_one, out_one);
    std::vector<float> state_split = in.state, out_split(out_one.size());
    int64_t t0 = 0;
    for (const int64_t piece : {1, 63, 64, 65, 316}) {
      run_range(in, t0, t0 + piece, isa, state_split, out_split);
      t0 += piece;
    }
    ASSERT_EQ(t0, in.T);
    EXPECT_EQ(state_one, state_split) << isa_name(isa);
    EXPECT_EQ(out_one, out_split) << isa_name(isa);
  }
}

// A state stored as 16-bit values (--state-type f16 / bf16): a call widens it, runs the float32
// arithmetic of the float32 path and narrows the result. Within one call the outputs are the
// float32 path's bits, and the state written is the float32 state rounded to nearest even.
void run_range16(const Inputs& in, int64_t t0, int64_t t1, DeltaIsa isa, DType type,
                 std::vector<uint16_t>& state, std::vector<float>& out) {
  Shape sh = in.sh;
  sh.state = type;
  const int64_t row = 2 * sh.n_k_heads * sh.dk + sh.n_v_heads * sh.dv;
  const DeltaRuleArgs args{in.qkv.data() + t0 * row,
                           in.alpha.data() + t0 * sh.n_v_heads,
                           in.beta.data() + t0 * sh.n_v_heads,
                           in.a_neg.data(),
                           in.dt_bias.data(),
                           t1 - t0,
                           sh,
                           reinterpret_cast<float*>(state.data()),
                           out.data() + t0 * sh.n_v_heads * sh.dv};
  gated_delta_rule_heads(args, 0, sh.n_v_heads, isa);
}

uint16_t narrow(DType type, float v) {
  return type == DType::F16 ? f32_to_f16_saturating(v) : f32_to_bf16(v);
}
float widen(DType type, uint16_t v) { return type == DType::F16 ? f16_to_f32(v) : bf16_to_f32(v); }

TEST_P(DeltaRule, SixteenBitStatesGiveTheFloat32BitsOfOneCall) {
  const Shape sh = GetParam();
  const Inputs in = random_inputs(sh, 65, true, 5);
  for (const DType type : {DType::F16, DType::BF16})
    for (const DeltaIsa isa : kIsas) {
      if (!delta_rule_isa_supported(isa, sh)) continue;
      const std::string what = std::string(isa_name(isa)) + (type == DType::F16 ? " f16" : " bf16");
      std::vector<uint16_t> state16(in.state.size());
      std::vector<float> state32(in.state.size());
      for (size_t i = 0; i < state16.size(); ++i) {
        state16[i] = narrow(type, in.state[i]);
        state32[i] = widen(type, state16[i]);
      }
      std::vector<float> out16(in.T * sh.n_v_heads * sh.dv, -1.f), out32(out16.size(), -2.f);
      run_range16(in, 0, in.T, isa, type, state16, out16);
      run_range(in, 0, in.T, isa, state32, out32);
      EXPECT_EQ(out16, out32) << what;
      size_t differ = 0;
      for (size_t i = 0; i < state16.size(); ++i) differ += state16[i] != narrow(type, state32[i]);
      EXPECT_EQ(differ, 0u) << what << ": state values not the float32 state rounded";
    }
}

// Token by token, as decoding stores it, the rounding of every step stays small: unit-norm
// keys make the update a contraction. Worst errors seen on this machine relative to the largest
// magnitude over the shapes and paths, outputs / states: f16 2.8e-4 / 6.8e-4, bf16 1.5e-3 /
// 4.2e-3 (the bounds leave a factor of about 6 to 10).
TEST_P(DeltaRule, SixteenBitStatesStayCloseToFloat64TokenByToken) {
  const Shape sh = GetParam();
  const Inputs in = random_inputs(sh, 200, true, 9);
  for (const DType type : {DType::F16, DType::BF16}) {
    Inputs start = in;  // float64 starts from the stored (rounded) state
    std::vector<uint16_t> state16(in.state.size());
    for (size_t i = 0; i < state16.size(); ++i) {
      state16[i] = narrow(type, in.state[i]);
      start.state[i] = widen(type, state16[i]);
    }
    const Result want = exact(start);
    const DeltaIsa isa = delta_rule_isa(sh);
    std::vector<float> out(want.out.size(), -1.f);
    for (int64_t t = 0; t < in.T; ++t) run_range16(in, t, t + 1, isa, type, state16, out);
    std::vector<float> state(state16.size());
    for (size_t i = 0; i < state.size(); ++i) state[i] = widen(type, state16[i]);
    const double bound = type == DType::F16 ? 4e-3 : 4e-2;
    const double e_out = rel_error(out, want.out), e_state = rel_error(state, want.state);
    const char* name = type == DType::F16 ? "f16" : "bf16";
    EXPECT_LT(e_out, bound) << name << ": output";
    EXPECT_LT(e_state, bound) << name << ": state";
    std::printf("[ info ] %s, %s, 200 single-token calls: worst relative error %.3g / %.3g\n", name,
                isa_name(isa), e_out, e_state);
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, DeltaRule,
                         ::testing::Values(Shape{1, 1, 128, 128},  // Qwen3.5 heads
                                           Shape{1, 2, 64, 64},    // 2 value heads per key head
                                           Shape{2, 4, 40, 24},    // AVX2 only (40 % 16 != 0)
                                           Shape{1, 3, 32, 13},    // a 5-row tail
                                           Shape{2, 2, 20, 8}),    // reference only
                         [](const ::testing::TestParamInfo<Shape>& p) {
                           const Shape& s = p.param;
                           return "k" + std::to_string(s.n_k_heads) + "v" +
                                  std::to_string(s.n_v_heads) + "_" + std::to_string(s.dk) + "x" +
                                  std::to_string(s.dv);
                         });

// The backend entry (thread pool, instruction-set choice) computes the same as the path it
// chooses, on the real head count.
TEST(DeltaRuleBackend, CpuBackendUsesTheFastPath) {
  const Shape sh{16, 16, 128, 128};
  const Inputs in = random_inputs(sh, 65, true, 11);
  std::vector<float> state_be = in.state, out_be(in.T * sh.n_v_heads * sh.dv);
  auto backend = create_backend("cpu");
  backend->gated_delta_rule(in.qkv.data(), in.alpha.data(), in.beta.data(), in.a_neg.data(),
                            in.dt_bias.data(), in.T, sh, state_be.data(), out_be.data());
  std::vector<float> state = in.state, out(out_be.size());
  run_range(in, 0, in.T, delta_rule_isa(sh), state, out);
  EXPECT_EQ(state, state_be);
  EXPECT_EQ(out, out_be);
  std::printf("[ info ] instruction set chosen: %s\n", isa_name(delta_rule_isa(sh)));
}

}  // namespace
}  // namespace hostlm::cpu
