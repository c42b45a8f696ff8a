// Paged KV: storing new keys/values into a sequence's pages and causal attention read through
// its page table (the CPU backend's backends/cpu/paged_kv.cpp is the reference).
//
// Layout (hostlm/ops.h): page p of a layer holds kKvPageTokens (32) token rows of
// n_head_kv * head_dim values at base + p * page_bytes; a row is F32, F16 or Q8_0 (blocks of
// 34 bytes: f16 scale, 32 int8). A batch mixes sequences: rows [row, row + T) of the batch
// belong to descs[s], whose page-table entries start at pages + descs[s].page_offset and whose
// storage is at base + descs[s].k_offset / v_offset (0 when all share one pool).
//
// Attention (head_dim 32, 64, 128 or 256; 1, 2, 3, 4, 6 or 8 query heads per KV head): one
// block per (query row, KV head, split of the keys), its warps taking runs of consecutive
// keys; one load of a key or value row serves every query head of the group (details above
// the kernel). The warps merge in shared memory, and when the keys were split (few rows,
// long context: flash-decoding) a second kernel merges the splits. Other shapes use a plain
// kernel: one block per (row, head), keys page by page. Sequences with many new rows on F16
// pages go to the tensor-core kernel of flash_prefill.cu instead; these kernels skip them.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "common.cuh"
#include "kernels.h"
#include "kv_rows.cuh"
#include "launch.cuh"
#include "tensor_core.cuh"

namespace hostlm::cuda {
namespace {

constexpr int kThreads = 128;
constexpr int kWarps = kThreads / 32;
constexpr int kPage = static_cast<int>(kPageTokens);
constexpr int kDimsPerThread = kAttentionMaxHeadDim / kThreads;
constexpr int kQ8BlockBytes = 34;

// Value d of a row segment that starts at a block boundary, as float32.
struct LoadF32 {
  static __device__ __forceinline__ float at(const char* seg, int64_t d) {
    return reinterpret_cast<const float*>(seg)[d];
  }
};
struct LoadF16 {
  static __device__ __forceinline__ float at(const char* seg, int64_t d) {
    return __half2float(reinterpret_cast<const __half*>(seg)[d]);
  }
};
struct LoadQ8 {
  static __device__ __forceinline__ float at(const char* seg, int64_t d) {
    const char* blk = seg + (d / 32) * kQ8BlockBytes;
    const float scale = __half2float(*reinterpret_cast<const __half*>(blk));
    return scale * static_cast<float>(static_cast<signed char>(blk[2 + d % 32]));
  }
};

// Whether sequence s of the batch is flash_prefill's (PagedBatch::flash_rows).
__device__ __forceinline__ bool left_to_flash(const PagedBatch& b, int32_t s) {
  return b.flash_rows > 0 && b.descs[s].T >= b.flash_rows;
}

__device__ __forceinline__ int64_t segment_offset(DType type, int64_t first) {
  return type == DType::F32   ? first * 4
         : type == DType::F16 ? first * 2
                              : (first / 32) * kQ8BlockBytes;
}

template <typename Load>
__global__ void __launch_bounds__(kThreads)
    paged_attention_kernel(PagedBatch b, const float* q, size_t q_stride, int64_t n_head,
                           float scale, float* out) {
  pdl_begin();
  __shared__ float qs[kAttentionMaxHeadDim];
  __shared__ float scores[kPage];
  const int64_t r = blockIdx.x, h = blockIdx.y;
  const int32_t s = b.row_to_seq[r];
  if (s < 0 || left_to_flash(b, s)) return;
  const PagedSeqDesc desc = b.descs[s];
  const int64_t t = r - desc.row;
  const int64_t hd = b.head_dim;
  const int64_t kvh = h / (n_head / b.n_head_kv);
  const int64_t head_offset = segment_offset(b.type, kvh * hd);
  const char* k_base = b.k + desc.k_offset + head_offset;
  const char* v_base = b.v + desc.v_offset + head_offset;
  const int32_t* table = b.pages + desc.page_offset;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  for (int64_t d = threadIdx.x; d < hd; d += kThreads) qs[d] = q[r * q_stride + h * hd + d];
  __syncthreads();

  const int64_t visible = desc.n_past + t + 1;
  float running_max = -INFINITY, denom = 0.f;
  float acc[kDimsPerThread] = {};
  for (int64_t j0 = 0; j0 < visible; j0 += kPage) {
    const int n = static_cast<int>(min(int64_t{kPage}, visible - j0));
    const size_t page_at = b.page_bytes * static_cast<size_t>(table[j0 / kPage]);
    for (int jj = warp; jj < n; jj += kWarps) {
      const char* kr = k_base + page_at + b.row_bytes * jj;
      float dot = 0.f;
      for (int64_t d = lane; d < hd; d += 32) dot += qs[d] * Load::at(kr, d);
      dot = warp_sum(dot);
      if (lane == 0) scores[jj] = dot * scale;
    }
    __syncthreads();
    float page_max = -INFINITY;
    for (int jj = 0; jj < n; ++jj) page_max = fmaxf(page_max, scores[jj]);
    const float new_max = fmaxf(running_max, page_max);
    const float correction = expf(running_max - new_max);  // 0 on the first page
    denom *= correction;
#pragma unroll
    for (int i = 0; i < kDimsPerThread; ++i) acc[i] *= correction;
    for (int jj = 0; jj < n; ++jj) {
      const float p = expf(scores[jj] - new_max);
      denom += p;
      const char* vr = v_base + page_at + b.row_bytes * jj;
#pragma unroll
      for (int i = 0; i < kDimsPerThread; ++i) {
        const int64_t d = threadIdx.x + int64_t{i} * kThreads;
        if (d < hd) acc[i] += p * Load::at(vr, d);
      }
    }
    running_max = new_max;
    __syncthreads();  // scores are rewritten for the next page
  }
  float* o = out + r * n_head * hd + h * hd;
#pragma unroll
  for (int i = 0; i < kDimsPerThread; ++i) {
    const int64_t d = threadIdx.x + int64_t{i} * kThreads;
    if (d < hd) o[d] = acc[i] / denom;
  }
}

// One block per batch row and tensor (blockIdx.y: 0 keys, 1 values), one thread per value up
// to 1,024 (a loop in one thread would wait for each load in turn: its stores may alias the
// next load). The row goes to its position in its pages. Q8_0: one warp per block of 32 values (max
// |x| / 127 as the f16 scale, round(x / scale) with the unrounded scale, as the CPU backend and
// ggml quantize).
__global__ void kv_store_kernel(PagedBatch b, const float* k, const float* v) {
  pdl_begin();
  const int64_t r = blockIdx.x;
  const int64_t width = b.n_head_kv * b.head_dim;
  const bool keys = blockIdx.y == 0;
  char* dst = kv_row(b, r, keys);
  if (dst == nullptr) return;
  const float* src = (keys ? k : v) + r * width;
  if (b.type != DType::Q8_0) {
    for (int64_t i = threadIdx.x; i < width; i += blockDim.x)
      store_kv_value(b.type, dst, i, src[i]);
    return;
  }
  const int lane = threadIdx.x % 32;
  for (int64_t blk = threadIdx.x / 32; blk < width / 32; blk += blockDim.x / 32) {
    const float x = src[blk * 32 + lane];
    float amax = fabsf(x);
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, o));
    const float d = amax / 127.f;
    const float id = d != 0.f ? 1.f / d : 0.f;
    char* out = dst + blk * kQ8BlockBytes;
    if (lane == 0) *reinterpret_cast<__half*>(out) = __float2half_rn(d);
    out[2 + lane] = static_cast<char>(static_cast<signed char>(roundf(x * id)));
  }
}

