// Causal attention over the paged F16 KV cache on tensor cores, for sequences with many new
// rows (prefill); paged_attention.cu sends them here and keeps decode and short chunks.
//
// Flash attention with mma.sync m16n8k16 (f16 inputs, f32 accumulators): one block of four
// warps per (query head, sequence, tile of 64 query rows); each warp owns 16 rows, so the
// online softmax of a row stays in the four lanes that hold it. Keys go one KV page (32
// tokens) at a time through shared memory: cp.async brings the next page's keys while the
// current page's P*V runs and the values while Q*K^T runs. Tiles of the last rows see the
// most keys, so they start first. Query heads of a KV group read the same pages from L2.
//
// Accuracy. The keys and values are exactly F16 already, so only the float32 query and the
// probabilities need F16 operands. Each is split into hi = f16(x) and lo = f16(x - hi) and
// both halves go through the tensor cores (hi*K + lo*K, hi*V + lo*V): x is then carried to
// about 2^-22 relative instead of F16's 2^-11. To keep both halves normal F16 numbers, a query
// row is first scaled by a power of two that brings its largest value into [2^14, 2^15) (the
// score is scaled back exactly), and the probabilities (at most 1 after the running max) by
// 2^15. Scale, softmax, the sums and the output stay float32; so does the sum over pages
// (see the P*V step). Measured on an H200 against a double-precision reference (random data,
// head_dim 64-256, up to 8K keys): 2e-7 to 3e-6 of max |out|, where the CUDA-core kernels give
// 9e-7 to 5e-6; plain F16 operands (steps of 2^-11) would give about 1e-3.
//
// Splitting the keys. A block walks its tile's keys serially and is latency-bound, so the
// GPU is only busy when there are blocks for every SM's slots: a 512-row chunk of Qwen3.5-9B
// (16 heads) is 128 blocks, and after 16K cached tokens each of them walks 530 pages on an
// SM of its own while the H200 could keep 264 resident. Then, as flash-decoding does for
// decode, each tile's pages are cut into S contiguous runs, one block each. A run may start
// past some of its rows' keys (or hold none of them), so there the softmax starts from an
// empty state instead of from key 0. The blocks write their unnormalized output with its
// running max and sum, and a second kernel merges the S partials of a row with the weights
// paged_attention.cu's merge uses. The partials cost one write and one read of S times the
// output, small next to the walk, and each block stages its query again; a cost model
// (choose_splits) weighs that against the waves of blocks. S depends only on the batch's
// host-side shape, so that paged_attention_scratch sizes the scratch the launch uses and a
// recorded step's scratch size stands for its grid; with S = 1 the unsplit kernel runs, its
// code untouched by the split (a template flag).
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>

#include "common.cuh"
#include "kernels.h"
#include "launch.cuh"
#include "tensor_core.cuh"

