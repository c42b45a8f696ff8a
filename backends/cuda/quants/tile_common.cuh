// What the tile products (tile_mma.cu, tile_pipelined.cu) share: how a launch is cut into blocks
// and column splits, and how a warp's m16n8 accumulators reach y, adding split partial sums
// in a fixed order so that results never depend on which split finished last.
#pragma once
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>

#include "cuda/common.cuh"
#include "cuda/quants/expert_tiles.h"
#include "cuda/quants/group_place.h"
#include "cuda/quants/pieces.h"

namespace hostlm::cuda::quants {

inline int sm_count() {
  static const int n = [] {
    int device = 0, count = 0;
    if (cudaGetDevice(&device) != cudaSuccess ||
        cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, device) != cudaSuccess)
      return 1;
    return std::max(1, count);
  }();
  return n;
}

inline int tokens_per_block(int64_t T) { return T <= 16 ? 16 : T <= 32 ? 32 : 64; }

struct TilePlan {
  unsigned row_blocks, token_blocks;
  int chunks_per_split, splits;
  int shape = 0;  // which block shape of the kernel (tile_pipelined.cu has two)
};

// The share of the launch's block slots that its blocks fill, over all its waves.
inline double wave_fill(const TilePlan& p, int resident_per_sm) {
  const int64_t blocks = int64_t{p.row_blocks} * p.token_blocks * p.splits;
  const int64_t slots = int64_t{resident_per_sm} * sm_count();
  return static_cast<double>(blocks) / static_cast<double>((blocks + slots - 1) / slots * slots);
}

// Splits over columns while all blocks still fit on the GPU at once (`resident_per_sm`
// blocks per SM): more blocks hide more of the loads' latency, but a second wave would add a
// whole block's latency chain again.
// HOSTLM_CUDA_TILE_SMALL_SPLITS=N: matrices of at most 64 rows (a delta-rule layer's alpha and
// beta) take at most N splits (default: as many as fill the GPU), for measuring whether their
// latency is the reduction's or the chunks'.
inline int64_t small_matrix_splits() {
  static const int64_t n = [] {
    const char* env = std::getenv("HOSTLM_CUDA_TILE_SMALL_SPLITS");
    return env == nullptr ? int64_t{0} : std::max<int64_t>(0, std::atoll(env));
  }();
  return n;
}

inline TilePlan tile_plan(int64_t rows, int64_t n_chunks, int64_t T, int rows_per_block,
                          int resident_per_sm) {
  TilePlan p;
  p.row_blocks = blocks_for(rows, rows_per_block);
  p.token_blocks = blocks_for(T, tokens_per_block(T));
  const int64_t tiles = int64_t{p.row_blocks} * p.token_blocks;
  const int64_t resident = int64_t{resident_per_sm} * sm_count();
  int64_t most = n_chunks;
  if (rows <= 64 && small_matrix_splits() > 0) most = std::min(most, small_matrix_splits());
  const int splits = static_cast<int>(std::clamp<int64_t>(resident / tiles, 1, most));
  p.chunks_per_split = static_cast<int>((n_chunks + splits - 1) / splits);
  p.splits = static_cast<int>((n_chunks + p.chunks_per_split - 1) / p.chunks_per_split);
  return p;
}

inline size_t tile_partial_floats(const TilePlan& p, int64_t rows, int64_t T) {
  return p.splits > 1 ? static_cast<size_t>(p.splits) * static_cast<size_t>(T * rows) : 0;
}

// Where a tile's results go.
struct TileOutput {
  float* y;                // [T, rows]
  float* partial;          // [splits, T, rows] when splits > 1
  unsigned* count;         // one zeroed counter per (row block, token block)
  const float* inv_scale;  // per token, undoes the activations' power-of-two scale
  int64_t rows;
  int T;
  int splits;
};

// Several matrices that read the same input, each with its own plan, in one launch
// (tile_matmul_group): a decode step's small products (a delta-rule layer's 32-row alpha and
// beta beside its qkv and z, an attention layer's k and v beside q) each paid a launch and a
// whole block's latency chain for a few chunks. Grid x runs over every member's row blocks
// times splits, members with the longest splits first so that short ones fill the last wave.
// Each member's blocks do what its own launch would, so the results are the same bits.
// A kernel parameter (C++17, device code includes this).
inline constexpr int kMaxGroupMatrices = 8;

