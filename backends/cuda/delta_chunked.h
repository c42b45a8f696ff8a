// The gated delta rule in its chunked form (spec/qwen35.md section 2.10), for prefill.
//
// Why: the recurrent kernel (delta_rule.cu) is a chain of one step per token, so a 512-token
// prompt costs 512 dependent steps per layer (179 us a 9B layer on the H200) however many SMs
// are idle. The chunked form does the same arithmetic as dense products over 64-token chunks:
// only the pass from one chunk's state to the next is serial, 8 steps for 512 tokens.
//
// Two passes, over a window of chunks (so that their scratch stays bounded):
//   - prep, a block per (chunk, value head), parallel over every chunk: normalises q and k,
//     takes the cumulative log-decay gam, and writes Tb = (I + A)^-1 diag(beta) and
//     P = lower((Q K^T) .* Gam) with A = strict_lower(diag(beta) K K^T .* Gam), plus the
//     per-token factors (norm scales, exp(gam_r), exp(gam_last - gam_r)).
//   - scan, a block per (32 value columns, value head, sequence), holding those columns of
//     the state in shared memory through the sequence's chunks. Per chunk, with X = K S and
//     Y = Q S of the state before it:
//       Vn = Tb (V - exp(gam) .* X),   O = exp(gam) .* Y + P Vn,
//       S  = exp(gam_last) S + (exp(gam_last - gam) .* K)^T Vn.
//     (The spec's W S equals Tb (exp(gam) .* K S), so W is never formed.)
//
// The bodies are written once for a thread block given as a parameter (its thread index and
// barrier), so that they compile for the device and for the host: the tests run them on the
// CPU, a std::thread per CUDA thread, against the CPU backend's recurrence.
#pragma once
#include <cstdint>
#include <cstring>

#include "cuda/quants/portable.h"
#include "cuda/state_values.h"

#ifdef __CUDACC__
#include <cuda_runtime.h>
#else
#include <cmath>
#endif

