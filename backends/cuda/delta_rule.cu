// The gated delta rule in its recurrent form (spec/qwen35.md sections 2.5 and 2.10).
//
// qkv: [T, 2*n_k_heads*dk + n_v_heads*dv] (q | k | v); alpha, beta_raw: [T, n_v_heads];
// state: [n_v_heads, dv, dk]; out: [T, n_v_heads * dv]. Value head j reads key head
// j % n_k_heads. Grid: (column blocks, n_v_heads, sequences of a RecurrentSeqs table); the
// rows of sequence i start at seqs.row[i].
//
// Why this shape. The recurrence is serial in tokens, so its speed is the latency of one
// token's step. The step is split so that only the part that depends on the state stays in
// that chain:
//   - A block takes kChunk tokens at a time into shared memory and, in parallel over tokens,
//     L2-normalises q and k, folds 1/sqrt(dk) into q, and computes beta, the decay and
//     kq = q.k once per token, instead of once per value column.
//   - Each value column's state row S[:, c] (dk floats) lives in the registers of
//     kLanesPerColumn lanes. With d = decay, n = normalised: the step needs r1 = S.k and
//     r2 = S.q of the state before the update, because
//       delta = beta * (v - d * r1),   out = d * r2 + delta * kq,   S = d * S + k * delta,
//     so one interleaved pair of 3-level shuffle reductions is the whole chain per token.
#include "common.cuh"
#include "kernels.h"

