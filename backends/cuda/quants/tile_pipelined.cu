// Q4_K and Q6_K weights times a few dozen tokens: the decode steps of continuous batching on
// the two matrix types that hold a Q4_K_M model.
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
// Q6_K (session 38) takes the same pipeline and fragment layout. Its block is two halves of
// 128 values; in half h, ql byte l holds element 32j + l's low 4 bits in its low nibble for
// j = 0, 1 (bytes 0-31, 32-63) and element 64 + 32j + l's in its high nibble, and qh byte l
// the top 2 bits of all four (bits 2j). So "pair c" (ql bytes 32c .. 32c + 31) is elements
// 128h + 32j + l (low nibbles) and 128h + 64 + 32j + l (high), h = c / 2, j = c % 2, the qh
// bytes of half h completing both; a scale covers 16 values. Staged per row: ql 128 bytes and
// qh 64 (one 224-byte row, 32 bytes of padding keeping the four rows of a 64-bit load phase on
// distinct banks), the 16 scales, and a 4-byte word holding d (copied from its aligned word:
// cp.async copies no fewer than 4 bytes; weights have padding after them for the last one).
// Before it Q6_K took the generic kernel: 12288 x 4096 at 64 tokens 86.0 us, now 43.2 (Q4_K:
// 41.1; H100); the 9B's 248,320-row head 1,120 -> 753 us, 64 streams +4.4%.
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

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "cuda/launch.cuh"
#include "cuda/quants/tile_pipelined.h"
#include "cuda/tensor_core.cuh"

namespace hostlm::cuda::quants {
namespace {

constexpr int kChunk = 256;  // columns per chunk: one block of either type
// Activations (256 halves) per staged token: 512 + 64 bytes, so that the eight tokens of a
// 128-bit load fall on distinct banks.
constexpr int kActStride = 576;
constexpr int kSmemPerSm = 233472;  // sm_90: 228 KiB, of which 1 KiB per block is the driver's

// How a type's chunk (one block of each row) is staged. Per row: kRowPieces 16-byte copies
// of quant bytes into a kRowStride-byte row, one 16-byte head copy, and kWords 4-byte words.
struct Q4kFormat {
  static constexpr DType kType = DType::Q4_K;
  // Quants 128 + 32: the four rows one phase of a 64-bit shared load reads fall on distinct
  // banks.
  static constexpr int kRowStride = 160, kRowPieces = 8, kHeadBytes = 16, kWords = 0;
  // Where piece k of row `row`'s chunk 0 comes from, how far chunk c + 1's is from chunk c's,
  // and where it goes in the staged row.
  static __device__ __forceinline__ const uint8_t* piece_src(const QuantMatrix& w, int64_t row,
                                                             int k) {
    return w.region[0] + row * w.nb * 128 + k * 16;
  }
  static __device__ __forceinline__ int piece_step(int) { return 128; }
  static __device__ __forceinline__ int piece_dst(int k) { return k * 16; }
  static __device__ __forceinline__ const uint8_t* head_src(const QuantMatrix& w, int64_t row) {
    return w.region[1] + row * w.nb * kHeadBytes;  // d, dmin, scales[12]
  }
};

struct Q6kFormat {
  static constexpr DType kType = DType::Q6_K;
  // ql 128 + qh 64 + 32: as for Q4_K, distinct banks for the rows of a load phase.
  static constexpr int kRowStride = 224, kRowPieces = 12, kHeadBytes = 16, kWords = 1;
  static __device__ __forceinline__ const uint8_t* piece_src(const QuantMatrix& w, int64_t row,
                                                             int k) {
    return k < 8 ? w.region[0] + row * w.nb * 128 + k * 16
                 : w.region[1] + row * w.nb * 64 + (k - 8) * 16;
  }
  static __device__ __forceinline__ int piece_step(int k) { return k < 8 ? 128 : 64; }
  static __device__ __forceinline__ int piece_dst(int k) { return k * 16; }
  static __device__ __forceinline__ const uint8_t* head_src(const QuantMatrix& w, int64_t row) {
    return w.region[2] + row * w.nb * kHeadBytes;  // scales[16]
  }
  // d of block b is bytes 2b, 2b + 1 of region 3: its aligned word is at 4 * (b / 2).
  static __device__ __forceinline__ const uint8_t* word_src(const uint8_t* words, int64_t block) {
    return words + (block >> 1) * 4;
  }
};

// A block shape: kW warps of 16 rows, and shared-memory stages per token bucket (16, 32, 64).
// With kTW token warps, each 16 rows get kTW warps, each taking kN / kTW of the tokens.
template <class F, int kW, int kS16, int kS32, int kS64>
struct Shape {
  using Format = F;
  static constexpr int kWarpRows = kW, kRows = kW * 16;
  static constexpr int kHeads = kRows * F::kRowStride;  // offsets in a stage
  static constexpr int kWordsAt = kHeads + kRows * F::kHeadBytes;
  static constexpr int kActs = kWordsAt + kRows * 4 * F::kWords;
  static constexpr __host__ __device__ int threads(int tw) { return kW * 32 * tw; }
  static constexpr __host__ __device__ int stages(int n) {
    return n == 16 ? kS16 : n == 32 ? kS32 : kS64;
  }
  static constexpr __host__ __device__ int stage_bytes(int n) { return kActs + n * kActStride; }
  static constexpr size_t smem_bytes(int n) {
    return static_cast<size_t>(stages(n)) * static_cast<size_t>(stage_bytes(n));
  }
  // Blocks per SM for the launch bound: what shared memory allows, and no fewer registers
  // than each bucket needs without spilling (ptxas, Q4_K: 112, 112 and 164 with one token
  // warp; 128 is the most two token warps of 8 row warps can have, and enough for their half
  // tokens).
  static constexpr int min_blocks(int n, int tw) {
    const int by_smem = kSmemPerSm / (static_cast<int>(smem_bytes(n)) + 1024);
    const int regs = tw > 1 ? 128 : n == 16 ? 112 : n == 32 ? 112 : 164;
    const int by_regs = 65536 / (threads(tw) * regs);
    const int b = by_smem < by_regs ? by_smem : by_regs;
    return b < 1 ? 1 : b;
  }
};

// Q4_K: 8 warps (128 rows); 3 stages at 16 and 64 tokens (two and one blocks per SM), 4 at 32
// (one). Measured against 4 warps with 3 stages and 4 or 8 warps with 2 stages (9B shape,
// H200, 16 / 32 / 64 streams): equal at 16, up to 4% ahead at 32 and 64. 6 warps (96 rows)
// for row counts that 128-row blocks spread badly over the SMs: 12,288 rows are 96 blocks of
// 128 for 132 SMs (a quarter idle, and splitting the columns only adds a second wave), but 128
// blocks of 96. Q6_K's rows take 244 bytes a stage instead of 176: the same stage counts
// still fit (one block per SM).
template <class F>
using Chosen = Shape<F, 8, 3, 4, 3>;
template <class F>
using Narrow = Shape<F, 6, 3, 4, 3>;

struct TileArgs {
  QuantMatrix w;
  const __half* x;
  TileOutput out;
  int chunks_per_split;
  // 0x64646464, the exponent bytes of half 1024 + b, given at launch: as a literal, ptxas made
  // it PRMT's immediate and then rebuilt each selector in a register (one more instruction a
  // PRMT, 64 a warp and chunk); from a parameter the selector is the immediate.
  uint32_t exponent_bytes;
};

template <int kPending>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending) : "memory");
}