struct MatrixGroup {
  static constexpr bool kOn = false;  // not expert tiles
  static constexpr bool kGroup = true;
  QuantMatrix w[kMaxGroupMatrices];
  TileOutput out[kMaxGroupMatrices];
  int chunks_per_split[kMaxGroupMatrices];
  unsigned row_blocks[kMaxGroupMatrices];
  unsigned first_block[kMaxGroupMatrices + 1];  // member m: grid x from first_block[m]
  int n;
};

// Where a block of a group launch works (group_place.h): its member's matrix, outputs and
// plan into w, out and chunks_per_split, its first row, its split and its split counter.
__device__ __forceinline__ void place_in_group(const MatrixGroup& g, int rows_per_block,
                                               QuantMatrix& w, TileOutput& out,
                                               int& chunks_per_split, int64_t& row0, int& split,
                                               unsigned& counter) {
  const GroupPlace p = group_place(g.first_block, g.row_blocks, g.n, blockIdx.x, blockIdx.y);
  w = g.w[p.member];
  out = g.out[p.member];
  chunks_per_split = g.chunks_per_split[p.member];
  row0 = int64_t{p.row_block} * rows_per_block;
  split = p.split;
  counter = p.counter;
}

// Calls f(value, row, token) for each of this lane's accumulators inside y: element e of
// n-tile j is row warp * 16 + lane / 4 (+ 8 for e >= 2), token j * 8 + 2 * (lane % 4) + e % 2.
template <int kN, class F>
__device__ __forceinline__ void for_each_output(const float (&acc)[kN / 8][4], int64_t row0, int t0,
                                                int64_t rows, int T, int warp, int lane, F&& f) {
#pragma unroll
  for (int j = 0; j < kN / 8; ++j)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int64_t row = row0 + warp * 16 + lane / 4 + (e >= 2 ? 8 : 0);
      const int t = t0 + j * 8 + (lane % 4) * 2 + (e & 1);
      if (row < rows && t < T) f(acc[j][e], static_cast<size_t>(row), static_cast<size_t>(t));
    }
}

