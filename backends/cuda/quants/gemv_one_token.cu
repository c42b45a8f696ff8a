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
// A row's arithmetic is the general GEMV's, in its order (lane_dot in pieces.h), except for
// Q4_K and Q5_K, whose lanes take pieces in pairs (PairLanes).
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <type_traits>

#include "cuda/common.cuh"
#include "cuda/conv_step.cuh"
#include "cuda/launch.cuh"
#include "cuda/quants/fold_norm.cuh"
#include "cuda/quants/gemv_one_token.h"
#include "cuda/quants/quant_types.h"
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
  FoldedNorm norm;       // with kFold: the norm whose output the products read
  int norm_threads;      // rms_norm_threads(norm.n): the partition of its sum of squares
  unsigned fold_offset;  // bytes of dynamic shared memory before the fold's area
  ConvStep conv;         // with kConv: the convolution of the first matrix's rows
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

// What one lane of a warp multiplies for every row of its segment, in the general form: its
// kPiecesPerLane pieces (lanes take consecutive pieces), their activations in registers
// (per piece and range: 16 int8 values, their scale and their scaled sum), and a row's
// arithmetic that of the general GEMV, in its order (lane_dot in pieces.h).
template <class Q>
struct PieceLanes {
  Words4 q[kPiecesPerLane][Q::kRanges];
  float dx[kPiecesPerLane][Q::kRanges];
  float s16[kPiecesPerLane][Q::kRanges];
  bool valid[kPiecesPerLane];
  int lane;

  // `any_stage`: a staged view; only the element offsets of a piece are taken from it.
  __device__ __forceinline__ void load(const QuantActs& x, int segment, int lane_id,
                                       uint32_t n_pieces, const QuantMatrix& any_stage) {
    lane = lane_id;
    const auto first = static_cast<uint32_t>(segment * 32 * kPiecesPerLane + lane);
#pragma unroll
    for (int i = 0; i < kPiecesPerLane; ++i) {
      valid[i] = first + 32u * i < n_pieces;
      const uint32_t piece = min(first + 32u * i, n_pieces - 1);
      const uint32_t block_start = piece / Q::kPieces * Q::kBlockElems;
      // Only the element offsets of a piece are used here: its loads are dead code.
      const typename Q::P probe =
          Q::template load<false>(any_stage, 0, static_cast<int>(piece % Q::kPieces));
#pragma unroll
      for (int g = 0; g < Q::kRanges; ++g) {
        const uint32_t e = block_start + static_cast<uint32_t>(probe.off[g]);
        q[i][g] = load16(x.q + e);
        dx[i][g] = x.d[e >> 5];
        s16[i][g] = x.s16[e >> 4];
      }
    }
  }

  __device__ __forceinline__ float dot(const QuantMatrix& staged) const {
    float acc = 0.f;
#pragma unroll
    for (int i = 0; i < kPiecesPerLane; ++i) {
      // Pieces past the end read a valid one and are dropped: unconditional loads may be
      // issued ahead of the arithmetic.
      const int local = valid[i] ? lane + 32 * i : lane;
      const typename Q::P p =
          Q::template load<false>(staged, local / Q::kPieces, local % Q::kPieces);
#pragma unroll
      for (int g = 0; g < Q::kRanges; ++g) {
        int sumi = 0;
#pragma unroll
        for (int k = 0; k < 4; ++k) sumi = dp4a(p.q[4 * g + k], q[i][g].w[k], sumi);
        float v = acc + p.a[g] * (dx[i][g] * static_cast<float>(sumi));
        if constexpr (Q::kOffset != 0) v += p.a[g] * static_cast<float>(Q::kOffset) * s16[i][g];
        if constexpr (Q::kHasMin) v += p.m[g] * s16[i][g];
        if (valid[i]) acc = v;
      }
    }
    return acc;
  }
};

// Q4_K and Q5_K: a lane takes both pieces of one 64-element chunk c of a block (32 bytes of
// qs). They share the chunk's two scales and mins, and range for range one 32-value block
// of the activations, so the scale fields are decoded once per pair instead of per piece and
// each sub-block is one integer dot of 32 products with one scale: fewer instructions, and a
// shorter chain of them, per weight byte (Q6_K, with 1.46x the bytes per weight, had streamed
// at 1.33x the bandwidth of Q4_K; the 9B's tg128 rose 3-6%).
template <class Q>
struct PairLanes {
  static constexpr bool kQ5 = Q::kType == DType::Q5_K;
  static constexpr int kPairs = kPiecesPerLane / 2;
  Words4 q[kPairs][2][2];  // [pair][sub-block r][half e]: 32 int8 values
  float dx[kPairs][2];     // their scale
  float s32[kPairs][2];    // their scaled sum
  bool valid[kPairs];
  int lane;