namespace hostlm::cuda {
namespace {

constexpr int kWarps = 4;
constexpr int kLanesPerColumn = 8;
constexpr int kColumnsPerWarp = 32 / kLanesPerColumn;
constexpr int kColumnsPerBlock = kWarps * kColumnsPerWarp;

// Sum over the kLanesPerColumn lanes of one column (aligned groups of the warp).
__device__ __forceinline__ void column_sum2(float& a, float& b) {
#pragma unroll
  for (int o = kLanesPerColumn / 2; o > 0; o >>= 1) {
    a += __shfl_xor_sync(0xffffffffu, a, o);
    b += __shfl_xor_sync(0xffffffffu, b, o);
  }
}

// Tokens per chunk for prefill: the q and k tiles take at most 32 KiB.
constexpr int prefill_chunk(int dk_pad) { return dk_pad <= 128 ? 32 : 16; }
// For decode steps (every sequence of the launch has at most this many tokens): small tiles, so
// that more blocks fit on an SM.
constexpr int kDecodeChunk = 4;

// kPerLane: state values per lane, so dk is padded to kLanesPerColumn * kPerLane (zeros).
template <int kPerLane, int kChunkTokens>
struct DeltaShape {
  static constexpr int kDkPad = kLanesPerColumn * kPerLane;
  static constexpr int kChunk = kChunkTokens;
  static constexpr int kVec = kPerLane < 4 ? kPerLane : 4;  // floats per shared-memory read
  // Lane g of a column holds state values d = kVec*g + kLanesPerColumn*kVec*i + e.
  __device__ static int dim(int g, int i, int e) {
    return kVec * g + kLanesPerColumn * kVec * i + e;
  }
};

template <int kPerLane, int kChunkTokens>
struct DeltaTiles {
  using S = DeltaShape<kPerLane, kChunkTokens>;
  float q[S::kChunk][S::kDkPad];
  float k[S::kChunk][S::kDkPad];
  float v[S::kChunk][kColumnsPerBlock];
  float out[S::kChunk][kColumnsPerBlock];
  float beta[S::kChunk];
  float decay[S::kChunk];
  float kq[S::kChunk];
};

template <int n>
__device__ __forceinline__ void load_vec(const float* p, float* out) {
  if constexpr (n == 4) {
    const float4 v = *reinterpret_cast<const float4*>(p);
    out[0] = v.x, out[1] = v.y, out[2] = v.z, out[3] = v.w;
  } else if constexpr (n == 2) {
    const float2 v = *reinterpret_cast<const float2*>(p);
    out[0] = v.x, out[1] = v.y;
  } else {
    out[0] = p[0];
  }
}

template <int kPerLane, int kChunkTokens>
__global__ void __launch_bounds__(kWarps * 32)
    gated_delta_rule_kernel(const RecurrentSeqs seqs, const float* qkv, const float* alpha,
                            const float* beta_raw, const float* a_neg, const float* dt_bias,
                            int64_t n_k_heads, int64_t n_v_heads, int64_t dk, int64_t dv,
                            float* out) {
  using Shape = DeltaShape<kPerLane, kChunkTokens>;
  constexpr int kDkPad = Shape::kDkPad, kChunk = Shape::kChunk, kVec = Shape::kVec;
  __shared__ DeltaTiles<kPerLane, kChunkTokens> tiles;

  const int64_t j = blockIdx.y;
  const int sq = blockIdx.z;
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int g = lane % kLanesPerColumn;
  const int col = warp * kColumnsPerWarp + lane / kLanesPerColumn;  // column in the block
  const int64_t c0 = int64_t{blockIdx.x} * kColumnsPerBlock;
  const bool has_column = c0 + col < dv;
  const int64_t kh = j % n_k_heads;
  const int64_t key_dim = n_k_heads * dk;
  const int64_t row = 2 * key_dim + n_v_heads * dv;
  const float q_scale = rsqrtf(static_cast<float>(dk));
  const float a = a_neg[j], bias = dt_bias[j];
  const int64_t T = seqs.T[sq], first = seqs.row[sq];
  qkv += first * row;
  alpha += first * n_v_heads;
  beta_raw += first * n_v_heads;
  out += first * n_v_heads * dv;
  float* S = seqs.state[sq] + (j * dv + c0 + col) * dk;

  float s[kPerLane];
#pragma unroll
  for (int i = 0; i < kPerLane / kVec; ++i)
#pragma unroll
    for (int e = 0; e < kVec; ++e) {
      const int d = Shape::dim(g, i, e);
      s[i * kVec + e] = has_column && d < dk ? S[d] : 0.f;
    }

  for (int64_t t0 = 0; t0 < T; t0 += kChunk) {
    const int n = static_cast<int>(T - t0 < kChunk ? T - t0 : kChunk);
    // 1. The chunk's raw q, k and v (rows past n are never read), and its per-token gates.
#pragma unroll 8
    for (int idx = tid; idx < n * kDkPad; idx += kWarps * 32) {
      const int tt = idx / kDkPad, d = idx % kDkPad;
      const float* q = qkv + (t0 + tt) * row + kh * dk;
      tiles.q[tt][d] = d < dk ? q[d] : 0.f;
      tiles.k[tt][d] = d < dk ? q[key_dim + d] : 0.f;
    }
    for (int idx = tid; idx < n * kColumnsPerBlock; idx += kWarps * 32) {
      const int tt = idx / kColumnsPerBlock, cc = idx % kColumnsPerBlock;
      tiles.v[tt][cc] = c0 + cc < dv ? qkv[(t0 + tt) * row + 2 * key_dim + j * dv + c0 + cc] : 0.f;
    }
    if (tid < n) {
      const float gate = alpha[(t0 + tid) * n_v_heads + j] + bias;
      tiles.beta[tid] = sigmoid(beta_raw[(t0 + tid) * n_v_heads + j]);
      tiles.decay[tid] = expf(a * (gate > 20.f ? gate : log1pf(expf(gate))));
    }
    __syncthreads();
    // 2. Normalise q and k and take q.k, each warp for every kWarps-th token; the tokens of a
    // warp are unrolled so that their reductions overlap. `tt < n` is uniform in a warp.
    constexpr int kTokensPerWarp = kChunk / kWarps;
    constexpr int kSlots = kDkPad < 32 ? 1 : kDkPad / 32;
    {
      float qq[kTokensPerWarp], kk[kTokensPerWarp];
#pragma unroll
      for (int m = 0; m < kTokensPerWarp; ++m) {
        const int tt = warp + kWarps * m;
        qq[m] = kk[m] = 0.f;
#pragma unroll
        for (int i = 0; i < kSlots; ++i) {
          const int d = lane + 32 * i;
          if (tt < n && d < kDkPad) {
            qq[m] += tiles.q[tt][d] * tiles.q[tt][d];
            kk[m] += tiles.k[tt][d] * tiles.k[tt][d];
          }
        }
      }
#pragma unroll
      for (int m = 0; m < kTokensPerWarp; ++m) {
        qq[m] = warp_sum(qq[m]);
        kk[m] = warp_sum(kk[m]);
      }
      float kq[kTokensPerWarp];
#pragma unroll
      for (int m = 0; m < kTokensPerWarp; ++m) {
        const int tt = warp + kWarps * m;
        const float qs = q_scale / sqrtf(qq[m] + 1e-6f), ks = 1.f / sqrtf(kk[m] + 1e-6f);
        kq[m] = 0.f;
#pragma unroll
        for (int i = 0; i < kSlots; ++i) {
          const int d = lane + 32 * i;
          if (tt < n && d < kDkPad) {
            const float qn = tiles.q[tt][d] * qs, kn = tiles.k[tt][d] * ks;
            tiles.q[tt][d] = qn;
            tiles.k[tt][d] = kn;
            kq[m] += qn * kn;
          }
        }
      }
#pragma unroll
      for (int m = 0; m < kTokensPerWarp; ++m) {
        kq[m] = warp_sum(kq[m]);
        if (lane == 0) tiles.kq[warp + kWarps * m] = kq[m];
      }
    }
    __syncthreads();
    // 3. The recurrence over the chunk.
    for (int tt = 0; tt < n; ++tt) {
      float kv[kPerLane], qv[kPerLane];
#pragma unroll
      for (int i = 0; i < kPerLane / kVec; ++i) {
        load_vec<kVec>(&tiles.k[tt][Shape::dim(g, i, 0)], kv + i * kVec);
        load_vec<kVec>(&tiles.q[tt][Shape::dim(g, i, 0)], qv + i * kVec);
      }
      // Two partial sums each, to halve the dependent FMA chain.
      float r1a = 0.f, r1b = 0.f, r2a = 0.f, r2b = 0.f;
#pragma unroll
      for (int i = 0; i < kPerLane; i += 2) {
        r1a = fmaf(s[i], kv[i], r1a);
        r2a = fmaf(s[i], qv[i], r2a);
        if (i + 1 < kPerLane) {
          r1b = fmaf(s[i + 1], kv[i + 1], r1b);
          r2b = fmaf(s[i + 1], qv[i + 1], r2b);
        }
      }
      float r1 = r1a + r1b, r2 = r2a + r2b;
      column_sum2(r1, r2);
      const float decay = tiles.decay[tt];
      const float delta = tiles.beta[tt] * (tiles.v[tt][col] - decay * r1);
#pragma unroll
      for (int i = 0; i < kPerLane; ++i) s[i] = fmaf(kv[i], delta, decay * s[i]);
      if (g == 0) tiles.out[tt][col] = fmaf(delta, tiles.kq[tt], decay * r2);
    }
    __syncthreads();
    // 4. The chunk's outputs, a row of the block's columns per token.
    for (int idx = tid; idx < n * kColumnsPerBlock; idx += kWarps * 32) {
      const int tt = idx / kColumnsPerBlock, cc = idx % kColumnsPerBlock;
      if (c0 + cc < dv) out[(t0 + tt) * n_v_heads * dv + j * dv + c0 + cc] = tiles.out[tt][cc];
    }
    // The next chunk's loads overwrite the tiles only after this barrier.
    __syncthreads();
  }
  if (!has_column) return;
#pragma unroll
  for (int i = 0; i < kPerLane / kVec; ++i)
#pragma unroll
    for (int e = 0; e < kVec; ++e) {
      const int d = Shape::dim(g, i, e);
      if (d < dk) S[d] = s[i * kVec + e];
    }
}

template <int kPerLane>
void launch(const RecurrentSeqs& seqs, const float* qkv, const float* alpha, const float* beta_raw,
            const float* a_neg, const float* dt_bias, int64_t n_k_heads, int64_t n_v_heads,
            int64_t dk, int64_t dv, float* out, cudaStream_t stream) {
  const dim3 grid(blocks_for(dv, kColumnsPerBlock), static_cast<unsigned>(n_v_heads),
                  static_cast<unsigned>(seqs.n));
  int max_T = 0;
  for (int i = 0; i < seqs.n; ++i) max_T = seqs.T[i] > max_T ? seqs.T[i] : max_T;
  if (max_T <= kDecodeChunk)
    gated_delta_rule_kernel<kPerLane, kDecodeChunk><<<grid, kWarps * 32, 0, stream>>>(
        seqs, qkv, alpha, beta_raw, a_neg, dt_bias, n_k_heads, n_v_heads, dk, dv, out);
  else
    gated_delta_rule_kernel<kPerLane, prefill_chunk(kLanesPerColumn * kPerLane)>
        <<<grid, kWarps * 32, 0, stream>>>(seqs, qkv, alpha, beta_raw, a_neg, dt_bias, n_k_heads,
                                           n_v_heads, dk, dv, out);
}

}  // namespace

cudaError_t gated_delta_rule(const RecurrentSeqs& seqs, const float* qkv, const float* alpha,
                             const float* beta_raw, const float* a_neg, const float* dt_bias,
                             int64_t n_k_heads, int64_t n_v_heads, int64_t dk, int64_t dv,
                             float* out, cudaStream_t stream) {
  if (dk < 1 || dk > kDeltaRuleMaxDk || n_k_heads < 1 || n_v_heads > 65535 ||
      seqs.n > kRecurrentSeqsPerLaunch)
    return cudaErrorInvalidValue;
  if (seqs.n == 0 || n_v_heads == 0 || dv == 0) return cudaSuccess;
  const auto args = [&](auto launcher) {
    launcher(seqs, qkv, alpha, beta_raw, a_neg, dt_bias, n_k_heads, n_v_heads, dk, dv, out, stream);
  };
  if (dk <= 16)
    args(launch<2>);
  else if (dk <= 32)
    args(launch<4>);
  else if (dk <= 64)
    args(launch<8>);
  else if (dk <= 128)
    args(launch<16>);
  else
    args(launch<32>);
  return cudaGetLastError();
}

}  // namespace hostlm::cuda
