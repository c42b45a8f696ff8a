// Q4_K weights times a few dozen tokens: the decode steps of continuous batching on the matrix
// type that holds most of a Q4_K_M model.
//
// Why its own kernel: the generic tile product (tile_mma.cu) keeps one chunk of weights in
// flight per block, and Nsight Compute showed it latency-bound (an 8192 x 4096 product at
// 0.45 TB/s, DRAM 9% busy). Here the raw bytes of several chunks are in flight at once: a
// ring of kStages shared-memory stages filled by cp.async, one barrier per chunk, while the
// warps work on the oldest stage. Nothing is expanded through shared memory: each lane turns
// the nibbles it loads straight into its tensor-core fragments.
//
// Fragment layout. A block has 8 (or 6) warps of 16 weight rows; a chunk is one 256-value Q4_K
// block per row. In sub-block pair c (32 quant bytes: low nibbles are sub-block 2c, high 2c + 1)
// lane (g = lane / 4, q = lane % 4) loads bytes 8q .. 8q + 7 of rows g and g + 8. The
// m16n8k16 products see the values of a sub-block in a permuted order, the same for weights
// and activations: product h (0, 1) takes values 8q + 4h + {0, 1} as the fragment's columns
// 2q, 2q + 1 and 8q + 4h + {2, 3} as 2q + 8, 2q + 9. So a lane's weight fragment is bytes
// 4h .. 4h + 3 of its 8, and its activation fragment for token g is 8 consecutive halves: one
// 128-bit shared load serves both products.
//
// Values are expanded as tile_mma.cu does (decode_range_half): a * q + m rounded once in half,
// with a = d * scale and m = -dmin * min rounded to half first; the products are the same.
//
// Measured (9B Q4_K_M shape, H200, hostlm bench --parallel): decode step at 32 streams 15.6 ->
// 11.0 ms, at 64 streams 26.2 -> 17.7 ms against the generic kernel. Still not bandwidth-bound:
// Nsight Compute puts a 12288 x 4096 product at 64 tokens at 48 us, latency-bound (about 820
// instructions per warp and chunk, 6 cycles between a warp's issues, two warps per scheduler).
//
// Two changes for that (session 23, bench_cuda_quant, alone):
//   - Token warps: at 33-64 tokens each 16 rows get two warps, each with half the tokens (16
//     warps a block, 114 registers instead of 164). Both expand the same weights, but twice
//     the warps hide each other's latency: 4096 x 4096 at 64 tokens 24.2 -> 22.7 us. At 32
//     tokens it lost (4096 x 12288: 29.1 -> 33.1 us), so there one warp keeps all tokens.
//   - A 96-row block shape where 128-row blocks would leave SMs idle: 12,288 rows are 96
//     blocks of 128 for 132 SMs, and column splits only add a second wave; 128 blocks of 96
//     fill them (12288 x 4096: 45.0 -> 41.6 us at 64 tokens, 23.9 -> 20.6 us at 16).
// Filling the stages with bulk copies (the tensor memory accelerator) instead was slower
// (78.8 us against 45.4): a bulk copy takes uniform operands, so a warp's per-lane copies are
// issued one after another.
#include <cuda_fp16.h>

#include <cstdint>
#include <cstdlib>

#include "cuda/launch.cuh"
#include "cuda/quants/tile_q4k.h"
#include "cuda/tensor_core.cuh"

