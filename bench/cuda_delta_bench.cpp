// The gated delta rule of prefill on the CUDA backend: the recurrent kernel against the
// chunked form (HOSTLM_CUDA_DELTA_CHUNKED), one Backend of each in the same process, timed in
// turn (recurrent, chunked, recurrent, chunked) on the same inputs, through
// Backend::gated_delta_rule_seqs as a linear-attention layer calls it.
//
// A case is SEQSxTOKENS: SEQS sequences of TOKENS tokens each in one call (4x512 is a
// 2,048-token engine step of four 512-token prompts). `calls` calls are queued back to back
// and timed from the host around a final synchronising download; each call carries the
// states on, as a long prompt split over steps does.
// Usage: bench_cuda_delta [SEQSxTOKENS ...]   (default 1x512 4x512 1x4096 1x32768)
//   HOSTLM_BENCH_SHAPES=16x32,16x48   key heads x value heads, dk = dv = 128 (default: the
//                                     9B's and the 27B's)
//   HOSTLM_BENCH_CHUNKED_MIN=64       the chunked backend's HOSTLM_CUDA_DELTA_CHUNKED
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "bench_args.h"
#include "hostlm/error.h"
#include "hostlm/ops.h"

namespace {

using hostlm::Backend;
using hostlm::SequenceSlice;

constexpr int64_t kHeadDim = 128;  // dk = dv in every Qwen3.5 size

using hostlm::bench::int_list;

// A CUDA backend created with HOSTLM_CUDA_DELTA_CHUNKED set to `chunked` (restored after).
std::unique_ptr<Backend> backend_with(const std::string& chunked) {
  constexpr const char* kVar = "HOSTLM_CUDA_DELTA_CHUNKED";
  std::optional<std::string> old;
  if (const char* v = std::getenv(kVar)) old = v;
  ::setenv(kVar, chunked.c_str(), 1);
  auto b = hostlm::create_backend("cuda");
  if (old)
    ::setenv(kVar, old->c_str(), 1);
  else
    ::unsetenv(kVar);
  return b;
}

void run(Backend& recurrent, Backend& chunked, int64_t n_k, int64_t n_v, int64_t n_seqs,
         int64_t tokens) {
  const Backend::DeltaRuleShape sh{n_k, n_v, kHeadDim, kHeadDim};
  const int64_t row = 2 * n_k * kHeadDim + n_v * kHeadDim, rows = n_seqs * tokens;
  const int64_t state_size = n_v * kHeadDim * kHeadDim;
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> unit(-1.f, 1.f);
  auto random = [&](size_t n, float scale) {
    std::vector<float> v(n);
    for (float& x : v) x = scale * unit(rng);
    return v;
  };
  const auto qkv = random(static_cast<size_t>(rows * row), 1.f);
  const auto alpha = random(static_cast<size_t>(rows * n_v), 3.f);
  const auto beta = random(alpha.size(), 3.f);
  const auto states = random(static_cast<size_t>(n_seqs * state_size), 0.5f);
  std::vector<float> a_neg(static_cast<size_t>(n_v), -0.5f), dt_bias(static_cast<size_t>(n_v), 0.f);

  struct Side {
    Backend* gpu;
    std::unique_ptr<hostlm::Buffer> qkv, alpha, beta, states, out;
    std::vector<SequenceSlice> seqs;
  };
  auto side = [&](Backend& gpu) {
    Side s{&gpu,
           gpu.alloc(qkv.size()),
           gpu.alloc(alpha.size()),
           gpu.alloc(beta.size()),
           gpu.alloc(states.size()),
           gpu.alloc(static_cast<size_t>(rows * n_v * kHeadDim)),
           {}};
    gpu.upload(s.qkv->data(), qkv.data(), qkv.size());
    gpu.upload(s.alpha->data(), alpha.data(), alpha.size());
    gpu.upload(s.beta->data(), beta.data(), beta.size());
    gpu.upload(s.states->data(), states.data(), states.size());
    for (int64_t i = 0; i < n_seqs; ++i)
      s.seqs.push_back({i * tokens, tokens, 0, nullptr, s.states->data() + i * state_size});
    return s;
  };
  Side sides[2] = {side(recurrent), side(chunked)};
  const int calls = rows >= 16384 ? 5 : rows >= 2048 ? 20 : 50;
  auto time = [&](Side& s) {
    float sink = 0;
    auto call = [&] {
      s.gpu->gated_delta_rule_seqs(s.seqs, s.qkv->data(), s.alpha->data(), s.beta->data(),
                                   a_neg.data(), dt_bias.data(), sh, s.out->data());
    };
    call();  // warm-up: scratch, shared-memory settings
    s.gpu->download(&sink, s.out->data(), 1);
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < calls; ++i) call();
    s.gpu->download(&sink, s.out->data(), 1);
    if (!std::isfinite(sink)) throw hostlm::Error("the delta rule gave a non-finite value");
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0)
               .count() /
           calls;
  };
  double us[2][2];
  for (int round = 0; round < 2; ++round)
    for (int k = 0; k < 2; ++k) us[k][round] = time(sides[k]);
  std::printf(
      "heads %2lldx%2lld  %2lld x %6lld tokens  recurrent %10.1f %10.1f us  chunked %10.1f "
      "%10.1f us  ratio %.2f\n",
      static_cast<long long>(n_k), static_cast<long long>(n_v), static_cast<long long>(n_seqs),
      static_cast<long long>(tokens), us[0][0], us[0][1], us[1][0], us[1][1],
      (us[0][0] + us[0][1]) / (us[1][0] + us[1][1]));
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    std::vector<int64_t> cases;
    for (int i = 1; i < argc; ++i) {
      const auto one = int_list(argv[i], "SEQSxTOKENS");
      if (one.size() != 2)
        throw hostlm::Error("a case is SEQSxTOKENS, not " + std::string(argv[i]));
      cases.insert(cases.end(), one.begin(), one.end());
    }
    if (cases.empty()) cases = {1, 512, 4, 512, 1, 4096, 1, 32768};
    std::vector<int64_t> shapes = {16, 32, 16, 48};
    if (const char* env = std::getenv("HOSTLM_BENCH_SHAPES"); env && *env) {
      shapes = int_list(env, "HOSTLM_BENCH_SHAPES");
      if (shapes.size() % 2 != 0) throw hostlm::Error("HOSTLM_BENCH_SHAPES: pairs KxV");
    }
    const char* min = std::getenv("HOSTLM_BENCH_CHUNKED_MIN");
    auto recurrent = backend_with("0");
    auto chunked = backend_with(min && *min ? min : "64");
    for (size_t s = 0; s < shapes.size(); s += 2)
      for (size_t c = 0; c < cases.size(); c += 2)
        run(*recurrent, *chunked, shapes[s], shapes[s + 1], cases[c], cases[c + 1]);
  } catch (const hostlm::Error& e) {
    std::fprintf(stderr, "bench_cuda_delta: %s\n", e.what());
    return 1;
  }
  return 0;
}
