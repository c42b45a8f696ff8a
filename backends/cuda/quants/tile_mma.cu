// Quantized weights times a few dozen tokens (the decode steps of continuous batching):
// y[T, rows] = x[T, cols] * W^T with each weight byte read once for up to 64 tokens.
//
// A block of 4 warps owns 64 weight rows and up to kN tokens. Per 256 columns it expands its
// weight pieces (pieces.h) into shared memory as half, copies the tokens' half activations
// beside them (cp.async), and multiplies on tensor cores (mma.sync m16n8k16, float32
// accumulators); the next chunk's weight loads are issued before the products so that they
// are in flight meanwhile. Activations are half after a per-token power of two, undone on
// the output, as on the prefill path (dequant_quant.cu); the weights are expanded in half
// arithmetic (decode_range_half), without ever being written to memory.
//
// Why not the GEMV: at 8 tokens it re-reads every activation per pair of rows from L1 and
// does its dot products on the CUDA cores, 2.5x slower than at one token, and 32 streams took
// four passes over the weights. On the 9B shape (H200) 32 streams went from a 39.6 ms step to
// 16.5 ms. Still far from the bandwidth bound: Nsight Compute shows the gate/up product at
// ~0.5 TB/s with 20% occupancy, the time being the latency chain of each chunk (load, expand,
// barrier, multiply, barrier) with one chunk in flight per block. L2 prefetch ahead of the
// loads measured no gain. Q4_K and Q6_K, the bulk of a Q4_K_M model, have a multi-stage
// cp.async kernel of their own (tile_pipelined.cu) on GPUs with the shared memory for it.
//
// Matrices with few row blocks (a 4096-row projection is 64 blocks on a 132-SM GPU) are split
// over columns; each split writes its partial sums and the last one to finish adds them in
// split order, so results do not depend on timing.
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>

#include "cuda/common.cuh"
#include "cuda/launch.cuh"
#include "cuda/quants/quant_kernels.h"
#include "cuda/quants/quant_types.h"
#include "cuda/quants/tile_common.cuh"
#include "cuda/quants/tile_pipelined.h"
#include "cuda/tensor_core.cuh"

