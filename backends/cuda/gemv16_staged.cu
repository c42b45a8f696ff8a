// One-token decode product for 16-bit weights (BF16, F16), streamed through a shared-memory
// ring (sm_90).
//
// gemv.cu's one-token kernel holds its loads in flight in registers: a few KiB per warp, and
// on the 9B's 4,096-row products only about 16 warps per SM, so those ran at 2.6-2.7 TB/s
// where 12,288-row products reach 3.8. Here each warp owns consecutive row pairs and streams
// them, chunk by chunk, through a private ring of kStages shared-memory stages that every
// lane fills with cp.async (3 stages of 1,024 columns by default): kStages - 1 stages stay in
// flight per warp whatever the registers, across row boundaries too. Rows per warp are chosen
// so that the whole grid is resident in one wave; the first stages are requested before the
// wait for the previous kernel (weights never depend on it), and each chunk's activations are
// loaded before its weights are waited for. (A first form, whose stages were filled by bulk
// copies and whose activations were loaded after the wait, was slower than gemv.cu's kernel;
// bulk copies with the early activation loads were not measured.)
//
// Each lane takes the columns lane * 8 + 256 k of every row, in gemv.cu's order and with its
// arithmetic, so a row's sum has the same bits here as in gemv_kernel (the batched decode
// kernel): a stream's logits do not depend on whether it was decoded alone or in a batch.
// A lane copies and reads only its own 16-byte pieces of a stage, so no warp barrier is needed.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "common.cuh"
#include "conv_step.cuh"
#include "cuda/quants/tile_common.cuh"
#include "kernels.h"
#include "launch.cuh"
#include "widen16.cuh"

namespace hostlm::cuda {
namespace {

constexpr int kWarps = 4;  // per block

#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900
__device__ __forceinline__ void cp_async16(void* dst, const void* src) {
  const auto shared = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(shared), "l"(src) : "memory");
}
#endif

// Up to kGemv16GroupMax matrices of one type and width that read the same activations; the
// blocks of matrix j are [first[j], first[j + 1]), and every warp takes pairs_per_warp row
// pairs of its matrix. With the SwiGLU epilogue there is one range (n 1) over the gate's rows,
// and pair p is row p of the gate (w[0]) and of the up matrix (w[1]).
struct RingLaunch {
  const uint8_t* w[kGemv16GroupMax];
  size_t row_bytes[kGemv16GroupMax];
  int64_t rows[kGemv16GroupMax];
  float* y[kGemv16GroupMax];
  unsigned first[kGemv16GroupMax + 1];
  int n;
  int pairs_per_warp;
  ConvStep conv;  // kConvRows: matrix 0's rows
};

// What a row's sum becomes (Gemv16Epilogue): y, matrix 0's rows through the convolution's
// step, or the gate's and up's sums of a pair through SwiGLU.
enum RingEpilogue { kPlainRows, kConvRows, kSwigluPairs };

// kChunk columns of two rows per stage; kChunk is a multiple of kStep so that every chunk
// starts a lane on its own columns. A stage holds, for each row and each step k of the chunk,
// the warp's 512 bytes in lane order: lane l's 16 bytes at row * kChunk * 2 + k * 512 + 16 l.
template <typename Elem, int kChunk, int kStages, RingEpilogue kEpilogue>
__global__ void __launch_bounds__(kWarps * 32)
    gemv16_staged_kernel(const RingLaunch l, int64_t cols, const float* x) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  int j = 0;
  while (j + 1 < l.n && blockIdx.x >= l.first[j + 1]) ++j;
  const uint8_t* w = l.w[j];
  const size_t row_bytes = l.row_bytes[j];
  const int64_t rows = l.rows[j];
  float* y = l.y[j];
  const int pairs_per_warp = l.pairs_per_warp;
  constexpr int kStep = 32 * 8;  // columns a warp covers per 16-byte load of each lane
  static_assert(kChunk % kStep == 0);
  constexpr int kSteps = kChunk / kStep;
  constexpr int kRowBytes = kChunk * 2;  // one row's part of a stage
  constexpr int kStageBytes = 2 * kRowBytes;
  extern __shared__ __align__(128) uint8_t smem[];
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int64_t first_pair = (int64_t{blockIdx.x - l.first[j]} * kWarps + warp) * pairs_per_warp;
  constexpr bool kSwiglu = kEpilogue == kSwigluPairs;
  const int64_t left = (kSwiglu ? rows : (rows + 1) / 2) - first_pair;
  const int64_t n_pairs = left < 0 ? 0 : left < pairs_per_warp ? left : pairs_per_warp;
  const auto chunks = static_cast<int>((cols + kChunk - 1) / kChunk);
  const int64_t items = n_pairs * chunks;  // (pair, chunk) in order
  uint8_t* ring = smem + warp * kStages * kStageBytes;

