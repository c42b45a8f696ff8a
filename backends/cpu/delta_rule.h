// The CPU gated delta rule (hostlm/ops.h: gated_delta_rule; the math is spec section 2.5).
//
// Each value column c of a head's state evolves on its own: per token, row S[c] (dk floats,
// contiguous; the state layout is [n_v_heads, dv, dk]) is read with k, written with the
// delta of column c, and read with q. The fast path prepares a chunk of up to kDeltaChunk
// tokens per head once (normalised q/k, gathered v, beta, decay), then takes groups of 32
// state rows (16 KiB for dk = 128, resident in L1) through every token of the chunk, 8 or 16
// rows per step with SIMD lanes along dk (delta_rule_simd.h). Heads go to the thread pool.
// Every token's arithmetic is the same wherever a call or chunk starts, so a prompt split
// over several calls gives the bits of one call.
//
// The chunked WY/UT form of spec 2.10 was prototyped too (AVX-512 GEMMs; 16 heads of
// 128 x 128, 512 tokens, C = 64, one thread): it needs about 1.4x the multiply-adds of this
// recurrence; its GEMMs alone took 10-11 ms against 13-14 ms for this whole kernel, the
// whole prototype 27 ms, and 83 ms without flush-to-zero (its exp(cumsum) factors make
// subnormals). A tuned chunked kernel could at best gain a little, so prefill uses the
// recurrence, which decode needs anyway.
//
// The reference path is the token-by-token recurrence in plain C++; it also serves
// machines without AVX2 and head sizes that are not a multiple of 8.
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>

#include "cpu/thread_pool.h"
#include "hostlm/ops.h"

namespace hostlm::cpu {

// The arguments of Backend::gated_delta_rule, in one place.
struct DeltaRuleArgs {
  const float* qkv;       // [T, 2*n_k_heads*dk + n_v_heads*dv]
  const float* alpha;     // [T, n_v_heads]
  const float* beta_raw;  // [T, n_v_heads]
  const float* a_neg;     // [n_v_heads]
  const float* dt_bias;   // [n_v_heads]
  int64_t T;
  Backend::DeltaRuleShape shape;
  float* state;  // [n_v_heads, dv, dk] of shape.state (16-bit values work in a widened copy)
  float* out;    // [T, n_v_heads * dv]
};

enum class DeltaIsa { Reference, Avx2, Avx512 };

// Tokens prepared at once per head (normalised q/k, beta, decay): bounds the scratch, which
// is then independent of the prompt length.
constexpr int64_t kDeltaChunk = 64;

// The fastest instruction set this CPU runs for this shape (Reference when none fits).
DeltaIsa delta_rule_isa(const Backend::DeltaRuleShape& shape);
bool delta_rule_isa_supported(DeltaIsa isa, const Backend::DeltaRuleShape& shape);

// Value heads [j0, j1) with the given instruction set, on the calling thread. Uses a
// thread-local scratch that grows once to its fixed size (no allocation afterwards).
void gated_delta_rule_heads(const DeltaRuleArgs& args, int64_t j0, int64_t j1, DeltaIsa isa);

// All heads, spread over the pool, with delta_rule_isa().
void gated_delta_rule(ThreadPool& pool, const DeltaRuleArgs& args);

// Several sequences (rows [row, row + T) of qkv, alpha, beta_raw and out are seqs[i]'s, its
// state recurrent_state): one pool dispatch over (sequence x value head), so a decode batch
// of many one-token sequences keeps every thread busy. Same bits as gated_delta_rule per
// sequence: a head's arithmetic does not depend on which call or thread runs it.
void gated_delta_rule_seqs(ThreadPool& pool, std::span<const SequenceSlice> seqs, const float* qkv,
                           const float* alpha, const float* beta_raw, const float* a_neg,
                           const float* dt_bias, const Backend::DeltaRuleShape& shape, float* out);

// ---- Instruction-set kernels (delta_rule_avx2.cpp, delta_rule_avx512.cpp) ------------------

// One head's prepared chunk: n tokens of unit-norm k and scaled q ([n, dk] each), with
// beta and the decay exp(g) per token. v points at value column 0 of token 0 of this head
// (token stride v_stride); o likewise for the output.
struct DeltaChunk {
  const float* q;
  const float* k;
  const float* beta;
  const float* decay;
  int64_t n, dk, dv;
  const float* v;
  size_t v_stride;
  float* o;
  size_t o_stride;
};

// Runs the chunk through all dv state rows of one head (S: [dv, dk]); dk a multiple of the
// vector width (8 for AVX2, 16 for AVX-512).
void delta_rows_avx2(const DeltaChunk& c, float* S);
void delta_rows_avx512(const DeltaChunk& c, float* S);
// Sum of squares of n floats (n a multiple of 8).
float sum_squares_avx2(const float* x, int64_t n);

}  // namespace hostlm::cpu