// Writes the block's tile (rows row0 .. row0 + block_rows, tokens t0 .. t0 + block_tokens). This
// warp's accumulators are its 16 rows from row0 + 16 * row_warp and kNW tokens from warp_t0. With
// splits, each writes its partial sums and the last to arrive adds all of them in split order.
// `last_split` is a __shared__ flag of the block. Every thread of the block must call this.
// `split` and `counter` place the block among the splits and their counters (a plain launch:
// blockIdx.z and blockIdx.y * gridDim.x + blockIdx.x, store_tile_part).
template <int kNW>
__device__ __forceinline__ void store_tile_part_at(const float (&acc)[kNW / 8][4],
                                                   const TileOutput& o, int64_t row0, int t0,
                                                   int block_rows, int block_tokens, int row_warp,
                                                   int warp_t0, int split, unsigned counter,
                                                   bool& last_split) {
  const int tid = threadIdx.x, lane = tid % 32;
  const size_t T = static_cast<size_t>(o.T), rows = static_cast<size_t>(o.rows);
  float* y = o.y;
  const float* inv_scale = o.inv_scale;
  if (o.splits == 1) {
    for_each_output<kNW>(
        acc, row0, warp_t0, o.rows, o.T, row_warp, lane,
        [&](float v, size_t row, size_t t) { y[t * rows + row] = v * inv_scale[t]; });
    return;
  }
  float* mine = o.partial + static_cast<size_t>(split) * T * rows;
  for_each_output<kNW>(acc, row0, warp_t0, o.rows, o.T, row_warp, lane,
                       [&](float v, size_t row, size_t t) { mine[t * rows + row] = v; });
  __threadfence();
  __syncthreads();
  unsigned* count = o.count + counter;
  if (tid == 0) last_split = atomicAdd(count, 1u) == static_cast<unsigned>(o.splits - 1);
  __syncthreads();
  if (!last_split) return;
  __threadfence();
  // The last split adds all of them with the whole block, elements spread over its threads
  // and four splits' loads in flight at once, in split order per element (whichever split
  // finished last). Summing each lane's own accumulators one split at a time waited for one
  // round trip per split (Nsight Compute: 18-24 us for a 32-row matrix in 16 splits).
  const size_t split_floats = T * rows;
  const int rows_here = static_cast<int>(min(int64_t{block_rows}, o.rows - row0));
  const int tokens_here = min(block_tokens, o.T - t0);
  const int n_valid = rows_here * tokens_here;
  constexpr int kPer = 8;
  for (int base = tid; base < n_valid; base += static_cast<int>(blockDim.x) * kPer) {
    size_t at[kPer];
#pragma unroll
    for (int k = 0; k < kPer; ++k) {
      const int i = min(base + k * static_cast<int>(blockDim.x), n_valid - 1);
      at[k] = static_cast<size_t>(t0 + i / rows_here) * rows + static_cast<size_t>(row0) +
              static_cast<size_t>(i % rows_here);
    }
    float sum[kPer] = {};
    int z = 0;
    for (; z + 4 <= o.splits; z += 4) {
      float v[4][kPer];
#pragma unroll
      for (int zz = 0; zz < 4; ++zz)
#pragma unroll
        for (int k = 0; k < kPer; ++k)
          v[zz][k] = __ldcg(o.partial + (z + zz) * split_floats + at[k]);
#pragma unroll
      for (int zz = 0; zz < 4; ++zz)
#pragma unroll
        for (int k = 0; k < kPer; ++k) sum[k] += v[zz][k];
    }
    for (; z < o.splits; ++z)
#pragma unroll
      for (int k = 0; k < kPer; ++k) sum[k] += __ldcg(o.partial + z * split_floats + at[k]);
#pragma unroll
    for (int k = 0; k < kPer; ++k)
      if (base + k * static_cast<int>(blockDim.x) < n_valid)
        y[at[k]] = sum[k] * inv_scale[at[k] / rows];
  }
  if (tid == 0) *count = 0;  // ready for the next launch (and graph replay)
}

template <int kNW>
__device__ __forceinline__ void store_tile_part(const float (&acc)[kNW / 8][4], const TileOutput& o,
                                                int64_t row0, int t0, int block_rows,
                                                int block_tokens, int row_warp, int warp_t0,
                                                bool& last_split) {
  store_tile_part_at<kNW>(acc, o, row0, t0, block_rows, block_tokens, row_warp, warp_t0,
                          static_cast<int>(blockIdx.z), blockIdx.y * gridDim.x + blockIdx.x,
                          last_split);
}

// With expert tiles (G = ExpertTiles, tile_matmul_experts), grid slice z is expert z over its
// own rows: the product's matrix, activations, scales, outputs and row count are pointed at
// them. False when this block's tokens (from t0) lie past the expert's rows: nothing to do.
// The tiles are a kernel parameter, so this may run before the programmatic wait.
template <class G, class Half>
__device__ __forceinline__ bool select_expert(const G& g, int t0, QuantMatrix& w, const Half*& x,
                                              float*& y, const float*& inv_scale, int& T) {
  if constexpr (G::kOn) {
    const int z = static_cast<int>(blockIdx.z);
    if (t0 >= g.count[z]) return false;
#pragma unroll
    for (int j = 0; j < 4; ++j) w.region[j] = g.data[z] + g.region_offset[j];
    x += int64_t{g.row0[z]} * w.cols;
    inv_scale += g.row0[z];
    y += int64_t{g.row0[z]} * w.rows;
    T = g.count[z];
  }
  return true;
}

// The common shape: warp w has rows 16w .. 16w + 15 of the block and all its kN tokens.
template <int kN>
__device__ __forceinline__ void store_tile(const float (&acc)[kN / 8][4], const TileOutput& o,
                                           int64_t row0, int t0, bool& last_split) {
  const int warp = static_cast<int>(threadIdx.x / 32);
  store_tile_part<kN>(acc, o, row0, t0, static_cast<int>(blockDim.x / 2), kN, warp, t0, last_split);
}

}  // namespace hostlm::cuda::quants