  // Stage item % kStages receives this lane's pieces of item's two row chunks (a missing
  // second row copies the first again; it is not stored).
  const auto fetch = [&](int64_t item) {
    const int64_t pair = first_pair + item / chunks;
    const int64_t c0 = item % chunks * int64_t{kChunk};
    const int64_t r0 = kSwiglu ? pair : 2 * pair;
    const int64_t r1 = kSwiglu ? pair : r0 + 1 < rows ? r0 + 1 : r0;
    uint8_t* stage = ring + static_cast<int>(item % kStages) * kStageBytes;
    const uint8_t* src[2] = {w + row_bytes * static_cast<size_t>(r0) + c0 * 2,
                             (kSwiglu ? l.w[1] : w) + row_bytes * static_cast<size_t>(r1) + c0 * 2};
#pragma unroll
    for (int r = 0; r < 2; ++r)
#pragma unroll
      for (int k = 0; k < kSteps; ++k)
        if (c0 + k * kStep + lane * 8 < cols)
          cp_async16(stage + r * kRowBytes + k * 512 + lane * 16, src[r] + k * 512 + lane * 16);
  };
  for (int64_t i = 0; i < kStages - 1; ++i) {
    if (i < items) fetch(i);
    asm volatile("cp.async.commit_group;\n" ::: "memory");
  }
  pdl_begin();

  // kConvRows: lanes 0 and 1 hold the channels of the pair's rows, loaded as the pair begins.
  const bool conv_rows = kEpilogue == kConvRows && j == 0;
  ConvChannel<kFusedConvMaxK> channel;
  float acc[2] = {0.f, 0.f};
  // Plain rows: lane l keeps row group_first + l of the warp's 32-row group and the group is
  // stored at once, so the rows leave in whole lines (a y in mapped host memory, such as the
  // logits of Backend::matmul_to_host, then crosses the bus in a few large writes).
  float kept = 0.f;
  int64_t group_first = 2 * first_pair;
  for (int64_t i = 0; i < items; ++i) {
    const int chunk = static_cast<int>(i % chunks);
    const int64_t c0 = int64_t{chunk} * kChunk;
    if (conv_rows && chunk == 0) {
      const int64_t c = 2 * (first_pair + i / chunks) + lane;
      if (lane < 2 && c < rows)
        channel.load(l.conv.weight, l.conv.state, l.conv.channels, l.conv.K, c);
    }
    const int n = static_cast<int>(cols - c0 < kChunk ? cols - c0 : kChunk);
    // The stage this lane read in the previous item is free again: refill it.
    if (i + kStages - 1 < items) fetch(i + kStages - 1);
    asm volatile("cp.async.commit_group;\n" ::: "memory");
    // The activations first: their latency overlaps the wait for the weights.
    float4 a[kSteps], b[kSteps];
#pragma unroll
    for (int k = 0; k < kSteps; ++k) {
      const int c = k * kStep + lane * 8;
      const float4* xp = reinterpret_cast<const float4*>(x + c0 + (c < n ? c : 0));
      a[k] = xp[0];
      b[k] = xp[1];
    }
    asm volatile("cp.async.wait_group %0;\n" ::"n"(kStages - 1) : "memory");
    const uint8_t* stage = ring + static_cast<int>(i % kStages) * kStageBytes;
#pragma unroll
    for (int k = 0; k < kSteps; ++k) {
      if (k * kStep + lane * 8 < n) {
#pragma unroll
        for (int r = 0; r < 2; ++r) {
          float wv[8];
          widen8<Elem>(*reinterpret_cast<const uint4*>(stage + r * kRowBytes + k * 512 + lane * 16),
                       wv);
          acc[r] += wv[0] * a[k].x + wv[1] * a[k].y + wv[2] * a[k].z + wv[3] * a[k].w +
                    wv[4] * b[k].x + wv[5] * b[k].y + wv[6] * b[k].z + wv[7] * b[k].w;
        }
      }
    }
    if (chunk == chunks - 1) {
      const int64_t pair = first_pair + i / chunks, r0 = 2 * pair;
      float sum[2];
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        sum[r] = warp_sum(acc[r]);
        acc[r] = 0.f;
      }
      if (kSwiglu) {
        if (lane == 0) y[pair] = silu(sum[0]) * sum[1];  // as swiglu() computes it
      } else if (conv_rows) {
        if (lane < 2 && r0 + lane < rows)
          l.conv.out[r0 + lane] = channel.step(l.conv.state, l.conv.channels, l.conv.K, r0 + lane,
                                               lane == 0 ? sum[0] : sum[1]);
      } else {
#pragma unroll
        for (int r = 0; r < 2; ++r)
          if (lane == r0 + r - group_first) kept = sum[r];
        const int64_t end = r0 + 2 < rows ? r0 + 2 : rows;  // rows done so far
        if (end - group_first == 32 || i + 1 == items) {
          if (group_first + lane < end) y[group_first + lane] = kept;
          group_first += 32;
        }
      }
    }
  }
  asm volatile("cp.async.wait_all;\n" ::: "memory");