namespace hostlm::cuda::quants {
namespace {

constexpr int kChunk = 256;  // columns per chunk: one Q4_K block
// Bytes per staged row. Quants: 128 + 32, so the four rows one phase of a 64-bit shared load
// reads fall on distinct banks. Activations (256 halves): 512 + 64, likewise for the eight
// tokens of a 128-bit load.
constexpr int kQuantStride = 160;
constexpr int kHeadBytes = 16;  // d, dmin, scales[12]
constexpr int kActStride = 576;
constexpr int kSmemPerSm = 233472;  // sm_90: 228 KiB, of which 1 KiB per block is the driver's

// A block shape: kW warps of 16 rows, and shared-memory stages per token bucket (16, 32, 64).
// With kTW token warps, each 16 rows get kTW warps, each taking kN / kTW of the tokens.
template <int kW, int kS16, int kS32, int kS64>
struct Shape {
  static constexpr int kWarpRows = kW, kRows = kW * 16;
  static constexpr __host__ __device__ int threads(int tw) { return kW * 32 * tw; }
  static constexpr __host__ __device__ int stages(int n) {
    return n == 16 ? kS16 : n == 32 ? kS32 : kS64;
  }
  static constexpr __host__ __device__ int stage_bytes(int n) {
    return kRows * kQuantStride + kRows * kHeadBytes + n * kActStride;
  }
  static constexpr size_t smem_bytes(int n) {
    return static_cast<size_t>(stages(n)) * static_cast<size_t>(stage_bytes(n));
  }
  // Blocks per SM for the launch bound: what shared memory allows, and no fewer registers
  // than each bucket needs without spilling (ptxas: 112, 112 and 164 with one token warp; 128
  // is the most two token warps of 8 row warps can have, and enough for their half tokens).
  static constexpr int min_blocks(int n, int tw) {
    const int by_smem = kSmemPerSm / (static_cast<int>(smem_bytes(n)) + 1024);
    const int regs = tw > 1 ? 128 : n == 16 ? 112 : n == 32 ? 112 : 164;
    const int by_regs = 65536 / (threads(tw) * regs);
    const int b = by_smem < by_regs ? by_smem : by_regs;
    return b < 1 ? 1 : b;
  }
};

// 8 warps (128 rows); 3 stages at 16 and 64 tokens (two and one blocks per SM), 4 at 32 (one).
// Measured against 4 warps with 3 stages and 4 or 8 warps with 2 stages (9B shape, H200,
// 16 / 32 / 64 streams): equal at 16, up to 4% ahead at 32 and 64.
using Chosen = Shape<8, 3, 4, 3>;
// 6 warps (96 rows), for row counts that 128-row blocks spread badly over the SMs: 12,288 rows
// are 96 blocks of 128 for 132 SMs (a quarter idle, and splitting the columns only adds a
// second wave), but 128 blocks of 96.
using Narrow = Shape<6, 3, 4, 3>;

struct Q4kArgs {
  QuantMatrix w;
  const __half* x;
  TileOutput out;
  int chunks_per_split;
};

template <int kPending>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending) : "memory");
}

// Where this thread's copies of chunk 0 come from; chunk c is a fixed stride further. Sources
// outside the matrix (or past the last token) stay at a mapped address and copy zeros. Worked
// out once per block: per chunk the address arithmetic was a tenth of the kernel's instructions.
template <class S, int kN, int kThreads>
struct StageSources {
  static constexpr int kQuantPieces = S::kRows * 8, kActPieces = kN * 32;        // 16 bytes each
  static constexpr int kQuantCopies = (kQuantPieces + kThreads - 1) / kThreads;  // per thread
  static constexpr int kActCopies = (kActPieces + kThreads - 1) / kThreads;
  // Whether this thread has a copy j of `pieces` (only the last may be missing).
  static __device__ __forceinline__ bool has(int j, int pieces) {
    return (j + 1) * kThreads <= pieces || static_cast<int>(threadIdx.x) + j * kThreads < pieces;
  }
  const uint8_t* quant[kQuantCopies];
  const uint8_t* head;
  const __half* act[kActCopies];
  unsigned quant_ok, act_ok;  // bit j: copy j is inside
  bool head_ok;

  __device__ StageSources(const Q4kArgs& a, int64_t row0, int t0) {
    const QuantMatrix& w = a.w;
    const int tid = threadIdx.x;
    quant_ok = act_ok = 0;
#pragma unroll
    for (int j = 0; j < kQuantCopies; ++j) {
      const int i = tid + j * kThreads, r = i / 8, piece = i % 8;
      const bool inside = row0 + r < w.rows;
      quant[j] = inside ? w.region[0] + (row0 + r) * w.nb * 128 + piece * 16 : w.region[0];
      quant_ok |= inside ? 1u << j : 0u;
    }
    head_ok = tid < S::kRows && row0 + tid < w.rows;
    head = head_ok ? w.region[1] + (row0 + tid) * w.nb * kHeadBytes : w.region[1];
#pragma unroll
    for (int j = 0; j < kActCopies; ++j) {
      const int i = tid + j * kThreads, t = i / 32, piece = i % 32;
      const bool valid = t0 + t < a.out.T;
      act[j] = valid ? a.x + int64_t{t0 + t} * w.cols + piece * 8 : a.x;
      act_ok |= valid ? 1u << j : 0u;
    }
  }

  // Issues the copies of chunk `chunk` into `stage`.
  __device__ __forceinline__ void load(int chunk, unsigned stage) const {
    load_weights(chunk, stage);
    load_acts(chunk, stage);
  }

