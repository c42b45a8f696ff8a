#include "cpu/delta_rule.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "hostlm/half.h"

namespace hostlm::cpu {
namespace {

inline float sigmoid(float x) { return 1.f / (1.f + std::exp(-x)); }
inline float softplus(float x) { return x > 20.f ? x : std::log1p(std::exp(x)); }

struct Dims {
  int64_t key_dim, row;  // q (or k) width, and the qkv row width
  float q_scale;
};

Dims dims_of(const Backend::DeltaRuleShape& sh) {
  return {sh.n_k_heads * sh.dk, 2 * sh.n_k_heads * sh.dk + sh.n_v_heads * sh.dv,
          1.f / std::sqrt(static_cast<float>(sh.dk))};
}

// A state stored as 16-bit values (DeltaRuleShape::state F16 or BF16) is worked on in float32:
// a head's values are widened into a scratch copy before its tokens and narrowed back after,
// rounding to nearest even as the CUDA kernels do; F16 saturates (f32_to_f16_saturating).
void widen_state(DType type, const float* stored, int64_t head_values, float* to) {
  const auto* h = reinterpret_cast<const uint16_t*>(stored);
  if (type == DType::F16)
    for (int64_t i = 0; i < head_values; ++i) to[i] = f16_to_f32(h[i]);
  else
    for (int64_t i = 0; i < head_values; ++i) to[i] = bf16_to_f32(h[i]);
}
void narrow_state(DType type, const float* from, int64_t head_values, float* stored) {
  auto* h = reinterpret_cast<uint16_t*>(stored);
  if (type == DType::F16)
    for (int64_t i = 0; i < head_values; ++i) h[i] = f32_to_f16_saturating(from[i]);
  else
    for (int64_t i = 0; i < head_values; ++i) h[i] = f32_to_bf16(from[i]);
}
// Where head j's state starts: j * head_values elements of the stored type.
float* head_state(const DeltaRuleArgs& a, int64_t j, int64_t head_values) {
  if (a.shape.state == DType::F32) return a.state + j * head_values;
  return reinterpret_cast<float*>(reinterpret_cast<uint16_t*>(a.state) + j * head_values);
}

// Token by token, straight from the recurrence of spec 2.5.
void reference_heads(const DeltaRuleArgs& a, int64_t j0, int64_t j1) {
  const Backend::DeltaRuleShape& sh = a.shape;
  const Dims dm = dims_of(sh);
  thread_local std::vector<float> qk;
  if (qk.size() < static_cast<size_t>(2 * sh.dk)) qk.resize(static_cast<size_t>(2 * sh.dk));
  float* qn = qk.data();
  float* kn = qk.data() + sh.dk;
  const int64_t head_values = sh.dv * sh.dk;
  thread_local std::vector<float> wide;
  if (sh.state != DType::F32 && wide.size() < static_cast<size_t>(head_values))
    wide.resize(static_cast<size_t>(head_values));
  for (int64_t j = j0; j < j1; ++j) {
    const int64_t kh = j % sh.n_k_heads;
    float* stored = head_state(a, j, head_values);
    float* S = stored;  // row c holds S[:, c], contiguous over k
    if (sh.state != DType::F32) {
      S = wide.data();
      widen_state(sh.state, stored, head_values, S);
    }
    for (int64_t t = 0; t < a.T; ++t) {
      const float* q = a.qkv + t * dm.row + kh * sh.dk;
      const float* k = a.qkv + t * dm.row + dm.key_dim + kh * sh.dk;
      const float* v = a.qkv + t * dm.row + 2 * dm.key_dim + j * sh.dv;
      float qq = 0.f, kk = 0.f;
      for (int64_t d = 0; d < sh.dk; ++d) {
        qq += q[d] * q[d];
        kk += k[d] * k[d];
      }
      const float qs = dm.q_scale / std::sqrt(qq + 1e-6f), ks = 1.f / std::sqrt(kk + 1e-6f);
      for (int64_t d = 0; d < sh.dk; ++d) {
        qn[d] = q[d] * qs;
        kn[d] = k[d] * ks;
      }
      const float beta = sigmoid(a.beta_raw[t * sh.n_v_heads + j]);
      const float decay =
          std::exp(a.a_neg[j] * softplus(a.alpha[t * sh.n_v_heads + j] + a.dt_bias[j]));
      float* o = a.out + t * sh.n_v_heads * sh.dv + j * sh.dv;
      // Decay, read with k, write the delta, read with q: one pass over each state row.
      for (int64_t c = 0; c < sh.dv; ++c) {
        float* s = S + c * sh.dk;
        float kv = 0.f;
        for (int64_t d = 0; d < sh.dk; ++d) {
          s[d] *= decay;
          kv += s[d] * kn[d];
        }
        const float delta = beta * (v[c] - kv);
        float acc = 0.f;
        for (int64_t d = 0; d < sh.dk; ++d) {
          s[d] += kn[d] * delta;
          acc += s[d] * qn[d];
        }
        o[c] = acc;
      }
    }
    if (sh.state != DType::F32) narrow_state(sh.state, S, head_values, stored);
  }
}

// Whole cache lines for the kernel's vectors: a 64-byte load that straddles two lines costs
// two.
constexpr size_t kAlignFloats = 16;
constexpr int64_t kCopyMinTokens = 8;
float* align_up(float* p) {
  const auto at = reinterpret_cast<uintptr_t>(p);
  return reinterpret_cast<float*>((at + 63) & ~uintptr_t{63});
}

// The rows of a later token, requested ahead so that their misses overlap this token's work.
constexpr int64_t kPrefetchTokens = 4;
void prefetch_token(const float* row, int64_t q_at, int64_t key_dim, int64_t v_at, int64_t dk,
                    int64_t dv) {
  constexpr int64_t kLine = 16;  // floats per 64-byte cache line
  for (int64_t d = 0; d < dk; d += kLine) {
    __builtin_prefetch(row + q_at + d);
    __builtin_prefetch(row + q_at + key_dim + d);
  }
  for (int64_t d = 0; d < dv; d += kLine) __builtin_prefetch(row + v_at + d);
}

// Chunks of kDeltaChunk tokens: q/k normalised, v gathered and gates computed once per head
// and chunk, then the instruction-set kernel takes the state rows through the chunk.
// Gathering v (and buffering o) matters: a token's q/k/v row sits 24 KiB after the previous
// one, so reading v inside the kernel put a cache miss on its critical path every token;
// here the misses of consecutive tokens are independent and overlap.
void simd_heads(const DeltaRuleArgs& a, int64_t j0, int64_t j1, DeltaIsa isa) {
  const Backend::DeltaRuleShape& sh = a.shape;
  const Dims dm = dims_of(sh);
  const int64_t dk = sh.dk, dv = sh.dv;
  const size_t need = static_cast<size_t>(kDeltaChunk * (2 * dk + 2 * dv + 2) + dv * dk);
  thread_local std::vector<float> scratch;
  if (scratch.size() < need + kAlignFloats) scratch.resize(need + kAlignFloats);
  float* qn = align_up(scratch.data());
  float* kn = qn + kDeltaChunk * dk;
  float* vc = kn + kDeltaChunk * dk;
  float* oc = vc + kDeltaChunk * dv;
  float* beta = oc + kDeltaChunk * dv;
  float* decay = beta + kDeltaChunk;
  float* aligned_state = decay + kDeltaChunk;  // kDeltaChunk is a multiple of 16
  const auto rows = isa == DeltaIsa::Avx512 ? delta_rows_avx512 : delta_rows_avx2;
  const int64_t out_stride = sh.n_v_heads * dv;
  for (int64_t j = j0; j < j1; ++j) {
    const int64_t kh = j % sh.n_k_heads;
    float* state = head_state(a, j, dv * dk);
    // A state that does not start on a cache line is worked on in a copy that does, when
    // enough tokens pay for the copy; a 16-bit state always in a widened copy.
    const bool wide = sh.state != DType::F32;
    const bool copy = wide || (align_up(state) != state && a.T >= kCopyMinTokens);
    float* S = copy ? aligned_state : state;
    if (wide)
      widen_state(sh.state, state, dv * dk, S);
    else if (copy)
      std::copy(state, state + dv * dk, S);
    for (int64_t t0 = 0; t0 < a.T; t0 += kDeltaChunk) {
      const int64_t n = std::min(kDeltaChunk, a.T - t0);
      for (int64_t t = 0; t < n; ++t) {
        if (t0 + t + kPrefetchTokens < a.T)
          prefetch_token(a.qkv + (t0 + t + kPrefetchTokens) * dm.row, kh * dk, dm.key_dim,
                         2 * dm.key_dim + j * dv, dk, dv);
        const float* q = a.qkv + (t0 + t) * dm.row + kh * dk;
        const float* k = q + dm.key_dim;
        const float* v = a.qkv + (t0 + t) * dm.row + 2 * dm.key_dim + j * dv;
        const float qs = dm.q_scale / std::sqrt(sum_squares_avx2(q, dk) + 1e-6f);
        const float ks = 1.f / std::sqrt(sum_squares_avx2(k, dk) + 1e-6f);
        for (int64_t d = 0; d < dk; ++d) {
          qn[t * dk + d] = q[d] * qs;
          kn[t * dk + d] = k[d] * ks;
        }
        std::copy(v, v + dv, vc + t * dv);
        const int64_t g = (t0 + t) * sh.n_v_heads + j;
        beta[t] = sigmoid(a.beta_raw[g]);
        decay[t] = std::exp(a.a_neg[j] * softplus(a.alpha[g] + a.dt_bias[j]));
      }
      const DeltaChunk c{
          qn, kn, beta, decay, n, dk, dv, vc, static_cast<size_t>(dv), oc, static_cast<size_t>(dv)};
      rows(c, S);
      for (int64_t t = 0; t < n; ++t)
        std::copy(oc + t * dv, oc + (t + 1) * dv, a.out + (t0 + t) * out_stride + j * dv);
    }
    if (wide)
      narrow_state(sh.state, S, dv * dk, state);
    else if (copy)
      std::copy(S, S + dv * dk, state);
  }
}

bool cpu_has(DeltaIsa isa) {
  static const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  static const bool avx512 = avx2 && __builtin_cpu_supports("avx512f");
  switch (isa) {
    case DeltaIsa::Reference:
      return true;
    case DeltaIsa::Avx2:
      return avx2;
    case DeltaIsa::Avx512:
      return avx512;
  }
  return false;
}

}  // namespace

bool delta_rule_isa_supported(DeltaIsa isa, const Backend::DeltaRuleShape& shape) {
  switch (isa) {
    case DeltaIsa::Reference:
      return true;
    case DeltaIsa::Avx2:
      return cpu_has(isa) && shape.dk % 8 == 0;
    case DeltaIsa::Avx512:
      return cpu_has(isa) && shape.dk % 16 == 0;
  }
  return false;
}

DeltaIsa delta_rule_isa(const Backend::DeltaRuleShape& shape) {
  for (DeltaIsa isa : {DeltaIsa::Avx512, DeltaIsa::Avx2})
    if (delta_rule_isa_supported(isa, shape)) return isa;
  return DeltaIsa::Reference;
}

void gated_delta_rule_heads(const DeltaRuleArgs& args, int64_t j0, int64_t j1, DeltaIsa isa) {
  if (isa == DeltaIsa::Reference)
    reference_heads(args, j0, j1);
  else
    simd_heads(args, j0, j1, isa);
}

void gated_delta_rule(ThreadPool& pool, const DeltaRuleArgs& args) {
  const DeltaIsa isa = delta_rule_isa(args.shape);
  pool.parallel_for(args.shape.n_v_heads, 1,
                    [&](int64_t j0, int64_t j1) { gated_delta_rule_heads(args, j0, j1, isa); });
}

void gated_delta_rule_seqs(ThreadPool& pool, std::span<const SequenceSlice> seqs, const float* qkv,
                           const float* alpha, const float* beta_raw, const float* a_neg,
                           const float* dt_bias, const Backend::DeltaRuleShape& shape, float* out) {
  const DeltaIsa isa = delta_rule_isa(shape);
  const int64_t heads = shape.n_v_heads, row = dims_of(shape).row;
  pool.parallel_for(static_cast<int64_t>(seqs.size()) * heads, 1, [&](int64_t i0, int64_t i1) {
    // Consecutive heads of one sequence in one call, as gated_delta_rule would run them.
    for (int64_t i = i0; i < i1;) {
      const SequenceSlice& sl = seqs[static_cast<size_t>(i / heads)];
      const int64_t j0 = i % heads, j1 = std::min(heads, j0 + (i1 - i));
      const DeltaRuleArgs args{qkv + sl.row * row,
                               alpha + sl.row * heads,
                               beta_raw + sl.row * heads,
                               a_neg,
                               dt_bias,
                               sl.T,
                               shape,
                               sl.recurrent_state,
                               out + sl.row * heads * shape.dv};
      gated_delta_rule_heads(args, j0, j1, isa);
      i += j1 - j0;
    }
  });
}

}  // namespace hostlm::cpu
