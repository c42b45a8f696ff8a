// Single-token decode GEMV: the shape of every generation step of one stream, and the
// largest part of its time.
//
// Two things keep the general GEMV (gemv_quant.cu) at about half of the DRAM bandwidth: per
// weight byte it issues more activation loads (int8 values, their scale, their per-16 sums)
// than weight loads, and each warp has only one or two steps of weight loads in flight,
// held in registers. Here:
//   - a lane's columns are the same for every row its warp computes, so it loads their
//     activations once, into registers;
//   - each warp streams its rows through a private ring of kStages shared-memory stages
//     filled by cp.async: kStages - 1 rows of weights in flight per warp at no register cost.
//     The first stages are requested before the kernel waits for the one before it
//     (launch.cuh): weights never depend on it, so the DRAM stream starts while it finishes.
// Rows wider than one segment of 32 x kPiecesPerLane pieces are split over several warps of
// a block; their sums are added in shared memory in segment order (deterministic, and the
// same however many rows a warp takes, so grouped and single launches give the same bits).
// A row's arithmetic is the general GEMV's, in its order (lane_dot in pieces.h).
#include <algorithm>
#include <cstdint>
#include <cstdlib>

#include "cuda/common.cuh"
#include "cuda/launch.cuh"
#include "cuda/quants/gemv_one_token.h"
#include "cuda/quants/split_layout.h"
#include "cuda/quants/stage_layout.h"
#include "cuda/quants/tile_common.cuh"

namespace hostlm::cuda::quants {
namespace {

constexpr int kPiecesPerLane = 4;
// Stages per warp ring: 3 rows in flight per warp. Measured on the 9B Q4_K_M shape (H200):
// tg128 353 and 350 t/s with 4, 322 and 319 with 6 (fewer blocks fit an SM).
constexpr int kStages = 4;
constexpr int kMaxWarps = 16;  // per block, so at most 16 segments
constexpr int kWantedWarps = 8;
constexpr int kMaxRowsPerWarp = 16;

struct Plan {
  int segments;       // warps that share one row
  int groups;         // sets of `segments` warps per block, each with its own rows
  int rows_per_warp;  // consecutive rows of one group
  __host__ __device__ int rows_per_block() const { return groups * rows_per_warp; }
};

// Blocks of matrix j are [first[j], first[j + 1]).
struct Launch {
  QuantMatrix w[kGemvGroupMax];
  float* y[kGemvGroupMax];
  unsigned first[kGemvGroupMax + 1];
  int n;
  Plan plan;
  StageLayout stage;
};

__device__ __forceinline__ void cp_async(unsigned dst, const uint8_t* src, int chunk) {
  if (chunk == 16)
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(src) : "memory");
  else if (chunk == 8)
    asm volatile("cp.async.ca.shared.global [%0], [%1], 8;\n" ::"r"(dst), "l"(src) : "memory");
  else
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(dst), "l"(src) : "memory");
}

__device__ __forceinline__ void cp_async_commit() {
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}

// One lane's activations for its pieces of the segment: per piece and range, 16 int8 values,
// their scale and their scaled sum.
template <class Q>
struct LaneActs {
  Words4 q[kPiecesPerLane][Q::kRanges];
  float dx[kPiecesPerLane][Q::kRanges];
  float s16[kPiecesPerLane][Q::kRanges];
};

template <class Q>
struct WarpRows {
  const QuantMatrix& w;
  const StageLayout& layout;
  int64_t block0;  // first block of the segment within a row
  int seg_blocks;  // blocks of the segment that exist
  uint8_t* ring;   // this warp's kStages stages
  int lane;

  // Issues the copies of row `row` into stage `s`.
  __device__ __forceinline__ void fetch(int64_t row, int s) const {
    const unsigned stage = static_cast<unsigned>(__cvta_generic_to_shared(ring + s * layout.bytes));
    const int64_t n0 = row * w.nb + block0;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      if (j >= layout.n_regions) break;
      const int size = layout.size[j], chunk = layout.chunk[j];
      const uint8_t* src = w.region[j] + n0 * size;
      const int bytes = seg_blocks * size;
      for (int o = lane * chunk; o < bytes; o += 32 * chunk)
        cp_async(stage + layout.offset[j] + o, src + o, chunk);
    }
  }

  // The stage as a matrix of one row of this segment's blocks.
  __device__ __forceinline__ QuantMatrix view(int s) const {
    QuantMatrix m{};
    for (int j = 0; j < 4; ++j) m.region[j] = ring + s * layout.bytes + layout.offset[j];
    return m;
  }
};