  // The weight bytes alone: they do not depend on the previous kernel.
  __device__ __forceinline__ void load_weights(int chunk, unsigned stage) const {
    const int tid = threadIdx.x;
    const unsigned heads = stage + S::kRows * kQuantStride;
#pragma unroll
    for (int j = 0; j < kQuantCopies; ++j) {
      const int i = tid + j * kThreads, r = i / 8, piece = i % 8;
      const bool ok = (quant_ok >> j) & 1u;
      if (has(j, kQuantPieces))
        cp_async_16_or_zero(stage + r * kQuantStride + piece * 16,
                            ok ? quant[j] + chunk * 128 : quant[j], ok);
    }
    if (tid < S::kRows)
      cp_async_16_or_zero(heads + tid * kHeadBytes, head_ok ? head + chunk * kHeadBytes : head,
                          head_ok);
  }

  // The activations, written by the kernel before this one.
  __device__ __forceinline__ void load_acts(int chunk, unsigned stage) const {
    const int tid = threadIdx.x;
    const unsigned acts = stage + S::kRows * kQuantStride + S::kRows * kHeadBytes;
#pragma unroll
    for (int j = 0; j < kActCopies; ++j) {
      const int i = tid + j * kThreads, t = i / 32, piece = i % 32;
      const bool ok = (act_ok >> j) & 1u;
      if (has(j, kActPieces))
        cp_async_16_or_zero(acts + t * kActStride + piece * 16,
                            ok ? act[j] + chunk * kChunk : act[j], ok);
    }
  }
};

__device__ __forceinline__ uint2 lds64(const unsigned char* p) {
  return *reinterpret_cast<const uint2*>(p);
}
__device__ __forceinline__ uint4 lds128(const unsigned char* p) {
  return *reinterpret_cast<const uint4*>(p);
}

// Values of bytes (0, 1) or (2, 3) of `nibbles` (each < 16) as half2, a * q + m.
__device__ __forceinline__ unsigned expand2(uint32_t nibbles, unsigned selector, __half2 a,
                                            __half2 m) {
  const uint32_t bits = __byte_perm(nibbles, 0x64646464u, selector);  // 1024 + q, exact
  const __half2 q = __hsub2(*reinterpret_cast<const __half2*>(&bits), __float2half2_rn(1024.f));
  const __half2 v = __hfma2(q, a, m);
  return *reinterpret_cast<const unsigned*>(&v);
}

// The fragment of product h: rows g and g + 8 (words wg, w8 of their 8 bytes), nibble
// plane `shift` (0: sub-block 2c, 4: 2c + 1).
__device__ __forceinline__ void weight_fragment(uint32_t wg, uint32_t w8, int shift, __half2 ag,
                                                __half2 mg, __half2 a8, __half2 m8,
                                                unsigned (&f)[4]) {
  const uint32_t ng = (wg >> shift) & 0x0f0f0f0fu, n8 = (w8 >> shift) & 0x0f0f0f0fu;
  f[0] = expand2(ng, 0x5140u, ag, mg);
  f[1] = expand2(n8, 0x5140u, a8, m8);
  f[2] = expand2(ng, 0x5342u, ag, mg);
  f[3] = expand2(n8, 0x5342u, a8, m8);
}

// Scale and min of sub-blocks 2c, 2c + 1 of a row from its 16 head bytes, as half2 pairs.
__device__ __forceinline__ void row_scales(const uint4& head, int c, __half2 (&a)[2],
                                           __half2 (&m)[2]) {
  const float d = __half2float(__ushort_as_half(static_cast<unsigned short>(head.x & 0xffffu)));
  const float dmin = __half2float(__ushort_as_half(static_cast<unsigned short>(head.x >> 16)));
  const uint32_t s[3] = {head.y, head.z, head.w};
  int sc[2], mn[2];
  k4_scales(s, c, sc, mn);
#pragma unroll
  for (int e = 0; e < 2; ++e) {
    a[e] = __float2half2_rn(d * static_cast<float>(sc[e]));
    m[e] = __float2half2_rn(-(dmin * static_cast<float>(mn[e])));
  }
}

// Sub-blocks 2c, 2c + 1 of rows g and g + 8: lane q of each group of four decodes them for
// c = q (the 6-bit scale unpacking was a quarter of the kernel's instructions when every lane
// did all four), and each c is then fetched from its lane.
struct RowScales {
  unsigned v[8];  // a, m of sub-block 2c, a, m of 2c + 1: row g, then row g + 8
};