// ---- Split over keys, the KV head's query heads together ------------------------------------
//
// Decode at long context reads every key and value once per step, so this kernel is about
// keeping enough loads in flight. A warp takes kKeys consecutive keys at a time (one page
// holds them) and issues all their key and value row loads before it uses any; a lane holds
// head_dim / 32 consecutive dimensions, so a row is one vector load per lane. The dot
// products of all (key, query head) pairs are summed over the warp in one transposing
// reduction (31 shuffles for 32 pairs), after which each lane holds one score; the online
// softmax runs on those and the value rows are weighted with scores fetched by shuffle. No
// shared memory or barrier is used until the warps merge at the end.

constexpr int kSplitWarps = 4;
constexpr int kSplitThreads = kSplitWarps * 32;

__host__ __device__ constexpr int pow2_at_least(int n) {
  return n <= 1 ? 1 : 2 * pow2_at_least((n + 1) / 2);
}

// A lane's kLaneDims consecutive values of a K or V row segment: `Raw` is what one load
// brings in, `at` converts value i of it.
template <int kLaneDims>
struct KvF32 {
  struct Raw {
    float v[kLaneDims];
  };
  static __device__ __forceinline__ Raw load(const char* seg, int lane) {
    Raw r;
    const float* src = reinterpret_cast<const float*>(seg) + lane * kLaneDims;
    if constexpr (kLaneDims % 4 == 0) {
#pragma unroll
      for (int i = 0; i < kLaneDims; i += 4) {
        const float4 f = *reinterpret_cast<const float4*>(src + i);
        r.v[i] = f.x, r.v[i + 1] = f.y, r.v[i + 2] = f.z, r.v[i + 3] = f.w;
      }
    } else {
#pragma unroll
      for (int i = 0; i < kLaneDims; ++i) r.v[i] = src[i];
    }
    return r;
  }
  static __device__ __forceinline__ float at(const Raw& r, int i) { return r.v[i]; }
};

template <int kLaneDims>
struct KvF16 {
  static constexpr int kWords = (kLaneDims + 1) / 2;
  struct Raw {
    uint32_t w[kWords];
  };
  static __device__ __forceinline__ Raw load(const char* seg, int lane) {
    Raw r;
    const char* src = seg + lane * kLaneDims * 2;
    if constexpr (kLaneDims == 8) {
      const uint4 u = *reinterpret_cast<const uint4*>(src);
      r.w[0] = u.x, r.w[1] = u.y, r.w[2] = u.z, r.w[3] = u.w;
    } else if constexpr (kLaneDims == 4) {
      const uint2 u = *reinterpret_cast<const uint2*>(src);
      r.w[0] = u.x, r.w[1] = u.y;
    } else if constexpr (kLaneDims == 2) {
      r.w[0] = *reinterpret_cast<const uint32_t*>(src);
    } else {
      r.w[0] = *reinterpret_cast<const unsigned short*>(src);
    }
    return r;
  }
  static __device__ __forceinline__ float at(const Raw& r, int i) {
    const unsigned short bits = static_cast<unsigned short>(r.w[i / 2] >> (16 * (i % 2)));
    return __half2float(__ushort_as_half(bits));
  }
};

// Q8_0: a lane's dimensions lie in one 32-value block (kLaneDims divides 32).
template <int kLaneDims>
struct KvQ8 {
  struct Raw {
    float v[kLaneDims];
  };
  static __device__ __forceinline__ Raw load(const char* seg, int lane) {
    const int first = lane * kLaneDims;
    const char* blk = seg + (first / 32) * kQ8BlockBytes;
    const float d = __half2float(*reinterpret_cast<const __half*>(blk));
    const signed char* qs = reinterpret_cast<const signed char*>(blk + 2 + first % 32);
    Raw r;
#pragma unroll
    for (int i = 0; i < kLaneDims; ++i) r.v[i] = d * static_cast<float>(qs[i]);
    return r;
  }
  static __device__ __forceinline__ float at(const Raw& r, int i) { return r.v[i]; }
};

// Sums each of a lane's kSlots values over the warp; lane l gets the sum of slot l % kSlots.
// Each halving step keeps the half of the slots that this lane's bit selects and adds the
// partner's copy of it, so 32 slots cost 31 shuffles instead of 32 * 5.
template <int kHalf, int kSlots>
__device__ __forceinline__ void transpose_step(float (&v)[kSlots], int lane) {
  const bool upper = (lane & kHalf) != 0;
#pragma unroll
  for (int i = 0; i < kHalf; ++i) {
    const float send = upper ? v[i] : v[i + kHalf];
    const float keep = upper ? v[i + kHalf] : v[i];
    v[i] = keep + __shfl_xor_sync(0xffffffffu, send, kHalf);
  }
  if constexpr (kHalf > 1) transpose_step<kHalf / 2>(v, lane);
}

template <int kSlots>
__device__ __forceinline__ float transpose_sum(float (&v)[kSlots], int lane) {
  if constexpr (kSlots > 1) transpose_step<kSlots / 2>(v, lane);
#pragma unroll
  for (int o = kSlots; o < 32; o *= 2) v[0] += __shfl_xor_sync(0xffffffffu, v[0], o);
  return v[0];
}

// Partial result of one (row, head, split): acc[head_dim], then the max and the sum.
__device__ __forceinline__ float* partial_at(float* scratch, int64_t r, int64_t h, int split,
                                             int splits, int64_t n_head, int64_t hd) {
  return scratch + ((r * n_head + h) * splits + split) * (hd + 2);
}

