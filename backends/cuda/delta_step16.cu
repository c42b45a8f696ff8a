// A decode step of the gated delta rule (one token a sequence) over recurrent states stored as
// 16-bit values (--state-type f16 / bf16). The math is delta_rule.cu's for one token.
//
// Why a kernel of its own. The general kernel keeps two value columns' state in a lane's
// float registers; at 64 sequences its state traffic (128 MiB each way a 9B layer in
// float32) moves at about 2.4 TB/s on an H100 with four 128-thread blocks an SM, limited by
// the bytes each SM has in flight. Stored as 16 bits, the same layout halves the bytes in
// flight and the time stayed the same (112 -> 123 us a layer, session 42). Here a lane holds
// four columns' state packed two values to a register (as many registers as two float
// columns), so an SM has as many bytes in flight as the float32 kernel and the halved state
// takes about half the time. Each value is widened twice (for the two dot products, then for
// the update) instead of being kept wide.
//
// Layout: a group of 8 lanes per four value columns; lane g holds key dimensions
// d = 4 g + 32 i + e (i < kPerLane / 4, e < 4) of each, loaded 8 bytes at a time. The group
// also holds q and k of its key head (the same dimensions), so norms and q.k need only
// shuffles within it.
#include <type_traits>

#include "common.cuh"
#include "kernels.h"
#include "launch.cuh"
#include "state_values.h"