#else
  pdl_begin();
#endif
}

template <typename Elem, int kChunk, int kStages, RingEpilogue kEpilogue>
bool launch_ring(const Gemv16Target* targets, int n, int64_t cols, const float* x,
                 const ConvStep* conv, cudaStream_t stream) {
  const auto kernel = gemv16_staged_kernel<Elem, kChunk, kStages, kEpilogue>;
  constexpr size_t kSmem = size_t{kWarps} * kStages * 2 * kChunk * 2;
  // Blocks of this kernel that fit an SM (0: it cannot be launched).
  static const int per_sm = [kernel] {
    int blocks = 0;
    if (cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             static_cast<int>(kSmem)) != cudaSuccess ||
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, kWarps * 32, kSmem) !=
            cudaSuccess) {
      cudaGetLastError();
      return 0;
    }
    return blocks;
  }();
  if (per_sm < 1) return false;
  // One wave for the pairs of all the matrices together. The SwiGLU's pairs are rows of gate
  // and up: one range.
  constexpr bool kSwiglu = kEpilogue == kSwigluPairs;
  const auto pairs_of = [](int64_t rows) { return kSwiglu ? rows : (rows + 1) / 2; };
  int64_t pairs = 0;
  for (int j = 0; j < n; ++j) pairs += pairs_of(targets[j].rows);
  const int64_t resident_warps = int64_t{per_sm} * quants::sm_count() * kWarps;
  const int64_t pairs_per_warp = (pairs + resident_warps - 1) / resident_warps;
  if (pairs_per_warp > (int64_t{1} << 30)) return false;
  RingLaunch l{};
  l.n = kSwiglu ? 1 : n;
  l.pairs_per_warp = static_cast<int>(pairs_per_warp);
  if (conv != nullptr) l.conv = *conv;
  int64_t blocks = 0;
  for (int j = 0; j < n; ++j) {
    l.w[j] = static_cast<const uint8_t*>(targets[j].w);
    l.row_bytes[j] = targets[j].row_bytes;
    l.rows[j] = targets[j].rows;
    l.y[j] = targets[j].y;
    if (j >= l.n) continue;
    l.first[j] = static_cast<unsigned>(blocks);
    blocks += (pairs_of(targets[j].rows) + pairs_per_warp * kWarps - 1) / (pairs_per_warp * kWarps);
  }
  l.first[l.n] = static_cast<unsigned>(blocks);
  if (blocks > (int64_t{1} << 31) - 1) return false;
  launch_kernel(kernel, static_cast<unsigned>(blocks), kWarps * 32, kSmem, stream, l, cols, x);
  return true;
}

template <typename Elem, RingEpilogue kEpilogue>
bool launch_epilogue(const Gemv16Ring ring, const Gemv16Target* targets, int n, int64_t cols,
                     const float* x, const ConvStep* conv, cudaStream_t stream) {
  if (ring.chunk == 512)
    return launch_ring<Elem, 512, 6, kEpilogue>(targets, n, cols, x, conv, stream);
  return launch_ring<Elem, 1024, 3, kEpilogue>(targets, n, cols, x, conv, stream);
}