__device__ __forceinline__ unsigned as_u32(__half2 h) { return *reinterpret_cast<unsigned*>(&h); }
__device__ __forceinline__ __half2 as_h2(unsigned u) { return *reinterpret_cast<__half2*>(&u); }

// `warp`: which 16 rows; the warp's kN tokens start at token `tok0` of the stage.
template <class S, int kN>
__device__ __forceinline__ void multiply_stage(const unsigned char* stage, int warp, int lane,
                                               int tok0, float (&acc)[kN / 8][4]) {
  constexpr int kRows = S::kRows;
  const int g = lane / 4, q = lane % 4;
  const unsigned char* quants = stage;
  const unsigned char* heads = stage + kRows * kQuantStride;
  const unsigned char* acts = heads + kRows * kHeadBytes;
  const int rg = warp * 16 + g, r8 = rg + 8;
  RowScales mine;
  {
    __half2 a[2], m[2];
    row_scales(lds128(heads + rg * kHeadBytes), q, a, m);
    mine.v[0] = as_u32(a[0]), mine.v[1] = as_u32(m[0]), mine.v[2] = as_u32(a[1]),
    mine.v[3] = as_u32(m[1]);
    row_scales(lds128(heads + r8 * kHeadBytes), q, a, m);
    mine.v[4] = as_u32(a[0]), mine.v[5] = as_u32(m[0]), mine.v[6] = as_u32(a[1]),
    mine.v[7] = as_u32(m[1]);
  }
#pragma unroll
  for (int c = 0; c < 4; ++c) {
    unsigned sc[8];
#pragma unroll
    for (int i = 0; i < 8; ++i) sc[i] = __shfl_sync(0xffffffffu, mine.v[i], (lane & ~3) | c);
    const uint2 wg = lds64(quants + rg * kQuantStride + 32 * c + 8 * q);
    const uint2 w8 = lds64(quants + r8 * kQuantStride + 32 * c + 8 * q);
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      const __half2 ag = as_h2(sc[2 * e]), mg = as_h2(sc[2 * e + 1]);
      const __half2 a8 = as_h2(sc[4 + 2 * e]), m8 = as_h2(sc[4 + 2 * e + 1]);
      unsigned f0[4], f1[4];
      weight_fragment(wg.x, w8.x, 4 * e, ag, mg, a8, m8, f0);
      weight_fragment(wg.y, w8.y, 4 * e, ag, mg, a8, m8, f1);
      const unsigned char* col = acts + tok0 * kActStride + (64 * c + 32 * e + 8 * q) * 2;
#pragma unroll
      for (int j = 0; j < kN / 8; ++j) {
        const uint4 b = lds128(col + (j * 8 + g) * kActStride);
        mma_16816(acc[j], f0, b.x, b.y);
        mma_16816(acc[j], f1, b.z, b.w);
      }
    }
  }
}

// Whether the first stages' weight bytes are requested before waiting for the previous kernel
// (HOSTLM_CUDA_TILE_EARLY=0: after).
bool early_weights() {
  static const bool on = [] {
    const char* env = std::getenv("HOSTLM_CUDA_TILE_EARLY");
    return env == nullptr || env[0] != '0';
  }();
  return on;
}

template <class S, int kN, int kTW, class G = NoExpertTiles>
__global__ void __launch_bounds__(S::threads(kTW), S::min_blocks(kN, kTW))
    tile_q4k_kernel(Q4kArgs args, bool early, G groups) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  constexpr int kS = S::stages(kN), kStageBytes = S::stage_bytes(kN), kNW = kN / kTW;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  __shared__ bool last_split;
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int row_warp = warp % S::kWarpRows, tok0 = warp / S::kWarpRows * kNW;
  const int64_t row0 = int64_t{blockIdx.x} * S::kRows;
  const int t0 = static_cast<int>(blockIdx.y) * kN;
  if (!select_expert(groups, t0, args.w, args.x, args.out.y, args.out.inv_scale, args.out.T)) {
    pdl_begin();
    return;
  }
  const int n_chunks = static_cast<int>(args.w.nb);
  const int first = G::kOn ? 0 : static_cast<int>(blockIdx.z) * args.chunks_per_split;
  const int n = min(n_chunks, first + args.chunks_per_split) - first;
  const unsigned base = smem_addr(smem_raw);

  const StageSources<S, kN, S::threads(kTW)> sources(args, row0, t0);
  // The weights of the first stages are requested while the previous kernel finishes (with
  // programmatic launch): they join the first commit group, so the waits below still cover
  // them.
  if (early) {
#pragma unroll
    for (int s = 0; s < kS - 1; ++s)
      if (s < n) sources.load_weights(first + s, base + s * kStageBytes);
  }
  pdl_begin();