template <class Q>
__device__ __forceinline__ void matrix_rows(const QuantMatrix& w, const QuantActs& x, float* y,
                                            const Plan plan, const StageLayout& layout,
                                            int64_t block, uint8_t* smem, float* partial) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int segment = warp % plan.segments, group = warp / plan.segments;
  const int64_t row0 = (block * plan.groups + group) * plan.rows_per_warp;
  const int n_rows =
      row0 < w.rows ? static_cast<int>(min(int64_t{plan.rows_per_warp}, w.rows - row0)) : 0;
  constexpr int kSegmentPieces = 32 * kPiecesPerLane;
  constexpr int kSegmentBlocks = kSegmentPieces / Q::kPieces;
  const auto n_pieces = static_cast<uint32_t>(w.nb) * Q::kPieces;
  const int64_t block0 = int64_t{segment} * kSegmentBlocks;
  const WarpRows<Q> rows{w,
                         layout,
                         block0,
                         static_cast<int>(min(int64_t{kSegmentBlocks}, w.nb - block0)),
                         smem + warp * kStages * layout.bytes,
                         lane};

#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < n_rows) rows.fetch(row0 + s, s);
    cp_async_commit();
  }
  pdl_begin();

  const uint32_t first = static_cast<uint32_t>(segment * kSegmentPieces + lane);
  bool valid[kPiecesPerLane];
  LaneActs<Q> a;
#pragma unroll
  for (int i = 0; i < kPiecesPerLane; ++i) {
    valid[i] = first + 32u * i < n_pieces;
    const uint32_t piece = min(first + 32u * i, n_pieces - 1);
    const uint32_t block_start = piece / Q::kPieces * Q::kBlockElems;
    // Only the element offsets of a piece are used here: its loads are dead code.
    const typename Q::P probe =
        Q::template load<false>(rows.view(0), 0, static_cast<int>(piece % Q::kPieces));
#pragma unroll
    for (int g = 0; g < Q::kRanges; ++g) {
      const uint32_t e = block_start + static_cast<uint32_t>(probe.off[g]);
      a.q[i][g] = load16(x.q + e);
      a.dx[i][g] = x.d[e >> 5];
      a.s16[i][g] = x.s16[e >> 4];
    }
  }

  for (int r = 0; r < n_rows; ++r) {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(kStages - 2) : "memory");
    __syncwarp();  // every lane's copies of row r have landed; row r - 1 is no longer read
    if (r + kStages - 1 < n_rows) rows.fetch(row0 + r + kStages - 1, (r + kStages - 1) % kStages);
    cp_async_commit();
    const QuantMatrix staged = rows.view(r % kStages);
    float acc = 0.f;
#pragma unroll
    for (int i = 0; i < kPiecesPerLane; ++i) {
      if (!valid[i]) continue;
      const int local = lane + 32 * i;
      const typename Q::P p =
          Q::template load<false>(staged, local / Q::kPieces, local % Q::kPieces);
#pragma unroll
      for (int g = 0; g < Q::kRanges; ++g) {
        int sumi = 0;
#pragma unroll
        for (int k = 0; k < 4; ++k) sumi = dp4a(p.q[4 * g + k], a.q[i][g].w[k], sumi);
        float v = acc + p.a[g] * (a.dx[i][g] * static_cast<float>(sumi));
        if constexpr (Q::kOffset != 0) v += p.a[g] * static_cast<float>(Q::kOffset) * a.s16[i][g];
        if constexpr (Q::kHasMin) v += p.m[g] * a.s16[i][g];
        acc = v;
      }
    }
    const float s = warp_sum(acc);
    if (lane == 0) {
      if (plan.segments == 1)
        y[row0 + r] = s;
      else
        partial[segment * plan.rows_per_block() + group * plan.rows_per_warp + r] = s;
    }
  }
  if (plan.segments == 1) return;
  __syncthreads();
  const int t = static_cast<int>(threadIdx.x);
  const int64_t row = block * plan.rows_per_block() + t;
  if (t < plan.rows_per_block() && row < w.rows) {
    float s = partial[t];
    for (int k = 1; k < plan.segments; ++k) s += partial[k * plan.rows_per_block() + t];
    y[row] = s;
  }
}

template <class Q>
__global__ void __launch_bounds__(kMaxWarps * 32)
    gemv_one_token_kernel(const Launch l, QuantActs x) {
  extern __shared__ __align__(16) uint8_t smem[];
  __shared__ float partial[kMaxWarps * kMaxRowsPerWarp];
  int j = 0;
  while (j + 1 < l.n && blockIdx.x >= l.first[j + 1]) ++j;
  matrix_rows<Q>(l.w[j], x, l.y[j], l.plan, l.stage, blockIdx.x - l.first[j], smem, partial);
}

int rows_per_warp_override() {
  static const int n = [] {
    const char* env = std::getenv("HOSTLM_CUDA_GEMV_ROWS");
    return env ? std::clamp(std::atoi(env), 1, kMaxRowsPerWarp) : 0;
  }();
  return n;
}