// The shape constants of a split kernel: kG score slots per key (heads padded to a power of
// two score 0), kKeys consecutive keys per warp step (within one page), kSlots = kKeys * kG.
template <int kGroup, int kLaneDims>
struct SplitShape {
  static constexpr int kHd = 32 * kLaneDims;
  static constexpr int kG = pow2_at_least(kGroup);
  static constexpr int kKeys = kG >= 8 ? 32 / kG : 8;
  static constexpr int kSlots = kKeys * kG;
  static_assert(kSlots <= 32 && kPage % kKeys == 0, "a warp step is one page's keys");
};

// One warp step: keys j0 .. j0 + kKeys - 1 (those below `end`), whose rows are kr and vr,
// folded into the online softmax of the kGroup heads (mx, sum: head lane % kG's) and their
// outputs acc.
template <class Load, int kGroup, int kLaneDims>
__device__ __forceinline__ void attend_step(
    const typename Load::Raw (&kr)[SplitShape<kGroup, kLaneDims>::kKeys],
    const typename Load::Raw (&vr)[SplitShape<kGroup, kLaneDims>::kKeys], int64_t j0, int64_t end,
    const float (&qr)[kGroup][kLaneDims], float& mx, float& sum, float (&acc)[kGroup][kLaneDims],
    int lane) {
  using Shape = SplitShape<kGroup, kLaneDims>;
  constexpr int kG = Shape::kG, kKeys = Shape::kKeys, kSlots = Shape::kSlots;
  const int slot = lane % kSlots, slot_key = slot / kG;
  float dots[kSlots];
#pragma unroll
  for (int k = 0; k < kKeys; ++k)
#pragma unroll
    for (int h = 0; h < kG; ++h) {
      float dot = 0.f;
      if (h < kGroup && j0 + k < end)
#pragma unroll
        for (int i = 0; i < kLaneDims; ++i) dot += qr[h][i] * Load::at(kr[k], i);
      dots[k * kG + h] = dot;
    }
  // Every lane takes part in the shuffles; keys past the end are masked afterwards.
  float score = transpose_sum(dots, lane);
  if (j0 + slot_key >= end) score = -INFINITY;
  float step_max = score;
#pragma unroll
  for (int o = kG; o < 32; o *= 2) step_max = fmaxf(step_max, __shfl_xor_sync(~0u, step_max, o));
  const float new_max = fmaxf(mx, step_max);    // finite: key j0 is visible
  const float correction = expf(mx - new_max);  // 0 on the first step
  const float p = expf(score - new_max);
  float step_sum = p;
#pragma unroll
  for (int o = kG; o < kSlots; o *= 2) step_sum += __shfl_xor_sync(~0u, step_sum, o);
  sum = sum * correction + step_sum;
  mx = new_max;
#pragma unroll
  for (int h = 0; h < kGroup; ++h) {
    const float c = __shfl_sync(~0u, correction, h);
#pragma unroll
    for (int i = 0; i < kLaneDims; ++i) acc[h][i] *= c;
  }
#pragma unroll
  for (int k = 0; k < kKeys; ++k) {
    if (j0 + k >= end) break;  // uniform over the warp
#pragma unroll
    for (int h = 0; h < kGroup; ++h) {
      const float pk = __shfl_sync(~0u, p, k * kG + h);
#pragma unroll
      for (int i = 0; i < kLaneDims; ++i) acc[h][i] += pk * Load::at(vr[k], i);
    }
  }
}

// Shared memory where the warps of a split kernel merge.
template <int kGroup, int kLaneDims>
struct WarpMerge {
  float max[kSplitWarps][kGroup], sum[kSplitWarps][kGroup];
  float acc[kSplitWarps][kGroup][32 * kLaneDims];
};

// The output rows of KV head g's query heads (one split) or this split's partial results,
// from the block's warps' partial softmax results in `m` (all written, after a barrier).
template <int kGroup, int kLaneDims>
__device__ __forceinline__ void write_merged(const WarpMerge<kGroup, kLaneDims>& m, int64_t r,
                                             int64_t g, int split, int splits, int64_t n_head,
                                             float* scratch, float* out) {
  constexpr int kHd = 32 * kLaneDims;
  for (int e = threadIdx.x; e < kGroup * kHd; e += kSplitThreads) {
    const int h = e / kHd, d = e % kHd;
    float top = -INFINITY;
    for (int w = 0; w < kSplitWarps; ++w) top = fmaxf(top, m.max[w][h]);
    float total = 0.f, value = 0.f;
    if (top != -INFINITY)
      for (int w = 0; w < kSplitWarps; ++w) {
        const float f = expf(m.max[w][h] - top);
        total += m.sum[w][h] * f;
        value += m.acc[w][h][d] * f;
      }
    const int64_t head = g * kGroup + h;
    if (splits == 1) {
      out[r * n_head * kHd + head * kHd + d] = value / total;
    } else {
      float* part = partial_at(scratch, r, head, split, splits, n_head, kHd);
      part[d] = value;
      if (d == 0) {
        part[kHd] = top;
        part[kHd + 1] = total;
      }
    }
  }
}

// Merges the block's warps and writes the output rows of KV head g's query heads (one split)
// or this split's partial results.
template <int kGroup, int kLaneDims>
__device__ __forceinline__ void merge_warps(WarpMerge<kGroup, kLaneDims>& m, float mx, float sum,
                                            const float (&acc)[kGroup][kLaneDims], int64_t r,
                                            int64_t g, int split, int splits, int64_t n_head,
                                            float* scratch, float* out) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane < kGroup) {
    m.max[warp][lane] = mx;
    m.sum[warp][lane] = sum;
  }
#pragma unroll
  for (int h = 0; h < kGroup; ++h)
#pragma unroll
    for (int i = 0; i < kLaneDims; ++i) m.acc[warp][h][lane * kLaneDims + i] = acc[h][i];
  __syncthreads();
  write_merged(m, r, g, split, splits, n_head, scratch, out);
}

// The kGroup query heads of KV head g for batch row r, scaled, as a lane holds them.
template <int kGroup, int kLaneDims>
__device__ __forceinline__ void load_queries(float (&qr)[kGroup][kLaneDims], const float* q,
                                             size_t q_stride, int64_t r, int64_t g, float scale,
                                             int lane) {
  constexpr int kHd = 32 * kLaneDims;
#pragma unroll
  for (int h = 0; h < kGroup; ++h)
#pragma unroll
    for (int i = 0; i < kLaneDims; ++i)
      qr[h][i] = q[r * q_stride + (g * kGroup + h) * kHd + lane * kLaneDims + i] * scale;
}

