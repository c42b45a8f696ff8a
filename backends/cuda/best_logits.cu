// The k best logits of each row on the GPU (Backend::best_logits_rows), so a step sends the
// host k (value, id) pairs a row instead of the whole vocabulary: at 64 streams of a 248K
// vocabulary, 64 MB a step and its host-side scans.
//
// Each logit gets one 64-bit key in the sampler's order (best_logits.h): its float mapped to
// an unsigned integer that orders like the float (-0 as +0, NaN below -inf), then the id
// reversed below it, so higher keys are better and no two keys are equal. The k-th best key
// is then found digit by digit from the top, 11 bits a pass (radix select): a pass counts the
// digits of the keys that still match the chosen prefix, and the last block of a row to
// finish picks the digit holding the k-th. Once the keys at or above the chosen prefix are
// few enough to sort in one block (kCandidates), the next pass gathers them instead, and its
// last block sorts them and writes the first k. Logits spread over many values finish after
// one counting pass; equal logits need every digit, ids included.
//
// Launches are a fixed chain of passes (one more than a row's digits), so the host queues the
// chain without reading anything back; a row that is finished skips the passes left.
#include <algorithm>
#include <cstdint>

#include "cuda/arrive.cuh"
#include "cuda/common.cuh"
#include "cuda/kernels.h"
#include "cuda/launch.cuh"

