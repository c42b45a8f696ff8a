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
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <set>

#include "common.cuh"
#include "kernels.h"

namespace hostlm::cuda {
namespace {

constexpr int kTileRows = 64;          // query rows of a block
constexpr int kTileKeys = 32;          // keys per step: one KV page (kKvPageTokens)
constexpr int kFlashThreads = 128;     // four warps of 16 rows
constexpr int kPad = 8;                // halves after each shared row: ldmatrix without conflicts
constexpr float kProbScale = 32768.f;  // 2^15, see "Accuracy" above

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

__device__ __forceinline__ unsigned smem_addr(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// Four 8x8 b16 matrices; lanes 8i..8i+7 give the row addresses of matrix i.
__device__ __forceinline__ void ldmatrix_x4(unsigned (&r)[4], unsigned addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr)
               : "memory");
}

__device__ __forceinline__ void ldmatrix_x4_trans(unsigned (&r)[4], unsigned addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr)
               : "memory");
}

// d += a * b over one 16x8x16 tile. Fragments (g = lane / 4, q = lane % 4): a holds rows g
// and g + 8 at columns 2q, 2q + 1 (+ 8); b holds rows 2q, 2q + 1 (+ 8) of column g; d holds
// rows g (d[0], d[1]) and g + 8 (d[2], d[3]) at columns 2q, 2q + 1.
__device__ __forceinline__ void mma_16816(float (&d)[4], const unsigned (&a)[4], unsigned b0,
                                          unsigned b1) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ __forceinline__ void cp_async_16(unsigned dst, const void* src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(src) : "memory");
}
__device__ __forceinline__ void cp_async_commit() {
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}
__device__ __forceinline__ void cp_async_wait_all() {
  asm volatile("cp.async.wait_group 0;\n" ::: "memory");
}

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