bool enabled() {
  static const bool on = [] {
    const char* env = std::getenv("HOSTLM_CUDA_GEMV_ONE_TOKEN");
    return !(env && env[0] == '0');
  }();
  return on;
}

int smem_per_block_optin() {
  static const int bytes = [] {
    int device = 0, v = 0;
    if (cudaGetDevice(&device) != cudaSuccess ||
        cudaDeviceGetAttribute(&v, cudaDevAttrMaxSharedMemoryPerBlockOptin, device) != cudaSuccess)
      return 48 << 10;
    return v;
  }();
  return bytes;
}

bool aligned_for(const StageLayout& s, int n_regions, const QuantMatrix& w) {
  for (int j = 0; j < n_regions; ++j)
    if (reinterpret_cast<uintptr_t>(w.region[j]) % static_cast<uintptr_t>(s.chunk[j]) != 0)
      return false;
  return true;
}

// Rows per warp: as few as give every resident block of the whole GPU a share in one wave.
// Each warp then streams its rows through its ring, and the kernel ramps up and drains once
// (measured: 4096 rows with one per warp took two waves of blocks and ran at a quarter of
// the bandwidth of the big products).
int rows_per_warp(int groups, int64_t total_rows, int resident_blocks) {
  if (const int forced = rows_per_warp_override()) return forced;
  const int64_t slots = int64_t{std::max(1, resident_blocks)} * groups;
  return static_cast<int>(
      std::clamp<int64_t>((total_rows + slots - 1) / slots, 1, kMaxRowsPerWarp));
}

// Launches `l` (its stage layout, segments and groups set), or returns false when the shared
// memory or the occupancy does not allow it.
template <class Q>
bool launch_staged(Launch l, int64_t total_rows, const OneTokenTargets& targets, const QuantActs& x,
                   cudaStream_t stream) {
  const auto kernel = gemv_one_token_kernel<Q>;
  const int warps = l.plan.groups * l.plan.segments;
  const size_t smem = size_t{static_cast<unsigned>(warps)} * kStages * l.stage.bytes;
  // The most dynamic shared memory a block may ask for beside the kernel's static arrays
  // (0: the attribute could not be set).
  static const size_t max_dynamic = [kernel] {
    cudaFuncAttributes attributes{};
    if (cudaFuncGetAttributes(&attributes, kernel) != cudaSuccess) {
      cudaGetLastError();
      return size_t{0};
    }
    const int bytes = smem_per_block_optin() - static_cast<int>(attributes.sharedSizeBytes);
    if (bytes <= 0 || cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                           bytes) != cudaSuccess) {
      cudaGetLastError();
      return size_t{0};
    }
    return static_cast<size_t>(bytes);
  }();
  if (smem > max_dynamic) return false;
  int per_sm = 0;
  if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, warps * 32, smem) !=
      cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  if (per_sm < 1) return false;
  l.plan.rows_per_warp = rows_per_warp(l.plan.groups, total_rows, per_sm * sm_count());
  l.n = targets.n;
  l.first[0] = 0;
  for (int j = 0; j < l.n; ++j) {
    l.w[j] = targets.w[j];
    l.y[j] = targets.y[j];
    l.first[j + 1] = l.first[j] + blocks_for(targets.w[j].rows, l.plan.rows_per_block());
  }
  if (l.first[l.n] > 0) launch_kernel(kernel, l.first[l.n], warps * 32, smem, stream, l, x);
  return true;
}

}  // namespace

bool launch_gemv_one_token(DType type, const OneTokenTargets& targets, const QuantActs& x,
                           cudaStream_t stream) {
  if (!enabled() || targets.n < 1 || targets.n > kGemvGroupMax) return false;
  bool launched = false;
  with_quant_type(type, [&](auto q) {
    using Q = decltype(q);
    if constexpr (Q::kRanges <= 2) {
      constexpr int kSegmentPieces = 32 * kPiecesPerLane;
      const int64_t nb = targets.w[0].nb;
      const int64_t n_pieces = nb * Q::kPieces;
      const auto segments = static_cast<int>((n_pieces + kSegmentPieces - 1) / kSegmentPieces);
      if (segments < 1 || segments > kMaxWarps) return;
      Launch l{};
      l.stage = stage_layout(split_layout(Q::kType), nb, kSegmentPieces / Q::kPieces);
      if (l.stage.bytes == 0) return;
      int64_t total_rows = 0;
      for (int j = 0; j < targets.n; ++j) {
        if (!aligned_for(l.stage, split_layout(Q::kType).n_regions, targets.w[j])) return;
        total_rows += targets.w[j].rows;
      }
      l.plan.segments = segments;
      l.plan.groups = std::max(1, kWantedWarps / segments);
      launched = launch_staged<Q>(l, total_rows, targets, x, stream);
    }
  });
  return launched;
}

}  // namespace hostlm::cuda::quants
