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
//
// A decode launch may also apply the layer's gated RMSNorm (DeltaRuleNorm). Its blocks then
// take a whole value head (dv / 8 warps), so the norm needs no other block's columns and
// its launch, a graph node per layer, is gone.
#include <type_traits>

#include "common.cuh"
#include "kernels.h"
#include "launch.cuh"
#include "quants/acts_quant.cuh"
#include "state_values.h"

namespace hostlm::cuda {
namespace {

constexpr int kDefaultWarps = 4;
constexpr int kLanesPerColumn = 8;
constexpr int kGroupsPerWarp = 32 / kLanesPerColumn;

// Sum over the kLanesPerColumn lanes of one column group (aligned groups of the warp).
__device__ __forceinline__ void group_sum(float& v) {
#pragma unroll
  for (int o = kLanesPerColumn / 2; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
}

// Tokens per chunk for prefill: the q and k tiles take at most 32 KiB.
constexpr int prefill_chunk(int dk_pad) { return dk_pad <= 128 ? 32 : 16; }
// For decode steps (every sequence of the launch has at most this many tokens): small tiles, so
// that more blocks fit on an SM.
constexpr int kDecodeChunk = 4;
// Value columns per lane group: each token's q and k are read from shared memory once for all
// of them. Shared-memory reads were the limit with one column (ncu, 9B pp512: 254 us per layer,
// L1 at 66%); dk = 256 keeps one, for its registers.
constexpr int columns_per_group(int per_lane) { return per_lane <= 16 ? 2 : 1; }

// kPerLane: state values per lane, so dk is padded to kLanesPerColumn * kPerLane (zeros).
template <int kPerLane, int kChunkTokens, int kWarps>
struct DeltaShape {
  static constexpr int kDkPad = kLanesPerColumn * kPerLane;
  static constexpr int kChunk = kChunkTokens;
  static constexpr int kCols = columns_per_group(kPerLane);
  static constexpr int kColumnsPerBlock = kWarps * kGroupsPerWarp * kCols;
  static constexpr int kVec = kPerLane < 4 ? kPerLane : 4;  // floats per shared-memory read
  // Lane g of a column group holds state values d = kVec*g + kLanesPerColumn*kVec*i + e.
  __device__ static int dim(int g, int i, int e) {
    return kVec * g + kLanesPerColumn * kVec * i + e;
  }
};

template <int kPerLane, int kChunkTokens, int kWarps>
struct DeltaTiles {
  using S = DeltaShape<kPerLane, kChunkTokens, kWarps>;
  float q[S::kChunk][S::kDkPad];
  float k[S::kChunk][S::kDkPad];
  float v[S::kChunk][S::kColumnsPerBlock];
  float out[S::kChunk][S::kColumnsPerBlock];
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

// `vector`: dk is a multiple of 4 and the qkv rows are 16-byte aligned, so q and k load as
// float4.
// Decode blocks are held to 512 threads per SM's worth of registers (128 each): the state
// loads of many sequences need the blocks in flight more than any one block needs registers.
// kNorm (decode only, one block per value head): the gated RMSNorm of `norm` on the output.
// kState: the state's element type, fixed at compile time: a run-time choice cost the fused
// decode kernel a spill (16 bytes of stack) and the float32 path its straight-line code.
template <int kPerLane, int kChunkTokens, int kWarps = kDefaultWarps, bool kNorm = false,
          StateType kState = StateType::F32>
__global__ void __launch_bounds__(kWarps * 32, kChunkTokens == kDecodeChunk
                                                   ? (kWarps < 16 ? 16 / kWarps : 1)
                                                   : 0)
    gated_delta_rule_kernel(const RecurrentSeqs seqs, const float* qkv, const float* alpha,
                            const float* beta_raw, const float* a_neg, const float* dt_bias,
                            int64_t n_k_heads, int64_t n_v_heads, int64_t dk, int64_t dv,
                            float* out, bool vector, bool early_state, const DeltaRuleNorm norm) {
  // The state is read before the wait for the kernel before when the caller says that kernel
  // did not write it (kernels.h): its trip to DRAM, the largest of a decode step's layer after
  // the weights, then overlaps that kernel's tail.
  if (!early_state) pdl_begin();
  using Shape = DeltaShape<kPerLane, kChunkTokens, kWarps>;
  constexpr int kDkPad = Shape::kDkPad, kChunk = Shape::kChunk, kVec = Shape::kVec;
  constexpr int kCols = Shape::kCols, kColumnsPerBlock = Shape::kColumnsPerBlock;
  __shared__ __align__(16) DeltaTiles<kPerLane, kChunkTokens, kWarps> tiles;
  // The norm's layout: warp w takes token w / kWarpsPerToken's columns from
  // 32 * (w % kWarpsPerToken), one a lane, so that each warp holds one quantized block.
  constexpr int kWarpsPerToken = kColumnsPerBlock / 32 > 0 ? kColumnsPerBlock / 32 : 1;
  static_assert(!kNorm || (kChunk == kDecodeChunk && kWarps == kChunk * kWarpsPerToken &&
                           kColumnsPerBlock % 32 == 0),
                "the norm takes a decode chunk, a warp per 32 columns of a token");

  const int64_t j = blockIdx.y;
  const int sq = blockIdx.z;
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int g = lane % kLanesPerColumn;
  // The group's first column in the block; its columns are col0 .. col0 + kCols - 1.
  const int col0 = (warp * kGroupsPerWarp + lane / kLanesPerColumn) * kCols;
  const int64_t c0 = int64_t{blockIdx.x} * kColumnsPerBlock;
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
  // This group's columns of the state, element s_at on (of kState).
  void* const state = seqs.state[sq];
  const int64_t s_at = (j * dv + c0 + col0) * dk;
  const int norm_token = warp / kWarpsPerToken;
  const int norm_col = 32 * (warp % kWarpsPerToken) + lane;
  float norm_w = 0.f, norm_z = 0.f;
  if constexpr (kNorm) {
    if (early_state) norm_w = norm.weight[norm_col];  // a model constant
  }

  // The state rows as 16-byte loads (8 for a 16-bit state) where dk allows: at many sequences
  // per step this kernel streams every state once each way.
  // (Decode only: in the prefill kernels the second path cost registers, and their state is
  // read once per prompt chunk.)
  const bool state_vector = kChunkTokens == kDecodeChunk && kVec == 4 && dk % 4 == 0 &&
                            reinterpret_cast<uintptr_t>(state) % state_vector_align(kState) == 0;
  float s[kCols][kPerLane];
#pragma unroll
  for (int c = 0; c < kCols; ++c)
#pragma unroll
    for (int i = 0; i < kPerLane / kVec; ++i) {
      const int d0 = Shape::dim(g, i, 0);
      const bool column = c0 + col0 + c < dv;
      if (state_vector) {
        float v[4] = {0.f, 0.f, 0.f, 0.f};
        if (column && d0 < dk) state_get4(state, s_at + c * dk + d0, kState, v);
#pragma unroll
        for (int e = 0; e < kVec; ++e) s[c][i * kVec + e] = v[e];
        continue;
      }
#pragma unroll
      for (int e = 0; e < kVec; ++e) {
        const int d = Shape::dim(g, i, e);
        s[c][i * kVec + e] = column && d < dk ? state_get(state, s_at + c * dk + d, kState) : 0.f;
      }
    }
  if (early_state) pdl_begin();
  if constexpr (kNorm) {
    // Every token of the launch is in its first chunk; the gate is read now so that its trip
    // overlaps the recurrence.
    if (!early_state) norm_w = norm.weight[norm_col];
    if (norm_token < T) norm_z = norm.z[((first + norm_token) * n_v_heads + j) * dv + norm_col];
  }

  for (int64_t t0 = 0; t0 < T; t0 += kChunk) {
    const int n = static_cast<int>(T - t0 < kChunk ? T - t0 : kChunk);
    // 1. The chunk's raw q, k and v (rows past n are never read), and its per-token gates.
    constexpr int kThreads = kWarps * 32;
    constexpr int kLoads4 = kChunk * (kDkPad / 4);
    bool loaded = false;
    if constexpr (kLoads4 >= kThreads && kLoads4 % kThreads == 0) {
      if (vector && n == kChunk) {
        // A full chunk: every load is issued before the first store, so the chunk waits for
        // one memory latency instead of one per loop step (with one block per SM nothing else
        // hides it).
        constexpr int kSteps = kLoads4 / kThreads;
        float4 qr[kSteps], kr[kSteps];
#pragma unroll
        for (int it = 0; it < kSteps; ++it) {
          const int idx = tid + it * kThreads;
          const int tt = idx / (kDkPad / 4), d = 4 * (idx % (kDkPad / 4));
          const float* q = qkv + (t0 + tt) * row + kh * dk;
          const float4 zero = make_float4(0.f, 0.f, 0.f, 0.f);
          qr[it] = d < dk ? *reinterpret_cast<const float4*>(q + d) : zero;
          kr[it] = d < dk ? *reinterpret_cast<const float4*>(q + key_dim + d) : zero;
        }
#pragma unroll
        for (int it = 0; it < kSteps; ++it) {
          const int idx = tid + it * kThreads;
          const int tt = idx / (kDkPad / 4), d = 4 * (idx % (kDkPad / 4));
          *reinterpret_cast<float4*>(&tiles.q[tt][d]) = qr[it];
          *reinterpret_cast<float4*>(&tiles.k[tt][d]) = kr[it];
        }
        loaded = true;
      }
    }
    if (!loaded && vector) {
      for (int idx = tid; idx < n * (kDkPad / 4); idx += kWarps * 32) {
        const int tt = idx / (kDkPad / 4), d = 4 * (idx % (kDkPad / 4));
        const float* q = qkv + (t0 + tt) * row + kh * dk;
        const float4 zero = make_float4(0.f, 0.f, 0.f, 0.f);
        *reinterpret_cast<float4*>(&tiles.q[tt][d]) =
            d < dk ? *reinterpret_cast<const float4*>(q + d) : zero;
        *reinterpret_cast<float4*>(&tiles.k[tt][d]) =
            d < dk ? *reinterpret_cast<const float4*>(q + key_dim + d) : zero;
      }
    } else if (!loaded) {
#pragma unroll 8
      for (int idx = tid; idx < n * kDkPad; idx += kWarps * 32) {
        const int tt = idx / kDkPad, d = idx % kDkPad;
        const float* q = qkv + (t0 + tt) * row + kh * dk;
        tiles.q[tt][d] = d < dk ? q[d] : 0.f;
        tiles.k[tt][d] = d < dk ? q[key_dim + d] : 0.f;
      }
    }
    constexpr int kVSteps = (kChunk * kColumnsPerBlock + kThreads - 1) / kThreads;
    {
      float vr[kVSteps];
#pragma unroll
      for (int it = 0; it < kVSteps; ++it) {
        const int idx = tid + it * kThreads;
        const int tt = idx / kColumnsPerBlock, cc = idx % kColumnsPerBlock;
        vr[it] =
            tt < n && c0 + cc < dv ? qkv[(t0 + tt) * row + 2 * key_dim + j * dv + c0 + cc] : 0.f;
      }
#pragma unroll
      for (int it = 0; it < kVSteps; ++it) {
        const int idx = tid + it * kThreads;
        if (idx < kChunk * kColumnsPerBlock)
          tiles.v[idx / kColumnsPerBlock][idx % kColumnsPerBlock] = vr[it];
      }
    }
    if (tid < n) {
      const float gate = alpha[(t0 + tid) * n_v_heads + j] + bias;
      tiles.beta[tid] = sigmoid(beta_raw[(t0 + tid) * n_v_heads + j]);
      tiles.decay[tid] = expf(a * (gate > 20.f ? gate : log1pf(expf(gate))));
    }
    __syncthreads();
    // 2. Normalise q and k and take q.k, each warp for every kWarps-th token; the tokens of a
    // warp are unrolled so that their reductions overlap. `tt < n` is uniform in a warp.
    constexpr int kTokensPerWarp = (kChunk + kWarps - 1) / kWarps;
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
        if (lane == 0 && warp + kWarps * m < kChunk) tiles.kq[warp + kWarps * m] = kq[m];
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
      const float decay = tiles.decay[tt], beta = tiles.beta[tt], kq = tiles.kq[tt];
      float r1[kCols], r2[kCols];
#pragma unroll
      for (int c = 0; c < kCols; ++c) {
        // Two partial sums each, to halve the dependent FMA chain.
        float r1a = 0.f, r1b = 0.f, r2a = 0.f, r2b = 0.f;
#pragma unroll
        for (int i = 0; i < kPerLane; i += 2) {
          r1a = fmaf(s[c][i], kv[i], r1a);
          r2a = fmaf(s[c][i], qv[i], r2a);
          if (i + 1 < kPerLane) {
            r1b = fmaf(s[c][i + 1], kv[i + 1], r1b);
            r2b = fmaf(s[c][i + 1], qv[i + 1], r2b);
          }
        }
        r1[c] = r1a + r1b;
        r2[c] = r2a + r2b;
      }
#pragma unroll
      for (int c = 0; c < kCols; ++c) {
        group_sum(r1[c]);
        group_sum(r2[c]);
      }
#pragma unroll
      for (int c = 0; c < kCols; ++c) {
        const float delta = beta * (tiles.v[tt][col0 + c] - decay * r1[c]);
#pragma unroll
        for (int i = 0; i < kPerLane; ++i) s[c][i] = fmaf(kv[i], delta, decay * s[c][i]);
        if (g == 0) tiles.out[tt][col0 + c] = fmaf(delta, kq, decay * r2[c]);
      }
    }
    __syncthreads();
    // 4. The chunk's outputs, a row of the block's columns per token.
    if constexpr (kNorm) {
      // Each token's squares summed per warp and then over its warps in order: the order of
      // gated_rms_norm's block of 128 threads, so the numbers are its numbers.
      __shared__ float partial[kWarps];
      const float x = norm_token < n ? tiles.out[norm_token][norm_col] : 0.f;
      const float sq = warp_sum(x * x);
      if (lane == 0) partial[warp] = sq;
      __syncthreads();
      if (norm_token < n) {  // uniform in a warp, as quantize32_warp needs
        float ss = 0.f;
        for (int w = 0; w < kWarpsPerToken; ++w) ss += partial[norm_token * kWarpsPerToken + w];
        const float inv = 1.f / sqrtf(ss / static_cast<float>(dv) + norm.eps);
        const float v = x * inv * norm_w * silu(norm_z);
        const int64_t i = (norm_token * n_v_heads + j) * dv + norm_col;
        out[i] = v;
        if (norm.acts.q != nullptr)
          quantize32_warp(v, first * n_v_heads * dv + i - lane, norm.acts);
      }
    } else {
      for (int idx = tid; idx < n * kColumnsPerBlock; idx += kWarps * 32) {
        const int tt = idx / kColumnsPerBlock, cc = idx % kColumnsPerBlock;
        if (c0 + cc < dv) out[(t0 + tt) * n_v_heads * dv + j * dv + c0 + cc] = tiles.out[tt][cc];
      }
    }
    // The next chunk's loads overwrite the tiles only after this barrier.
    __syncthreads();
  }
#pragma unroll
  for (int c = 0; c < kCols; ++c) {
    if (c0 + col0 + c >= dv) continue;
#pragma unroll
    for (int i = 0; i < kPerLane / kVec; ++i) {
      const int d0 = Shape::dim(g, i, 0);
      if (state_vector) {
        float v[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
        for (int e = 0; e < kVec; ++e) v[e] = s[c][i * kVec + e];
        if (d0 < dk) state_set4(state, s_at + c * dk + d0, kState, v);
        continue;
      }
#pragma unroll
      for (int e = 0; e < kVec; ++e) {
        const int d = Shape::dim(g, i, e);
        if (d < dk) state_set(state, s_at + c * dk + d, kState, s[c][i * kVec + e]);
      }
    }
  }
}

template <int kPerLane, int kWarps, bool kNorm, StateType kState>
void launch_decode(const dim3& grid, const RecurrentSeqs& seqs, const float* qkv,
                   const float* alpha, const float* beta_raw, const float* a_neg,
                   const float* dt_bias, int64_t n_k_heads, int64_t n_v_heads, int64_t dk,
                   int64_t dv, float* out, bool vector, bool early_state, const DeltaRuleNorm& norm,
                   cudaStream_t stream) {
  launch_kernel(gated_delta_rule_kernel<kPerLane, kDecodeChunk, kWarps, kNorm, kState>, grid,
                kWarps * 32, 0, stream, seqs, qkv, alpha, beta_raw, a_neg, dt_bias, n_k_heads,
                n_v_heads, dk, dv, out, vector, early_state, norm);
}

template <int kPerLane, StateType kState>
void launch(const RecurrentSeqs& seqs, const float* qkv, const float* alpha, const float* beta_raw,
            const float* a_neg, const float* dt_bias, int64_t n_k_heads, int64_t n_v_heads,
            int64_t dk, int64_t dv, float* out, bool early_state, const DeltaRuleNorm& norm,
            cudaStream_t stream) {
  constexpr int kColumnsPerBlock = kDefaultWarps * kGroupsPerWarp * columns_per_group(kPerLane);
  const dim3 grid(blocks_for(dv, kColumnsPerBlock), static_cast<unsigned>(n_v_heads),
                  static_cast<unsigned>(seqs.n));
  const int64_t row = 2 * n_k_heads * dk + n_v_heads * dv;
  const bool vector = dk % 4 == 0 && row % 4 == 0 && reinterpret_cast<uintptr_t>(qkv) % 16 == 0;
  int max_T = 0;
  for (int i = 0; i < seqs.n; ++i) max_T = seqs.T[i] > max_T ? seqs.T[i] : max_T;
  const auto args = [&](auto launcher, const dim3& g) {
    launcher(g, seqs, qkv, alpha, beta_raw, a_neg, dt_bias, n_k_heads, n_v_heads, dk, dv, out,
             vector, early_state, norm, stream);
  };
  if constexpr (columns_per_group(kPerLane) == 2) {
    if (norm.z != nullptr) {  // a block per value head: dv / 8 warps of four column groups
      const dim3 heads(1, static_cast<unsigned>(n_v_heads), static_cast<unsigned>(seqs.n));
      if (dv == 32)
        args(launch_decode<kPerLane, 4, true, kState>, heads);
      else if (dv == 64)
        args(launch_decode<kPerLane, 8, true, kState>, heads);
      else
        args(launch_decode<kPerLane, 16, true, kState>, heads);
      return;
    }
  }
  if (max_T <= kDecodeChunk)
    args(launch_decode<kPerLane, kDefaultWarps, false, kState>, grid);
  else
    launch_kernel(gated_delta_rule_kernel<kPerLane, prefill_chunk(kLanesPerColumn * kPerLane),
                                          kDefaultWarps, false, kState>,
                  grid, kDefaultWarps * 32, 0, stream, seqs, qkv, alpha, beta_raw, a_neg, dt_bias,
                  n_k_heads, n_v_heads, dk, dv, out, vector, early_state, norm);
}

}  // namespace

bool delta_rule_can_norm(int64_t dk, int64_t dv, int64_t max_T) {
  return dk >= 1 && dk <= 128 && (dv == 32 || dv == 64 || dv == 128) && max_T <= kDecodeChunk;
}

cudaError_t gated_delta_rule(const RecurrentSeqs& seqs, const float* qkv, const float* alpha,
                             const float* beta_raw, const float* a_neg, const float* dt_bias,
                             int64_t n_k_heads, int64_t n_v_heads, int64_t dk, int64_t dv,
                             float* out, bool early_state, cudaStream_t stream,
                             const DeltaRuleNorm& norm, StateType state_type) {
  if (dk < 1 || dk > kDeltaRuleMaxDk || n_k_heads < 1 || n_v_heads > 65535 ||
      seqs.n > kRecurrentSeqsPerLaunch)
    return cudaErrorInvalidValue;
  if (norm.z != nullptr) {
    int max_T = 0;
    for (int i = 0; i < seqs.n; ++i) max_T = seqs.T[i] > max_T ? seqs.T[i] : max_T;
    if (!delta_rule_can_norm(dk, dv, max_T) || norm.weight == nullptr) return cudaErrorInvalidValue;
  }
  if (seqs.n == 0 || n_v_heads == 0 || dv == 0) return cudaSuccess;
  const auto args = [&](auto launcher) {
    launcher(seqs, qkv, alpha, beta_raw, a_neg, dt_bias, n_k_heads, n_v_heads, dk, dv, out,
             early_state, norm, stream);
  };
  const auto by_width = [&](auto state) {
    constexpr StateType kState = decltype(state)::value;
    if (dk <= 16)
      args(launch<2, kState>);
    else if (dk <= 32)
      args(launch<4, kState>);
    else if (dk <= 64)
      args(launch<8, kState>);
    else if (dk <= 128)
      args(launch<16, kState>);
    else
      args(launch<32, kState>);
  };
  if (state_type == StateType::F16)
    by_width(std::integral_constant<StateType, StateType::F16>{});
  else if (state_type == StateType::BF16)
    by_width(std::integral_constant<StateType, StateType::BF16>{});
  else
    by_width(std::integral_constant<StateType, StateType::F32>{});
  return cudaGetLastError();
}

}  // namespace hostlm::cuda
