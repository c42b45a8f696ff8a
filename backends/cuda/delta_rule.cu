// The gated delta rule in its recurrent form (spec/qwen35.md sections 2.5 and 2.10): one warp
// per value column, whose state row S[:, c] (dk floats) stays in registers across all T tokens.
// Per token: L2-normalise q and k, decay, read with k, write the delta, read with q.
//
// qkv: [T, 2*n_k_heads*dk + n_v_heads*dv] (q | k | v); alpha, beta_raw: [T, n_v_heads];
// state: [n_v_heads, dv, dk]; out: [T, n_v_heads * dv]. Value head j reads key head
// j % n_k_heads. Grid: (column blocks, n_v_heads, sequences of a RecurrentSeqs table); the
// rows of sequence i start at seqs.row[i].
#include "common.cuh"
#include "kernels.h"

namespace hostlm::cuda {
namespace {

constexpr int kWarpsPerBlock = 4;

template <int kPerLane>
__global__ void __launch_bounds__(kWarpsPerBlock * 32)
    gated_delta_rule_kernel(const RecurrentSeqs seqs, const float* qkv, const float* alpha,
                            const float* beta_raw, const float* a_neg, const float* dt_bias,
                            int64_t n_k_heads, int64_t n_v_heads, int64_t dk, int64_t dv,
                            float* out) {
  const int64_t j = blockIdx.y;
  const int sq = blockIdx.z;
  const int64_t c = int64_t{blockIdx.x} * kWarpsPerBlock + threadIdx.x / 32;
  if (c >= dv) return;
  const int lane = threadIdx.x % 32;
  const int64_t kh = j % n_k_heads;
  const int64_t key_dim = n_k_heads * dk;
  const int64_t row = 2 * key_dim + n_v_heads * dv;
  const float q_scale = 1.f / sqrtf(static_cast<float>(dk));
  const int64_t T = seqs.T[sq], first = seqs.row[sq];
  qkv += first * row;
  alpha += first * n_v_heads;
  beta_raw += first * n_v_heads;
  out += first * n_v_heads * dv;
  float* S = seqs.state[sq] + (j * dv + c) * dk;

  float s[kPerLane];
#pragma unroll
  for (int i = 0; i < kPerLane; ++i) {
    const int64_t d = lane + 32 * i;
    s[i] = d < dk ? S[d] : 0.f;
  }
  for (int64_t t = 0; t < T; ++t) {
    const float* q = qkv + t * row + kh * dk;
    const float* k = q + key_dim;
    float qv[kPerLane], kv[kPerLane];
    float qq = 0.f, kk = 0.f;
#pragma unroll
    for (int i = 0; i < kPerLane; ++i) {
      const int64_t d = lane + 32 * i;
      qv[i] = d < dk ? q[d] : 0.f;
      kv[i] = d < dk ? k[d] : 0.f;
      qq += qv[i] * qv[i];
      kk += kv[i] * kv[i];
    }
    qq = warp_sum(qq);
    kk = warp_sum(kk);
    const float qs = q_scale / sqrtf(qq + 1e-6f), ks = 1.f / sqrtf(kk + 1e-6f);
    const float beta = sigmoid(beta_raw[t * n_v_heads + j]);
    const float g = alpha[t * n_v_heads + j] + dt_bias[j];
    const float decay = expf(a_neg[j] * (g > 20.f ? g : log1pf(expf(g))));
    float read = 0.f;
#pragma unroll
    for (int i = 0; i < kPerLane; ++i) {
      kv[i] *= ks;
      s[i] *= decay;
      read += s[i] * kv[i];
    }
    read = warp_sum(read);
    const float delta = beta * (qkv[t * row + 2 * key_dim + j * dv + c] - read);
    float o = 0.f;
#pragma unroll
    for (int i = 0; i < kPerLane; ++i) {
      s[i] += kv[i] * delta;
      o += s[i] * (qv[i] * qs);
    }
    o = warp_sum(o);
    if (lane == 0) out[t * n_v_heads * dv + j * dv + c] = o;
  }
#pragma unroll
  for (int i = 0; i < kPerLane; ++i) {
    const int64_t d = lane + 32 * i;
    if (d < dk) S[d] = s[i];
  }
}

template <int kPerLane>
void launch(const RecurrentSeqs& seqs, const float* qkv, const float* alpha, const float* beta_raw,
            const float* a_neg, const float* dt_bias, int64_t n_k_heads, int64_t n_v_heads,
            int64_t dk, int64_t dv, float* out, cudaStream_t stream) {
  const dim3 grid(blocks_for(dv, kWarpsPerBlock), static_cast<unsigned>(n_v_heads),
                  static_cast<unsigned>(seqs.n));
  gated_delta_rule_kernel<kPerLane><<<grid, kWarpsPerBlock * 32, 0, stream>>>(
      seqs, qkv, alpha, beta_raw, a_neg, dt_bias, n_k_heads, n_v_heads, dk, dv, out);
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
  if (dk <= 32)
    args(launch<1>);
  else if (dk <= 64)
    args(launch<2>);
  else if (dk <= 128)
    args(launch<4>);
  else
    args(launch<8>);
  return cudaGetLastError();
}

}  // namespace hostlm::cuda