namespace hostlm::cuda::quants {
namespace {

constexpr int kThreads = 128;
constexpr int kRows = 64;    // weight rows per block: 16 per warp
constexpr int kChunk = 256;  // columns per step
// Halves per shared row: 528 bytes, so the 8 rows an ldmatrix reads hit distinct banks.
constexpr int kStride = 264;

constexpr size_t smem_bytes(int n_tokens) {
  return static_cast<size_t>(kRows + n_tokens) * kStride * sizeof(__half);
}

struct TileArgs {
  QuantMatrix w;
  const __half* x;  // [T, cols], each token scaled by a power of two
  const float* inv_scale;
  float* y;         // [T, rows]
  float* partial;   // [splits, T, rows] when splits > 1
  unsigned* count;  // one zeroed counter per (row block, token block)
  int T;
  int chunks_per_split;
  int splits;
};

template <class Q>
struct ChunkShape {
  static constexpr int kBlocks = kChunk / Q::kBlockElems;  // quant blocks per row
  static constexpr int kPiecesPerRow = kBlocks * Q::kPieces;
  static constexpr int kPerThread = kRows * kPiecesPerRow / kThreads;  // pieces per thread
  static constexpr int kPieceElems = Q::kBlockElems / Q::kPieces;
  static_assert(kRows * kPiecesPerRow % kThreads == 0);
  static_assert(kPieceElems == 16 * Q::kRanges);
};

// The weight piece a thread's j-th load is: row r of the block, block bl of the chunk, piece
// k of that block, and whether it lies inside the matrix.
struct PieceSlot {
  int r, bl, k;
  int64_t n;  // the block's index in the matrix (row * nb + b)
  bool inside;
};

template <class Q>
__device__ __forceinline__ PieceSlot piece_slot(const QuantMatrix& w, int64_t row0, int chunk,
                                                int tid, int j) {
  using S = ChunkShape<Q>;
  const int i = tid + j * kThreads;
  PieceSlot s;
  s.r = i / S::kPiecesPerRow;
  const int in_row = i % S::kPiecesPerRow;
  s.bl = in_row / Q::kPieces;
  s.k = in_row % Q::kPieces;
  const int64_t row = row0 + s.r, b = int64_t{chunk} * S::kBlocks + s.bl;
  s.inside = row < w.rows && b < w.nb;
  s.n = row * w.nb + b;
  return s;
}

template <class Q>
__device__ __forceinline__ void load_pieces(const QuantMatrix& w, int64_t row0, int chunk, int tid,
                                            typename Q::P (&p)[ChunkShape<Q>::kPerThread]) {
#pragma unroll
  for (int j = 0; j < ChunkShape<Q>::kPerThread; ++j) {
    const PieceSlot s = piece_slot<Q>(w, row0, chunk, tid, j);
    if (s.inside) p[j] = Q::load(w, s.n, s.k);
  }
}

// Range g of a piece as 8 half2 words, computed in half: a byte permute puts two bytes b
// under the exponent of 1024 (the half 1024 + b, exact), one subtraction leaves q + kOffset
// (small integers, exact) and one fused multiply-add gives a * q + m rounded once. a and m
// are rounded to half first. Why not decode_range's float math then a conversion: the
// expansion is most of this kernel's instructions, and this is 1.5 per value instead of ~5.
template <class Q>
__device__ __forceinline__ void decode_range_half(const typename Q::P& p, int g,
                                                  uint32_t (&out)[8]) {
  // Bytes are signed: flipping their top bit makes them b + 128 in 0..255.
  constexpr float kBias = 1024.f + 128.f - static_cast<float>(Q::kOffset);
  const __half2 bias = __float2half2_rn(kBias);
  const __half2 a = __float2half2_rn(p.a[g]);
  const __half2 m = __float2half2_rn(Q::kHasMin ? p.m[g] : 0.f);
#pragma unroll
  for (int w = 0; w < 4; ++w) {
    const uint32_t word = p.q[4 * g + w] ^ 0x80808080u;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const uint32_t bits = __byte_perm(word, 0x64646464u, h == 0 ? 0x5140u : 0x5342u);
      const __half2 q = __hsub2(*reinterpret_cast<const __half2*>(&bits), bias);
      const __half2 v = Q::kHasMin ? __hfma2(q, a, m) : __hmul2(q, a);
      out[2 * w + h] = *reinterpret_cast<const uint32_t*>(&v);
    }
  }
}

// The loaded pieces as half into ws; pieces outside the matrix write zeros over their share
// of the block (zero weights times zero activations, never NaN from stale shared memory).
template <class Q>
__device__ __forceinline__ void store_pieces(const QuantMatrix& w, int64_t row0, int chunk, int tid,
                                             const typename Q::P (&p)[ChunkShape<Q>::kPerThread],
                                             __half* ws) {
  using S = ChunkShape<Q>;
#pragma unroll
  for (int j = 0; j < S::kPerThread; ++j) {
    const PieceSlot s = piece_slot<Q>(w, row0, chunk, tid, j);
    __half* block = ws + s.r * kStride + s.bl * Q::kBlockElems;
    if (s.inside) {
#pragma unroll
      for (int g = 0; g < Q::kRanges; ++g) {
        uint32_t v[8];
        decode_range_half<Q>(p[j], g, v);
        auto* o = reinterpret_cast<uint4*>(block + p[j].off[g]);
        o[0] = make_uint4(v[0], v[1], v[2], v[3]);
        o[1] = make_uint4(v[4], v[5], v[6], v[7]);
      }
    } else {
      auto* o = reinterpret_cast<uint4*>(block + s.k * S::kPieceElems);
#pragma unroll
      for (int i = 0; i < S::kPieceElems / 8; ++i) o[i] = make_uint4(0, 0, 0, 0);
    }
  }
}

// Tokens [t0, t0 + kN) of columns [chunk * 256, +256) into xs, zeros outside x.
template <int kN>
__device__ __forceinline__ void copy_tokens(const TileArgs& a, int t0, int chunk, int tid,
                                            __half* xs) {
  constexpr int kGroups = kChunk / 8;  // 16-byte groups per token row
#pragma unroll
  for (int j = 0; j < kN * kGroups / kThreads; ++j) {
    const int i = tid + j * kThreads;
    const int t = i / kGroups, group = i % kGroups;
    const int64_t col = int64_t{chunk} * kChunk + group * 8;
    const bool valid = t0 + t < a.T && col < a.w.cols;
    const __half* src = valid ? a.x + int64_t{t0 + t} * a.w.cols + col : a.x;
    cp_async_16_or_zero(smem_addr(xs + t * kStride + group * 8), src, valid);
  }
  cp_async_commit();
}

template <int kN>
__device__ __forceinline__ void multiply_chunk(const __half* ws, const __half* xs, int warp,
                                               int lane, float (&acc)[kN / 8][4]) {
  const int m = lane / 8;
#pragma unroll
  for (int ks = 0; ks < kChunk / 16; ++ks) {
    unsigned a[4];
    ldmatrix_x4(
        a, smem_addr(ws + (warp * 16 + (m % 2) * 8 + lane % 8) * kStride + ks * 16 + (m / 2) * 8));
#pragma unroll
    for (int jp = 0; jp < kN / 16; ++jp) {
      unsigned b[4];
      ldmatrix_x4(
          b, smem_addr(xs + (jp * 16 + (m / 2) * 8 + lane % 8) * kStride + ks * 16 + (m % 2) * 8));
      mma_16816(acc[2 * jp], a, b[0], b[1]);
      mma_16816(acc[2 * jp + 1], a, b[2], b[3]);
    }
  }
}

// Blocks per SM the registers must allow. 16-token blocks fit four without spilling; 32- and
// 64-token blocks are given the registers they need (three and two blocks): forced to four
// and three they spilled (Nsight Compute: 104K local-memory requests in one 8192-row Q4_K
// product), and on the 9B shape the 64-stream decode step went from 27.1 to 25.9 ms without.
constexpr int min_blocks(int n_tokens) { return n_tokens <= 16 ? 4 : n_tokens <= 32 ? 3 : 2; }

template <class Q, int kN, class G = NoExpertTiles>
__global__ void __launch_bounds__(kThreads, min_blocks(kN))
    tile_mma_kernel(TileArgs args, G groups) {
  pdl_begin();
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  using S = ChunkShape<Q>;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  auto* ws = reinterpret_cast<__half*>(smem_raw);  // [kRows][kStride]
  __half* xs = ws + kRows * kStride;               // [kN][kStride]
  __shared__ bool last_split;
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int64_t row0 = int64_t{blockIdx.x} * kRows;
  const int t0 = static_cast<int>(blockIdx.y) * kN;
  if (!select_expert(groups, t0, args.w, args.x, args.y, args.inv_scale, args.T)) return;
  const QuantMatrix& w = args.w;
  const int n_chunks = static_cast<int>((w.cols + kChunk - 1) / kChunk);
  const int first = G::kOn ? 0 : static_cast<int>(blockIdx.z) * args.chunks_per_split;
  const int end = min(n_chunks, first + args.chunks_per_split);

  float acc[kN / 8][4] = {};
  typename Q::P pieces[S::kPerThread];
  load_pieces<Q>(w, row0, first, tid, pieces);
  for (int chunk = first; chunk < end; ++chunk) {
    copy_tokens<kN>(args, t0, chunk, tid, xs);
    store_pieces<Q>(w, row0, chunk, tid, pieces, ws);
    cp_async_wait_all();
    __syncthreads();
    if (chunk + 1 < end) load_pieces<Q>(w, row0, chunk + 1, tid, pieces);
    multiply_chunk<kN>(ws, xs, warp, lane, acc);
    __syncthreads();
  }

  const TileOutput out{args.y, args.partial, args.count, args.inv_scale,
                       w.rows, args.T,       args.splits};
  store_tile<kN>(acc, out, row0, t0, last_split);
#endif
}

TilePlan plan_for(DType type, int64_t rows, int64_t cols, int64_t T) {
  if (tile_pipelined_ready(type)) return tile_pipelined_plan(type, rows, cols, T);
  return tile_plan(rows, (cols + kChunk - 1) / kChunk, T, kRows, min_blocks(tokens_per_block(T)));
}

template <class Q, int kN>
cudaError_t set_smem() {
  cudaError_t status = cudaSuccess;
  for (cudaError_t s :
       {cudaFuncSetAttribute(tile_mma_kernel<Q, kN>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             static_cast<int>(smem_bytes(kN))),
        cudaFuncSetAttribute(tile_mma_kernel<Q, kN, ExpertTiles>,
                             cudaFuncAttributeMaxDynamicSharedMemorySize,
                             static_cast<int>(smem_bytes(kN)))})
    if (status == cudaSuccess) status = s;
  return status;
}

template <class Q, int kN, class G = NoExpertTiles>
void launch(const TilePlan& p, const TileArgs& a, cudaStream_t stream, const G& groups = {}) {
  const dim3 grid(p.row_blocks, p.token_blocks,
                  static_cast<unsigned>(G::kOn ? groups.n : p.splits));
  launch_kernel(tile_mma_kernel<Q, kN, G>, grid, kThreads, smem_bytes(kN), stream, a, groups);
}

}  // namespace