// The keys of split `split` of row r's sequence: [first, end), `first` on a page boundary.
// Each sequence's own keys are cut into `splits` runs of whole pages, computed here from its
// length on the device, so the launch's arguments do not change as the context grows (a
// recorded decode step replays unchanged; see CudaBackend::begin_step).
__device__ __forceinline__ void split_range(const PagedSeqDesc& desc, int64_t r, int split,
                                            int splits, int64_t& first, int64_t& end) {
  const int64_t visible = desc.n_past + (r - desc.row) + 1;
  const int64_t seq_pages = (desc.n_past + desc.T + kPage - 1) / kPage;
  const int64_t keys_per_split = (seq_pages + splits - 1) / splits * kPage;
  first = split * keys_per_split;
  end = min(visible, first + keys_per_split);
}

template <template <int> class Kv, int kGroup, int kLaneDims, bool kPipelined>
__global__ void __launch_bounds__(kSplitThreads)
    paged_attention_split_kernel(PagedBatch b, const float* q, size_t q_stride, int64_t n_head,
                                 float scale, int splits, float* scratch, float* out, bool early) {
  if (!early) pdl_begin();
  using Load = Kv<kLaneDims>;
  using Shape = SplitShape<kGroup, kLaneDims>;
  constexpr int kHd = Shape::kHd, kKeys = Shape::kKeys;
  __shared__ WarpMerge<kGroup, kLaneDims> merge;
  const int64_t r = blockIdx.x;
  const int64_t g = blockIdx.y;
  const int split = static_cast<int>(blockIdx.z);
  const int32_t s = b.row_to_seq[r];
  if (s < 0 || left_to_flash(b, s)) return;
  const PagedSeqDesc desc = b.descs[s];
  int64_t first, end;
  split_range(desc, r, split, splits, first, end);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int64_t head_offset = segment_offset(b.type, g * kHd);
  const char* k_base = b.k + desc.k_offset + head_offset;
  const char* v_base = b.v + desc.v_offset + head_offset;
  const int32_t* table = b.pages + desc.page_offset;
  // With `early`, a warp's first step of keys, when none of them is new (the kernel before
  // wrote only the new ones), is loaded before the wait: the chain of dependent loads (row,
  // descriptor, page table, key rows) then overlaps that kernel instead of following it.
  const int64_t j_first = first + warp * kKeys;
  const bool preloaded = early && j_first + kKeys <= end && j_first + kKeys <= desc.n_past;
  typename Load::Raw kr[kKeys], vr[kKeys];
  if (preloaded) {
    const size_t page_at = b.page_bytes * static_cast<size_t>(table[j_first / kPage]) +
                           b.row_bytes * static_cast<size_t>(j_first % kPage);
#pragma unroll
    for (int k = 0; k < kKeys; ++k) kr[k] = Load::load(k_base + page_at + b.row_bytes * k, lane);
#pragma unroll
    for (int k = 0; k < kKeys; ++k) vr[k] = Load::load(v_base + page_at + b.row_bytes * k, lane);
  }
  if (early) pdl_begin();

  float qr[kGroup][kLaneDims];
  load_queries(qr, q, q_stride, r, g, scale, lane);
  // The softmax state of head lane % kG, and every head's share of the output.
  float mx = -INFINITY, sum = 0.f;
  float acc[kGroup][kLaneDims] = {};
  // Row loads of the keys j .. j + kKeys - 1 that are visible, into rows[].
  const auto load_rows = [&](typename Load::Raw(&rows)[kKeys], const char* base, int64_t j) {
    const size_t page_at = b.page_bytes * static_cast<size_t>(table[j / kPage]) +
                           b.row_bytes * static_cast<size_t>(j % kPage);
#pragma unroll
    for (int k = 0; k < kKeys; ++k)
      if (j + k < end) rows[k] = Load::load(base + page_at + b.row_bytes * k, lane);
  };
  constexpr int64_t kStride = kSplitWarps * kKeys;
  // Pipelined: a step's key rows were requested one step earlier, so a warp's loads are in
  // flight while it computes (with few warps per SM at long context, a warp that loads and
  // then waits leaves the memory idle); its value rows are requested at the step's start and
  // first used after the scores.
  if (kPipelined && !preloaded && j_first < end) load_rows(kr, k_base, j_first);
  for (int64_t j0 = j_first; j0 < end; j0 += kStride) {
    typename Load::Raw next[kKeys];
    if (!(preloaded && j0 == j_first)) {
      if (!kPipelined) load_rows(kr, k_base, j0);
      load_rows(vr, v_base, j0);
    }
    if (kPipelined && j0 + kStride < end) load_rows(next, k_base, j0 + kStride);
    attend_step<Load, kGroup, kLaneDims>(kr, vr, j0, end, qr, mx, sum, acc, lane);
    if constexpr (kPipelined) {
#pragma unroll
      for (int k = 0; k < kKeys; ++k) kr[k] = next[k];
    }
  }
  merge_warps(merge, mx, sum, acc, r, g, split, splits, n_head, scratch, out);
}

// ---- Split over keys on tensor cores (head_dim 256, F16 pages) ---------------------------
//
// The same split as above, but a warp takes 16 consecutive keys at a time and computes their
// scores for the KV head's query heads with mma.m16n8k16 (keys as rows, the group's heads,
// padded to 8, as columns), then its share of the output as O^T += V^T P (256 dimensions as
// 16 row tiles, heads as columns, the 16 keys as the reduction). The fragments come straight
// from 16-byte loads of the key and value rows: a dot product does not care in which order
// its dimensions are summed, so the keys' and queries' dimensions are permuted alike (lane
// group q of a row holds 8 consecutive dimensions, two k-steps' worth), and the value rows'
// pairs of keys are interleaved with byte permutes. Per 16 keys a warp issues 64 mma in place
// of the FMA kernel's per-key dot products and warp reductions, which is what lets it keep up
// with the memory at long context.
//
// Keys and values are F16 already; queries and softmax weights are not, so each goes in as
// two halves, hi = half(x) and lo = half(x - hi), whose products the tensor cores sum in
// float: the result carries ~22 bits of each instead of a half's 11 (with single halves the
// CUDA suite's comparisons against the float kernels missed their 1e-5 relative tolerance by
// up to 70x; with the split they hold).