#pragma unroll
  for (int s = 0; s < kS - 1; ++s) {
    if (s < n) {
      if (early)
        sources.load_acts(first + s, base + s * kStageBytes);
      else
        sources.load(first + s, base + s * kStageBytes);
    }
    cp_async_commit();
  }
  float acc[kNW / 8][4] = {};
  for (int i = 0; i < n; ++i) {
    cp_async_wait<kS - 2>();  // this thread's copies of chunk i have landed
    __syncthreads();          // everyone's have; and chunk i - 1's stage is free again
    const int next = i + kS - 1;
    if (next < n) sources.load(first + next, base + (next % kS) * kStageBytes);
    cp_async_commit();  // possibly empty: keeps the group count in step with i
    multiply_stage<S, kNW>(smem_raw + (i % kS) * kStageBytes, row_warp, lane, tok0, acc);
  }
  store_tile_part<kNW>(acc, args.out, row0, t0, S::kRows, kN, row_warp, t0 + tok0, last_split);
#else
  pdl_begin();
#endif
}

// Per shape (Chosen, Narrow) and token bucket, how many blocks an SM holds (from the occupancy
// calculator, so column splits fill the GPU exactly), and per bucket how many token warps.
struct Readiness {
  bool ready = false;
  int only_rows = 0;  // rows_wanted()
  int resident[2][3] = {{1, 1, 1}, {1, 1, 1}};
  int token_warps[3] = {1, 1, 1};
};

Readiness& readiness() {
  static Readiness r;
  return r;
}

int bucket(int n_tokens) { return n_tokens == 16 ? 0 : n_tokens == 32 ? 1 : 2; }

// Token warps for the 32- and 64-token buckets: two at 64 and one at 32 unless
// HOSTLM_CUDA_TILE_TOKEN_WARPS=1 or 2 says for both.
int token_warps_wanted(int n_tokens) {
  const char* env = std::getenv("HOSTLM_CUDA_TILE_TOKEN_WARPS");
  if (env != nullptr && (env[0] == '1' || env[0] == '2')) return env[0] - '0';
  return n_tokens == 64 ? 2 : 1;
}

// Which shapes plans may use (HOSTLM_CUDA_TILE_ROWS=128 or 96: only that one; 0: either).
int rows_wanted() {
  const char* env = std::getenv("HOSTLM_CUDA_TILE_ROWS");
  return env == nullptr ? 0 : std::atoi(env);
}

template <class S, int kN, int kTW>
cudaError_t prepare_one(Readiness& c, int shape) {
  cudaError_t status =
      cudaFuncSetAttribute(tile_q4k_kernel<S, kN, kTW>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                           static_cast<int>(S::smem_bytes(kN)));
  if (status == cudaSuccess && shape == 0)  // expert launches take the wide shape
    status = cudaFuncSetAttribute(tile_q4k_kernel<S, kN, kTW, ExpertTiles>,
                                  cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  static_cast<int>(S::smem_bytes(kN)));
  int blocks = 0;
  if (status == cudaSuccess)
    status = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, tile_q4k_kernel<S, kN, kTW>,
                                                           S::threads(kTW), S::smem_bytes(kN));
  c.resident[shape][bucket(kN)] = blocks > 0 ? blocks : 1;
  c.token_warps[bucket(kN)] = kTW;
  return status;
}

template <class S, int kN>
cudaError_t prepare_bucket(Readiness& c, int shape, int tw) {
  return tw == 2 ? prepare_one<S, kN, 2>(c, shape) : prepare_one<S, kN, 1>(c, shape);
}

template <class S>
cudaError_t prepare_shape(Readiness& c, int shape) {
  cudaError_t status = cudaSuccess;
  for (cudaError_t s :
       {prepare_one<S, 16, 1>(c, shape), prepare_bucket<S, 32>(c, shape, token_warps_wanted(32)),
        prepare_bucket<S, 64>(c, shape, token_warps_wanted(64))})
    if (status == cudaSuccess) status = s;
  return status;
}

template <class S>
bool fits(int smem_optin) {
  // The RTX cards (sm_86, sm_89) allow 99 KiB per block.
  for (int n : {16, 32, 64})
    if (static_cast<size_t>(smem_optin) < S::smem_bytes(n)) return false;
  return true;
}