namespace hostlm::cuda {
namespace {

constexpr int kTileRows = 64;          // query rows of a block
constexpr int kTileKeys = 32;          // keys per step: one KV page (kKvPageTokens)
constexpr int kFlashThreads = 128;     // four warps of 16 rows
constexpr int kPad = 8;                // halves after each shared row: ldmatrix without conflicts
constexpr float kProbScale = 32768.f;  // 2^15, see "Accuracy" above
constexpr int kMaxSplits = 16;
// A split's fixed cost (staging the query, writing and merging its partial) in pages walked:
// an estimate; it keeps splits from shrinking to a few pages each.
constexpr int64_t kSplitCostPages = 4;
constexpr int64_t kMinSplitPages = 8;  // fewer would not pay for that cost

// Shared memory of one block: the query as hi and lo halves, one page of keys and one of
// values (rows of head_dim + kPad halves), then the per-row score factors.
template <int D>
struct FlashSmem {
  static constexpr int kLd = D + kPad;
  static constexpr int kQHalves = kTileRows * kLd;
  static constexpr int kKvHalves = kTileKeys * kLd;
  static constexpr size_t kBytes =
      (2 * size_t{kQHalves} + 2 * size_t{kKvHalves}) * sizeof(__half) + kTileRows * sizeof(float);
};

// Two floats as an f16x2 register of their hi halves and one of their lo halves (x - hi);
// the first float goes to the low 16 bits (the lower column of a fragment).
__device__ __forceinline__ void split_pair(float x0, float x1, unsigned& hi, unsigned& lo) {
  const __half h0 = __float2half_rn(x0), h1 = __float2half_rn(x1);
  const __half l0 = __float2half_rn(x0 - __half2float(h0));
  const __half l1 = __float2half_rn(x1 - __half2float(h1));
  hi = unsigned{__half_as_ushort(h0)} | (unsigned{__half_as_ushort(h1)} << 16);
  lo = unsigned{__half_as_ushort(l0)} | (unsigned{__half_as_ushort(l1)} << 16);
}

// Starts copying one page's rows of this KV head (keys first_key .. first_key + 31) into
// `dst`; rows at or past kv_len hold no token yet (whatever bytes the page has, maybe NaN)
// and become zeros.
template <int D>
__device__ __forceinline__ void load_page(__half* dst, const char* head_base, size_t page_at,
                                          size_t row_bytes, int64_t first_key, int64_t kv_len) {
  constexpr int kChunks = D / 8;  // 16-byte pieces of a row
  static_assert(kTileKeys * kChunks % kFlashThreads == 0, "whole rounds of copies");
#pragma unroll
  for (int round = 0; round < kTileKeys * kChunks / kFlashThreads; ++round) {
    const int i = round * kFlashThreads + static_cast<int>(threadIdx.x);
    const int row = i / kChunks, chunk = i % kChunks;
    __half* to = dst + row * FlashSmem<D>::kLd + chunk * 8;
    if (first_key + row < kv_len)
      cp_async_16(smem_addr(to), head_base + page_at + row_bytes * row + chunk * 16);
    else
      *reinterpret_cast<uint4*>(to) = make_uint4(0, 0, 0, 0);
  }
  cp_async_commit();
}

// Partial result of one (batch row, head, split) of the split kernel: acc[D] (scaled by
// kProbScale like the sum), then the running max and the sum.
template <int D>
__device__ __forceinline__ float* partial_at(float* partials, int64_t r, int64_t h, int split,
                                             int splits, int64_t n_head) {
  return partials + ((r * n_head + h) * splits + split) * (D + 2);
}

// Grid: (query head + n_head * split, sequence, tile of rows counted from the last). Block:
// kFlashThreads. kSplit: the block takes split `blockIdx.x / n_head` of `splits` runs of the
// tile's pages and writes its partials; else all the pages and the output (splits is 1).
template <int D, bool kSplit>
__global__ void __launch_bounds__(kFlashThreads, 2)
    flash_prefill_kernel(PagedBatch b, const float* q, size_t q_stride, int64_t n_head, float scale,
                         int splits, float* partials, float* out) {
  pdl_begin();
  constexpr int kLd = FlashSmem<D>::kLd;
  constexpr int kDimTiles = D / 8;  // 8-wide column tiles of the output
  extern __shared__ __align__(16) unsigned char flash_smem[];
  __half* q_hi = reinterpret_cast<__half*>(flash_smem);
  __half* q_lo = q_hi + FlashSmem<D>::kQHalves;
  __half* k_tile = q_lo + FlashSmem<D>::kQHalves;
  __half* v_tile = k_tile + FlashSmem<D>::kKvHalves;
  float* row_factor = reinterpret_cast<float*>(v_tile + FlashSmem<D>::kKvHalves);

  const int64_t h = kSplit ? blockIdx.x % n_head : blockIdx.x;
  const PagedSeqDesc desc = b.descs[blockIdx.y];
  if (desc.T < b.flash_rows) return;  // a short sequence: the CUDA-core kernels take it
  const int64_t t0 = (int64_t{gridDim.z} - 1 - blockIdx.z) * kTileRows;
  if (t0 >= desc.T) return;
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int g = lane / 4, quad = lane % 4;

  const int64_t kvh = h / (n_head / b.n_head_kv);
  const char* k_head = b.k + desc.k_offset + kvh * D * 2;  // F16: two bytes a value
  const char* v_head = b.v + desc.v_offset + kvh * D * 2;
  const int32_t* table = b.pages + desc.page_offset;
  const int64_t kv_len = desc.n_past + desc.T;
  // Causal: row t sees keys 0 .. n_past + t. Rows past T (a partial last tile) are computed
  // like row T - 1 and not stored.
  const int64_t tile_last_page = (desc.n_past + min(t0 + kTileRows - 1, desc.T - 1)) / kTileKeys;
  // This block's pages: first_page .. last_page, all of the tile's or a split's run of them.
  // A tile of fewer pages than splits leaves some splits none: they load their first page
  // (one of the tile's), walk nothing and store max -inf for the merge to skip.
  int64_t first_page = 0, last_page = tile_last_page;
  int split = 0;
  if constexpr (kSplit) {
    split = static_cast<int>(blockIdx.x / n_head);
    const int64_t n_pages = tile_last_page + 1;
    first_page = n_pages * split / splits;
    last_page = n_pages * (split + 1) / splits - 1;
  }
  const int row_a = warp * 16 + g, row_b = row_a + 8;  // this lane's rows of the tile
  const int64_t limit_a = desc.n_past + min(t0 + row_a, desc.T - 1);
  const int64_t limit_b = desc.n_past + min(t0 + row_b, desc.T - 1);
  const int64_t warp_limit = desc.n_past + min(t0 + warp * 16 + 15, desc.T - 1);

  load_page<D>(k_tile, k_head, b.page_bytes * static_cast<size_t>(table[first_page]), b.row_bytes,
               first_page * kTileKeys, kv_len);

  // Each warp stages its own 16 query rows, scaled by 2^(15 - e) where 2^e > max |q| >= 2^(e-1).
#pragma unroll 4
  for (int r = warp * 16; r < warp * 16 + 16; ++r) {
    const int64_t t = t0 + r;
    const float* src = q + static_cast<size_t>(desc.row + min(t, desc.T - 1)) * q_stride + h * D;
    float x[D / 32];
    float amax = 0.f;
#pragma unroll
    for (int i = 0; i < D / 32; ++i) {
      x[i] = t < desc.T ? src[lane + 32 * i] : 0.f;
      amax = fmaxf(amax, fabsf(x[i]));
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, o));
    int e = 0;
    frexpf(amax, &e);
#pragma unroll
    for (int i = 0; i < D / 32; ++i) {
      const float v = ldexpf(x[i], 15 - e);
      const __half hi = __float2half_rn(v);
      q_hi[r * kLd + lane + 32 * i] = hi;
      q_lo[r * kLd + lane + 32 * i] = __float2half_rn(v - __half2float(hi));
    }
    if (lane == 0) row_factor[r] = ldexpf(scale, e - 15);
  }
  __syncthreads();
  const float factor_a = row_factor[row_a], factor_b = row_factor[row_b];