cudaError_t prepare_tile_matmul() {
  int device = 0, major = 0;
  cudaError_t status = cudaGetDevice(&device);
  if (status == cudaSuccess)
    status = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device);
  if (status != cudaSuccess) return status;
  if (major < 8) return cudaErrorNotSupported;  // mma.sync m16n8k16 and cp.async
  // Every type: a kernel without its shared-memory attribute fails to launch (session 35's
  // codebook, ternary and MXFP4 types did, "invalid argument", until they were listed here).
  for (DType type : kQuantTypes)
    with_quant_type(type, [&](auto q) {
      using Q = decltype(q);
      for (cudaError_t s : {set_smem<Q, 16>(), set_smem<Q, 32>(), set_smem<Q, 64>()})
        if (status == cudaSuccess) status = s;
    });
  if (status == cudaSuccess) status = prepare_tile_pipelined();
  return status;
}

size_t tile_matmul_partial_floats(DType type, int64_t rows, int64_t cols, int64_t T) {
  return tile_partial_floats(plan_for(type, rows, cols, T), rows, T);
}

size_t tile_matmul_counters(DType type, int64_t rows, int64_t T) {
  if (tile_pipelined_ready(type)) return tile_pipelined_counters(type, rows, T);
  const TilePlan p = plan_for(type, rows, kChunk, T);
  return size_t{p.row_blocks} * p.token_blocks;
}

