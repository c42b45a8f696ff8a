#include "cpu/conv1d.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

namespace hostlm::cpu {
namespace {

inline float silu(float x) { return x / (1.f + std::exp(-x)); }

// The input row at time s of this call (s < 0: from the state, which holds -(K-1)..-1).
inline const float* input_row(const Conv1dArgs& a, int64_t s) {
  return s < 0 ? a.state + (a.K - 1 + s) * a.channels : a.x + s * a.channels;
}

void reference_outputs(const Conv1dArgs& a, int64_t c0, int64_t c1) {
  const int64_t hist = a.K - 1;
  for (int64_t t = 0; t < a.T; ++t)
    for (int64_t c = c0; c < c1; ++c) {
      float s = 0.f;
      for (int64_t r = 0; r < a.K; ++r) s += a.weight[c * a.K + r] * input_row(a, t - hist + r)[c];
      a.out[t * a.channels + c] = silu(s);
    }
}

// Columns [c0, c1) of the new state: the last K-1 inputs, oldest first. Row r holds time
// T-(K-1)+r; when that is before this call it is old row r+T, a later row and so not yet
// overwritten as r rises.
void update_state(const Conv1dArgs& a, int64_t c0, int64_t c1) {
  const int64_t hist = a.K - 1;
  if (a.T == 0) return;
  for (int64_t r = 0; r < hist; ++r)
    std::memmove(a.state + r * a.channels + c0, input_row(a, a.T - hist + r) + c0,
                 sizeof(float) * static_cast<size_t>(c1 - c0));
}

bool cpu_has(ConvIsa isa) {
  static const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  static const bool avx512 = avx2 && __builtin_cpu_supports("avx512f");
  switch (isa) {
    case ConvIsa::Reference:
      return true;
    case ConvIsa::Avx2:
      return avx2;
    case ConvIsa::Avx512:
      return avx512;
  }
  return false;
}

// Below about this many outputs a piece of work is not worth waking another thread for
// (a decode step of one sequence runs on the calling thread).
constexpr int64_t kMinPieceOutputs = 16384;

int64_t grain_blocks(int64_t tokens_per_item) {
  return std::max<int64_t>(1,
                           kMinPieceOutputs / (kConvBlock * std::max<int64_t>(1, tokens_per_item)));
}

}  // namespace

bool conv1d_isa_supported(ConvIsa isa, int64_t K) {
  return cpu_has(isa) && (isa == ConvIsa::Reference || K <= kConvMaxTaps);
}

ConvIsa conv1d_isa(int64_t K) {
  for (ConvIsa isa : {ConvIsa::Avx512, ConvIsa::Avx2})
    if (conv1d_isa_supported(isa, K)) return isa;
  return ConvIsa::Reference;
}

void conv1d_silu_channels(const Conv1dArgs& a, int64_t c0, int64_t c1, ConvIsa isa) {
  if (isa == ConvIsa::Reference) {
    reference_outputs(a, c0, c1);
  } else {
    thread_local std::vector<float> wt;  // the kernels' transposed taps
    const auto need = static_cast<size_t>(a.K * (c1 - c0));
    if (wt.size() < need) wt.resize(need);
    (isa == ConvIsa::Avx512 ? conv1d_outputs_avx512 : conv1d_outputs_avx2)(a, c0, c1, wt.data());
  }
  update_state(a, c0, c1);
}

void conv1d_silu(ThreadPool& pool, const Conv1dArgs& a) {
  const ConvIsa isa = conv1d_isa(a.K);
  const int64_t n_blocks = (a.channels + kConvBlock - 1) / kConvBlock;
  pool.parallel_for(n_blocks, grain_blocks(a.T), [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b)
      conv1d_silu_channels(a, b * kConvBlock, std::min(a.channels, (b + 1) * kConvBlock), isa);
  });
}

void conv1d_silu_seqs(ThreadPool& pool, std::span<const SequenceSlice> seqs, const float* x,
                      int64_t channels, int64_t K, const float* weight, float* out) {
  if (seqs.empty()) return;
  const ConvIsa isa = conv1d_isa(K);
  const int64_t n_blocks = (channels + kConvBlock - 1) / kConvBlock;
  const auto n_seqs = static_cast<int64_t>(seqs.size());
  int64_t tokens = 0;
  for (const SequenceSlice& sl : seqs) tokens += sl.T;
  pool.parallel_for(n_seqs * n_blocks, grain_blocks(tokens / n_seqs), [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      const SequenceSlice& sl = seqs[static_cast<size_t>(i / n_blocks)];
      const int64_t b = i % n_blocks;
      const Conv1dArgs a{x + sl.row * channels,  sl.T, channels, K, weight, sl.conv_state,
                         out + sl.row * channels};
      conv1d_silu_channels(a, b * kConvBlock, std::min(channels, (b + 1) * kConvBlock), isa);
    }
  });
}

}  // namespace hostlm::cpu