// 4 bytes, or zeros when !valid (src must still be a mapped address).
__device__ __forceinline__ void cp_async_4_or_zero(unsigned dst, const void* src, bool valid) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(dst), "l"(src),
               "r"(valid ? 4 : 0)
               : "memory");
}

// Where this thread's copies of chunk 0 come from; chunk c is a fixed stride further. Sources
// outside the matrix (or past the last token) stay at a mapped address and copy zeros. Worked
// out once per block: per chunk the address arithmetic was a tenth of the kernel's instructions.
template <class S, int kN, int kThreads>
struct StageSources {
  using F = typename S::Format;
  static constexpr int kQuantPieces = S::kRows * F::kRowPieces, kActPieces = kN * 32;  // 16 B
  static constexpr int kQuantCopies = (kQuantPieces + kThreads - 1) / kThreads;        // per thread
  static constexpr int kActCopies = (kActPieces + kThreads - 1) / kThreads;
  // Heads are copied by threads [0, kRows), words by [kRows, 2 * kRows).
  static_assert(kThreads >= 2 * S::kRows);
  // Whether this thread has a copy j of `pieces` (only the last may be missing).
  static __device__ __forceinline__ bool has(int j, int pieces) {
    return (j + 1) * kThreads <= pieces || static_cast<int>(threadIdx.x) + j * kThreads < pieces;
  }
  const uint8_t* quant[kQuantCopies];
  const uint8_t* head;
  const __half* act[kActCopies];
  const uint8_t* words;       // region 3 (F::kWords)
  int64_t word_block;         // the first block of this thread's word row
  unsigned quant_ok, act_ok;  // bit j: copy j is inside
  bool head_ok, word_ok;