  float acc[kDimTiles][4];
#pragma unroll
  for (int n = 0; n < kDimTiles; ++n) acc[n][0] = acc[n][1] = acc[n][2] = acc[n][3] = 0.f;
  float max_a = -INFINITY, max_b = -INFINITY;  // running max of rows a and b
  float sum_a = 0.f, sum_b = 0.f;              // this lane's share of the running sums

  // ldmatrix row addresses of this lane: matrix lane / 8, row lane % 8.
  const int q_row = warp * 16 + lane % 8 + 8 * ((lane / 8) % 2);
  const int q_col = 8 * (lane / 16);
  const int k_row = lane % 8 + 8 * (lane / 16);
  const int k_col = 8 * ((lane / 8) % 2);
  const int v_row = lane % 8 + 8 * ((lane / 8) % 2);
  const int v_col = 8 * (lane / 16);

  for (int64_t p = first_page; p <= last_page; ++p) {
    const int64_t first_key = p * kTileKeys;
    const size_t page_at = b.page_bytes * static_cast<size_t>(table[p]);
    cp_async_wait_all();  // this page's keys
    __syncthreads();      // ... from every thread; every warp is done with the last values
    load_page<D>(v_tile, v_head, page_at, b.row_bytes, first_key, kv_len);
    // Later pages than the last key of the warp's rows hold nothing it sees (pages from 0 up
    // to there are all active, so the running max is finite after page 0: key 0 is seen;
    // not so in a split, see below).
    const bool active = first_key <= warp_limit;
    unsigned p_hi[2][4], p_lo[2][4];   // probabilities as A fragments of P*V, keys 16k..16k+15
    float corr_a = 1.f, corr_b = 1.f;  // rescale of the output for the new running max
    if (active) {
      float s[4][4];  // scores: 8-key column tiles
#pragma unroll
      for (int n = 0; n < 4; ++n) s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.f;
#pragma unroll 8
      for (int kc = 0; kc < D / 16; ++kc) {
        unsigned a_hi[4], a_lo[4];
        ldmatrix_x4(a_hi, smem_addr(q_hi + q_row * kLd + kc * 16 + q_col));
        ldmatrix_x4(a_lo, smem_addr(q_lo + q_row * kLd + kc * 16 + q_col));
#pragma unroll
        for (int np = 0; np < 2; ++np) {  // key tiles 2np and 2np + 1
          unsigned kb[4];
          ldmatrix_x4(kb, smem_addr(k_tile + (np * 16 + k_row) * kLd + kc * 16 + k_col));
          mma_16816(s[2 * np], a_hi, kb[0], kb[1]);
          mma_16816(s[2 * np], a_lo, kb[0], kb[1]);
          mma_16816(s[2 * np + 1], a_hi, kb[2], kb[3]);
          mma_16816(s[2 * np + 1], a_lo, kb[2], kb[3]);
        }
      }
      float new_a = max_a, new_b = max_b;
#pragma unroll
      for (int n = 0; n < 4; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int64_t key = first_key + n * 8 + 2 * quad + (e & 1);
          const bool upper = e < 2;  // row a
          const float x = s[n][e] * (upper ? factor_a : factor_b);
          s[n][e] = key <= (upper ? limit_a : limit_b) ? x : -INFINITY;
          if (upper)
            new_a = fmaxf(new_a, s[n][e]);
          else
            new_b = fmaxf(new_b, s[n][e]);
        }
#pragma unroll
      for (int o = 1; o <= 2; o <<= 1) {  // the four lanes of a row
        new_a = fmaxf(new_a, __shfl_xor_sync(0xffffffffu, new_a, o));
        new_b = fmaxf(new_b, __shfl_xor_sync(0xffffffffu, new_b, o));
      }
      float base_a = new_a, base_b = new_b;  // the max the exponents subtract
      if constexpr (kSplit) {
        // A split may start past a row's last key: until a page with one of its keys the
        // row's max stays -inf, and exp(-inf - -inf) would be NaN; with 0 instead its
        // probabilities, sum and output stay 0.
        if (base_a == -INFINITY) base_a = 0.f;
        if (base_b == -INFINITY) base_b = 0.f;
      }
      corr_a = expf(max_a - base_a);  // 0 on the first page
      corr_b = expf(max_b - base_b);
      max_a = new_a;
      max_b = new_b;
      sum_a *= corr_a;
      sum_b *= corr_b;
#pragma unroll
      for (int n = 0; n < 4; ++n) {
        const float p0 = expf(s[n][0] - base_a), p1 = expf(s[n][1] - base_a);
        const float p2 = expf(s[n][2] - base_b), p3 = expf(s[n][3] - base_b);
        sum_a += p0 + p1;
        sum_b += p2 + p3;
        // Score tile n is half of A fragment n / 2: columns 0-7 (regs 0, 1) or 8-15 (2, 3).
        const int k = n / 2, slot = 2 * (n % 2);
        split_pair(p0 * kProbScale, p1 * kProbScale, p_hi[k][slot], p_lo[k][slot]);
        split_pair(p2 * kProbScale, p3 * kProbScale, p_hi[k][slot + 1], p_lo[k][slot + 1]);
      }
    }
    cp_async_wait_all();  // this page's values
    __syncthreads();      // ... from every thread; every warp is done with the keys
    if (p < last_page)
      load_page<D>(k_tile, k_head, b.page_bytes * static_cast<size_t>(table[p + 1]), b.row_bytes,
                   first_key + kTileKeys, kv_len);
    if (active) {
      // The page's P*V starts from zero in the tensor cores, whose float accumulation rounds
      // toward zero: summed there over a long context the bias grew to 2e-5 of max |out| at
      // 8K keys. Each page's share joins the output in an FMA (round to nearest) instead,
      // together with the rescale for the new running max.
#pragma unroll
      for (int dp = 0; dp < D / 16; ++dp) {  // output column tiles 2dp and 2dp + 1
        float pv[2][4] = {};
#pragma unroll
        for (int k = 0; k < 2; ++k) {
          unsigned vb[4];
          ldmatrix_x4_trans(vb, smem_addr(v_tile + (k * 16 + v_row) * kLd + dp * 16 + v_col));
          mma_16816(pv[0], p_lo[k], vb[0], vb[1]);
          mma_16816(pv[0], p_hi[k], vb[0], vb[1]);
          mma_16816(pv[1], p_lo[k], vb[2], vb[3]);
          mma_16816(pv[1], p_hi[k], vb[2], vb[3]);
        }
#pragma unroll
        for (int i = 0; i < 2; ++i) {
          float* a = acc[2 * dp + i];
          a[0] = fmaf(a[0], corr_a, pv[i][0]);
          a[1] = fmaf(a[1], corr_a, pv[i][1]);
          a[2] = fmaf(a[2], corr_b, pv[i][2]);
          a[3] = fmaf(a[3], corr_b, pv[i][3]);
        }
      }
    }
  }