// Grid: (query head, sequence, tile of rows counted from the last). Block: kFlashThreads.
template <int D>
__global__ void __launch_bounds__(kFlashThreads, 2)
    flash_prefill_kernel(PagedBatch b, const float* q, size_t q_stride, int64_t n_head, float scale,
                         float* out) {
  constexpr int kLd = FlashSmem<D>::kLd;
  constexpr int kDimTiles = D / 8;  // 8-wide column tiles of the output
  extern __shared__ __align__(16) unsigned char flash_smem[];
  __half* q_hi = reinterpret_cast<__half*>(flash_smem);
  __half* q_lo = q_hi + FlashSmem<D>::kQHalves;
  __half* k_tile = q_lo + FlashSmem<D>::kQHalves;
  __half* v_tile = k_tile + FlashSmem<D>::kKvHalves;
  float* row_factor = reinterpret_cast<float*>(v_tile + FlashSmem<D>::kKvHalves);

  const int64_t h = blockIdx.x;
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
  const int64_t last_page = (desc.n_past + min(t0 + kTileRows - 1, desc.T - 1)) / kTileKeys;
  const int row_a = warp * 16 + g, row_b = row_a + 8;  // this lane's rows of the tile
  const int64_t limit_a = desc.n_past + min(t0 + row_a, desc.T - 1);
  const int64_t limit_b = desc.n_past + min(t0 + row_b, desc.T - 1);
  const int64_t warp_limit = desc.n_past + min(t0 + warp * 16 + 15, desc.T - 1);

  load_page<D>(k_tile, k_head, b.page_bytes * static_cast<size_t>(table[0]), b.row_bytes, 0,
               kv_len);

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

  for (int64_t p = 0; p <= last_page; ++p) {
    const int64_t first_key = p * kTileKeys;
    const size_t page_at = b.page_bytes * static_cast<size_t>(table[p]);
    cp_async_wait_all();  // this page's keys
    __syncthreads();      // ... from every thread; every warp is done with the last values
    load_page<D>(v_tile, v_head, page_at, b.row_bytes, first_key, kv_len);
    // Later pages than the last key of the warp's rows hold nothing it sees (pages from 0 up
    // to there are all active, so the running max is finite after page 0: key 0 is seen).
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
      corr_a = expf(max_a - new_a);  // 0 on the first page
      corr_b = expf(max_b - new_b);
      max_a = new_a;
      max_b = new_b;
      sum_a *= corr_a;
      sum_b *= corr_b;
#pragma unroll
      for (int n = 0; n < 4; ++n) {
        const float p0 = expf(s[n][0] - new_a), p1 = expf(s[n][1] - new_a);
        const float p2 = expf(s[n][2] - new_b), p3 = expf(s[n][3] - new_b);
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

#pragma unroll
  for (int o = 1; o <= 2; o <<= 1) {
    sum_a += __shfl_xor_sync(0xffffffffu, sum_a, o);
    sum_b += __shfl_xor_sync(0xffffffffu, sum_b, o);
  }
  const float denom_a = sum_a * kProbScale, denom_b = sum_b * kProbScale;
  const int64_t width = n_head * D;
  const int64_t t_a = t0 + row_a, t_b = t0 + row_b;
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

// HOSTLM_CUDA_FLASH_MIN_ROWS, read on every call so that tests can switch it.
int64_t min_rows_setting() {
  const char* text = std::getenv("HOSTLM_CUDA_FLASH_MIN_ROWS");
  if (text == nullptr || *text == '\0') return kFlashPrefillMinRows;
  char* end = nullptr;
  const long long n = std::strtoll(text, &end, 10);
  if (*end != '\0' || n < 0) {
    static std::atomic<bool> warned{false};
    if (!warned.exchange(true))
      std::fprintf(stderr,
                   "hostlm: ignoring HOSTLM_CUDA_FLASH_MIN_ROWS=%s (want a whole number >= 0); "
                   "using %lld\n",
                   text, static_cast<long long>(kFlashPrefillMinRows));
    return kFlashPrefillMinRows;
  }
  return n;
}

// Over 48 KiB of shared memory needs the opt-in, and the carveout lets two blocks share an
// SM; set once per device (not a stream operation, but kept out of every launch anyway).
template <int D>
cudaError_t prepare(size_t bytes) {
  static std::mutex mutex;
  static std::set<int> done;
  int device = 0;
  cudaError_t status = cudaGetDevice(&device);
  if (status != cudaSuccess) return status;
  const std::lock_guard<std::mutex> lock(mutex);
  if (done.count(device)) return cudaSuccess;
  status =
      cudaFuncSetAttribute(flash_prefill_kernel<D>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                           static_cast<int>(bytes));
  if (status == cudaSuccess)
    status = cudaFuncSetAttribute(flash_prefill_kernel<D>,
                                  cudaFuncAttributePreferredSharedMemoryCarveout,
                                  cudaSharedmemCarveoutMaxShared);
  if (status == cudaSuccess) done.insert(device);
  return status;
}

template <int D>
cudaError_t launch(const PagedBatch& b, const float* q, size_t q_stride, int64_t n_head,
                   float scale, float* out, cudaStream_t stream) {
  constexpr size_t bytes = FlashSmem<D>::kBytes;
  if (const cudaError_t status = prepare<D>(bytes); status != cudaSuccess) return status;
  const dim3 grid(static_cast<unsigned>(n_head), static_cast<unsigned>(b.n_seq),
                  static_cast<unsigned>((b.max_t + kTileRows - 1) / kTileRows));
  flash_prefill_kernel<D>
      <<<grid, kFlashThreads, bytes, stream>>>(b, q, q_stride, n_head, scale, out);
  return cudaGetLastError();
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

cudaError_t flash_prefill(const PagedBatch& b, const float* q, size_t q_stride, int64_t n_head,
                          float scale, float* out, cudaStream_t stream) {
  if (b.rows == 0 || b.flash_rows <= 0) return cudaSuccess;
  switch (b.head_dim) {
    case 64:
      return launch<64>(b, q, q_stride, n_head, scale, out, stream);
    case 128:
      return launch<128>(b, q, q_stride, n_head, scale, out, stream);
    case 256:
      return launch<256>(b, q, q_stride, n_head, scale, out, stream);
    default:
      return cudaErrorInvalidValue;
  }
}

}  // namespace hostlm::cuda