constexpr int kMmaHd = 256;
// Blocks an SM the kernel is compiled for (160 registers, no spills). The 27B's attention at
// 64K alone on an H200: at 2 blocks (~196 registers; single halves) 230 us a layer, at 3
// 122 us, at 4 (128 registers, spilling) 136 us.
constexpr int kMmaMinBlocks = 3;

__device__ __forceinline__ uint32_t pack_half2(float lo, float hi) {
  const __half2 h = __floats2half2_rn(lo, hi);
  return *reinterpret_cast<const uint32_t*>(&h);
}

// x0 and x1 as half2 (hi) and what rounding left of them (lo).
__device__ __forceinline__ void split_half2(float x0, float x1, uint32_t& hi, uint32_t& lo) {
  const __half2 h = __floats2half2_rn(x0, x1);
  const float2 back = __half22float2(h);
  hi = *reinterpret_cast<const uint32_t*>(&h);
  lo = pack_half2(x0 - back.x, x1 - back.y);
}

// Shared memory of the mma kernel: the query fragments every warp reads (hi and lo, per
// 32-dimension slice and lane), and where the warps merge (per warp, head and dimension).
template <int kGroup>
struct MmaShared {
  uint4 q[2][kMmaHd / 32][32];
  WarpMerge<kGroup, kMmaHd / 32> merge;
};

template <int kGroup>
__global__ void __launch_bounds__(kSplitThreads, kMmaMinBlocks)
    paged_attention_mma_kernel(PagedBatch b, const float* q, size_t q_stride, int64_t n_head,
                               float scale, int splits, float* scratch, float* out) {
  pdl_begin();
  static_assert(kGroup >= 1 && kGroup <= 8, "a query group fits the 8 columns of one tile");
  __shared__ MmaShared<kGroup> sh;
  const int64_t r = blockIdx.x;
  const int64_t g = blockIdx.y;
  const int split = static_cast<int>(blockIdx.z);
  const int32_t s = b.row_to_seq[r];
  if (s < 0 || left_to_flash(b, s)) return;
  const PagedSeqDesc desc = b.descs[s];
  int64_t first, end;
  split_range(desc, r, split, splits, first, end);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int row8 = lane / 4, quad = lane % 4;  // the mma fragments' group and lane in group
  const int64_t head_offset = segment_offset(b.type, g * kMmaHd);
  const char* k_base = b.k + desc.k_offset + head_offset;
  const char* v_base = b.v + desc.v_offset + head_offset;
  const int32_t* table = b.pages + desc.page_offset;

  // Lane l's fragment of slice p: query head l / 4 of the group (zero for the padding
  // columns), dimensions 32p + 8 (l % 4) .. + 7 as four half pairs: k-step 2p takes words 0-1,
  // 2p + 1 words 2-3.
  for (int f = threadIdx.x; f < 8 * 32; f += kSplitThreads) {
    const int p = f / 32, l = f % 32, head = l / 4;
    float v[8] = {};
    if (head < kGroup) {
      const float* qrow = q + r * q_stride + (g * kGroup + head) * kMmaHd + 32 * p + 8 * (l % 4);
#pragma unroll
      for (int i = 0; i < 8; ++i) v[i] = qrow[i] * scale;
    }
    uint4 hi, lo;
    split_half2(v[0], v[1], hi.x, lo.x);
    split_half2(v[2], v[3], hi.y, lo.y);
    split_half2(v[4], v[5], hi.z, lo.z);
    split_half2(v[6], v[7], hi.w, lo.w);
    sh.q[0][p][l] = hi;
    sh.q[1][p][l] = lo;
  }
  __syncthreads();
  // Softmax state of heads 2 quad and 2 quad + 1; acc[t]: output dimensions
  // 64 (t / 4) + 8 row8 + 2 (t % 4) (+1 for elements 2, 3) of those two heads.
  float m0 = -INFINITY, m1 = -INFINITY, l0 = 0.f, l1 = 0.f;
  float acc[16][4] = {};
  const uint4 zero = make_uint4(0, 0, 0, 0);
  for (int64_t j0 = first + 16 * warp; j0 < end; j0 += 16 * kSplitWarps) {
    const size_t page_at = b.page_bytes * static_cast<size_t>(table[j0 / kPage]) +
                           b.row_bytes * static_cast<size_t>(j0 % kPage);
    const auto row_at = [&](const char* base, int key) {
      return base + page_at + b.row_bytes * key;
    };
    // Keys row8 and row8 + 8 for the scores; keys 2 quad, 2 quad + 1, 2 quad + 8, 2 quad + 9
    // for the values (rows past the end read as zero: their weights are zero, and garbage
    // could be NaN).
    uint4 klo[8], khi[8], va[4], vb[4], vc[4], vd[4];
    const bool k_lo_ok = j0 + row8 < end, k_hi_ok = j0 + row8 + 8 < end;
#pragma unroll
    for (int p = 0; p < 8; ++p) {
      const int at = (32 * p + 8 * quad) * 2;
      klo[p] = k_lo_ok ? *reinterpret_cast<const uint4*>(row_at(k_base, row8) + at) : zero;
      khi[p] = k_hi_ok ? *reinterpret_cast<const uint4*>(row_at(k_base, row8 + 8) + at) : zero;
    }
    const int ka = 2 * quad;
#pragma unroll
    for (int c = 0; c < 4; ++c) {
      const int at = (64 * c + 8 * row8) * 2;
      va[c] = j0 + ka < end ? *reinterpret_cast<const uint4*>(row_at(v_base, ka) + at) : zero;
      vb[c] =
          j0 + ka + 1 < end ? *reinterpret_cast<const uint4*>(row_at(v_base, ka + 1) + at) : zero;
      vc[c] =
          j0 + ka + 8 < end ? *reinterpret_cast<const uint4*>(row_at(v_base, ka + 8) + at) : zero;
      vd[c] =
          j0 + ka + 9 < end ? *reinterpret_cast<const uint4*>(row_at(v_base, ka + 9) + at) : zero;
    }
    // Scores: rows keys row8 / row8 + 8, columns heads 2 quad, 2 quad + 1.
    float sc[4] = {};
#pragma unroll
    for (int p = 0; p < 8; ++p) {
#pragma unroll
      for (int part = 0; part < 2; ++part) {
        const uint4 qf = sh.q[part][p][lane];
        mma_16816(sc, {klo[p].x, khi[p].x, klo[p].y, khi[p].y}, qf.x, qf.y);
        mma_16816(sc, {klo[p].z, khi[p].z, klo[p].w, khi[p].w}, qf.z, qf.w);
      }
    }
    if (!k_lo_ok) sc[0] = sc[1] = -INFINITY;
    if (!k_hi_ok) sc[2] = sc[3] = -INFINITY;
    float t0 = fmaxf(sc[0], sc[2]), t1 = fmaxf(sc[1], sc[3]);
#pragma unroll
    for (int o = 4; o < 32; o *= 2) {
      t0 = fmaxf(t0, __shfl_xor_sync(~0u, t0, o));
      t1 = fmaxf(t1, __shfl_xor_sync(~0u, t1, o));
    }
    const float n0 = fmaxf(m0, t0), n1 = fmaxf(m1, t1);  // finite: key j0 is visible
    const float c0 = expf(m0 - n0), c1 = expf(m1 - n1);  // 0 on the first tile
    const float p0 = expf(sc[0] - n0), p1 = expf(sc[1] - n1);
    const float p2 = expf(sc[2] - n0), p3 = expf(sc[3] - n1);
    float s0 = p0 + p2, s1 = p1 + p3;
#pragma unroll
    for (int o = 4; o < 32; o *= 2) {
      s0 += __shfl_xor_sync(~0u, s0, o);
      s1 += __shfl_xor_sync(~0u, s1, o);
    }
    l0 = l0 * c0 + s0;
    l1 = l1 * c1 + s1;
    m0 = n0;
    m1 = n1;
#pragma unroll
    for (int t = 0; t < 16; ++t) {
      acc[t][0] *= c0;
      acc[t][1] *= c1;
      acc[t][2] *= c0;
      acc[t][3] *= c1;
    }
    // P as the B operand (rows keys 2 quad, 2 quad + 1 (+8), column head row8): lanes
    // 4 (2 quad) + row8 / 2 and 4 (2 quad + 1) + row8 / 2 hold those keys, head row8 in
    // half row8 % 2 of their pairs; hi and lo parts alike.
    uint32_t pb[2][2];
    {
      uint32_t h01[2], h23[2];
      split_half2(p0, p1, h01[0], h01[1]);
      split_half2(p2, p3, h23[0], h23[1]);
      const int from0 = 4 * (2 * quad) + row8 / 2, from1 = from0 + 4;
      const unsigned pick = row8 % 2 ? 0x7632u : 0x5410u;
#pragma unroll
      for (int part = 0; part < 2; ++part) {
        const uint32_t x0 = __shfl_sync(~0u, h01[part], from0);
        const uint32_t x1 = __shfl_sync(~0u, h01[part], from1);
        const uint32_t y0 = __shfl_sync(~0u, h23[part], from0);
        const uint32_t y1 = __shfl_sync(~0u, h23[part], from1);
        pb[part][0] = __byte_perm(x0, x1, pick);
        pb[part][1] = __byte_perm(y0, y1, pick);
      }
    }
    // O^T += V^T P: row tile (c, w) holds dimensions 64 c + 8 row8 + 2 w (+1 in rows 8-15).
#pragma unroll
    for (int c = 0; c < 4; ++c) {
      const uint32_t a_[4] = {va[c].x, va[c].y, va[c].z, va[c].w};
      const uint32_t b_[4] = {vb[c].x, vb[c].y, vb[c].z, vb[c].w};
      const uint32_t c_[4] = {vc[c].x, vc[c].y, vc[c].z, vc[c].w};
      const uint32_t d_[4] = {vd[c].x, vd[c].y, vd[c].z, vd[c].w};
#pragma unroll
      for (int w = 0; w < 4; ++w) {
        const uint32_t f0 = __byte_perm(a_[w], b_[w], 0x5410),
                       f1 = __byte_perm(a_[w], b_[w], 0x7632);
        const uint32_t f2 = __byte_perm(c_[w], d_[w], 0x5410),
                       f3 = __byte_perm(c_[w], d_[w], 0x7632);
        mma_16816(acc[4 * c + w], {f0, f1, f2, f3}, pb[0][0], pb[0][1]);
        mma_16816(acc[4 * c + w], {f0, f1, f2, f3}, pb[1][0], pb[1][1]);
      }
    }
  }
  // Merge the warps (lanes of row8 0 hold each head pair's state).
  if (row8 == 0 && 2 * quad < kGroup) {
    sh.merge.max[warp][2 * quad] = m0;
    sh.merge.sum[warp][2 * quad] = l0;
  }
  if (row8 == 0 && 2 * quad + 1 < kGroup) {
    sh.merge.max[warp][2 * quad + 1] = m1;
    sh.merge.sum[warp][2 * quad + 1] = l1;
  }
#pragma unroll
  for (int t = 0; t < 16; ++t)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int head = 2 * quad + (e & 1);
      const int dim = 64 * (t / 4) + 8 * row8 + 2 * (t % 4) + (e >> 1);
      if (head < kGroup) sh.merge.acc[warp][head][dim] = acc[t][e];
    }
  __syncthreads();
  write_merged(sh.merge, r, g, split, splits, n_head, scratch, out);
}