namespace hostlm::cuda::chunked {

constexpr int kC = 64;         // tokens per chunk
constexpr int kMaxDk = 128;    // key head widths this form takes (the state columns in shared)
constexpr int kCols = 32;      // value columns per scan block
constexpr int kThreads = 256;  // per block, both passes
constexpr int kMaxEntries = 64;
// A prep result per (chunk, value head): Tb and P (kC x kC, row-major), the factors
// qs, ks, eg, ekd (kC each) and exp(gam_last), padded to 16 bytes.
constexpr int kSlotFloats = 2 * kC * kC + 4 * kC + 4;
// Row strides in shared memory: 16-byte aligned rows whose starts fall on different banks.
constexpr int kTriStride = kC + 4;

HQ_HD int pad4(int n) { return (n + 3) / 4 * 4; }
HQ_HD int row_stride(int dk) { return pad4(dk) + 4; }

// A sequence's part of a window: chunks [chunk0, chunk0 + chunks) of its T tokens, whose prep
// results are slots [slot0, slot0 + chunks).
struct Entry {
  int32_t chunk0, chunks, slot0, T;
  int64_t row;   // the sequence's first row in qkv, alpha, beta_raw and out
  float* state;  // [n_v_heads, dv, dk] of Args::state_type, carried across windows
};

struct Window {
  int n = 0;      // entries
  int slots = 0;  // chunks of all entries
  Entry e[kMaxEntries];
};

struct Args {
  const float* qkv;       // [rows, 2 * n_k_heads * dk + n_v_heads * dv]
  const float* alpha;     // [rows, n_v_heads]
  const float* beta_raw;  // [rows, n_v_heads]
  const float* a_neg;     // [n_v_heads], device
  const float* dt_bias;   // [n_v_heads], device
  int n_k_heads, n_v_heads, dk, dv;
  float* out;            // [rows, n_v_heads * dv]
  float* scratch;        // [window slots, n_v_heads, kSlotFloats]
  StateType state_type;  // of the states (read at a sequence's first chunk, written at its last)
};

// Shared-memory floats of each pass. T is formed where q was (q is dead by then). The scan
// stages Tb, P and the factors in shared memory when kStaged (133 KiB at dk = 128: one block
// an SM on sm_90), else reads them from the slot in global memory through L1 (98 KiB: two
// blocks an SM on sm_90, and it fits the 99 KiB of the RTX 30/40 cards).
HQ_HD int prep_floats(int dk) {
  const int q = kC * row_stride(dk), t = kC * kTriStride;
  return (q > t ? q : t) + kC * row_stride(dk) + kC * kTriStride + 5 * kC;
}
HQ_HD int scan_floats(int dk, bool staged) {
  return pad4(dk) * kCols + 2 * kC * row_stride(dk) + 2 * kC * kCols +
         (staged ? 2 * kC * kTriStride + 4 * kC + 4 : 0);
}

HQ_HD float softplus(float x) { return x > 20.f ? x : log1pf(expf(x)); }
HQ_HD float sigmoid_of(float x) { return 1.f / (1.f + expf(-x)); }

HQ_HD void load4(const float* p, float* v) {
#ifdef __CUDA_ARCH__
  const float4 f = *reinterpret_cast<const float4*>(p);
  v[0] = f.x, v[1] = f.y, v[2] = f.z, v[3] = f.w;
#else
  std::memcpy(v, p, 16);
#endif
}

HQ_HD void store4(float* p, const float* v) {
#ifdef __CUDA_ARCH__
  *reinterpret_cast<float4*>(p) = make_float4(v[0], v[1], v[2], v[3]);
#else
  std::memcpy(p, v, 16);
#endif
}

// The entry of window w that holds prep slot `slot`.
HQ_HD int entry_of_slot(const Window& w, int slot) {
  int e = 0;
  while (e + 1 < w.n && w.e[e + 1].slot0 <= slot) ++e;
  return e;
}

// Prep of one chunk of one value head (see the top of the file). Block: kThreads threads.
template <class Block>
HQ_HD void prep_chunk(const Block& b, const Args& a, const Window& w, int slot, int j, float* sm) {
  const int tid = b.thread();
  const Entry& en = w.e[entry_of_slot(w, slot)];
  const int t0 = (en.chunk0 + slot - en.slot0) * kC;
  const int n = en.T - t0 < kC ? en.T - t0 : kC;
  const int64_t first = en.row + t0;
  const int dk = a.dk, dkp = pad4(dk), rs = row_stride(dk);
  const int64_t key_dim = int64_t{a.n_k_heads} * dk;
  const int64_t row = 2 * key_dim + int64_t{a.n_v_heads} * a.dv;
  const int64_t kh = j % a.n_k_heads;
  float* Q = sm;
  float* Tm = sm;  // after step 3
  float* K = Q + (kC * rs > kC * kTriStride ? kC * rs : kC * kTriStride);
  float* A = K + kC * rs;
  // The cumulative log-decay in double: with strong decays it reaches thousands, where a
  // float's rounding would show in exp(gam_r - gam_s) of nearby tokens.
  double* gam = reinterpret_cast<double*>(A + kC * kTriStride);
  float* beta = reinterpret_cast<float*>(gam + kC);
  float* qsc = beta + kC;
  float* ksc = qsc + kC;

  // 1. Raw q and k rows (zeros past n and dk), and each token's log-decay and beta.
  for (int idx = tid; idx < kC * dkp; idx += kThreads) {
    const int r = idx / dkp, d = idx % dkp;
    const bool in = r < n && d < dk;
    const int64_t at = (first + r) * row + kh * dk + d;
    Q[r * rs + d] = in ? a.qkv[at] : 0.f;
    K[r * rs + d] = in ? a.qkv[at + key_dim] : 0.f;
  }
  if (tid < kC) {
    float g = 0.f, be = 0.f;  // padded tokens leave the state as it is
    if (tid < n) {
      const int64_t i = (first + tid) * a.n_v_heads + j;
      g = a.a_neg[j] * softplus(a.alpha[i] + a.dt_bias[j]);
      be = sigmoid_of(a.beta_raw[i]);
    }
    gam[tid] = g;
    beta[tid] = be;
  }
  b.sync();
  // 2. Norm scales (a thread per q row and per k row), as the recurrent kernel takes them;
  // the cumulative log-decay (one thread: 64 additions in token order).
  if (tid < 2 * kC) {
    const float* x = tid < kC ? Q + tid * rs : K + (tid - kC) * rs;
    float ss = 0.f;
    for (int d = 0; d < dkp; ++d) ss = fmaf(x[d], x[d], ss);
    if (tid < kC)
      qsc[tid] = (1.f / sqrtf(static_cast<float>(dk))) / sqrtf(ss + 1e-6f);
    else
      ksc[tid - kC] = 1.f / sqrtf(ss + 1e-6f);
  } else if (tid == 2 * kC) {
    for (int r = 1; r < kC; ++r) gam[r] += gam[r - 1];
  }
  b.sync();
  for (int idx = tid; idx < kC * dkp; idx += kThreads) {
    const int r = idx / dkp, d = idx % dkp;
    Q[r * rs + d] *= qsc[r];
    K[r * rs + d] *= ksc[r];
  }
  b.sync();
  // 3. A and P: thread (r, s0) takes s = s0, s0 + 4, ..., both dot products sharing k_s.
  float* slot_out = a.scratch + (int64_t{slot} * a.n_v_heads + j) * kSlotFloats;
  {
    const int r = tid / 4, s0 = tid % 4;
    float kk[kC / 4], qk[kC / 4];
    HQ_UNROLL
    for (int m = 0; m < kC / 4; ++m) kk[m] = qk[m] = 0.f;
    if (r < n) {
      for (int d = 0; d < dkp; d += 4) {
        float kr[4], qr[4];
        load4(K + r * rs + d, kr);
        load4(Q + r * rs + d, qr);
        HQ_UNROLL
        for (int m = 0; m < kC / 4; ++m) {
          float ks[4];
          load4(K + (s0 + 4 * m) * rs + d, ks);
          HQ_UNROLL
          for (int e = 0; e < 4; ++e) {
            kk[m] = fmaf(kr[e], ks[e], kk[m]);
            qk[m] = fmaf(qr[e], ks[e], qk[m]);
          }
        }
      }
    }
    HQ_UNROLL
    for (int m = 0; m < kC / 4; ++m) {
      const int s = s0 + 4 * m;
      // The mask before the exponential: above the diagonal gam_r - gam_s may be positive.
      const float decay = s <= r ? expf(static_cast<float>(gam[r] - gam[s])) : 0.f;
      A[r * kTriStride + s] = s < r ? beta[r] * kk[m] * decay : 0.f;
      slot_out[kC * kC + r * kC + s] = qk[m] * decay;  // P (zero above the diagonal)
    }
  }
  b.sync();
  // 4. T = (I + A)^-1 by forward substitution, a thread per column: column c of T depends only
  // on its own earlier rows, so no barrier is needed inside. Rows past n are those of I.
  if (tid < kC) {
    const int c = tid;
    for (int r = 0; r < kC; ++r) {
      float t = r == c ? 1.f : 0.f;
      if (r > c && r < n) {
        float acc0 = 0.f, acc1 = 0.f;
        int s = c;
        for (; s + 1 < r; s += 2) {
          acc0 = fmaf(A[r * kTriStride + s], Tm[s * kTriStride + c], acc0);
          acc1 = fmaf(A[r * kTriStride + s + 1], Tm[(s + 1) * kTriStride + c], acc1);
        }
        if (s < r) acc0 = fmaf(A[r * kTriStride + s], Tm[s * kTriStride + c], acc0);
        t = -(acc0 + acc1);
      }
      Tm[r * kTriStride + c] = t;
    }
  }
  b.sync();
  // 5. Tb = T diag(beta) and the factors.
  for (int idx = tid; idx < kC * kC; idx += kThreads) {
    const int r = idx / kC, s = idx % kC;
    slot_out[idx] = s <= r ? Tm[r * kTriStride + s] * beta[s] : 0.f;
  }
  if (tid < kC) {
    const int r = tid;
    const double last = gam[n - 1];
    float* f = slot_out + 2 * kC * kC;
    f[r] = qsc[r];
    f[kC + r] = ksc[r];
    f[2 * kC + r] = r < n ? expf(static_cast<float>(gam[r])) : 0.f;
    f[3 * kC + r] = r < n ? expf(static_cast<float>(last - gam[r])) : 0.f;
    if (r == 0) f[4 * kC] = expf(static_cast<float>(last));
  }
}

// acc[i][c] += sum over s < s_end of M[i * ts + s] * V[s * kCols + c], for two rows i of a
// lower-triangular factor (zero above its diagonal, so both rows share the loop) and the four
// columns of V from its start.
HQ_HD void add_lower_product(const float* M, int ts, const float* V, int s_end,
                             float (&acc)[2][4]) {
  for (int s = 0; s < s_end; ++s) {
    float v[4];
    load4(V + s * kCols, v);
    const float m0 = M[s], m1 = M[ts + s];
    HQ_UNROLL
    for (int c = 0; c < 4; ++c) {
      acc[0][c] = fmaf(m0, v[c], acc[0][c]);
      acc[1][c] = fmaf(m1, v[c], acc[1][c]);
    }
  }
}

// The scan of entry e's chunks for value columns [32 cb, 32 cb + 32) of value head j.
template <bool kStaged, class Block>
HQ_HD void scan_columns(const Block& b, const Args& a, const Window& w, int cb, int j, int e,
                        float* sm) {
  const int tid = b.thread();
  const Entry& en = w.e[e];
  const int dk = a.dk, dkp = pad4(dk), rs = row_stride(dk), dv = a.dv;
  const int c0 = cb * kCols;
  const int64_t key_dim = int64_t{a.n_k_heads} * dk;
  const int64_t row = 2 * key_dim + int64_t{a.n_v_heads} * dv;
  const int64_t kh = j % a.n_k_heads;
  float* S = sm;  // [dkp][kCols]: the block's columns of the state, transposed
  float* Kn = S + dkp * kCols;
  float* Qn = Kn + kC * rs;
  float* Z = Qn + kC * rs;  // V, then V - exp(gam) .* X
  float* Vn = Z + kC * kCols;
  // Staged: Tb, P (rows kTriStride apart) and the factors in shared memory; else the slot's.
  float* staged = Vn + kC * kCols;
  constexpr int ts = kStaged ? kTriStride : kC;

  const int64_t state_at = (int64_t{j} * dv + c0) * dk;
  for (int idx = tid; idx < kCols * dkp; idx += kThreads) {
    const int c = idx / dkp, d = idx % dkp;
    S[d * kCols + c] = c0 + c < dv && d < dk
                           ? state_get(en.state, state_at + int64_t{c} * dk + d, a.state_type)
                           : 0.f;
  }
  // Thread roles: rows 2 rg and 2 rg + 1 of a chunk's outputs, state rows 4 rg .. 4 rg + 3,
  // and columns 4 cg .. 4 cg + 3 in both.
  const int rg = tid / 8, cg = tid % 8;
  const int r0 = 2 * rg, col = 4 * cg;
  for (int ci = 0; ci < en.chunks; ++ci) {
    const int t0 = (en.chunk0 + ci) * kC;
    const int n = en.T - t0 < kC ? en.T - t0 : kC;
    const int64_t first = en.row + t0;
    const float* slot = a.scratch + (int64_t{en.slot0 + ci} * a.n_v_heads + j) * kSlotFloats;
    const float* Tb = kStaged ? staged : slot;
    const float* P = kStaged ? staged + kC * kTriStride : slot + kC * kC;
    const float* fac = kStaged ? staged + 2 * kC * kTriStride : slot + 2 * kC * kC;
    if (kStaged) {
      float* to = staged;
      for (int idx = tid; idx < 4 * kC + 4; idx += kThreads)
        to[2 * kC * kTriStride + idx] = slot[2 * kC * kC + idx];
      for (int idx = tid; idx < kC * kC / 4; idx += kThreads) {
        const int r = idx / (kC / 4), s = 4 * (idx % (kC / 4));
        float v[4];
        load4(slot + r * kC + s, v);
        store4(to + r * kTriStride + s, v);
        load4(slot + kC * kC + r * kC + s, v);
        store4(to + kC * kTriStride + r * kTriStride + s, v);
      }
    }
    for (int idx = tid; idx < kC * kCols; idx += kThreads) {
      const int r = idx / kCols, c = idx % kCols;
      Z[idx] = r < n && c0 + c < dv
                   ? a.qkv[(first + r) * row + 2 * key_dim + int64_t{j} * dv + c0 + c]
                   : 0.f;
    }
    if (kStaged) b.sync();  // the factors, before the rows are scaled with them
    for (int idx = tid; idx < kC * dkp; idx += kThreads) {
      const int r = idx / dkp, d = idx % dkp;
      const bool in = r < n && d < dk;
      const int64_t at = (first + r) * row + kh * dk + d;
      Qn[r * rs + d] = in ? a.qkv[at] * fac[r] : 0.f;
      Kn[r * rs + d] = in ? a.qkv[at + key_dim] * fac[kC + r] : 0.f;
    }
    b.sync();
    // a. X = K S and Y = Q S for this thread's 2 rows x 4 columns; Z = V - exp(gam) .* X.
    float y[2][4];
    {
      float x[2][4];
      HQ_UNROLL
      for (int i = 0; i < 2; ++i) HQ_UNROLL
      for (int c = 0; c < 4; ++c) x[i][c] = y[i][c] = 0.f;
      if (r0 < n) {
        for (int d = 0; d < dkp; d += 4) {
          float k[2][4], q[2][4];
          HQ_UNROLL
          for (int i = 0; i < 2; ++i) {
            load4(Kn + (r0 + i) * rs + d, k[i]);
            load4(Qn + (r0 + i) * rs + d, q[i]);
          }
          HQ_UNROLL
          for (int e4 = 0; e4 < 4; ++e4) {
            float s[4];
            load4(S + (d + e4) * kCols + col, s);
            HQ_UNROLL
            for (int i = 0; i < 2; ++i) HQ_UNROLL
            for (int c = 0; c < 4; ++c) {
              x[i][c] = fmaf(k[i][e4], s[c], x[i][c]);
              y[i][c] = fmaf(q[i][e4], s[c], y[i][c]);
            }
          }
        }
      }
      HQ_UNROLL
      for (int i = 0; i < 2; ++i) {
        float z[4];
        load4(Z + (r0 + i) * kCols + col, z);
        HQ_UNROLL
        for (int c = 0; c < 4; ++c) z[c] = fmaf(-fac[2 * kC + r0 + i], x[i][c], z[c]);
        store4(Z + (r0 + i) * kCols + col, z);
      }
    }
    b.sync();
    // b. Vn = Tb Z (Tb is zero above its diagonal, so both rows share the loop).
    const int s_end = r0 + 2 < n ? r0 + 2 : n;
    {
      float vn[2][4];
      HQ_UNROLL
      for (int i = 0; i < 2; ++i) HQ_UNROLL
      for (int c = 0; c < 4; ++c) vn[i][c] = 0.f;
      add_lower_product(Tb + r0 * ts, ts, Z + col, s_end, vn);
      HQ_UNROLL
      for (int i = 0; i < 2; ++i) store4(Vn + (r0 + i) * kCols + col, vn[i]);
    }
    b.sync();
    // c. O = exp(gam) .* Y + P Vn.
    {
      float o[2][4];
      HQ_UNROLL
      for (int i = 0; i < 2; ++i) HQ_UNROLL
      for (int c = 0; c < 4; ++c) o[i][c] = fac[2 * kC + r0 + i] * y[i][c];
      add_lower_product(P + r0 * ts, ts, Vn + col, s_end, o);
      HQ_UNROLL
      for (int i = 0; i < 2; ++i) {
        if (r0 + i >= n) continue;
        const int64_t at = (first + r0 + i) * a.n_v_heads * dv + int64_t{j} * dv + c0 + col;
        HQ_UNROLL
        for (int c = 0; c < 4; ++c)
          if (c0 + col + c < dv) a.out[at + c] = o[i][c];
      }
    }
    // d. S = exp(gam_last) S + (exp(gam_last - gam) .* K)^T Vn, this thread's 4 x 4 entries.
    // Every read of S (step a) is behind the barrier after it.
    const int d0 = 4 * rg;
    if (d0 < dkp) {
      const float egl = fac[4 * kC];
      float acc[4][4];
      HQ_UNROLL
      for (int i = 0; i < 4; ++i) {
        load4(S + (d0 + i) * kCols + col, acc[i]);
        HQ_UNROLL
        for (int c = 0; c < 4; ++c) acc[i][c] *= egl;
      }
      for (int r = 0; r < n; ++r) {
        float k[4], v[4];
        load4(Kn + r * rs + d0, k);
        load4(Vn + r * kCols + col, v);
        const float f = fac[3 * kC + r];
        HQ_UNROLL
        for (int c = 0; c < 4; ++c) v[c] *= f;
        HQ_UNROLL
        for (int i = 0; i < 4; ++i) HQ_UNROLL
        for (int c = 0; c < 4; ++c) acc[i][c] = fmaf(k[i], v[c], acc[i][c]);
      }
      HQ_UNROLL
      for (int i = 0; i < 4; ++i) store4(S + (d0 + i) * kCols + col, acc[i]);
    }
    b.sync();  // the next chunk's loads overwrite Kn, Vn and the factors
  }
  for (int idx = tid; idx < kCols * dkp; idx += kThreads) {
    const int c = idx / dkp, d = idx % dkp;
    if (c0 + c < dv && d < dk)
      state_set(en.state, state_at + int64_t{c} * dk + d, a.state_type, S[d * kCols + c]);
  }
}

// Cuts sequences (T[i] tokens from row[i], state[i]) into windows of at most `capacity` chunk
// slots and kMaxEntries entries, in order, and calls fn(const Window&) for each; a sequence
// longer than a window continues in the next one (its state carried through memory).
// Returns false, calling nothing, when capacity < 1.
template <class Fn>
inline bool for_each_window(const int32_t* T, const int64_t* row, float* const* state, int n,
                            int capacity, Fn&& fn) {
  if (capacity < 1) return false;
  Window w;
  for (int i = 0; i < n; ++i) {
    const int chunks = (T[i] + kC - 1) / kC;
    for (int c = 0; c < chunks;) {
      const int take = chunks - c < capacity - w.slots ? chunks - c : capacity - w.slots;
      w.e[w.n] = Entry{c, take, w.slots, T[i], row[i], state[i]};
      ++w.n;
      w.slots += take;
      c += take;
      if (w.slots == capacity || w.n == kMaxEntries) {
        fn(static_cast<const Window&>(w));
        w.n = w.slots = 0;
      }
    }
  }
  if (w.n > 0) fn(static_cast<const Window&>(w));
  return true;
}

}  // namespace hostlm::cuda::chunked