template <class S, int kN, int kTW, class G>
void launch_one(dim3 grid, const Q4kArgs& a, cudaStream_t stream, const G& groups) {
  launch_kernel(tile_q4k_kernel<S, kN, kTW, G>, grid, S::threads(kTW), S::smem_bytes(kN), stream, a,
                early_weights(), groups);
}

// n: tokens per block.
template <class S, class G = NoExpertTiles>
void launch_shape(const TilePlan& p, const Q4kArgs& a, cudaStream_t stream, int n,
                  const G& groups = {}) {
  const dim3 grid(p.row_blocks, p.token_blocks,
                  static_cast<unsigned>(G::kOn ? groups.n : p.splits));
  const bool two = readiness().token_warps[bucket(n)] == 2;
  if (n == 16)
    launch_one<S, 16, 1>(grid, a, stream, groups);
  else if (n == 32)
    two ? launch_one<S, 32, 2>(grid, a, stream, groups)
        : launch_one<S, 32, 1>(grid, a, stream, groups);
  else
    two ? launch_one<S, 64, 2>(grid, a, stream, groups)
        : launch_one<S, 64, 1>(grid, a, stream, groups);
}

}  // namespace

cudaError_t prepare_tile_q4k() {
  Readiness& r = readiness();
  r = Readiness{};
  if (const char* env = std::getenv("HOSTLM_CUDA_TILE_Q4K"); env != nullptr && env[0] == '0')
    return cudaSuccess;
  int device = 0, major = 0, smem_optin = 0;
  cudaError_t status = cudaGetDevice(&device);
  if (status == cudaSuccess)
    status = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device);
  if (status == cudaSuccess)
    status = cudaDeviceGetAttribute(&smem_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device);
  if (status == cudaSuccess && major >= 8 && fits<Chosen>(smem_optin)) {
    r.only_rows = rows_wanted();
    for (cudaError_t s : {prepare_shape<Chosen>(r, 0), prepare_shape<Narrow>(r, 1)})
      if (status == cudaSuccess) status = s;
    r.ready = status == cudaSuccess;
  }
  if (status != cudaSuccess) {
    cudaGetLastError();  // the generic kernel serves instead
    r = Readiness{};
  }
  return cudaSuccess;
}

bool tile_q4k_ready() { return readiness().ready; }

TilePlan tile_q4k_plan(int64_t rows, int64_t cols, int64_t T) {
  const Readiness& r = readiness();
  const int b = bucket(tokens_per_block(T));
  const TilePlan wide = tile_plan(rows, cols / kChunk, T, Chosen::kRows, r.resident[0][b]);
  TilePlan narrow = tile_plan(rows, cols / kChunk, T, Narrow::kRows, r.resident[1][b]);
  narrow.shape = 1;
  const int want = r.only_rows;
  if (want == Chosen::kRows || want == Narrow::kRows) return want == Chosen::kRows ? wide : narrow;
  // The narrow shape's blocks have fewer warps to hide latency with: only for a clear gain.
  return wave_fill(narrow, r.resident[1][b]) > wave_fill(wide, r.resident[0][b]) + 0.1 ? narrow
                                                                                       : wide;
}

size_t tile_q4k_counters(int64_t rows, int64_t T) {
  // The narrow shape has the most row blocks.
  return static_cast<size_t>((rows + Narrow::kRows - 1) / Narrow::kRows) *
         static_cast<size_t>((T + tokens_per_block(T) - 1) / tokens_per_block(T));
}

void tile_q4k_launch(const TilePlan& p, const QuantMatrix& w, const __half* x,
                     const TileOutput& out, cudaStream_t stream) {
  const Q4kArgs a{w, x, out, p.chunks_per_split};
  const int n = tokens_per_block(out.T);
  if (p.shape == 1)
    launch_shape<Narrow>(p, a, stream, n);
  else
    launch_shape<Chosen>(p, a, stream, n);
}

void tile_q4k_launch_experts(const TilePlan& plan, const QuantMatrix& w, const __half* x,
                             const TileOutput& out, const ExpertTiles& tiles, int tokens_per_block,
                             cudaStream_t stream) {
  TilePlan p = plan;
  p.row_blocks = blocks_for(w.rows, Chosen::kRows);
  p.splits = 1;
  p.chunks_per_split = static_cast<int>(w.nb);
  const Q4kArgs a{w, x, out, p.chunks_per_split};
  launch_shape<Chosen>(p, a, stream, tokens_per_block, tiles);
}

}  // namespace hostlm::cuda::quants