// out = the splits' partial results merged: one block per (row, head). Every load of a split's
// partial is independent of the others (the weights of the splits are worked out first, one
// split per thread), so a thread keeps several in flight; the serial form, which read each
// split's maximum, then its weight and its value in turn, took tens of microseconds a layer at
// long context (HOSTLM_CUDA_ATTENTION_MERGE=serial keeps it, for comparison).
constexpr int kMergeThreads = 512;

__global__ void __launch_bounds__(kMergeThreads)
    merge_splits_kernel(const PagedBatch b, const float* scratch, int splits, int64_t n_head,
                        float* out) {
  pdl_begin();
  extern __shared__ float weight[];  // [splits]: exp(max of the split - max of all)
  __shared__ float reduce[kMergeThreads / 32];
  __shared__ float sums[kMergeThreads];
  const int64_t r = blockIdx.x, h = blockIdx.y, hd = b.head_dim;
  const int32_t s = b.row_to_seq[r];
  if (s < 0 || left_to_flash(b, s)) return;
  const float* first = partial_at(const_cast<float*>(scratch), r, h, 0, splits, n_head, hd);
  const int64_t stride = hd + 2;
  const int t = static_cast<int>(threadIdx.x), lane = t % 32, warp = t / 32;
  float top = -INFINITY;
  for (int sp = t; sp < splits; sp += kMergeThreads) top = fmaxf(top, first[sp * stride + hd]);
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) top = fmaxf(top, __shfl_xor_sync(~0u, top, o));
  if (lane == 0) reduce[warp] = top;
  __syncthreads();
  top = -INFINITY;
  for (int w = 0; w < kMergeThreads / 32; ++w) top = fmaxf(top, reduce[w]);
  float total = 0.f;
  for (int sp = t; sp < splits; sp += kMergeThreads) {
    const float m = first[sp * stride + hd];
    const float f = m == -INFINITY ? 0.f : expf(m - top);  // a split past this row's keys
    weight[sp] = f;
    total += f * first[sp * stride + hd + 1];
  }
  total = block_sum(total, reduce);  // its barriers publish `weight` too
  // Thread t sums dimension t % hd over splits t / hd, t / hd + lanes, ...
  const int lanes = kMergeThreads / static_cast<int>(hd);
  const int d = t % static_cast<int>(hd), from = t / static_cast<int>(hd);
  float value = 0.f;
  if (from < lanes) {
#pragma unroll 8
    for (int sp = from; sp < splits; sp += lanes) {
      const float f = weight[sp];
      const float x = first[sp * stride + d];
      value += f != 0.f ? f * x : 0.f;
    }
  }
  sums[t] = value;
  __syncthreads();
  if (t < hd) {
    for (int k = 1; k < lanes; ++k) value += sums[k * hd + t];
    out[r * n_head * hd + h * hd + t] = value / total;
  }
}