  // Pair p of a segment: pieces 2p and 2p + 1, chunk p % 4 of the segment's block p / 4.
  __device__ __forceinline__ void load(const QuantActs& x, int segment, int lane_id,
                                       uint32_t n_pieces, const QuantMatrix&) {
    lane = lane_id;
    const auto first = static_cast<uint32_t>(segment * 32 * kPiecesPerLane + 2 * lane);
#pragma unroll
    for (int i = 0; i < kPairs; ++i) {
      valid[i] = first + 64u * i < n_pieces;
      const uint32_t piece = min(first + 64u * i, n_pieces - 2);
      const uint32_t chunk_start = piece / 8 * 256 + 64 * (piece % 8 / 2);
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        const uint32_t e = chunk_start + 32 * r;
        q[i][r][0] = load16(x.q + e);
        q[i][r][1] = load16(x.q + e + 16);
        dx[i][r] = x.d[e >> 5];
        s32[i][r] = x.s16[e >> 4] + x.s16[(e >> 4) + 1];
      }
    }
  }

  // All shared-memory reads of a row are issued before any arithmetic (pairs past the end
  // read a valid pair and are dropped): with about four warps per scheduler, their latency
  // was the main stall.
  __device__ __forceinline__ float dot(const QuantMatrix& staged) const {
    Words4 v[kPairs][2], qh[kPairs][2], head[kPairs];
#pragma unroll
    for (int i = 0; i < kPairs; ++i) {
      const int pair = valid[i] ? lane + 32 * i : lane, block = pair / 4, c = pair % 4;
      v[i][0] = load16(staged.region[0] + block * 128 + 32 * c);
      v[i][1] = load16(staged.region[0] + block * 128 + 32 * c + 16);
      if constexpr (kQ5) {
        qh[i][0] = load16(staged.region[1] + block * 32);
        qh[i][1] = load16(staged.region[1] + block * 32 + 16);
      }
      head[i] = load16(staged.region[kQ5 ? 2 : 1] + block * 16);
    }
    float acc = 0.f;
#pragma unroll
    for (int i = 0; i < kPairs; ++i) {
      const int c = (lane + 32 * i) % 4;
      uint32_t w[2][2][4];  // [sub-block][half][word]
#pragma unroll
      for (int e = 0; e < 2; ++e) {
#pragma unroll
        for (int k = 0; k < 4; ++k) {
          w[0][e][k] = low_nibbles(v[i][e].w[k]);
          w[1][e][k] = high_nibbles(v[i][e].w[k]);
          if constexpr (kQ5) {
            w[0][e][k] |= ((qh[i][e].w[k] >> (2 * c)) & 0x01010101u) << 4;
            w[1][e][k] |= ((qh[i][e].w[k] >> (2 * c + 1)) & 0x01010101u) << 4;
          }
        }
      }
      const float d = half_to_float(head[i].w[0] & 0xffffu);
      const float dmin = half_to_float(head[i].w[0] >> 16);
      const uint32_t s[3] = {head[i].w[1], head[i].w[2], head[i].w[3]};
      int sc[2], mn[2];
      k4_scales(s, c, sc, mn);
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        int sumi = 0;
#pragma unroll
        for (int e = 0; e < 2; ++e) {
#pragma unroll
          for (int k = 0; k < 4; ++k) sumi = dp4a(w[r][e][k], q[i][r][e].w[k], sumi);
        }
        const float a = d * static_cast<float>(sc[r]), m = dmin * static_cast<float>(mn[r]);
        const float part = fmaf(-m, s32[i][r], a * (dx[i][r] * static_cast<float>(sumi)));
        if (valid[i]) acc += part;
      }
    }
    return acc;
  }
};

template <class Q, bool kPaired>
using LanesOf = std::conditional_t<kPaired, PairLanes<Q>, PieceLanes<Q>>;

// Whether type Q has the paired form (HOSTLM_CUDA_GEMV_PAIRS=0 switches it off, for
// comparisons).
template <class Q>
constexpr bool kHasPairs = Q::kType == DType::Q4_K || Q::kType == DType::Q5_K;

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

