// The CPU causal depthwise convolution with SiLU (hostlm/ops.h: conv1d_silu; spec 2.5).
//
// out[t, c] = silu(sum over r < K of w[c, r] * in(t - (K-1) + r, c)), where in(s, c) for
// s < 0 comes from the conv state (the K-1 inputs before this call, oldest first).
// Work is split into blocks of kConvBlock channels; a block computes its outputs for every
// token and then moves its own columns of the state, so blocks (and sequences) are
// independent and a whole decode batch goes to the thread pool in one dispatch.
//
// The vector paths add the K products in the reference's order with separate multiplies
// and adds (this file set is built with -ffp-contract=off), so the sums carry the same bits;
// only SiLU's exponential is a polynomial instead of the C library's expf, a few units in
// the last place apart (conv1d_test.cpp). Every channel of a vector path, tail included,
// uses that polynomial, so results do not depend on how channels are blocked.
#pragma once
#include <cstdint>
#include <span>

#include "cpu/thread_pool.h"
#include "hostlm/ops.h"

namespace hostlm::cpu {

// The arguments of Backend::conv1d_silu, in one place.
struct Conv1dArgs {
  const float* x;  // [T, channels], raw inputs of this call
  int64_t T, channels, K;
  const float* weight;  // [channels, K], tap 0 the oldest
  float* state;         // [K-1, channels], updated in place
  float* out;           // [T, channels]
};

enum class ConvIsa { Reference, Avx2, Avx512 };

// Channels per work item: a multiple of every vector width, and small enough that the K
// rows a token reads stay in L1 while the block walks through the tokens.
constexpr int64_t kConvBlock = 256;

// The vector paths keep the K input rows of a token in a fixed array: longer kernels (no
// released model has one; Qwen3.5 uses 4) take the reference path.
constexpr int64_t kConvMaxTaps = 16;

// The fastest instruction set this CPU runs for kernels of K taps (Reference when none fits).
ConvIsa conv1d_isa(int64_t K);
bool conv1d_isa_supported(ConvIsa isa, int64_t K);

// Channels [c0, c1) on the calling thread: outputs for all tokens, then those columns of the
// state. Uses a thread-local scratch that grows once (no allocation afterwards).
void conv1d_silu_channels(const Conv1dArgs& args, int64_t c0, int64_t c1, ConvIsa isa);

// One sequence, its channel blocks spread over the pool, with conv1d_isa(K).
void conv1d_silu(ThreadPool& pool, const Conv1dArgs& args);

// Several sequences (rows [row, row + T) of x and out are seqs[i]'s, its state conv_state):
// one pool dispatch over (sequence x channel block). Same bits as conv1d_silu per sequence.
void conv1d_silu_seqs(ThreadPool& pool, std::span<const SequenceSlice> seqs, const float* x,
                      int64_t channels, int64_t K, const float* weight, float* out);

// ---- Instruction-set kernels (conv1d_avx2.cpp, conv1d_avx512.cpp) --------------------------

// Outputs of channels [c0, c1) for every token (the state is only read). wt is scratch of
// K * (c1 - c0) floats, where the kernel puts the taps transposed ([K, c1 - c0]) so that a
// vector of channels reads one tap with one load.
void conv1d_outputs_avx2(const Conv1dArgs& a, int64_t c0, int64_t c1, float* wt);
void conv1d_outputs_avx512(const Conv1dArgs& a, int64_t c0, int64_t c1, float* wt);

}  // namespace hostlm::cpu