// The merge as it was before (kept for comparison, see above).
__global__ void merge_splits_serial_kernel(const PagedBatch b, const float* scratch, int splits,
                                           int64_t n_head, float* out) {
  pdl_begin();
  const int64_t r = blockIdx.x, h = blockIdx.y, hd = b.head_dim;
  const int32_t s = b.row_to_seq[r];
  if (s < 0 || left_to_flash(b, s)) return;
  float m = -INFINITY;
  for (int sp = 0; sp < splits; ++sp)
    m = fmaxf(m, partial_at(const_cast<float*>(scratch), r, h, sp, splits, n_head, hd)[hd]);
  for (int64_t d = threadIdx.x; d < hd; d += blockDim.x) {
    float total = 0.f, value = 0.f;
    for (int sp = 0; sp < splits; ++sp) {
      const float* part = partial_at(const_cast<float*>(scratch), r, h, sp, splits, n_head, hd);
      if (part[hd] == -INFINITY) continue;
      const float f = expf(part[hd] - m);
      total += part[hd + 1] * f;
      value += part[d] * f;
    }
    out[r * n_head * hd + h * hd + d] = value / total;
  }
}

bool serial_merge() {
  static const bool on = [] {
    const char* env = std::getenv("HOSTLM_CUDA_ATTENTION_MERGE");
    return env != nullptr && std::string_view(env) == "serial";
  }();
  return on;
}

int lane_dims(int64_t head_dim) { return static_cast<int>(head_dim / 32); }

// Head sizes of 32, 64, 128 or 256 (a whole number of values per lane, loaded at once);
// others take the plain kernel.
bool split_kernel_fits(const PagedBatch& b, int64_t n_head) {
  const int64_t group = n_head / b.n_head_kv;
  const int64_t hd = b.head_dim;
  return (hd == 32 || hd == 64 || hd == 128 || hd == 256) &&
         (group == 1 || group == 2 || group == 3 || group == 4 || group == 6 || group == 8);
}

// Whether the split kernel requests a step's key rows one step ahead
// (HOSTLM_CUDA_ATTENTION_PIPELINE=0 turns it off).
bool pipelined() {
  static const bool on = [] {
    const char* env = std::getenv("HOSTLM_CUDA_ATTENTION_PIPELINE");
    return env == nullptr || env[0] != '0';
  }();
  return on;
}

// Splits of the keys: enough blocks to fill the GPU twice over, about two pages each. The
// longest context counts in powers of two of pages, so the count, the grid and the scratch
// size change only at those lengths and decode steps in between launch identically.
int split_count(const PagedBatch& b) {
  static const int sms = [] {
    int device = 0, n = 0;
    cudaGetDevice(&device);
    cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, device);
    return n > 0 ? n : 100;
  }();
  const int64_t blocks = b.rows * b.n_head_kv;
  const int64_t pages = (b.max_kv + kPage - 1) / kPage;
  int64_t bucket = 1;
  while (bucket < pages) bucket *= 2;
  const int64_t want = (2 * sms + blocks - 1) / blocks;
  return static_cast<int>(std::max<int64_t>(1, std::min(want, bucket / 2)));
}

// Whether F16 pages of head_dim 256 take the tensor-core kernel (sm_80 and later;
// HOSTLM_CUDA_ATTENTION_MMA=0 keeps them on the FMA kernel, for comparison). On an H200 at
// 64K tokens: 27B Q4_K_M tg128 100.9 -> 108.8 t/s, 9B Q8_0 287.3 -> 296.0 t/s.
bool use_mma(const PagedBatch& b) {
  static const bool on = [] {
    const char* env = std::getenv("HOSTLM_CUDA_ATTENTION_MMA");
    if (env != nullptr && env[0] == '0') return false;
    int device = 0, major = 0;
    return cudaGetDevice(&device) == cudaSuccess &&
           cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) ==
               cudaSuccess &&
           major >= 8;
  }();
  return on && b.type == DType::F16 && b.head_dim == kMmaHd;
}

template <template <int> class Kv, int kGroup, int kLaneDims>
void launch_split_dims(const PagedBatch& b, const float* q, size_t q_stride, int64_t n_head,
                       float scale, int splits, float* scratch, float* out, cudaStream_t stream,
                       bool early) {
  const dim3 grid(static_cast<unsigned>(b.rows), static_cast<unsigned>(b.n_head_kv),
                  static_cast<unsigned>(splits));
  if constexpr (kLaneDims * 32 == kMmaHd) {
    if (use_mma(b)) {
      launch_kernel(paged_attention_mma_kernel<kGroup>, grid, kSplitThreads, 0, stream, b, q,
                    q_stride, n_head, scale, splits, scratch, out);
      return;
    }
  }
  if (pipelined())
    launch_kernel(paged_attention_split_kernel<Kv, kGroup, kLaneDims, true>, grid, kSplitThreads, 0,
                  stream, b, q, q_stride, n_head, scale, splits, scratch, out, early);
  else
    launch_kernel(paged_attention_split_kernel<Kv, kGroup, kLaneDims, false>, grid, kSplitThreads,
                  0, stream, b, q, q_stride, n_head, scale, splits, scratch, out, early);
}