cudaError_t tile_matmul(DType type, const void* w, int64_t rows, int64_t cols, const void* x_f16,
                        const float* inv_scale, int64_t T, float* y, float* partial,
                        size_t partial_floats, unsigned* counters, size_t n_counters,
                        cudaStream_t stream) {
  const SplitLayout layout = split_layout(type);
  if (layout.n_regions == 0 || T < 1 || cols % layout.block_elems != 0)
    return cudaErrorInvalidValue;
  if (rows == 0 || cols == 0) return cudaSuccess;
  TilePlan p = plan_for(type, rows, cols, T);
  if (p.splits > 1 && (tile_partial_floats(p, rows, T) > partial_floats ||
                       size_t{p.row_blocks} * p.token_blocks > n_counters)) {
    p.chunks_per_split = p.chunks_per_split * p.splits;
    p.splits = 1;
  }
  const QuantMatrix m = quant_matrix(type, w, rows, cols);
  const auto* x = static_cast<const __half*>(x_f16);
  if (tile_pipelined_ready(type)) {
    const TileOutput out{y, partial, counters, inv_scale, rows, static_cast<int>(T), p.splits};
    tile_pipelined_launch(type, p, m, x, out, stream);
    return cudaGetLastError();
  }
  TileArgs a{m,       x, inv_scale, y, partial, counters, static_cast<int>(T), p.chunks_per_split,
             p.splits};
  const int n = tokens_per_block(T);
  with_quant_type(type, [&](auto q) {
    using Q = decltype(q);
    if (n == 16)
      launch<Q, 16>(p, a, stream);
    else if (n == 32)
      launch<Q, 32>(p, a, stream);
    else
      launch<Q, 64>(p, a, stream);
  });
  return cudaGetLastError();
}

bool tile_matmul_groups(DType type) { return tile_pipelined_ready(type); }