  __device__ StageSources(const TileArgs& a, int64_t row0, int t0) {
    const QuantMatrix& m = a.w;
    words = m.region[3];
    const int tid = threadIdx.x;
    quant_ok = act_ok = 0;
#pragma unroll
    for (int j = 0; j < kQuantCopies; ++j) {
      const int i = tid + j * kThreads, r = i / F::kRowPieces, piece = i % F::kRowPieces;
      const bool inside = row0 + r < m.rows;
      quant[j] = F::piece_src(m, inside ? row0 + r : 0, piece);
      quant_ok |= inside ? 1u << j : 0u;
    }
    head_ok = tid < S::kRows && row0 + tid < m.rows;
    head = F::head_src(m, head_ok ? row0 + tid : 0);
    const int64_t word_row = row0 + tid - S::kRows;
    word_ok = tid >= S::kRows && tid < 2 * S::kRows && word_row < m.rows;
    word_block = word_ok ? word_row * m.nb : 0;
#pragma unroll
    for (int j = 0; j < kActCopies; ++j) {
      const int i = tid + j * kThreads, t = i / 32, piece = i % 32;
      const bool valid = t0 + t < a.out.T;
      act[j] = valid ? a.x + int64_t{t0 + t} * m.cols + piece * 8 : a.x;
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
#pragma unroll
    for (int j = 0; j < kQuantCopies; ++j) {
      const int i = tid + j * kThreads, r = i / F::kRowPieces, piece = i % F::kRowPieces;
      const bool ok = (quant_ok >> j) & 1u;
      if (has(j, kQuantPieces))
        cp_async_16_or_zero(stage + r * F::kRowStride + F::piece_dst(piece),
                            ok ? quant[j] + chunk * F::piece_step(piece) : quant[j], ok);
    }
    if (tid < S::kRows)
      cp_async_16_or_zero(stage + S::kHeads + tid * F::kHeadBytes,
                          head_ok ? head + chunk * F::kHeadBytes : head, head_ok);
    if constexpr (F::kWords > 0) {
      if (tid >= S::kRows && tid < 2 * S::kRows)
        cp_async_4_or_zero(stage + S::kWordsAt + (tid - S::kRows) * 4,
                           F::word_src(words, word_block + chunk), word_ok);
    }
  }

  // The activations, written by the kernel before this one.
  __device__ __forceinline__ void load_acts(int chunk, unsigned stage) const {
    const int tid = threadIdx.x;
#pragma unroll
    for (int j = 0; j < kActCopies; ++j) {
      const int i = tid + j * kThreads, t = i / 32, piece = i % 32;
      const bool ok = (act_ok >> j) & 1u;
      if (has(j, kActPieces))
        cp_async_16_or_zero(stage + S::kActs + t * kActStride + piece * 16,
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

// Values of bytes (0, 1) or (2, 3) of `bytes` (each < 64) as half2, a * (b - bias) + m.
template <int kBias>
__device__ __forceinline__ unsigned expand2(uint32_t bytes, uint32_t exponent_bytes,
                                            unsigned selector, __half2 a, __half2 m) {
  const uint32_t bits = __byte_perm(bytes, exponent_bytes, selector);  // 1024 + b, exact
  const __half2 q =
      __hsub2(*reinterpret_cast<const __half2*>(&bits), __float2half2_rn(1024.f + kBias));
  const __half2 v = __hfma2(q, a, m);
  return *reinterpret_cast<const unsigned*>(&v);
}

// The fragment of product h from rows g and g + 8's four values (bytes of vg, v8).
template <int kBias>
__device__ __forceinline__ void weight_fragment(uint32_t vg, uint32_t v8, uint32_t exponent_bytes,
                                                __half2 ag, __half2 mg, __half2 a8, __half2 m8,
                                                unsigned (&f)[4]) {
  f[0] = expand2<kBias>(vg, exponent_bytes, 0x5140u, ag, mg);
  f[1] = expand2<kBias>(v8, exponent_bytes, 0x5140u, a8, m8);
  f[2] = expand2<kBias>(vg, exponent_bytes, 0x5342u, ag, mg);
  f[3] = expand2<kBias>(v8, exponent_bytes, 0x5342u, a8, m8);
}

// Scale and min of sub-blocks 2c, 2c + 1 of a Q4_K row from its 16 head bytes, as half2 pairs.
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

__device__ __forceinline__ unsigned as_u32(__half2 h) { return *reinterpret_cast<unsigned*>(&h); }
__device__ __forceinline__ __half2 as_h2(unsigned u) { return *reinterpret_cast<__half2*>(&u); }

// The products of one k-slice of 32 values: weight fragments f0 (values 8q .. 8q + 3 of the
// slice) and f1 (8q + 4 .. 8q + 7) against the warp's tokens, whose activations for the slice
// start at `col` (the values in the same permuted order: one 128-bit load serves both).
template <int kN>
__device__ __forceinline__ void multiply_slice(const unsigned (&f0)[4], const unsigned (&f1)[4],
                                               const unsigned char* col, int g,
                                               float (&acc)[kN / 8][4]) {
#pragma unroll
  for (int j = 0; j < kN / 8; ++j) {
    const uint4 b = lds128(col + (j * 8 + g) * kActStride);
    mma_16816(acc[j], f0, b.x, b.y);
    mma_16816(acc[j], f1, b.z, b.w);
  }
}

// `warp`: which 16 rows; the warp's kN tokens start at token `tok0` of the stage; it takes
// the kPairs sub-block pairs from c0 (all four, or two with k-slice warps). Q4_K.
template <class S, int kN, int kPairs>
__device__ __forceinline__ void multiply_q4k(const unsigned char* stage, int warp, int lane,
                                             int tok0, int c0, uint32_t exponent_bytes,
                                             float (&acc)[kN / 8][4]) {
  using F = typename S::Format;
  const int g = lane / 4, q = lane % 4;
  const unsigned char* heads = stage + S::kHeads;
  const unsigned char* acts = stage + S::kActs + tok0 * kActStride;
  const int rg = warp * 16 + g, r8 = rg + 8;
  // Sub-blocks 2c, 2c + 1 of rows g and g + 8: lane q of each group of four decodes them for
  // c = c0 + q % kPairs (the 6-bit scale unpacking was a quarter of the kernel's instructions
  // when every lane did all four), and each c is then fetched from its lane: a, m of sub-block
  // 2c, a, m of 2c + 1, row g then row g + 8.
  unsigned mine[8];
  {
    __half2 a[2], m[2];
    row_scales(lds128(heads + rg * F::kHeadBytes), c0 + q % kPairs, a, m);
    mine[0] = as_u32(a[0]), mine[1] = as_u32(m[0]), mine[2] = as_u32(a[1]), mine[3] = as_u32(m[1]);
    row_scales(lds128(heads + r8 * F::kHeadBytes), c0 + q % kPairs, a, m);
    mine[4] = as_u32(a[0]), mine[5] = as_u32(m[0]), mine[6] = as_u32(a[1]), mine[7] = as_u32(m[1]);
  }
#pragma unroll
  for (int k = 0; k < kPairs; ++k) {
    const int c = c0 + k;
    unsigned sc[8];
#pragma unroll
    for (int i = 0; i < 8; ++i) sc[i] = __shfl_sync(0xffffffffu, mine[i], (lane & ~3) | k);
    const uint2 wg = lds64(stage + rg * F::kRowStride + 32 * c + 8 * q);
    const uint2 w8 = lds64(stage + r8 * F::kRowStride + 32 * c + 8 * q);
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      const __half2 ag = as_h2(sc[2 * e]), mg = as_h2(sc[2 * e + 1]);
      const __half2 a8 = as_h2(sc[4 + 2 * e]), m8 = as_h2(sc[4 + 2 * e + 1]);
      // Nibble plane e of the pair: sub-block 2c + e.
      unsigned f0[4], f1[4];
      weight_fragment<0>((wg.x >> (4 * e)) & 0x0f0f0f0fu, (w8.x >> (4 * e)) & 0x0f0f0f0fu,
                         exponent_bytes, ag, mg, a8, m8, f0);
      weight_fragment<0>((wg.y >> (4 * e)) & 0x0f0f0f0fu, (w8.y >> (4 * e)) & 0x0f0f0f0fu,
                         exponent_bytes, ag, mg, a8, m8, f1);
      multiply_slice<kN>(f0, f1, acts + (64 * c + 32 * e + 8 * q) * 2, g, acc);
    }
  }
}

// a = d * scale as half2, for byte `byte` of word `word` of a Q6_K row's 16 scales.
__device__ __forceinline__ __half2 q6k_scale(const uint4& scales, int word, int byte, float d) {
  // Selects, not an indexed array: with the word known only at run time (k-slice warps) that
  // array went to local memory.
  const uint32_t w = word & 2 ? (word & 1 ? scales.w : scales.z) : (word & 1 ? scales.y : scales.x);
  const auto sc = static_cast<int8_t>(static_cast<uint8_t>(w >> (8 * byte)));
  return __float2half2_rn(d * static_cast<float>(sc));
}

// d of a Q6_K row from its staged word: block `block` (row * nb + chunk) has it in the upper
// half when odd.
__device__ __forceinline__ float q6k_d(const unsigned char* word, int64_t block) {
  const uint32_t v = *reinterpret_cast<const uint32_t*>(word);
  return __half2float(__ushort_as_half(static_cast<unsigned short>(block & 1 ? v >> 16 : v)));
}

// The same for Q6_K (layout above): values 6-bit, q - 32, no min. `chunk` and `nb` locate each
// row's d in its word.
template <class S, int kN, int kPairs>
__device__ __forceinline__ void multiply_q6k(const unsigned char* stage, int warp, int lane,
                                             int tok0, int c0, int64_t row0, int chunk, int64_t nb,
                                             uint32_t exponent_bytes, float (&acc)[kN / 8][4]) {
  using F = typename S::Format;
  const int g = lane / 4, q = lane % 4;
  const unsigned char* acts = stage + S::kActs + tok0 * kActStride;
  const int rg = warp * 16 + g, r8 = rg + 8;
  const float dg = q6k_d(stage + S::kWordsAt + rg * 4, (row0 + rg) * nb + chunk);
  const float d8 = q6k_d(stage + S::kWordsAt + r8 * 4, (row0 + r8) * nb + chunk);
  const uint4 sg = lds128(stage + S::kHeads + rg * F::kHeadBytes);
  const uint4 s8 = lds128(stage + S::kHeads + r8 * F::kHeadBytes);
  const __half2 zero = __float2half2_rn(0.f);
  const int upper = q >= 2 ? 1 : 0;  // values 8q .. 8q + 7 of 32: the second scale of two
#pragma unroll
  for (int k = 0; k < kPairs; ++k) {
    // With two pairs a warp (c0 even) both are in half c0 / 2: j known at compile time keeps
    // the qh shifts immediate.
    const int c = c0 + k, h = kPairs == 2 ? c0 / 2 : c / 2, j = kPairs == 2 ? k : c % 2;
    const uint2 lg = lds64(stage + rg * F::kRowStride + 32 * c + 8 * q);
    const uint2 l8 = lds64(stage + r8 * F::kRowStride + 32 * c + 8 * q);
    const uint2 hg = lds64(stage + rg * F::kRowStride + 128 + 32 * h + 8 * q);
    const uint2 h8 = lds64(stage + r8 * F::kRowStride + 128 + 32 * h + 8 * q);
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      // Nibble plane e: elements 128h + 64e + 32j + l, their top bits at qh bits 2j + 4e.
      const int shift = 2 * j + 4 * e;
      const auto six = [&](uint32_t low, uint32_t high) {
        return ((low >> (4 * e)) & 0x0f0f0f0fu) | (((high >> shift) & 0x03030303u) << 4);
      };
      // The scale of element / 16 = 8h + 4e + 2j + upper: byte 2j + upper of word 2h + e.
      const __half2 ag = q6k_scale(sg, 2 * h + e, 2 * j + upper, dg);
      const __half2 a8 = q6k_scale(s8, 2 * h + e, 2 * j + upper, d8);
      unsigned f0[4], f1[4];
      weight_fragment<32>(six(lg.x, hg.x), six(l8.x, h8.x), exponent_bytes, ag, zero, a8, zero, f0);
      weight_fragment<32>(six(lg.y, hg.y), six(l8.y, h8.y), exponent_bytes, ag, zero, a8, zero, f1);
      multiply_slice<kN>(f0, f1, acts + (128 * h + 64 * e + 32 * j + 8 * q) * 2, g, acc);
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

// Two warps for each 16 rows split a chunk's values between them and add their accumulators
// at the end: each warp has all the block's tokens, and each weight is expanded once.
template <int kNW, int kWarpRows>
__device__ __forceinline__ void add_k_slices(const float (&acc)[kNW / 8][4], int slice,
                                             int row_warp, int lane, unsigned char* smem,
                                             float (&kept)[kNW / 16][4]) {
  constexpr int kHalf = kNW / 16;  // n-tiles each slice keeps: slice s the s-th half
  float* share = reinterpret_cast<float*>(smem);
  const auto at = [&](int writer, int j, int e) {
    return ((writer * kHalf + j) * 4 + e) * (kWarpRows * 32) + row_warp * 32 + lane;
  };
  cp_async_wait<0>();
  __syncthreads();  // every warp is done with the stages
  // Selects between indices known at compile time: acc[slice * kHalf + j] with slice known
  // only at run time put the whole accumulator array in local memory (ptxas: a 128-byte stack
  // frame at 64 tokens).
#pragma unroll
  for (int j = 0; j < kHalf; ++j)
#pragma unroll
    for (int e = 0; e < 4; ++e) share[at(slice, j, e)] = slice ? acc[j][e] : acc[kHalf + j][e];
  __syncthreads();
#pragma unroll
  for (int j = 0; j < kHalf; ++j)
#pragma unroll
    for (int e = 0; e < 4; ++e)
      kept[j][e] = (slice ? acc[kHalf + j][e] : acc[j][e]) + share[at(slice ^ 1, j, e)];
}

// kTW token warps or kKS k-slice warps (at most one of them 2) for each 16 rows.
template <class S, int kN, int kTW, int kKS, class G = NoExpertTiles>
__global__ void __launch_bounds__(S::threads(kTW* kKS), S::min_blocks(kN, kTW* kKS))
    tile_pipelined_kernel(TileArgs args, bool early, G groups) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  using F = typename S::Format;
  static_assert(kTW * kKS <= 2);
  constexpr int kS = S::stages(kN), kStageBytes = S::stage_bytes(kN), kNW = kN / kTW;
  constexpr int kPairs = 4 / kKS;  // sub-block pairs of a chunk per warp
  static_assert(kKS == 1 || (kNW / 16) * 4 * S::kRows * 2 * 4 <= kS * kStageBytes);
  extern __shared__ __align__(16) unsigned char smem_raw[];
  __shared__ bool last_split;
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int row_warp = warp % S::kWarpRows, slot = warp / S::kWarpRows;
  const int tok0 = (kKS == 1 ? slot : 0) * kNW, slice = kKS == 1 ? 0 : slot;
  int64_t row0 = int64_t{blockIdx.x} * S::kRows;
  int split = G::kOn ? 0 : static_cast<int>(blockIdx.z);  // expert launches have no splits
  unsigned counter = blockIdx.y * gridDim.x + blockIdx.x;
  if constexpr (G::kGroup)
    place_in_group(groups, S::kRows, args.w, args.out, args.chunks_per_split, row0, split, counter);
  const int t0 = static_cast<int>(blockIdx.y) * kN;
  if (!select_expert(groups, t0, args.w, args.x, args.out.y, args.out.inv_scale, args.out.T)) {
    pdl_begin();
    return;
  }
  const int n_chunks = static_cast<int>(args.w.nb);
  const int first = split * args.chunks_per_split;
  const int n = min(n_chunks, first + args.chunks_per_split) - first;
  const unsigned base = smem_addr(smem_raw);

  const StageSources<S, kN, S::threads(kTW * kKS)> sources(args, row0, t0);
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
    const unsigned char* stage = smem_raw + (i % kS) * kStageBytes;
    if constexpr (F::kType == DType::Q6_K)
      multiply_q6k<S, kNW, kPairs>(stage, row_warp, lane, tok0, slice * kPairs, row0, first + i,
                                   args.w.nb, args.exponent_bytes, acc);
    else
      multiply_q4k<S, kNW, kPairs>(stage, row_warp, lane, tok0, slice * kPairs, args.exponent_bytes,
                                   acc);
  }
  if constexpr (kKS == 2) {
    float kept[kNW / 16][4];
    add_k_slices<kNW, S::kWarpRows>(acc, slice, row_warp, lane, smem_raw, kept);
    store_tile_part_at<kNW / 2>(kept, args.out, row0, t0, S::kRows, kN, row_warp,
                                t0 + slice * (kNW / 2), split, counter, last_split);
  } else {
    store_tile_part_at<kNW>(acc, args.out, row0, t0, S::kRows, kN, row_warp, t0 + tok0, split,
                            counter, last_split);
  }
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
  int token_warps[2][3] = {{1, 1, 1}, {1, 1, 1}};
  bool k_slices[2][3] = {{false, false, false}, {false, false, false}};
};

template <class F>
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

// Whether the bucket's blocks of a shape (0: Chosen, 1: Narrow) split each chunk between two
// warps per 16 rows instead of its tokens. HOSTLM_CUDA_TILE_K_SLICES names the buckets (default
// "16,32,64"; "0": none), each for both shapes or, prefixed "w" or "n", for the wide or the
// narrow one alone ("32,n64"); it overrides token warps. On since session 41 (H100, 9B Q4_K_M,
// engine): once their accumulators stayed in registers (session 40 measured them spilled:
// 64-stream step 12.97 against 12.22 ms), the 64-stream step took 12.04-12.14 ms against
// 12.35-12.39 without them, the 32-stream one 7.61-7.80 against 7.95-7.97, and 16 streams went
// 1,852 -> 1,901-1,911 t/s with the 16-token bucket too. The wide shape's 64-token blocks are
// 16 warps held to 128 registers, under the 150 they want: ptxas spills three words there.
bool k_slices_wanted(int n_tokens, int shape) {
  const char* env = std::getenv("HOSTLM_CUDA_TILE_K_SLICES");
  if (env == nullptr) env = "16,32,64";
  const std::string list(env);
  for (size_t begin = 0; begin <= list.size();) {
    size_t end = list.find(',', begin);
    if (end == std::string::npos) end = list.size();
    std::string item = list.substr(begin, end - begin);
    begin = end + 1;
    int only = -1;
    if (!item.empty() && (item[0] == 'w' || item[0] == 'n')) {
      only = item[0] == 'w' ? 0 : 1;
      item.erase(0, 1);
    }
    if (item == std::to_string(n_tokens) && (only < 0 || only == shape)) return true;
  }
  return false;
}

template <class S, int kN, int kTW, int kKS>
cudaError_t prepare_one(Readiness& c, int shape) {
  cudaError_t status = cudaFuncSetAttribute(tile_pipelined_kernel<S, kN, kTW, kKS>,
                                            cudaFuncAttributeMaxDynamicSharedMemorySize,
                                            static_cast<int>(S::smem_bytes(kN)));
  if (status == cudaSuccess && shape == 0)  // expert launches take the wide shape
    status = cudaFuncSetAttribute(tile_pipelined_kernel<S, kN, kTW, kKS, ExpertTiles>,
                                  cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  static_cast<int>(S::smem_bytes(kN)));
  if (status == cudaSuccess)
    status = cudaFuncSetAttribute(tile_pipelined_kernel<S, kN, kTW, kKS, MatrixGroup>,
                                  cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  static_cast<int>(S::smem_bytes(kN)));
  int blocks = 0;
  if (status == cudaSuccess)
    status = cudaOccupancyMaxActiveBlocksPerMultiprocessor(
        &blocks, tile_pipelined_kernel<S, kN, kTW, kKS>, S::threads(kTW * kKS), S::smem_bytes(kN));
  c.resident[shape][bucket(kN)] = blocks > 0 ? blocks : 1;
  c.token_warps[shape][bucket(kN)] = kTW;
  c.k_slices[shape][bucket(kN)] = kKS == 2;
  return status;
}

template <class S, int kN>
cudaError_t prepare_bucket(Readiness& c, int shape, int tw) {
  if (k_slices_wanted(kN, shape)) return prepare_one<S, kN, 1, 2>(c, shape);
  return tw == 2 ? prepare_one<S, kN, 2, 1>(c, shape) : prepare_one<S, kN, 1, 1>(c, shape);
}

template <class S>
cudaError_t prepare_shape(Readiness& c, int shape) {
  cudaError_t status = cudaSuccess;
  for (cudaError_t s :
       {prepare_bucket<S, 16>(c, shape, 1), prepare_bucket<S, 32>(c, shape, token_warps_wanted(32)),
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

// Whether HOSTLM_CUDA_TILE_Q4K / _Q6K turns the type's kernel off.
template <class F>
bool turned_off() {
  const char* env =
      std::getenv(F::kType == DType::Q4_K ? "HOSTLM_CUDA_TILE_Q4K" : "HOSTLM_CUDA_TILE_Q6K");
  return env != nullptr && env[0] == '0';
}

template <class F>
void prepare_format(int major, int smem_optin) {
  Readiness& r = readiness<F>();
  r = Readiness{};
  if (turned_off<F>() || major < 8 || !fits<Chosen<F>>(smem_optin)) return;
  r.only_rows = rows_wanted();
  cudaError_t status = cudaSuccess;
  for (cudaError_t s : {prepare_shape<Chosen<F>>(r, 0), prepare_shape<Narrow<F>>(r, 1)})
    if (status == cudaSuccess) status = s;
  r.ready = status == cudaSuccess;
  if (!r.ready) {
    cudaGetLastError();  // the generic kernel serves instead
    r = Readiness{};
  }
}

template <class F>
TilePlan plan(int64_t rows, int64_t cols, int64_t T) {
  const Readiness& r = readiness<F>();
  const int b = bucket(tokens_per_block(T));
  const TilePlan wide = tile_plan(rows, cols / kChunk, T, Chosen<F>::kRows, r.resident[0][b]);
  TilePlan narrow = tile_plan(rows, cols / kChunk, T, Narrow<F>::kRows, r.resident[1][b]);
  narrow.shape = 1;
  const int want = r.only_rows;
  if (want == Chosen<F>::kRows || want == Narrow<F>::kRows)
    return want == Chosen<F>::kRows ? wide : narrow;
  // The narrow shape's blocks have fewer warps to hide latency with: only for a clear gain.
  return wave_fill(narrow, r.resident[1][b]) > wave_fill(wide, r.resident[0][b]) + 0.1 ? narrow
                                                                                       : wide;
}

template <class S, int kN, int kTW, int kKS, class G>
void launch_one(dim3 grid, const TileArgs& a, cudaStream_t stream, const G& groups) {
  launch_kernel(tile_pipelined_kernel<S, kN, kTW, kKS, G>, grid, S::threads(kTW * kKS),
                S::smem_bytes(kN), stream, a, early_weights(), groups);
}

// n: tokens per block.
template <class S, class G = NoExpertTiles>
void launch_shape(const TilePlan& p, const TileArgs& a, cudaStream_t stream, int n,
                  const G& groups = {}) {
  const dim3 grid(p.row_blocks, p.token_blocks,
                  static_cast<unsigned>(G::kOn ? groups.n : p.splits));
  const Readiness& r = readiness<typename S::Format>();
  const int shape = S::kWarpRows == Narrow<typename S::Format>::kWarpRows ? 1 : 0;
  const bool two = r.token_warps[shape][bucket(n)] == 2, sliced = r.k_slices[shape][bucket(n)];
  if (n == 16)
    sliced ? launch_one<S, 16, 1, 2>(grid, a, stream, groups)
           : launch_one<S, 16, 1, 1>(grid, a, stream, groups);
  else if (n == 32)
    sliced ? launch_one<S, 32, 1, 2>(grid, a, stream, groups)
    : two  ? launch_one<S, 32, 2, 1>(grid, a, stream, groups)
           : launch_one<S, 32, 1, 1>(grid, a, stream, groups);
  else
    sliced ? launch_one<S, 64, 1, 2>(grid, a, stream, groups)
    : two  ? launch_one<S, 64, 2, 1>(grid, a, stream, groups)
           : launch_one<S, 64, 1, 1>(grid, a, stream, groups);
}

template <class F>
void launch(const TilePlan& p, const QuantMatrix& w, const __half* x, const TileOutput& out,
            cudaStream_t stream) {
  const TileArgs a{w, x, out, p.chunks_per_split, 0x64646464u};
  const int n = tokens_per_block(out.T);
  if (p.shape == 1)
    launch_shape<Narrow<F>>(p, a, stream, n);
  else
    launch_shape<Chosen<F>>(p, a, stream, n);
}

// One launch per block shape: the members planned for it, longest splits first (their blocks
// start first, and the short ones fill the last wave).
template <class F>
void launch_group(const TilePlan* plans, const QuantMatrix* ws, const TileOutput* outs, int n,
                  const __half* x, cudaStream_t stream) {
  for (int shape = 0; shape < 2; ++shape) {
    int order[kMaxGroupMatrices];
    int members = 0;
    for (int j = 0; j < n; ++j)
      if (plans[j].shape == shape) order[members++] = j;
    if (members == 0) continue;
    std::stable_sort(order, order + members, [&](int a, int b) {
      return plans[a].chunks_per_split > plans[b].chunks_per_split;
    });
    MatrixGroup g{};
    int splits[kMaxGroupMatrices];
    for (int k = 0; k < members; ++k) {
      const int j = order[k];
      g.w[k] = ws[j];
      g.out[k] = outs[j];
      g.chunks_per_split[k] = plans[j].chunks_per_split;
      g.row_blocks[k] = plans[j].row_blocks;
      splits[k] = plans[j].splits;
    }
    const unsigned blocks = lay_out_group(g.row_blocks, splits, members, g.first_block);
    g.n = members;
    const int j0 = order[0];
    TilePlan p = plans[j0];
    p.row_blocks = blocks;  // grid x: every member's row blocks and splits
    p.splits = 1;
    const TileArgs a{ws[j0], x, outs[j0], plans[j0].chunks_per_split, 0x64646464u};
    const int tokens = tokens_per_block(outs[j0].T);
    if (shape == 1)
      launch_shape<Narrow<F>>(p, a, stream, tokens, g);
    else
      launch_shape<Chosen<F>>(p, a, stream, tokens, g);
  }
}

template <class F>
void launch_experts(const TilePlan& plan, const QuantMatrix& w, const __half* x,
                    const TileOutput& out, const ExpertTiles& tiles, int tokens_per_block,
                    cudaStream_t stream) {
  TilePlan p = plan;
  p.row_blocks = blocks_for(w.rows, Chosen<F>::kRows);
  p.splits = 1;
  p.chunks_per_split = static_cast<int>(w.nb);
  const TileArgs a{w, x, out, p.chunks_per_split, 0x64646464u};
  launch_shape<Chosen<F>>(p, a, stream, tokens_per_block, tiles);
}

}  // namespace

cudaError_t prepare_tile_pipelined() {
  int device = 0, major = 0, smem_optin = 0;
  cudaError_t status = cudaGetDevice(&device);
  if (status == cudaSuccess)
    status = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device);
  if (status == cudaSuccess)
    status = cudaDeviceGetAttribute(&smem_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device);
  if (status != cudaSuccess) {
    cudaGetLastError();
    return cudaSuccess;  // neither type: the generic kernel serves
  }
  prepare_format<Q4kFormat>(major, smem_optin);
  prepare_format<Q6kFormat>(major, smem_optin);
  return cudaSuccess;
}

bool tile_pipelined_ready(DType type) {
  return type == DType::Q4_K   ? readiness<Q4kFormat>().ready
         : type == DType::Q6_K ? readiness<Q6kFormat>().ready
                               : false;
}

TilePlan tile_pipelined_plan(DType type, int64_t rows, int64_t cols, int64_t T) {
  return type == DType::Q6_K ? plan<Q6kFormat>(rows, cols, T) : plan<Q4kFormat>(rows, cols, T);
}

size_t tile_pipelined_counters(DType type, int64_t rows, int64_t T) {
  // The narrow shape has the most row blocks (the same for both types).
  (void)type;
  return static_cast<size_t>((rows + Narrow<Q4kFormat>::kRows - 1) / Narrow<Q4kFormat>::kRows) *
         static_cast<size_t>((T + tokens_per_block(T) - 1) / tokens_per_block(T));
}

void tile_pipelined_launch(DType type, const TilePlan& p, const QuantMatrix& w, const __half* x,
                           const TileOutput& out, cudaStream_t stream) {
  if (type == DType::Q6_K)
    launch<Q6kFormat>(p, w, x, out, stream);
  else
    launch<Q4kFormat>(p, w, x, out, stream);
}

void tile_pipelined_launch_group(DType type, const TilePlan* plans, const QuantMatrix* ws,
                                 const TileOutput* outs, int n, const __half* x,
                                 cudaStream_t stream) {
  if (type == DType::Q6_K)
    launch_group<Q6kFormat>(plans, ws, outs, n, x, stream);
  else
    launch_group<Q4kFormat>(plans, ws, outs, n, x, stream);
}

void tile_pipelined_launch_experts(DType type, const TilePlan& plan, const QuantMatrix& w,
                                   const __half* x, const TileOutput& out, const ExpertTiles& tiles,
                                   int tokens_per_block, cudaStream_t stream) {
  if (type == DType::Q6_K)
    launch_experts<Q6kFormat>(plan, w, x, out, tiles, tokens_per_block, stream);
  else
    launch_experts<Q4kFormat>(plan, w, x, out, tiles, tokens_per_block, stream);
}

}  // namespace hostlm::cuda::quants