  if constexpr (kSplit) cp_async_wait_all();  // the unused page of a split with none
#pragma unroll
  for (int o = 1; o <= 2; o <<= 1) {
    sum_a += __shfl_xor_sync(0xffffffffu, sum_a, o);
    sum_b += __shfl_xor_sync(0xffffffffu, sum_b, o);
  }
  const float denom_a = sum_a * kProbScale, denom_b = sum_b * kProbScale;
  const int64_t t_a = t0 + row_a, t_b = t0 + row_b;
  if constexpr (kSplit) {
    // The denominators carry kProbScale like acc, so the merge needs no scale. A row that saw
    // no key here leaves max -inf (the merge skips it) and sums 0.
    float* part_a = partial_at<D>(partials, desc.row + t_a, h, split, splits, n_head);
    float* part_b = partial_at<D>(partials, desc.row + t_b, h, split, splits, n_head);
#pragma unroll
    for (int n = 0; n < kDimTiles; ++n) {
      if (t_a < desc.T) {
        part_a[n * 8 + 2 * quad] = acc[n][0];
        part_a[n * 8 + 2 * quad + 1] = acc[n][1];
      }
      if (t_b < desc.T) {
        part_b[n * 8 + 2 * quad] = acc[n][2];
        part_b[n * 8 + 2 * quad + 1] = acc[n][3];
      }
    }
    if (quad == 0 && t_a < desc.T) {
      part_a[D] = max_a;
      part_a[D + 1] = denom_a;
    }
    if (quad == 0 && t_b < desc.T) {
      part_b[D] = max_b;
      part_b[D + 1] = denom_b;
    }
    return;
  }
  const int64_t width = n_head * D;
  float* out_a = out + (desc.row + t_a) * width + h * D + 2 * quad;
  float* out_b = out + (desc.row + t_b) * width + h * D + 2 * quad;
#pragma unroll
  for (int n = 0; n < kDimTiles; ++n) {
    if (t_a < desc.T) {
      out_a[n * 8] = acc[n][0] / denom_a;
      out_a[n * 8 + 1] = acc[n][1] / denom_a;
    }
    if (t_b < desc.T) {
      out_b[n * 8] = acc[n][2] / denom_b;
      out_b[n * 8 + 1] = acc[n][3] / denom_b;
    }
  }
}

// out = the splits' partials of the flash sequences' rows merged: one block per (row, head),
// as paged_attention.cu's merge_splits_kernel does.
template <int D>
__global__ void flash_merge_kernel(PagedBatch b, const float* partials, int splits, int64_t n_head,
                                   float* out) {
  pdl_begin();
  const int64_t r = blockIdx.x, h = blockIdx.y;
  const int32_t s = b.row_to_seq[r];
  if (s < 0 || b.descs[s].T < b.flash_rows) return;  // no row of flash_prefill's
  const float* row_parts = partials + (r * n_head + h) * splits * (D + 2);
  float m = -INFINITY;
  for (int sp = 0; sp < splits; ++sp) m = fmaxf(m, row_parts[sp * (D + 2) + D]);
  for (int d = static_cast<int>(threadIdx.x); d < D; d += static_cast<int>(blockDim.x)) {
    float total = 0.f, value = 0.f;
    for (int sp = 0; sp < splits; ++sp) {
      const float* part = row_parts + sp * (D + 2);
      if (part[D] == -INFINITY) continue;  // a split past this row's keys
      const float f = expf(part[D] - m);
      total += part[D + 1] * f;
      value += part[d] * f;
    }
    out[(r * n_head + h) * D + d] = value / total;
  }
}

// A whole number >= 0 from the environment variable `name`, read on every call so that tests
// can switch it; `fallback` when unset or malformed (warned about once).
int64_t count_setting(const char* name, int64_t fallback, std::atomic<bool>& warned) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return fallback;
  char* end = nullptr;
  const long long n = std::strtoll(text, &end, 10);
  if (*end != '\0' || n < 0) {
    if (!warned.exchange(true))
      std::fprintf(stderr, "hostlm: ignoring %s=%s (want a whole number >= 0); using %lld\n", name,
                   text, static_cast<long long>(fallback));
    return fallback;
  }
  return n;
}