template <typename Elem>
bool launch_elem(const Gemv16Ring ring, const Gemv16Target* targets, int n, int64_t cols,
                 const float* x, Gemv16Epilogue e, cudaStream_t stream) {
  if (e.swiglu)
    return launch_epilogue<Elem, kSwigluPairs>(ring, targets, n, cols, x, nullptr, stream);
  if (e.conv != nullptr)
    return launch_epilogue<Elem, kConvRows>(ring, targets, n, cols, x, e.conv, stream);
  return launch_epilogue<Elem, kPlainRows>(ring, targets, n, cols, x, nullptr, stream);
}

// Kernels using cp.async with the programmatic wait are built for sm_90 only (they were
// measured on the H200 alone); older GPUs keep gemv.cu's kernel.
bool ring_available() {
  static const bool available = [] {
    int device = 0, major = 0;
    if (cudaGetDevice(&device) != cudaSuccess ||
        cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess) {
      cudaGetLastError();
      return false;
    }
    return major >= 9;
  }();
  return available;
}

}  // namespace

// 9B BF16 tg128 on an H200 (session 24): 1024x3 210.3 / 210.6 t/s against gemv.cu's kernel's
// 195.0 / 195.6, alternating in one call; 512x6 196.6 / 197.1 against 195.5 / 196.5 in another
// (twice the items per row for the same bytes in flight); 1024x4 196.4 / 199.1 (fewer warps
// fit an SM).
// A value it does not know is said on stderr, not taken silently for the default (session 24
// measured the wrong form for two calls that way).
Gemv16Ring gemv16_ring_from_env() {
  const char* env = std::getenv("HOSTLM_CUDA_GEMV16_RING");
  if (env == nullptr || std::strcmp(env, "1024x3") == 0) return Gemv16Ring{1024, 3};
  if (std::strcmp(env, "0") == 0) return Gemv16Ring{};
  if (std::strcmp(env, "512x6") == 0) return Gemv16Ring{512, 6};
  std::fprintf(stderr,
               "hostlm: HOSTLM_CUDA_GEMV16_RING=%s is not 0, 1024x3 or 512x6; using 1024x3\n", env);
  return Gemv16Ring{1024, 3};
}

bool gemv16_staged_group(Gemv16Ring ring, DType type, const Gemv16Target* targets, int n,
                         int64_t cols, const float* x, cudaStream_t stream,
                         Gemv16Epilogue epilogue) {
  if (ring.chunk == 0 || !ring_available() || n < 1 || n > kGemv16GroupMax || cols < 8 ||
      cols % 8 != 0 || reinterpret_cast<uintptr_t>(x) % 16 != 0)
    return false;
  const ConvStep* conv = epilogue.conv;
  if (conv != nullptr && (epilogue.swiglu || conv->channels != targets[0].rows || conv->K < 1 ||
                          conv->K > kFusedConvMaxK))
    return false;
  if (epilogue.swiglu && (n != 2 || targets[1].rows != targets[0].rows ||
                          targets[1].row_bytes != targets[0].row_bytes))
    return false;
  for (int j = 0; j < n; ++j)
    if (targets[j].rows < 1 || targets[j].row_bytes % 16 != 0 ||
        reinterpret_cast<uintptr_t>(targets[j].w) % 16 != 0)
      return false;
  if (type == DType::BF16)
    return launch_elem<BF16Elem>(ring, targets, n, cols, x, epilogue, stream);
  if (type == DType::F16) return launch_elem<F16Elem>(ring, targets, n, cols, x, epilogue, stream);
  return false;
}

bool gemv16_staged_applies(Gemv16Ring ring, DType type, int64_t cols) {
  return ring.chunk != 0 && ring_available() && (type == DType::BF16 || type == DType::F16) &&
         cols >= 8 && cols % 8 == 0;
}

bool gemv16_staged(Gemv16Ring ring, DType type, const void* w, size_t row_bytes, int64_t rows,
                   int64_t cols, const float* x, float* y, cudaStream_t stream) {
  const Gemv16Target target{w, row_bytes, rows, y};
  return gemv16_staged_group(ring, type, &target, 1, cols, x, stream);
}

}  // namespace hostlm::cuda
