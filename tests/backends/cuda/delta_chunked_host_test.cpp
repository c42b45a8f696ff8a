// The chunked delta rule's kernel bodies (cuda/delta_chunked.h), run on the host: a
// std::thread per CUDA thread with a std::barrier for __syncthreads, and shared memory
// poisoned with NaN so that a read of anything not written first shows in the results.
// Checked against the CPU backend's token-by-token recurrence (spec 2.5) over several
// sequences, shapes that leave partial chunks, column blocks and padded key widths, windows
// of a few slots (the state carried between them) and strong decays. Needs no GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <barrier>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "cuda/delta_chunked.h"
#include "cuda_test_support.h"
#include "hostlm/ops.h"

namespace hostlm {
namespace {

namespace ch = cuda::chunked;

struct HostBlock {
  int tid;
  std::barrier<>* bar;
  int thread() const { return tid; }
  void sync() const { bar->arrive_and_wait(); }
};

// Runs body(block, index, shared) for `blocks` blocks of ch::kThreads threads, one block at a time.
template <class Body>
void run_blocks(int blocks, int smem_floats, Body body) {
  for (int blk = 0; blk < blocks; ++blk) {
    std::vector<float> shared(static_cast<size_t>(smem_floats),
                              std::numeric_limits<float>::quiet_NaN());
    std::barrier<> bar(ch::kThreads);
    std::vector<std::thread> threads;
    threads.reserve(ch::kThreads);
    for (int t = 0; t < ch::kThreads; ++t)
      threads.emplace_back([&, t] { body(HostBlock{t, &bar}, blk, shared.data()); });
    for (std::thread& t : threads) t.join();
  }
}

struct Case {
  Backend::DeltaRuleShape shape;
  std::vector<int32_t> lengths;
  int capacity;  // chunk slots a window holds
  float alpha_hi;
  bool staged;  // the scan's triangular factors in shared memory, or read from the slots
  DType state = DType::F32;  // the states' element type (--state-type)
};

std::string name(const Case& c) {
  std::string s = "nk" + std::to_string(c.shape.n_k_heads) + "_nv" +
                  std::to_string(c.shape.n_v_heads) + "_dk" + std::to_string(c.shape.dk) + "_dv" +
                  std::to_string(c.shape.dv) + "_cap" + std::to_string(c.capacity);
  s += c.staged ? "_staged" : "_slots";
  return c.state == DType::F32 ? s : s + "_" + std::string(dtype_name(c.state));
}

// Every sequence's state values as floats.
std::vector<float> widened(const std::vector<float>& stored, const Backend::DeltaRuleShape& sh) {
  const size_t per = static_cast<size_t>(sh.state_floats()), n = stored.size() / per;
  std::vector<float> out;
  for (size_t i = 0; i < n; ++i)
    for (int64_t v = 0; v < sh.state_values(); ++v)
      out.push_back(cuda::state_get(stored.data() + i * per, v, testing::state_type_of(sh.state)));
  return out;
}

class DeltaChunkedOnHost : public ::testing::TestWithParam<Case> {};

TEST_P(DeltaChunkedOnHost, EqualsTheRecurrence) {
  const Case& cs = GetParam();
  Backend::DeltaRuleShape sh = cs.shape;
  sh.state = cs.state;
  const int64_t row = 2 * sh.n_k_heads * sh.dk + sh.n_v_heads * sh.dv;
  std::mt19937 rng(7);
  auto random = [&](size_t n, float lo, float hi) {
    return testing::uniform_floats(rng, n, lo, hi);
  };
  int64_t rows = 0;
  std::vector<int64_t> first;
  for (int32_t T : cs.lengths) {
    first.push_back(rows);
    rows += T;
  }
  const auto qkv = random(static_cast<size_t>(rows * row), -1.f, 1.f);
  const auto alpha = random(static_cast<size_t>(rows * sh.n_v_heads), -3.f, cs.alpha_hi);
  const auto beta = random(alpha.size(), -3.f, 3.f);
  const auto a_neg = random(static_cast<size_t>(sh.n_v_heads), -2.f, -0.1f);
  const auto dt_bias = random(static_cast<size_t>(sh.n_v_heads), -1.f, 1.f);
  // A sequence's state in floats of storage (16-bit values two to a float).
  const size_t state_floats = static_cast<size_t>(sh.state_floats());
  const auto values0 =
      random(static_cast<size_t>(sh.state_values()) * cs.lengths.size(), -0.5f, 0.5f);
  std::vector<float> state0(state_floats * cs.lengths.size());
  for (size_t i = 0; i < cs.lengths.size(); ++i)
    for (int64_t v = 0; v < sh.state_values(); ++v)
      cuda::state_set(state0.data() + i * state_floats, v, testing::state_type_of(cs.state),
                      values0[i * sh.state_values() + v]);

  // The reference: the CPU backend, a sequence at a time.
  auto cpu = create_backend("cpu");
  std::vector<float> want_states = state0;
  std::vector<float> want(static_cast<size_t>(rows * sh.n_v_heads * sh.dv));
  for (size_t i = 0; i < cs.lengths.size(); ++i) {
    const int64_t f = first[i];
    cpu->gated_delta_rule(qkv.data() + f * row, alpha.data() + f * sh.n_v_heads,
                          beta.data() + f * sh.n_v_heads, a_neg.data(), dt_bias.data(),
                          cs.lengths[i], sh, want_states.data() + i * state_floats,
                          want.data() + f * sh.n_v_heads * sh.dv);
  }

  std::vector<float> states = state0;
  std::vector<float> got(want.size(), std::numeric_limits<float>::quiet_NaN());
  std::vector<float> scratch(static_cast<size_t>(cs.capacity) * sh.n_v_heads * ch::kSlotFloats,
                             std::numeric_limits<float>::quiet_NaN());
  ch::Args args{qkv.data(),
                alpha.data(),
                beta.data(),
                a_neg.data(),
                dt_bias.data(),
                static_cast<int>(sh.n_k_heads),
                static_cast<int>(sh.n_v_heads),
                static_cast<int>(sh.dk),
                static_cast<int>(sh.dv),
                got.data(),
                scratch.data(),
                testing::state_type_of(cs.state)};
  std::vector<float*> state_ptrs;
  for (size_t i = 0; i < cs.lengths.size(); ++i)
    state_ptrs.push_back(states.data() + i * state_floats);
  int windows = 0;
  const int heads = static_cast<int>(sh.n_v_heads);
  const int col_blocks = static_cast<int>((sh.dv + ch::kCols - 1) / ch::kCols);
  const bool ok = ch::for_each_window(
      cs.lengths.data(), first.data(), state_ptrs.data(), static_cast<int>(cs.lengths.size()),
      cs.capacity, [&](const ch::Window& w) {
        ++windows;
        run_blocks(w.slots * heads, ch::prep_floats(args.dk),
                   [&](const HostBlock& b, int blk, float* sm) {
                     ch::prep_chunk(b, args, w, blk / heads, blk % heads, sm);
                   });
        run_blocks(w.n * heads * col_blocks, ch::scan_floats(args.dk, cs.staged),
                   [&](const HostBlock& b, int blk, float* sm) {
                     const int cb = blk % col_blocks, j = (blk / col_blocks) % heads;
                     const int e = blk / (col_blocks * heads);
                     if (cs.staged)
                       ch::scan_columns<true>(b, args, w, cb, j, e, sm);
                     else
                       ch::scan_columns<false>(b, args, w, cb, j, e, sm);
                   });
      });
  ASSERT_TRUE(ok);
  int chunks = 0;
  for (int32_t T : cs.lengths) chunks += (T + ch::kC - 1) / ch::kC;
  EXPECT_GE(windows, (chunks + cs.capacity - 1) / cs.capacity);

  // The host's float arithmetic in another order: a few ulps of the largest value. A 16-bit
  // state is also rounded where a sequence crosses windows (the CPU's single call does not
  // round until its end), and both round the final values: one unit of the last place of
  // the largest magnitude, 2^-11 (f16) or 2^-8 (bf16), and twice that for what follows.
  const double tolerance = cs.state == DType::F32 ? 5e-6 : cs.state == DType::F16 ? 2e-3 : 1.6e-2;
  testing::expect_close(want, got, "out", tolerance);
  testing::expect_close(widened(want_states, sh), widened(states, sh), "states", tolerance);
}

INSTANTIATE_TEST_SUITE_P(Shapes, DeltaChunkedOnHost,
                         ::testing::Values(
                             // Partial chunks, a one-token sequence, windows of two slots.
                             Case{{2, 4, 16, 16}, {150, 1, 64, 65}, 2, 3.f, true},
                             Case{{2, 4, 16, 16}, {150, 1, 64, 65}, 2, 3.f, false},
                             // The 9B head (one head pair) and a window holding everything.
                             Case{{1, 2, 128, 128}, {130}, 64, 3.f, true},
                             Case{{1, 2, 128, 128}, {130}, 64, 3.f, false},
                             Case{{2, 4, 32, 16}, {77, 5}, 3, 3.f, true},
                             // dv over a column block and not a multiple of it; dk padded to 4.
                             Case{{2, 2, 48, 40}, {100}, 1, 3.f, false},
                             Case{{1, 1, 18, 33}, {64, 129}, 5, 3.f, true},
                             // Strong decays: log-decays down to about -60 a token.
                             Case{{1, 2, 64, 32}, {140}, 4, 30.f, false},
                             // 16-bit states, carried across windows of two slots.
                             Case{{2, 4, 16, 16}, {150, 1, 64, 65}, 2, 3.f, true, DType::F16},
                             Case{{1, 2, 128, 128}, {130}, 2, 3.f, false, DType::F16},
                             Case{{1, 2, 128, 128}, {130}, 2, 3.f, false, DType::BF16}),
                         [](const ::testing::TestParamInfo<Case>& p) { return name(p.param); });

// Windows: slots never exceed the capacity, every chunk is covered once and in order, and
// no window holds more than kMaxEntries entries.
TEST(DeltaChunkedWindows, CoverEveryChunkOnceInOrder) {
  std::vector<int32_t> T;
  std::vector<int64_t> row;
  std::vector<float*> state;
  for (int i = 0; i < 100; ++i) {
    T.push_back(i % 7 == 0 ? 1 : 13 * i + 1);
    row.push_back(i);
    state.push_back(nullptr);
  }
  for (int capacity : {1, 3, 16, 1000}) {
    std::vector<int> next(T.size(), 0);
    const bool ok =
        ch::for_each_window(T.data(), row.data(), state.data(), static_cast<int>(T.size()),
                            capacity, [&](const ch::Window& w) {
                              EXPECT_LE(w.slots, capacity);
                              EXPECT_LE(w.n, ch::kMaxEntries);
                              int slot = 0;
                              for (int e = 0; e < w.n; ++e) {
                                const ch::Entry& en = w.e[e];
                                EXPECT_EQ(en.slot0, slot);
                                slot += en.chunks;
                                const int i = static_cast<int>(en.row);
                                EXPECT_EQ(en.chunk0, next[i]) << "sequence " << i;
                                next[i] = en.chunk0 + en.chunks;
                                for (int s = en.slot0; s < en.slot0 + en.chunks; ++s)
                                  EXPECT_EQ(ch::entry_of_slot(w, s), e);
                              }
                              EXPECT_EQ(slot, w.slots);
                            });
    ASSERT_TRUE(ok);
    for (size_t i = 0; i < T.size(); ++i) EXPECT_EQ(next[i], (T[i] + ch::kC - 1) / ch::kC);
  }
  EXPECT_FALSE(ch::for_each_window(T.data(), row.data(), state.data(), 1, 0,
                                   [](const ch::Window&) { FAIL(); }));
}

}  // namespace
}  // namespace hostlm