int64_t min_rows_setting() {
  static std::atomic<bool> warned{false};
  return count_setting("HOSTLM_CUDA_FLASH_MIN_ROWS", kFlashPrefillMinRows, warned);
}

// HOSTLM_CUDA_FLASH_SPLITS: N >= 1 forces N splits (at most kMaxSplits); 0 or unset: the cost
// model's choice.
int64_t splits_setting() {
  static std::atomic<bool> warned{false};
  return count_setting("HOSTLM_CUDA_FLASH_SPLITS", 0, warned);
}

// What choose_splits needs of the device, per head_dim.
struct DeviceFit {
  int64_t sms = 1;
  int64_t blocks_per_sm = 1;  // resident blocks of the split kernel an SM holds
};

// Over 48 KiB of shared memory needs the opt-in, and the carveout lets two blocks share an
// SM; set once per device (not a stream operation, but kept out of every launch anyway),
// when the SM count and the kernel's occupancy are read too.
template <int D>
cudaError_t prepare(DeviceFit& fit) {
  static std::mutex mutex;
  static std::map<int, DeviceFit> done;
  constexpr int bytes = static_cast<int>(FlashSmem<D>::kBytes);
  int device = 0;
  cudaError_t status = cudaGetDevice(&device);
  if (status != cudaSuccess) return status;
  const std::lock_guard<std::mutex> lock(mutex);
  if (const auto it = done.find(device); it != done.end()) {
    fit = it->second;
    return cudaSuccess;
  }
  for (const void* kernel : {reinterpret_cast<const void*>(flash_prefill_kernel<D, false>),
                             reinterpret_cast<const void*>(flash_prefill_kernel<D, true>)}) {
    status = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
    if (status == cudaSuccess)
      status = cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout,
                                    cudaSharedmemCarveoutMaxShared);
    if (status != cudaSuccess) return status;
  }
  int sms = 0, per_sm = 0;
  status = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  if (status == cudaSuccess)
    status = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, flash_prefill_kernel<D, true>,
                                                           kFlashThreads, bytes);
  if (status != cudaSuccess) return status;
  fit.sms = std::max(sms, 1);
  fit.blocks_per_sm = std::max(per_sm, 1);
  done[device] = fit;
  return cudaSuccess;
}