// conv_rows: this matrix's rows go through l.conv instead of into y (kConv only).
template <class Q, class Lanes, bool kFold, bool kConv>
__device__ __forceinline__ void matrix_rows(const QuantMatrix& w, QuantActs x, float* y,
                                            const Launch& l, int64_t block, uint8_t* smem,
                                            float* partial, bool conv_rows) {
  const Plan plan = l.plan;
  const StageLayout& layout = l.stage;
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
  float inv = 0.f;
  if constexpr (kFold) x = fold_norm(l.norm, l.norm_threads, smem + l.fold_offset, inv);
  // With the convolution, the thread that writes a row holds that channel's state and taps,
  // loaded now so that they are in by the end: lane l of a warp for the warp's row l (one
  // segment), thread t of the block for the block's row t (several, summed at the end).
  ConvChannel<kFusedConvMaxK> channel;
  int64_t conv_row = -1;
  // One segment: lane l keeps row row0 + l's product, and the warp writes its rows at the end
  // in one store (or convolves them): consecutive values, one transaction, which also lets y
  // be pinned host memory (CudaBackend::matmul_to_host) at a cost the product hides.
  float mine = 0.f;
  if constexpr (kConv) {
    if (conv_rows) {
      const int t = static_cast<int>(threadIdx.x);
      if (plan.segments == 1 && lane < n_rows)
        conv_row = row0 + lane;
      else if (plan.segments > 1 && t < plan.rows_per_block() &&
               block * plan.rows_per_block() + t < w.rows)
        conv_row = block * plan.rows_per_block() + t;
      if (conv_row >= 0)
        channel.load(l.conv.weight, l.conv.state, l.conv.channels, l.conv.K, conv_row);
    }
  }

  Lanes lanes;
  lanes.load(x, segment, lane, n_pieces, rows.view(0));

  for (int r = 0; r < n_rows; ++r) {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(kStages - 2) : "memory");
    __syncwarp();  // every lane's copies of row r have landed; row r - 1 is no longer read
    if (r + kStages - 1 < n_rows) rows.fetch(row0 + r + kStages - 1, (r + kStages - 1) % kStages);
    cp_async_commit();
    const float acc = lanes.dot(rows.view(r % kStages));
    const float s = warp_sum(acc);  // in every lane
    if (plan.segments == 1) {
      if (lane == r) mine = s;
    } else if (lane == 0) {
      partial[segment * plan.rows_per_block() + group * plan.rows_per_warp + r] = s;
    }
  }
  if (plan.segments == 1 && !(kConv && conv_rows) && lane < n_rows) y[row0 + lane] = mine;
  if constexpr (kFold) fold_norm_writes(l.norm, x, inv);
  if constexpr (kConv) {
    if (conv_rows && plan.segments == 1 && conv_row >= 0)
      l.conv.out[conv_row] = channel.step(l.conv.state, l.conv.channels, l.conv.K, conv_row, mine);
  }
  if (plan.segments == 1) return;
  __syncthreads();
  const int t = static_cast<int>(threadIdx.x);
  const int64_t row = block * plan.rows_per_block() + t;
  if (t < plan.rows_per_block() && row < w.rows) {
    float s = partial[t];
    for (int k = 1; k < plan.segments; ++k) s += partial[k * plan.rows_per_block() + t];
    if (kConv && conv_rows)
      l.conv.out[row] = channel.step(l.conv.state, l.conv.channels, l.conv.K, row, s);
    else
      y[row] = s;
  }
}

template <class Q, bool kPaired, bool kFold, bool kConv>
__global__ void __launch_bounds__(kMaxWarps * 32)
    gemv_one_token_kernel(const Launch l, QuantActs x) {
  extern __shared__ __align__(16) uint8_t smem[];
  __shared__ float partial[kMaxWarps * kMaxRowsPerWarp];
  int j = 0;
  while (j + 1 < l.n && blockIdx.x >= l.first[j + 1]) ++j;
  matrix_rows<Q, LanesOf<Q, kPaired>, kFold, kConv>(l.w[j], x, l.y[j], l, blockIdx.x - l.first[j],
                                                    smem, partial, kConv && j == 0);
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

bool pairs_enabled() {
  static const bool on = [] {
    const char* env = std::getenv("HOSTLM_CUDA_GEMV_PAIRS");
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
template <class Q, bool kPaired, bool kFold, bool kConv>
bool launch_staged(Launch l, int64_t total_rows, const OneTokenTargets& targets, const QuantActs& x,
                   cudaStream_t stream) {
  const auto kernel = gemv_one_token_kernel<Q, kPaired, kFold, kConv>;
  const int warps = l.plan.groups * l.plan.segments;
  const size_t rings = size_t{static_cast<unsigned>(warps)} * kStages * l.stage.bytes;
  l.fold_offset = static_cast<unsigned>((rings + 15) / 16 * 16);
  const size_t smem = kFold ? l.fold_offset + fold_bytes(l.norm.n) : rings;
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
                           cudaStream_t stream, const FoldedNorm* norm, const ConvStep* conv) {
  if (!enabled() || targets.n < 1 || targets.n > kGemvGroupMax) return false;
  if (conv != nullptr && (norm != nullptr || conv->channels != targets.w[0].rows || conv->K < 1 ||
                          conv->K > kFusedConvMaxK))
    return false;
  if (norm != nullptr && (!pairs_enabled() || norm->n != targets.w[0].cols || norm->n % 32 != 0 ||
                          norm->n > kNormQuantizeMax))
    return false;
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
      if (conv != nullptr) l.conv = *conv;
      if constexpr (kHasPairs<Q>) {
        if (norm != nullptr) {
          l.norm = *norm;
          l.norm_threads = rms_norm_threads(norm->n);
          if (l.norm_threads / 32 > kFoldPerWarp * l.plan.groups * segments) return;
          launched = launch_staged<Q, true, true, false>(l, total_rows, targets, x, stream);
          return;
        }
        if (pairs_enabled()) {
          launched = conv != nullptr
                         ? launch_staged<Q, true, false, true>(l, total_rows, targets, x, stream)
                         : launch_staged<Q, true, false, false>(l, total_rows, targets, x, stream);
          return;
        }
      }
      if (norm != nullptr) return;
      launched = conv != nullptr
                     ? launch_staged<Q, false, false, true>(l, total_rows, targets, x, stream)
                     : launch_staged<Q, false, false, false>(l, total_rows, targets, x, stream);
    }
  });
  return launched;
}

}  // namespace hostlm::cuda::quants
