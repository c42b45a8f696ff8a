// Causal depthwise conv1d + SiLU with a rolling state of the last K-1 inputs.
// x, out: [T, channels]; conv_state: [K-1, channels], oldest first; weight: [channels, K].
// Two launches in stream order: every output reads the old state, then the state moves on
// (one launch doing both when every sequence has a single row: decode). Every sequence of a
// batch (kernels.h: RecurrentSeqs) in the same launches.
#include "common.cuh"
#include "conv_step.cuh"
#include "kernels.h"
#include "launch.cuh"

namespace hostlm::cuda {
namespace {

constexpr int kThreads = 256;

// The sequence that row t of the group belongs to (the group's rows are its sequences' in
// order), and the row's index in it. Each lane sums two sequences' T and the warp scans those
// sums, so there is no chain of dependent loads: walking the table one sequence at a time was
// most of the kernel's time when 64 decoding sequences came before a prompt chunk (about 60
// dependent loads a block).
__device__ __forceinline__ void locate_row(const RecurrentSeqs& seqs, int64_t t, int& s,
                                           int64_t& local) {
  static_assert(kRecurrentSeqsPerLaunch <= 64, "two sequences a lane");
  const int lane = threadIdx.x % 32;
  const int64_t a = 2 * lane < seqs.n ? seqs.T[2 * lane] : 0;
  const int64_t b = 2 * lane + 1 < seqs.n ? seqs.T[2 * lane + 1] : 0;
  int64_t end = a + b;  // after the scan: the rows up to and including this lane's pair
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    const int64_t before = __shfl_up_sync(0xffffffffu, end, o);
    if (lane >= o) end += before;
  }
  const unsigned past = __ballot_sync(0xffffffffu, end > t);
  const int owner = __ffs(static_cast<int>(past)) - 1;  // the row exists, so some lane holds it
  const int64_t start = __shfl_sync(0xffffffffu, end - a - b, owner);
  const int64_t first_T = __shfl_sync(0xffffffffu, a, owner);
  local = t - start;
  s = 2 * owner;
  if (local >= first_T) {
    local -= first_T;
    ++s;
  }
}

// Rows per block of the prefill kernel. Each input is then read from memory once instead of K
// times, and the sequence lookup and the taps are paid once per kRowsPerBlock rows. With one
// row a block (65,536 blocks for a 2,048-row step of the 9B's 8,192 channels) a call took
// 185 us on the H200, now 145-161 us: still about 4x what its bytes need (~40 us). Nsight
// Compute finds it bound by instructions (SM 60%, DRAM 16%, 96 registers): with K known only
// at run time every window and tap loop runs to kConvMaxKernel with a guard per entry.
constexpr int kRowsPerBlock = 16;

// The K-1 inputs before row `local` of sequence s, oldest first: from the state where the row
// is near the sequence's start (state rows hold -hist..-1), from x after that. kMaxK bounds the
// window at compile time (K itself when it is fixed).
template <int kMaxK>
__device__ __forceinline__ void load_window(const RecurrentSeqs& seqs, int s, int64_t local,
                                            const float* x, int64_t channels, int64_t hist,
                                            int64_t c, float (&window)[kMaxK - 1]) {
  const int64_t base = seqs.row[s] * channels;
#pragma unroll
  for (int64_t i = 0; i < kMaxK - 1; ++i)
    if (i < hist) {
      const int64_t src = local - hist + i;
      window[i] =
          src < 0 ? seqs.conv_state[s][(hist + src) * channels + c] : x[base + src * channels + c];
    }
}

// Grid: (blocks of kRowsPerBlock of the group's rows, blocks over channels). Rows, not (max_T,
// sequence): a step that mixes one long prompt chunk with many single-token decodes would
// otherwise launch max_T rows' worth of blocks for every sequence, nearly all of them empty.
// A thread first finds each of its rows' sequence and loads all its inputs (independent loads,
// in flight together), then convolves them with a window it shifts along, reloading it where a
// new sequence starts. The sum is taken tap by tap from the oldest, as the CPU does.
//
// kFixedK: the kernel size as a compile-time constant (Qwen3.5's 4), so every window and tap
// loop is exactly as long as it needs to be, unguarded; 0: K at run time, loops bounded by
// kConvMaxKernel with a guard per entry (what Nsight Compute found the kernel bound by). Both
// sum the same products in the same order.
template <int kFixedK>
__global__ void conv1d_silu_kernel(const RecurrentSeqs seqs, int64_t rows, const float* x,
                                   int64_t channels, int64_t K_runtime, const float* weight,
                                   float* out) {
  constexpr int kMaxK = kFixedK > 0 ? kFixedK : static_cast<int>(kConvMaxKernel);
  const int64_t K = kFixedK > 0 ? kFixedK : K_runtime;
  pdl_begin();
  const int64_t first = int64_t{blockIdx.x} * kRowsPerBlock;
  int s = 0;
  int64_t local = 0;
  locate_row(seqs, first, s, local);  // whole warps: before any thread leaves
  const int64_t c = blockIdx.y * int64_t{blockDim.x} + threadIdx.x;
  if (c >= channels) return;
  const int64_t hist = K - 1;
  const int n = static_cast<int>(rows - first < kRowsPerBlock ? rows - first : kRowsPerBlock);
  int seq[kRowsPerBlock];
  int64_t at[kRowsPerBlock];  // the row's index in its sequence
  float in[kRowsPerBlock];
#pragma unroll
  for (int j = 0; j < kRowsPerBlock; ++j) {
    if (j < n) {
      while (local >= seqs.T[s]) local -= seqs.T[s++];  // skips sequences of no rows too
      seq[j] = s;
      at[j] = local;
      in[j] = x[(seqs.row[s] + local) * channels + c];
      ++local;
    }
  }
  float tap[kMaxK];
#pragma unroll
  for (int r = 0; r < kMaxK; ++r)
    if (r < K) tap[r] = weight[c * K + r];
  float window[kMaxK - 1];
#pragma unroll
  for (int j = 0; j < kRowsPerBlock; ++j) {
    if (j < n) {
      if (j == 0 || seq[j] != seq[j - 1]) {
        load_window<kMaxK>(seqs, seq[j], at[j], x, channels, hist, c, window);
      } else {
#pragma unroll
        for (int i = 0; i < kMaxK - 1; ++i)
          if (i < hist) window[i] = i + 1 < hist ? window[i + 1] : in[j - 1];
      }
      float sum = 0.f;
#pragma unroll
      for (int r = 0; r < kMaxK; ++r)
        if (r < K) sum += tap[r] * (r < hist ? window[r] : in[j]);
      out[(seqs.row[seq[j]] + at[j]) * channels + c] = silu(sum);
    }
  }
}

// One thread per (channel, sequence) reads its whole new window before writing, so the shift
// in place is race-free.
__global__ void conv_state_kernel(const RecurrentSeqs seqs, const float* x, int64_t channels,
                                  int64_t hist) {
  pdl_begin();
  const int s = blockIdx.y;
  const int64_t c = blockIdx.x * int64_t{blockDim.x} + threadIdx.x;
  if (c >= channels) return;
  const int64_t T = seqs.T[s];
  const float* xs = x + seqs.row[s] * channels;
  float* conv_state = seqs.conv_state[s];
  float window[kConvMaxKernel - 1];
#pragma unroll
  for (int64_t i = 0; i < kConvMaxKernel - 1; ++i) {
    if (i < hist) {
      const int64_t src = T - hist + i;
      window[i] = src < 0 ? conv_state[(hist + src) * channels + c] : xs[src * channels + c];
    }
  }
#pragma unroll
  for (int64_t i = 0; i < kConvMaxKernel - 1; ++i)
    if (i < hist) conv_state[i * channels + c] = window[i];
}

// Decode (one row per sequence): both of the above in one launch. Each thread owns one
// (channel, sequence), so it reads the old window, writes the output with the same sum in the
// same order as conv1d_silu_kernel, then shifts the window, with no other thread involved.
__global__ void conv1d_silu_step_kernel(const RecurrentSeqs seqs, const float* x, int64_t channels,
                                        int64_t K, const float* weight, float* out) {
  pdl_begin();
  const int s = blockIdx.y;
  const int64_t c = blockIdx.x * int64_t{blockDim.x} + threadIdx.x;
  if (c >= channels || seqs.T[s] == 0) return;
  const int64_t row = seqs.row[s] * channels + c;
  float* conv_state = seqs.conv_state[s];
  ConvChannel<kConvMaxKernel> channel;
  channel.load(weight, conv_state, channels, static_cast<int>(K), c);
  out[row] = channel.step(conv_state, channels, static_cast<int>(K), c, x[row]);
}

}  // namespace