namespace hostlm::cuda {
namespace {

constexpr int kLanes = 8;    // lanes per column group
constexpr int kColumns = 4;  // value columns per group
constexpr int kWarps = 4;
constexpr int kColumnsPerBlock = kWarps * (32 / kLanes) * kColumns;  // 64

__device__ __forceinline__ void group_sum(float& v) {
#pragma unroll
  for (int o = kLanes / 2; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
}

// kPerLane: key dimensions a lane holds (dk <= 8 kPerLane, zeros past dk).
template <int kPerLane, StateType kState>
__global__ void __launch_bounds__(kWarps * 32, 4)
    delta_step16_kernel(const RecurrentSeqs seqs, const float* qkv, const float* alpha,
                        const float* beta_raw, const float* a_neg, const float* dt_bias,
                        int64_t n_k_heads, int64_t n_v_heads, int64_t dk, int64_t dv, float* out,
                        bool early_state) {
  if (!early_state) pdl_begin();
  constexpr int kSlots = kPerLane / 4;  // 8-byte pieces of a column a lane holds
  const int64_t j = blockIdx.y;
  const int sq = blockIdx.z;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int g = lane % kLanes;
  const int64_t col0 =
      int64_t{blockIdx.x} * kColumnsPerBlock + (warp * (32 / kLanes) + lane / kLanes) * kColumns;
  uint16_t* const state = reinterpret_cast<uint16_t*>(seqs.state[sq]);
  // The state first: when the caller says the kernel before did not write it, its trip to
  // DRAM overlaps that kernel's tail (delta_rule.cu).
  uint2 packed[kColumns][kSlots];
#pragma unroll
  for (int c = 0; c < kColumns; ++c)
#pragma unroll
    for (int i = 0; i < kSlots; ++i) {
      const int d = 4 * g + 4 * kLanes * i;
      packed[c][i] = col0 + c < dv && d < dk
                         ? *reinterpret_cast<const uint2*>(state + (j * dv + col0 + c) * dk + d)
                         : make_uint2(0u, 0u);
    }
  if (early_state) pdl_begin();

  const int64_t key_dim = n_k_heads * dk, kh = j % n_k_heads;
  const int64_t first = seqs.row[sq];
  const float* x = qkv + first * (2 * key_dim + n_v_heads * dv);
  float q[kPerLane], k[kPerLane];
#pragma unroll
  for (int i = 0; i < kSlots; ++i) {
    const int d = 4 * g + 4 * kLanes * i;
    const float4 zero = make_float4(0.f, 0.f, 0.f, 0.f);
    const float4 qv = d < dk ? *reinterpret_cast<const float4*>(x + kh * dk + d) : zero;
    const float4 kv = d < dk ? *reinterpret_cast<const float4*>(x + key_dim + kh * dk + d) : zero;
    q[4 * i] = qv.x, q[4 * i + 1] = qv.y, q[4 * i + 2] = qv.z, q[4 * i + 3] = qv.w;
    k[4 * i] = kv.x, k[4 * i + 1] = kv.y, k[4 * i + 2] = kv.z, k[4 * i + 3] = kv.w;
  }
  float v[kColumns];
#pragma unroll
  for (int c = 0; c < kColumns; ++c)
    v[c] = col0 + c < dv ? x[2 * key_dim + j * dv + col0 + c] : 0.f;
  const float gate = alpha[first * n_v_heads + j] + dt_bias[j];
  const float beta = sigmoid(beta_raw[first * n_v_heads + j]);
  const float decay = expf(a_neg[j] * (gate > 20.f ? gate : log1pf(expf(gate))));

  // Unit-norm k, q scaled by 1/sqrt(dk) too, and q.k.
  float qq = 0.f, kk = 0.f;
#pragma unroll
  for (int i = 0; i < kPerLane; ++i) {
    qq = fmaf(q[i], q[i], qq);
    kk = fmaf(k[i], k[i], kk);
  }
  group_sum(qq);
  group_sum(kk);
  const float qs = rsqrtf(static_cast<float>(dk)) / sqrtf(qq + 1e-6f);
  const float ks = 1.f / sqrtf(kk + 1e-6f);
  float kq = 0.f;
#pragma unroll
  for (int i = 0; i < kPerLane; ++i) {
    q[i] *= qs;
    k[i] *= ks;
    kq = fmaf(q[i], k[i], kq);
  }
  group_sum(kq);

  // r1 = S.k and r2 = S.q of the state before the token, per column.
  float r1[kColumns], r2[kColumns];
#pragma unroll
  for (int c = 0; c < kColumns; ++c) {
    float a1 = 0.f, a2 = 0.f;
#pragma unroll
    for (int i = 0; i < kSlots; ++i) {
      float s[4];
      state_widen4(packed[c][i], kState, s);
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        a1 = fmaf(s[e], k[4 * i + e], a1);
        a2 = fmaf(s[e], q[4 * i + e], a2);
      }
    }
    r1[c] = a1;
    r2[c] = a2;
  }
#pragma unroll
  for (int c = 0; c < kColumns; ++c) {
    group_sum(r1[c]);
    group_sum(r2[c]);
  }
  float* o = out + first * n_v_heads * dv + j * dv + col0;
#pragma unroll
  for (int c = 0; c < kColumns; ++c) {
    if (col0 + c >= dv) continue;
    const float delta = beta * (v[c] - decay * r1[c]);
    if (g == 0) o[c] = fmaf(delta, kq, decay * r2[c]);
#pragma unroll
    for (int i = 0; i < kSlots; ++i) {
      const int d = 4 * g + 4 * kLanes * i;
      float s[4];
      state_widen4(packed[c][i], kState, s);
#pragma unroll
      for (int e = 0; e < 4; ++e) s[e] = fmaf(k[4 * i + e], delta, decay * s[e]);
      if (d < dk)
        *reinterpret_cast<uint2*>(state + (j * dv + col0 + c) * dk + d) = state_narrow4(s, kState);
    }
  }
}

template <int kPerLane, StateType kState>
void launch(const RecurrentSeqs& seqs, const float* qkv, const float* alpha, const float* beta_raw,
            const float* a_neg, const float* dt_bias, int64_t n_k_heads, int64_t n_v_heads,
            int64_t dk, int64_t dv, float* out, bool early_state, cudaStream_t stream) {
  const dim3 grid(blocks_for(dv, kColumnsPerBlock), static_cast<unsigned>(n_v_heads),
                  static_cast<unsigned>(seqs.n));
  launch_kernel(delta_step16_kernel<kPerLane, kState>, grid, kWarps * 32, 0, stream, seqs, qkv,
                alpha, beta_raw, a_neg, dt_bias, n_k_heads, n_v_heads, dk, dv, out, early_state);
}

}  // namespace

bool delta_step16_fits(const RecurrentSeqs& seqs, const float* qkv, int64_t n_k_heads,
                       int64_t n_v_heads, int64_t dk, int64_t dv, StateType state_type) {
  if (state_type == StateType::F32 || dk < 4 || dk > 128 || dk % 4 != 0 || n_k_heads < 1 ||
      n_v_heads < 1 || n_v_heads > 65535 || dv < 1 || seqs.n < 1 ||
      seqs.n > kRecurrentSeqsPerLaunch)
    return false;
  const int64_t row = 2 * n_k_heads * dk + n_v_heads * dv;
  if (row % 4 != 0 || reinterpret_cast<uintptr_t>(qkv) % 16 != 0) return false;
  for (int i = 0; i < seqs.n; ++i)
    if (seqs.T[i] != 1 || reinterpret_cast<uintptr_t>(seqs.state[i]) % 8 != 0) return false;
  return true;
}

cudaError_t gated_delta_step16(const RecurrentSeqs& seqs, const float* qkv, const float* alpha,
                               const float* beta_raw, const float* a_neg, const float* dt_bias,
                               int64_t n_k_heads, int64_t n_v_heads, int64_t dk, int64_t dv,
                               float* out, bool early_state, StateType state_type,
                               cudaStream_t stream) {
  if (!delta_step16_fits(seqs, qkv, n_k_heads, n_v_heads, dk, dv, state_type))
    return cudaErrorInvalidValue;
  const auto by_width = [&](auto state) {
    constexpr StateType kState = decltype(state)::value;
    const auto args = [&](auto launcher) {
      launcher(seqs, qkv, alpha, beta_raw, a_neg, dt_bias, n_k_heads, n_v_heads, dk, dv, out,
               early_state, stream);
    };
    if (dk <= 32)
      args(launch<4, kState>);
    else if (dk <= 64)
      args(launch<8, kState>);
    else
      args(launch<16, kState>);
  };
  if (state_type == StateType::F16)
    by_width(std::integral_constant<StateType, StateType::F16>{});
  else
    by_width(std::integral_constant<StateType, StateType::BF16>{});
  return cudaGetLastError();
}

}  // namespace hostlm::cuda