template <template <int> class Kv, int kGroup>
void launch_split(const PagedBatch& b, const float* q, size_t q_stride, int64_t n_head, float scale,
                  int splits, float* scratch, float* out, cudaStream_t stream, bool early) {
  switch (lane_dims(b.head_dim)) {
    case 1:
      launch_split_dims<Kv, kGroup, 1>(b, q, q_stride, n_head, scale, splits, scratch, out, stream,
                                       early);
      break;
    case 2:
      launch_split_dims<Kv, kGroup, 2>(b, q, q_stride, n_head, scale, splits, scratch, out, stream,
                                       early);
      break;
    case 4:
      launch_split_dims<Kv, kGroup, 4>(b, q, q_stride, n_head, scale, splits, scratch, out, stream,
                                       early);
      break;
    default:
      launch_split_dims<Kv, kGroup, 8>(b, q, q_stride, n_head, scale, splits, scratch, out, stream,
                                       early);
  }
}

template <template <int> class Kv>
void launch_split_group(const PagedBatch& b, const float* q, size_t q_stride, int64_t n_head,
                        float scale, int splits, float* scratch, float* out, cudaStream_t stream,
                        bool early) {
  switch (n_head / b.n_head_kv) {
    case 1:
      launch_split<Kv, 1>(b, q, q_stride, n_head, scale, splits, scratch, out, stream, early);
      break;
    case 2:
      launch_split<Kv, 2>(b, q, q_stride, n_head, scale, splits, scratch, out, stream, early);
      break;
    case 3:
      launch_split<Kv, 3>(b, q, q_stride, n_head, scale, splits, scratch, out, stream, early);
      break;
    case 4:
      launch_split<Kv, 4>(b, q, q_stride, n_head, scale, splits, scratch, out, stream, early);
      break;
    case 6:  // Qwen3.5-27B: 24 query heads on 4 KV heads
      launch_split<Kv, 6>(b, q, q_stride, n_head, scale, splits, scratch, out, stream, early);
      break;
    default:
      launch_split<Kv, 8>(b, q, q_stride, n_head, scale, splits, scratch, out, stream, early);
  }
}

}  // namespace

cudaError_t kv_store(const PagedBatch& b, const float* k, const float* v, cudaStream_t stream) {
  if (b.rows == 0) return cudaSuccess;
  if (b.type == DType::Q8_0 && b.head_dim % 32 != 0) return cudaErrorInvalidValue;
  const int64_t width = b.n_head_kv * b.head_dim;
  const auto threads = static_cast<unsigned>(std::clamp<int64_t>((width + 31) / 32 * 32, 32, 1024));
  launch_kernel(kv_store_kernel, dim3(static_cast<unsigned>(b.rows), 2), threads, 0, stream, b, k,
                v);
  return cudaGetLastError();
}

// flash_prefill's partials first, then the split kernel's: both may run in one batch, in
// disjoint parts of the scratch (paged_attention).
size_t paged_attention_scratch(const PagedBatch& batch, int64_t n_head) {
  if (batch.rows == 0 || batch.n_head_kv <= 0 || n_head % batch.n_head_kv != 0) return 0;
  PagedBatch b = batch;
  b.flash_rows = flash_prefill_rows(b, n_head);
  const size_t flash = b.flash_rows > 0 ? flash_prefill_scratch(b, n_head) : 0;
  if (b.flash_rows > 0 && b.min_t >= b.flash_rows) return flash;  // flash takes every sequence
  if (!split_kernel_fits(b, n_head)) return flash;
  const int splits = split_count(b);
  return flash +
         (splits == 1 ? 0 : static_cast<size_t>(b.rows * n_head * splits * (b.head_dim + 2)));
}

cudaError_t paged_attention(const PagedBatch& batch, const float* q, size_t q_stride,
                            int64_t n_head, float scale, float* out, float* scratch,
                            cudaStream_t stream, bool early) {
  if (batch.rows == 0 || n_head == 0) return cudaSuccess;
  if (batch.head_dim > kAttentionMaxHeadDim || n_head > 65535 || batch.n_head_kv <= 0 ||
      n_head % batch.n_head_kv != 0 || (batch.type == DType::Q8_0 && batch.head_dim % 32 != 0))
    return cudaErrorInvalidValue;
  PagedBatch b = batch;
  b.flash_rows = flash_prefill_rows(b, n_head);
  if (b.flash_rows > 0) {
    const cudaError_t status = flash_prefill(b, q, q_stride, n_head, scale, out, scratch, stream);
    if (status != cudaSuccess || b.min_t >= b.flash_rows) return status;
    // The split kernel's partials follow flash_prefill's (paged_attention_scratch).
    if (scratch != nullptr) scratch += flash_prefill_scratch(b, n_head);
  }
  if (split_kernel_fits(b, n_head)) {
    const int splits = split_count(b);
    if (splits > 1 && scratch == nullptr) return cudaErrorInvalidValue;
    switch (b.type) {
      case DType::F32:
        launch_split_group<KvF32>(b, q, q_stride, n_head, scale, splits, scratch, out, stream,
                                  early);
        break;
      case DType::F16:
        launch_split_group<KvF16>(b, q, q_stride, n_head, scale, splits, scratch, out, stream,
                                  early);
        break;
      case DType::Q8_0:
        launch_split_group<KvQ8>(b, q, q_stride, n_head, scale, splits, scratch, out, stream,
                                 early);
        break;
      default:
        return cudaErrorInvalidValue;
    }
    if (splits > 1) {
      const dim3 grid(static_cast<unsigned>(b.rows), static_cast<unsigned>(n_head));
      if (serial_merge())
        launch_kernel(merge_splits_serial_kernel, grid, 128, 0, stream, b, scratch, splits, n_head,
                      out);
      else
        launch_kernel(merge_splits_kernel, grid, kMergeThreads, sizeof(float) * splits, stream, b,
                      scratch, splits, n_head, out);
    }
    return cudaGetLastError();
  }
  const dim3 grid(static_cast<unsigned>(b.rows), static_cast<unsigned>(n_head));
  switch (b.type) {
    case DType::F32:
      launch_kernel(paged_attention_kernel<LoadF32>, grid, kThreads, 0, stream, b, q, q_stride,
                    n_head, scale, out);
      break;
    case DType::F16:
      launch_kernel(paged_attention_kernel<LoadF16>, grid, kThreads, 0, stream, b, q, q_stride,
                    n_head, scale, out);
      break;
    case DType::Q8_0:
      launch_kernel(paged_attention_kernel<LoadQ8>, grid, kThreads, 0, stream, b, q, q_stride,
                    n_head, scale, out);
      break;
    default:
      return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

}  // namespace hostlm::cuda