namespace hostlm::cuda {
namespace {

constexpr int kDigitBits = 11;
constexpr int kBins = 1 << kDigitBits;
constexpr int kThreads = 256;
constexpr int kPerThread = 16;
constexpr int kChunk = kThreads * kPerThread;  // logits per block and pass
constexpr unsigned kNoDigit = ~0u;
constexpr int kCandidates = 2048;  // sorted in one block's shared memory

static_assert(kBestLogitsMax <= kCandidates);

enum Phase : int { kCounting = 0, kGathering = 1, kDone = 2 };

struct RowState {
  unsigned long long prefix;  // the k-th key's top `consumed` bits
  int consumed;
  int above;  // keys known to be above the prefix, all among the k best
  int phase;
  unsigned arrived;  // blocks of the row that finished this pass
  unsigned gathered;
  unsigned pad;
  unsigned hist[kBins];
};

struct Params {
  const float* src;
  int64_t n;
  int k;
  int id_bits;   // ids take the low id_bits bits of a key
  int key_bits;  // 32 + id_bits
  unsigned blocks_per_row;
  RowState* state;
  unsigned long long* candidates;  // [rows][kCandidates]
  float* values;                   // [rows][k]
  int32_t* ids;                    // [rows][k]
};

__device__ __forceinline__ unsigned long long key_of(float x, int64_t id, const Params& p) {
  uint32_t bits = __float_as_uint(x);
  uint32_t ordered;
  if (x != x)
    ordered = 0;  // NaN after every number
  else if (x == 0.f)
    ordered = 0x80000000u;  // -0 ranks as +0
  else
    ordered = (bits & 0x80000000u) ? ~bits : bits | 0x80000000u;
  const unsigned long long max_id = (1ull << p.id_bits) - 1;
  return (static_cast<unsigned long long>(ordered) << p.id_bits) |
         (max_id - static_cast<unsigned long long>(id));
}

// A block's logits, all loads issued before any is used.
__device__ __forceinline__ void load_chunk(const float* x, int64_t begin, int64_t end,
                                           float (&v)[kPerThread]) {
#pragma unroll
  for (int j = 0; j < kPerThread; ++j) {
    const int64_t i = begin + j * kThreads + threadIdx.x;
    v[j] = i < end ? __ldcg(&x[i]) : 0.f;
  }
}

__device__ __forceinline__ int64_t id_of(unsigned long long key, const Params& p) {
  const unsigned long long max_id = (1ull << p.id_bits) - 1;
  return static_cast<int64_t>(max_id - (key & max_id));
}

// Whether this block is the last of its row to finish the pass; the row's global writes of
// every other block are then visible to it (release/acquire on the counter, not a full fence).
__device__ __forceinline__ bool last_to_arrive(RowState& st, unsigned blocks) {
  __shared__ bool last;
  __syncthreads();
  if (threadIdx.x == 0) last = arrive(&st.arrived) == blocks - 1;
  __syncthreads();
  return last;
}

// The digit holding the remaining k - above best keys of this pass's counts; then either
// the next digit's pass, or, when all keys from that digit up fit in kCandidates, gathering.
__device__ void pick_digit(RowState& st, const Params& p, int width) {
  __shared__ unsigned sums[kThreads];
  __shared__ int chosen, greater, at_chosen;
  constexpr int kBinsPerThread = kBins / kThreads;
  const int t = threadIdx.x;
  // Thread 0 holds the highest bins: counts are summed from the best digit down.
  const int top = kBins - 1 - t * kBinsPerThread;
  unsigned h[kBinsPerThread], own = 0;
#pragma unroll
  for (int j = 0; j < kBinsPerThread; ++j) {
    h[j] = __ldcg(&st.hist[top - j]);
    own += h[j];
  }
  sums[t] = own;
  __syncthreads();
  for (int o = 1; o < kThreads; o <<= 1) {  // inclusive scan
    const unsigned v = t >= o ? sums[t - o] : 0;
    __syncthreads();
    sums[t] += v;
    __syncthreads();
  }
  const unsigned wanted = static_cast<unsigned>(p.k - st.above);
  unsigned before = sums[t] - own;
  if (before < wanted && wanted <= sums[t]) {
    for (int j = 0; j < kBinsPerThread; ++j) {
      if (before + h[j] >= wanted) {
        chosen = top - j;
        greater = static_cast<int>(before);
        at_chosen = static_cast<int>(h[j]);
        break;
      }
      before += h[j];
    }
  }
  __syncthreads();
  for (int j = t; j < kBins; j += kThreads) st.hist[j] = 0;
  if (t == 0) {
    st.prefix = (st.prefix << width) | static_cast<unsigned>(chosen);
    st.consumed += width;
    if (st.above + greater + at_chosen <= kCandidates)
      st.phase = kGathering;
    else
      st.above += greater;
    st.arrived = 0;
  }
}

// Sorts the gathered keys (descending: the best first) and writes the first k.
__device__ void sort_and_write(RowState& st, const Params& p, int64_t row) {
  __shared__ unsigned long long keys[kCandidates];
  const unsigned count = min(__ldcg(&st.gathered), static_cast<unsigned>(kCandidates));
  unsigned size = 1;
  while (size < count) size <<= 1;
  const unsigned long long* cand = p.candidates + row * kCandidates;
  for (unsigned i = threadIdx.x; i < size; i += kThreads)
    keys[i] = i < count ? __ldcg(&cand[i]) : 0;
  __syncthreads();
  for (unsigned span = 2; span <= size; span <<= 1) {
    for (unsigned stride = span / 2; stride > 0; stride >>= 1) {
      for (unsigned i = threadIdx.x; i < size; i += kThreads) {
        const unsigned partner = i ^ stride;
        if (partner > i) {
          const bool descending = (i & span) == 0;
          const unsigned long long a = keys[i], b = keys[partner];
          if (descending ? a < b : a > b) {
            keys[i] = b;
            keys[partner] = a;
          }
        }
      }
      __syncthreads();
    }
  }
  const float* x = p.src + row * p.n;
  for (int i = threadIdx.x; i < p.k; i += kThreads) {
    // Fewer than k gathered cannot happen (the k-th key's digit was counted in); were it to,
    // an id of -1 says so instead of a read past the row.
    const int64_t id = static_cast<unsigned>(i) < count ? id_of(keys[i], p) : -1;
    p.values[row * p.k + i] = id >= 0 && id < p.n ? x[id] : __int_as_float(0x7fc00000);
    p.ids[row * p.k + i] = static_cast<int32_t>(id);
  }
  if (threadIdx.x == 0) st.phase = kDone;
}

__global__ void __launch_bounds__(kThreads) best_logits_pass(Params p) {
  __shared__ unsigned hist[kBins];
  pdl_begin();
  const int64_t row = blockIdx.y;
  RowState& st = p.state[row];
  const int phase = st.phase;
  if (phase == kDone) return;
  const int consumed = st.consumed;
  const unsigned long long prefix = st.prefix;
  const int64_t begin = int64_t{blockIdx.x} * kChunk;
  const int64_t end = min(begin + kChunk, p.n);
  const float* x = p.src + row * p.n;
  const int rest = p.key_bits - consumed;  // bits below the prefix

  if (phase == kGathering) {
    unsigned long long* cand = p.candidates + row * kCandidates;
    float v[kPerThread];
    load_chunk(x, begin, end, v);
#pragma unroll
    for (int j = 0; j < kPerThread; ++j) {
      const int64_t i = begin + j * kThreads + threadIdx.x;
      if (i >= end) continue;
      const unsigned long long key = key_of(v[j], i, p);
      if ((key >> rest) >= prefix) {
        const unsigned at = atomicAdd(&st.gathered, 1u);
        if (at < kCandidates) cand[at] = key;
      }
    }
    if (last_to_arrive(st, p.blocks_per_row)) sort_and_write(st, p, row);
    return;
  }

  for (int j = threadIdx.x; j < kBins; j += kThreads) hist[j] = 0;
  __syncthreads();
  const int width = min(kDigitBits, rest);
  const int shift = rest - width;
  const unsigned mask = (1u << width) - 1;
  float v[kPerThread];
  load_chunk(x, begin, end, v);
  const int lane = threadIdx.x % 32;
#pragma unroll
  for (int j = 0; j < kPerThread; ++j) {
    const int64_t i = begin + j * kThreads + threadIdx.x;
    unsigned digit = kNoDigit;
    if (i < end) {
      const unsigned long long key = key_of(v[j], i, p);
      // The first pass has no prefix (and a shift by 64 bits would be undefined).
      if (consumed == 0 || (key >> rest) == prefix)
        digit = static_cast<unsigned>(key >> shift) & mask;
    }
    // Logits crowd into few digits: one shared-memory atomic per digit a warp holds.
    const unsigned same = __match_any_sync(0xffffffffu, digit);
    if (digit != kNoDigit && lane == __ffs(same) - 1) atomicAdd(&hist[digit], __popc(same));
  }
  __syncthreads();
  for (int j = threadIdx.x; j < kBins; j += kThreads)
    if (hist[j] != 0) atomicAdd(&st.hist[j], hist[j]);
  if (last_to_arrive(st, p.blocks_per_row)) pick_digit(st, p, width);
}

int bit_width(uint64_t v) {
  int b = 0;
  while (v != 0) {
    ++b;
    v >>= 1;
  }
  return b;
}

}  // namespace

size_t best_logits_scratch_bytes(int64_t rows) {
  return static_cast<size_t>(rows) * (sizeof(RowState) + kCandidates * sizeof(unsigned long long));
}

cudaError_t best_logits(const float* src, int64_t rows, int64_t n, int k, void* scratch,
                        float* values, int32_t* ids, cudaStream_t stream) {
  if (rows <= 0 || n <= 0 || k <= 0) return cudaSuccess;
  if (k > kBestLogitsMax || k > n || n > (int64_t{1} << 32) || rows > kBestLogitsMaxRows)
    return cudaErrorInvalidValue;
  Params p{};
  p.src = src;
  p.n = n;
  p.k = k;
  p.id_bits = std::max(1, bit_width(static_cast<uint64_t>(n - 1)));
  p.key_bits = 32 + p.id_bits;
  p.blocks_per_row = static_cast<unsigned>((n + kChunk - 1) / kChunk);
  p.state = static_cast<RowState*>(scratch);
  p.candidates = reinterpret_cast<unsigned long long*>(
      static_cast<char*>(scratch) + static_cast<size_t>(rows) * sizeof(RowState));
  p.values = values;
  p.ids = ids;
  if (const cudaError_t e =
          cudaMemsetAsync(p.state, 0, static_cast<size_t>(rows) * sizeof(RowState), stream);
      e != cudaSuccess)
    return e;
  // Counting passes until one row's digits are all consumed, then the gathering one; a row
  // that needs fewer skips the rest.
  const int passes = (p.key_bits + kDigitBits - 1) / kDigitBits + 1;
  const dim3 grid(p.blocks_per_row, static_cast<unsigned>(rows));
  for (int i = 0; i < passes; ++i) launch_kernel(best_logits_pass, grid, kThreads, 0, stream, p);
  return cudaGetLastError();
}

}  // namespace hostlm::cuda