// Splits of each tile's pages. Blocks of one launch do about the same work (tiles of one
// chunk differ by a page or two), so they run in waves of sms * blocks_per_sm: the time is
// taken as waves * (pages a block walks + kSplitCostPages), and the cheapest S wins (the
// smallest on a tie). This assumes blocks sharing an SM do not slow each other much, true
// while they wait on memory latency rather than bandwidth; with enough blocks to fill every
// slot already, S stays 1. The blocks are counted from the batch's rows (every sequence at
// least one tile when all are flash_prefill's), the pages as those of a middle tile of the
// longest context (exact for one sequence): a fresh prompt, whose tiles see few keys on
// average, is not split.
int choose_splits(const PagedBatch& b, int64_t n_head, const DeviceFit& fit) {
  if (const int64_t forced = splits_setting(); forced > 0)
    return static_cast<int>(std::min<int64_t>(forced, kMaxSplits));
  int64_t tiles = (b.rows + kTileRows - 1) / kTileRows;
  if (b.min_t >= b.flash_rows) tiles = std::max(tiles, b.n_seq);
  const int64_t blocks = n_head * tiles;
  const int64_t slots = fit.sms * fit.blocks_per_sm;
  const int64_t pages = (b.max_kv - b.max_t / 2 + kTileKeys - 1) / kTileKeys;
  if (blocks >= slots || pages < 2 * kMinSplitPages) return 1;
  const auto cost = [&](int64_t s) {
    return (blocks * s + slots - 1) / slots * ((pages + s - 1) / s + kSplitCostPages);
  };
  int best = 1;
  for (int s = 2; s <= kMaxSplits && s * kMinSplitPages <= pages; ++s)
    if (cost(s) < cost(best)) best = s;
  return best;
}