cudaError_t tile_matmul_group(DType type, int n, const void* const* data, const int64_t* rows,
                              int64_t cols, const void* x_f16, const float* inv_scale, int64_t T,
                              float* const* ys, float* partial, size_t partial_floats,
                              unsigned* counters, size_t n_counters, cudaStream_t stream) {
  static_assert(kTileGroupMax <= kMaxGroupMatrices);
  const SplitLayout layout = split_layout(type);
  if (!tile_pipelined_ready(type) || n < 2 || n > kTileGroupMax || layout.n_regions == 0 || T < 1 ||
      cols <= 0 || cols % layout.block_elems != 0)
    return cudaErrorNotSupported;
  TilePlan plans[kTileGroupMax];
  QuantMatrix ws[kTileGroupMax];
  TileOutput outs[kTileGroupMax];
  size_t partial_used = 0, counters_used = 0;
  for (int j = 0; j < n; ++j) {
    if (rows[j] <= 0) return cudaErrorNotSupported;
    // The plan of the matrix's own launch (tile_matmul), so the sums are the same.
    TilePlan p = plan_for(type, rows[j], cols, T);
    if (p.splits > 1 && (tile_partial_floats(p, rows[j], T) > partial_floats ||
                         size_t{p.row_blocks} * p.token_blocks > n_counters)) {
      p.chunks_per_split = p.chunks_per_split * p.splits;
      p.splits = 1;
    }
    float* my_partial = nullptr;
    unsigned* my_counters = nullptr;
    if (p.splits > 1) {
      const size_t need = tile_partial_floats(p, rows[j], T);
      const size_t count = size_t{p.row_blocks} * p.token_blocks;
      if (partial_used + need > partial_floats || counters_used + count > n_counters)
        return cudaErrorNotSupported;
      my_partial = partial + partial_used;
      my_counters = counters + counters_used;
      partial_used += need;
      counters_used += count;
    }
    plans[j] = p;
    ws[j] = quant_matrix(type, data[j], rows[j], cols);
    outs[j] = TileOutput{ys[j],   my_partial,          my_counters, inv_scale,
                         rows[j], static_cast<int>(T), p.splits};
  }
  tile_pipelined_launch_group(type, plans, ws, outs, n, static_cast<const __half*>(x_f16), stream);
  return cudaGetLastError();
}

cudaError_t tile_matmul_experts(DType type, const ExpertTiles& tiles, int64_t rows, int64_t cols,
                                const void* x_f16, const float* inv_scale, int max_count,
                                int tokens_per_block, float* y, cudaStream_t stream) {
  const SplitLayout layout = split_layout(type);
  if (layout.n_regions == 0 || cols % layout.block_elems != 0 || tiles.n > kMaxExpertTiles ||
      (tokens_per_block != 16 && tokens_per_block != 32 && tokens_per_block != 64))
    return cudaErrorInvalidValue;
  if (tiles.n <= 0 || max_count <= 0 || rows == 0 || cols == 0) return cudaSuccess;
  const QuantMatrix m = quant_matrix(type, tiles.data[0], rows, cols);
  const auto* x = static_cast<const __half*>(x_f16);
  const int n = tokens_per_block;
  TilePlan p;
  p.token_blocks = blocks_for(max_count, n);
  p.splits = 1;
  if (tile_pipelined_ready(type)) {
    p.row_blocks = 0;  // the kernel's own row blocks
    const TileOutput out{y, nullptr, nullptr, inv_scale, rows, max_count, 1};
    tile_pipelined_launch_experts(type, p, m, x, out, tiles, n, stream);
    return cudaGetLastError();
  }
  p.row_blocks = blocks_for(rows, kRows);
  p.chunks_per_split = static_cast<int>((cols + kChunk - 1) / kChunk);
  TileArgs a{m, x, inv_scale, y, nullptr, nullptr, max_count, p.chunks_per_split, 1};
  with_quant_type(type, [&](auto q) {
    using Q = decltype(q);
    if (n == 16)
      launch<Q, 16>(p, a, stream, tiles);
    else if (n == 32)
      launch<Q, 32>(p, a, stream, tiles);
    else
      launch<Q, 64>(p, a, stream, tiles);
  });
  return cudaGetLastError();
}

}  // namespace hostlm::cuda::quants