cudaError_t conv1d_silu(const RecurrentSeqs& seqs, int64_t max_T, const float* x, int64_t channels,
                        int64_t K, const float* weight, float* out, cudaStream_t stream) {
  if (K < 1 || K > kConvMaxKernel || seqs.n > kRecurrentSeqsPerLaunch) return cudaErrorInvalidValue;
  if (seqs.n == 0 || max_T == 0 || channels == 0) return cudaSuccess;
  int64_t rows = 0;
  for (int i = 0; i < seqs.n; ++i) rows += seqs.T[i];
  if (rows == 0) return cudaSuccess;
  if (max_T == 1) {
    const dim3 step_grid(blocks_for(channels, kThreads), static_cast<unsigned>(seqs.n));
    launch_kernel(conv1d_silu_step_kernel, step_grid, kThreads, 0, stream, seqs, x, channels, K,
                  weight, out);
    return cudaGetLastError();
  }
  const dim3 grid(blocks_for(rows, kRowsPerBlock), blocks_for(channels, kThreads));
  if (K == 4)
    launch_kernel(conv1d_silu_kernel<4>, grid, kThreads, 0, stream, seqs, rows, x, channels, K,
                  weight, out);
  else
    launch_kernel(conv1d_silu_kernel<0>, grid, kThreads, 0, stream, seqs, rows, x, channels, K,
                  weight, out);
  if (K > 1) {
    const dim3 state_grid(blocks_for(channels, kThreads), static_cast<unsigned>(seqs.n));
    launch_kernel(conv_state_kernel, state_grid, kThreads, 0, stream, seqs, x, channels, K - 1);
  }
  return cudaGetLastError();
}

}  // namespace hostlm::cuda