template <int D>
cudaError_t launch(const PagedBatch& b, const float* q, size_t q_stride, int64_t n_head,
                   float scale, float* out, float* scratch, cudaStream_t stream) {
  constexpr size_t bytes = FlashSmem<D>::kBytes;
  DeviceFit fit;
  if (const cudaError_t status = prepare<D>(fit); status != cudaSuccess) return status;
  const int splits = choose_splits(b, n_head, fit);
  const auto tiles = static_cast<unsigned>((b.max_t + kTileRows - 1) / kTileRows);
  if (splits == 1) {
    const dim3 grid(static_cast<unsigned>(n_head), static_cast<unsigned>(b.n_seq), tiles);
    launch_kernel(flash_prefill_kernel<D, false>, grid, kFlashThreads, bytes, stream, b, q,
                  q_stride, n_head, scale, 1, nullptr, out);
    return cudaGetLastError();
  }
  if (scratch == nullptr) return cudaErrorInvalidValue;
  const dim3 grid(static_cast<unsigned>(n_head * splits), static_cast<unsigned>(b.n_seq), tiles);
  launch_kernel(flash_prefill_kernel<D, true>, grid, kFlashThreads, bytes, stream, b, q, q_stride,
                n_head, scale, splits, scratch, out);
  if (const cudaError_t status = cudaGetLastError(); status != cudaSuccess) return status;
  const dim3 merge_grid(static_cast<unsigned>(b.rows), static_cast<unsigned>(n_head));
  launch_kernel(flash_merge_kernel<D>, merge_grid, std::min(D, 128), 0, stream, b, scratch, splits,
                n_head, out);
  return cudaGetLastError();
}

template <int D>
int splits_for(const PagedBatch& b, int64_t n_head) {
  DeviceFit fit;
  if (prepare<D>(fit) != cudaSuccess) return 1;  // flash_prefill fails the same way
  return choose_splits(b, n_head, fit);
}

}  // namespace

int64_t flash_prefill_rows(const PagedBatch& b, int64_t n_head) {
  const int64_t hd = b.head_dim;
  if (b.type != DType::F16 || (hd != 64 && hd != 128 && hd != 256) || !b.aligned16 ||
      b.n_head_kv <= 0 || n_head % b.n_head_kv != 0 || n_head > kMaxGridY || b.n_seq > kMaxGridY ||
      (b.max_t + kTileRows - 1) / kTileRows > kMaxGridY)
    return 0;
  const int64_t min_rows = min_rows_setting();
  return min_rows > 0 && b.max_t >= min_rows ? min_rows : 0;
}

int flash_prefill_splits(const PagedBatch& b, int64_t n_head) {
  if (b.rows == 0 || b.flash_rows <= 0) return 1;
  switch (b.head_dim) {
    case 64:
      return splits_for<64>(b, n_head);
    case 128:
      return splits_for<128>(b, n_head);
    case 256:
      return splits_for<256>(b, n_head);
    default:
      return 1;
  }
}

size_t flash_prefill_scratch(const PagedBatch& b, int64_t n_head) {
  const int splits = flash_prefill_splits(b, n_head);
  return splits == 1 ? 0 : static_cast<size_t>(b.rows * n_head * splits * (b.head_dim + 2));
}

cudaError_t flash_prefill(const PagedBatch& b, const float* q, size_t q_stride, int64_t n_head,
                          float scale, float* out, float* scratch, cudaStream_t stream) {
  if (b.rows == 0 || b.flash_rows <= 0) return cudaSuccess;
  switch (b.head_dim) {
    case 64:
      return launch<64>(b, q, q_stride, n_head, scale, out, scratch, stream);
    case 128:
      return launch<128>(b, q, q_stride, n_head, scale, out, scratch, stream);
    case 256:
      return launch<256>(b, q, q_stride, n_head, scale, out, scratch, stream);
    default:
      return cudaErrorInvalidValue;
  }
}

}  // namespace hostlm::cuda
