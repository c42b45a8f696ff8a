#include "cuda/quants/quant_matmul.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdlib>
#include <string>

#include "cuda/quants/quant_kernels.h"
#include "cuda/quants/split_layout.h"
#include "hostlm/error.h"

namespace hostlm::cuda::quants {
namespace {

void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess)
    throw Error(std::string("CUDA error in ") + what + ": " + cudaGetErrorString(status));
}

void check(cublasStatus_t status, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS)
    throw Error(std::string("cuBLAS error in ") + what + ": " + cublasGetStatusString(status));
}

// Pinned staging for uploads: big enough for full-speed copies, small next to a model.
constexpr size_t kStagingBytes = size_t{32} << 20;
// At most this many weights are expanded to half at once for prefill (64 MiB), unless
// HOSTLM_CUDA_PREFILL_TILE_MI (millions of weights, 2^20) says otherwise.
constexpr size_t kTileElemsMax = size_t{32} << 20;
// Tiles of a matrix that does not fit are whole multiples of this many rows.
constexpr int64_t kTileRowAlign = 256;
// Group launches' partial sums and counters: this many times one matrix's.
constexpr size_t kGroupScratchShare = 4;

// Each matrix's data and rows, where all have the first one's type and width.
bool one_type_and_width(const Weight* const* ws, int n, const void** data, int64_t* rows) {
  for (int j = 0; j < n; ++j) {
    if (ws[j]->type != ws[0]->type || ws[j]->cols != ws[0]->cols) return false;
    data[j] = ws[j]->data;
    rows[j] = ws[j]->rows;
  }
  return true;
}

void free_device(void*& p) {
  cudaFree(p);
  p = nullptr;
}

}  // namespace

QuantMatmul::QuantMatmul(cudaStream_t stream, cublasHandle_t cublas, AllocFn alloc,
                         WeightArena& weights)
    : stream_(stream),
      cublas_(cublas),
      alloc_(alloc),
      weights_(weights),
      tile_elems_max_(kTileElemsMax) {
  if (const char* env = std::getenv("HOSTLM_CUDA_GEMV_TOKENS"))
    gemv_tokens_ = std::clamp<int64_t>(std::atoll(env), 0, kPrefillTokens);
  if (const char* env = std::getenv("HOSTLM_CUDA_PREFILL_TILE_MI"))
    tile_elems_max_ = static_cast<size_t>(std::clamp<int64_t>(std::atoll(env), 1, 4096)) << 20;
  if (const char* env = std::getenv("HOSTLM_CUDA_FUSE_QUANTIZE")) fuse_quantize_ = env[0] != '0';
  if (const char* env = std::getenv("HOSTLM_CUDA_FOLD_NORM")) fold_norms_ = env[0] == '1';
  if (const char* env = std::getenv("HOSTLM_CUDA_TILE_GROUPS")) tile_groups_ = env[0] != '0';
  if (const char* env = std::getenv("HOSTLM_CUDA_TILE_TOKENS"))
    tile_tokens_ = std::clamp<int64_t>(std::atoll(env), 0, kPrefillTokens);
  if (tile_tokens_ > 0) {
    const cudaError_t status = prepare_tile_matmul();
    if (status == cudaErrorNotSupported) {
      cudaGetLastError();
      tile_tokens_ = 0;
    } else {
      check(status, "preparing the tile product kernels");
    }
  }
}

QuantMatmul::~QuantMatmul() {
  for (void* p : host_weights_) cudaFreeHost(p);
  cudaFree(acts_q_);
  cudaFree(acts_f16_);
  cudaFree(inv_scale_);
  cudaFree(tile_);
  cudaFree(partial_);
  cudaFree(counters_);
  cudaFree(fold_counter_);
  cudaFreeHost(staging_);
}

bool QuantMatmul::supports(DType type) { return is_split_quant(type); }

namespace {

// The handle of a split-form tensor at `data`, after checking that its bytes fit its shape.
Weight split_weight(const TensorView& view, void* data) {
  const SplitLayout layout = split_layout(view.type);
  const int64_t rows = view.rows(), cols = view.cols();
  const std::string what = "tensor '" + view.name + "' (" + std::string(dtype_name(view.type)) +
                           ", " + std::to_string(rows) + " x " + std::to_string(cols) + ")";
  if (cols <= 0 || cols % layout.block_elems != 0)
    throw Error(what + ": rows of " + std::to_string(cols) + " values are not whole blocks of " +
                std::to_string(layout.block_elems));
  const auto expected = static_cast<size_t>(rows * (cols / layout.block_elems)) *
                        static_cast<size_t>(layout.block_bytes);
  if (view.nbytes != expected)
    throw Error(what + " holds " + std::to_string(view.nbytes) + " bytes; its shape needs " +
                std::to_string(expected));
  Weight w;
  w.type = view.type;
  w.rows = rows;
  w.cols = cols;
  w.row_bytes = view.nbytes / static_cast<size_t>(std::max<int64_t>(1, rows));
  w.data = data;
  return w;
}

}  // namespace

Weight QuantMatmul::load(const TensorView& view) {
  Weight w = split_weight(view, nullptr);
  reserve_scratch(w.type, w.rows, w.cols);
  auto* device = static_cast<uint8_t*>(
      weights_.allocate(view.nbytes + kTailBytes, "tensor '" + view.name + "'"));
  upload_split(view, device);
  w.data = device;
  return w;
}

Weight QuantMatmul::load_host(const TensorView& view) {
  Weight w = split_weight(view, nullptr);
  void* host = nullptr;
  // Write-combined: written once here, then read only by the GPU, over the bus.
  check(cudaHostAlloc(&host, view.nbytes + kTailBytes,
                      cudaHostAllocMapped | cudaHostAllocWriteCombined),
        ("pinned host memory for tensor '" + view.name + "' (" + std::to_string(view.nbytes) +
         " bytes)")
            .c_str());
  host_weights_.push_back(host);
  const SplitLayout layout = split_layout(view.type);
  split_blocks(layout, static_cast<const uint8_t*>(view.data),
               view.nbytes / static_cast<size_t>(layout.block_bytes), static_cast<uint8_t*>(host));
  check(cudaHostGetDevicePointer(&w.data, host, 0), "mapping a host tensor");
  return w;
}

void QuantMatmul::upload_split(const TensorView& view, uint8_t* device) {
  const SplitLayout layout = split_layout(view.type);
  if (staging_ == nullptr)
    check(cudaMallocHost(reinterpret_cast<void**>(&staging_), kStagingBytes),
          "pinned upload buffer");
  const auto* src = static_cast<const uint8_t*>(view.data);
  const size_t n_blocks = view.nbytes / static_cast<size_t>(layout.block_bytes);
  const size_t chunk = kStagingBytes / static_cast<size_t>(layout.block_bytes);
  for (size_t first = 0; first < n_blocks; first += chunk) {
    const size_t count = std::min(chunk, n_blocks - first);
    split_blocks(layout, src + first * static_cast<size_t>(layout.block_bytes), count, staging_);
    // From pinned memory cudaMemcpy returns once the copy is done, so the staging buffer is
    // free for the next chunk.
    for (int j = 0; j < layout.n_regions; ++j) {
      const auto size = static_cast<size_t>(layout.regions[j].size);
      check(cudaMemcpy(device + region_offset(layout, j, n_blocks) + first * size,
                       staging_ + region_offset(layout, j, count), count * size,
                       cudaMemcpyHostToDevice),
            "weight upload");
    }
  }
}

void QuantMatmul::expect_batch_tokens(int64_t tokens) {
  // Never below the tile product's tokens, which convert through the same scratch.
  if (max_cols_ == 0)
    prefill_tokens_ = std::clamp(tokens, std::max<int64_t>(tile_tokens_, 1), kPrefillTokens);
}

void QuantMatmul::reserve_scratch(DType type, int64_t rows, int64_t cols) {
  const auto all = static_cast<size_t>(rows * cols);
  const auto want_tile = std::max(std::min(all, static_cast<size_t>(kTileRowAlign * cols)),
                                  std::min(tile_elems_max_, all));
  // The tile product's split partial sums: the most any token count up to tile_tokens_ needs.
  size_t want_partial = 0;
  for (int64_t T = gemv_tokens_ + 1; T <= tile_tokens_; ++T)
    want_partial = std::max(want_partial, tile_matmul_partial_floats(type, rows, cols, T));
  size_t want_counters =
      tile_tokens_ > 0 ? tile_matmul_counters(type, rows, std::max<int64_t>(1, tile_tokens_)) : 0;
  // A group launch (tile_group) keeps every member's partials and counters apart: room for
  // four of the largest (an attention layer's q, k and v take three).
  if (tile_groups_) {
    want_partial *= kGroupScratchShare;
    want_counters *= kGroupScratchShare;
  }
  if (cols <= max_cols_ && want_tile <= tile_elems_ && want_partial <= partial_floats_ &&
      want_counters <= n_counters_)
    return;
  // Only loads grow scratch; wait for any work that may still read the old buffers.
  check(cudaStreamSynchronize(stream_), "scratch growth");
  if (cols > max_cols_) {
    // The new buffers hold nothing yet: the next matmul of an input seen before must convert
    // it again rather than read what the freed ones held.
    forget_acts();
    free_device(acts_q_);
    free_device(acts_f16_);
    acts_q_ = alloc_(quant_acts_bytes(std::max(kQuantGemvMaxTokens, gemv_tokens_), cols),
                     "the decode activation scratch");
    acts_f16_ =
        alloc_(static_cast<size_t>(prefill_tokens_ * cols) * 2, "the prefill activation scratch");
    max_cols_ = cols;
  }
  if (inv_scale_ == nullptr)
    inv_scale_ = static_cast<float*>(alloc_(prefill_tokens_ * sizeof(float), "prefill scales"));
  if (fold_counter_ == nullptr) {
    fold_counter_ = static_cast<unsigned*>(alloc_(sizeof(unsigned), "the folded-norm counter"));
    check(cudaMemset(fold_counter_, 0, sizeof(unsigned)), "zeroing the folded-norm counter");
  }
  if (want_partial > partial_floats_) {
    free_device(reinterpret_cast<void*&>(partial_));
    partial_floats_ = 0;
    partial_ =
        static_cast<float*>(alloc_(want_partial * sizeof(float), "the tile product partials"));
    partial_floats_ = want_partial;
  }
  if (want_counters > n_counters_) {
    free_device(reinterpret_cast<void*&>(counters_));
    n_counters_ = 0;
    counters_ = static_cast<unsigned*>(alloc_(want_counters * sizeof(unsigned), "tile counters"));
    check(cudaMemset(counters_, 0, want_counters * sizeof(unsigned)), "zeroing tile counters");
    n_counters_ = want_counters;
  }
  if (want_tile > tile_elems_) {
    free_device(tile_);
    tile_elems_ = 0;
    tile_ = alloc_(want_tile * 2, "the prefill weight tile");
    tile_elems_ = want_tile;
  }
}

bool QuantMatmul::can_defer_norm(int64_t n) const {
  return fold_norms_ && fuse_quantize_ && fold_counter_ != nullptr && acts_q_ != nullptr && n > 0 &&
         n % 32 == 0 && n <= max_cols_ && n <= kNormQuantizeMax && gemv_tokens_ >= 1;
}

void QuantMatmul::defer_norm(float* x, const float* y, const float* weight, float eps, int64_t n,
                             float* out) {
  flush_norm();
  norm_.x = x;
  norm_.y = y;
  norm_.weight = weight;
  norm_.eps = eps;
  norm_.n = n;
  norm_.out = out;
  norm_.acts = acts_out(acts_q_, n);
  norm_.counter = fold_counter_;
  norm_active_ = true;
  acts_x_ = f16_x_ = nullptr;
}

void QuantMatmul::flush_norm() {
  if (!norm_active_) return;
  const FoldedNorm d = norm_;
  norm_active_ = false;
  const Int8ActsOut acts = produce_acts(d.out, d.n);
  if (d.y != nullptr)
    check(add_rms_norm(d.x, d.y, 1, d.n, d.weight, d.eps, d.out, stream_, acts), "add_rms_norm");
  else
    check(rms_norm(d.x, static_cast<size_t>(d.n), d.out, static_cast<size_t>(d.n), 1, d.n, d.weight,
                   d.eps, stream_, acts),
          "rms_norm");
}

bool QuantMatmul::fold_norm(const Weight* const* ws, float* const* ys, int n) {
  if (n < 1 || n > kGemvGroupMax || ws[0]->cols != norm_.n) return false;
  const void* data[kGemvGroupMax];
  int64_t rows[kGemvGroupMax];
  for (int j = 0; j < n; ++j) {
    if (ws[j]->type != ws[0]->type || ws[j]->cols != norm_.n) return false;
    data[j] = ws[j]->data;
    rows[j] = ws[j]->rows;
  }
  if (!gemv_group_folded_norm(ws[0]->type, data, rows, ys, n, norm_, stream_)) return false;
  check(cudaGetLastError(), "matmul (gemv with the norm folded in)");
  norm_active_ = false;
  acts_x_ = norm_.out;  // its last block wrote the quantized copy too
  acts_n_ = norm_.n;
  return true;
}

void QuantMatmul::matmul(const Weight& w, const float* x, int64_t T, float* y) {
  if (T <= 0 || w.rows == 0) return;
  if (norm_active_) {
    const Weight* ws[1] = {&w};
    float* ys[1] = {y};
    if (T == 1 && x == norm_.out && fold_norm(ws, ys, 1)) return;
    flush_norm();
  }
  if (T <= gemv_tokens_) {
    quantized_acts(x, T, w.cols);
    for (int64_t t0 = 0; t0 < T; t0 += kQuantGemvMaxTokens) {
      const int64_t tc = std::min(kQuantGemvMaxTokens, T - t0);
      check(gemv_quantized_acts(w.type, w.data, w.rows, w.cols, acts_q_, T, t0, tc, y + t0 * w.rows,
                                stream_),
            "matmul (quantized gemv)");
    }
    // The output may overwrite the input that was quantized.
    const auto* y_end = y + T * w.rows;
    if (y < x + T * w.cols && x < y_end) forget_acts();
    return;
  }
  if (T <= tile_tokens_) return tile(w, x, T, y);
  prefill(w, x, T, y);
}

void QuantMatmul::quantized_acts(const float* x, int64_t T, int64_t cols) {
  if (x == acts_x_ && T * cols == acts_n_) return;
  check(quantize_acts(x, T, cols, acts_q_, stream_), "matmul (quantize activations)");
  acts_x_ = x;
  acts_n_ = T * cols;
}

Int8ActsOut QuantMatmul::produce_acts(const float* x, int64_t n) {
  // At most the GEMV's tokens of the widest matrix: past that no GEMV reads it (and the
  // scratch holds at least that many).
  if (!fuse_quantize_ || acts_q_ == nullptr || n <= 0 || n % 32 != 0 ||
      n > std::max<int64_t>(gemv_tokens_, 1) * max_cols_)
    return {};
  acts_x_ = x;
  acts_n_ = n;
  return acts_out(acts_q_, n);
}

void QuantMatmul::matmul_group(const Weight* const* ws, float* const* ys, int n, const float* x,
                               int64_t T) {
  if (T <= 0 || n <= 0) return;
  if (norm_active_) {
    if (T == 1 && x == norm_.out && fold_norm(ws, ys, n)) return;
    flush_norm();
  }
  if (!groups(T) || n == 1) {
    if (n > 1 && tile_groups(T) && tile_group(ws, ys, n, x, T)) return;
    for (int j = 0; j < n; ++j) matmul(*ws[j], x, T, ys[j]);
    return;
  }
  if (n > kGemvGroupMax) throw Error("matmul group of " + std::to_string(n) + " matrices");
  const int64_t cols = ws[0]->cols;
  const void* data[kGemvGroupMax];
  int64_t rows[kGemvGroupMax];
  for (int j = 0; j < n; ++j) {
    if (ws[j]->type != ws[0]->type || ws[j]->cols != cols)
      throw Error("matmul group: matrices of different types or widths");
    data[j] = ws[j]->data;
    rows[j] = ws[j]->rows;
  }
  quantized_acts(x, T, cols);
  for (int64_t t0 = 0; t0 < T; t0 += kQuantGemvMaxTokens)
    check(gemv_group_quantized_acts(ws[0]->type, data, rows, ys, n, cols, acts_q_, T, t0,
                                    std::min(kQuantGemvMaxTokens, T - t0), stream_),
          "matmul (grouped quantized gemv)");
  // As in matmul: an output over the input leaves the quantized copy stale.
  for (int j = 0; j < n; ++j)
    if (ys[j] < x + T * cols && x < ys[j] + T * rows[j]) forget_acts();
}

bool QuantMatmul::matmul_group_conv(const Weight* const* ws, float* const* ys, int n,
                                    const float* x, const ConvStep& conv) {
  if (!groups(1) || n < 1 || n > kGemvGroupMax) return false;
  const int64_t cols = ws[0]->cols;
  const void* data[kGemvGroupMax];
  int64_t rows[kGemvGroupMax];
  if (!one_type_and_width(ws, n, data, rows)) return false;
  flush_norm();
  quantized_acts(x, 1, cols);
  const cudaError_t e = gemv_group_quantized_acts(ws[0]->type, data, rows, ys, n, cols, acts_q_, 1,
                                                  0, 1, stream_, &conv);
  if (e == cudaErrorNotSupported) return false;
  check(e, "matmul (one-token gemv with the conv1d)");
  const auto over_x = [&](const float* p, int64_t count) { return p < x + cols && x < p + count; };
  bool stale = over_x(conv.out, conv.channels);
  for (int j = 1; j < n; ++j) stale = stale || over_x(ys[j], rows[j]);
  if (stale) forget_acts();
  return true;
}

void QuantMatmul::half_acts(const float* x, int64_t T, int64_t cols) {
  if (x == f16_x_ && T == f16_T_ && cols == f16_cols_) return;
  check(acts_to_f16(x, T, cols, acts_f16_, inv_scale_, stream_), "matmul (activations to half)");
  f16_x_ = x;
  f16_T_ = T;
  f16_cols_ = cols;
}

void QuantMatmul::tile(const Weight& w, const float* x, int64_t T, float* y) {
  half_acts(x, T, w.cols);
  check(tile_matmul(w.type, w.data, w.rows, w.cols, acts_f16_, inv_scale_, T, y, partial_,
                    partial_floats_, counters_, n_counters_, stream_),
        "matmul (tile product)");
  const auto* y_end = y + T * w.rows;
  if (y < x + T * w.cols && x < y_end) forget_acts();
}

bool QuantMatmul::tile_group(const Weight* const* ws, float* const* ys, int n, const float* x,
                             int64_t T) {
  if (n > kTileGroupMax) return false;
  const int64_t cols = ws[0]->cols;
  const void* data[kTileGroupMax];
  int64_t rows[kTileGroupMax];
  if (!one_type_and_width(ws, n, data, rows)) return false;
  // Only a type with the pipelined kernel groups: ask before converting the input.
  if (!tile_matmul_groups(ws[0]->type)) return false;
  half_acts(x, T, cols);
  const cudaError_t e =
      tile_matmul_group(ws[0]->type, n, data, rows, cols, acts_f16_, inv_scale_, T, ys, partial_,
                        partial_floats_, counters_, n_counters_, stream_);
  if (e == cudaErrorNotSupported) return false;
  check(e, "matmul (grouped tile product)");
  for (int j = 0; j < n; ++j)
    if (ys[j] < x + T * cols && x < ys[j] + T * rows[j]) forget_acts();
  return true;
}

void QuantMatmul::matmul_experts(std::span<const Weight> experts, std::span<const int32_t> first,
                                 const float* x, float* y) {
  if (first.size() != experts.size() + 1)
    throw Error("matmul_experts: " + std::to_string(experts.size() + 1) + " row offsets expected");
  if (experts.empty()) return;
  flush_norm();
  const Weight& like = experts.front();
  const int64_t rows = like.rows, cols = like.cols;
  ExpertTiles& tiles = expert_tiles_;
  const SplitLayout layout = split_layout(like.type);
  const auto n_blocks = static_cast<size_t>(rows * (cols / layout.block_elems));
  for (int j = 0; j < 4; ++j)
    tiles.region_offset[j] =
        j < layout.n_regions ? static_cast<int64_t>(region_offset(layout, j, n_blocks)) : 0;
  // The experts gathered so far take rows [g0, g1) of x, converted to half together.
  int64_t g0 = 0, g1 = 0, total = 0;
  int most = 0;
  tiles.n = 0;
  auto launch = [&] {
    if (tiles.n == 0) return;
    f16_x_ = nullptr;  // acts_f16_ is about to hold other rows
    check(acts_to_f16(x + g0 * cols, g1 - g0, cols, acts_f16_, inv_scale_, stream_),
          "matmul_experts (activations to half)");
    // Blocks sized for the typical expert: one with more rows takes more blocks.
    const int64_t mean = (total + tiles.n - 1) / tiles.n;
    check(tile_matmul_experts(like.type, tiles, rows, cols, acts_f16_, inv_scale_, most,
                              mean <= 16   ? 16
                              : mean <= 32 ? 32
                                           : 64,
                              y + g0 * rows, stream_),
          "matmul_experts (tile products)");
    tiles.n = 0;
    total = most = 0;
  };
  for (size_t e = 0; e < experts.size(); ++e) {
    const int64_t r0 = first[e], n = first[e + 1] - r0;
    if (n <= 0) continue;
    if (tile_tokens_ == 0 || n > prefill_tokens_) {  // no tile kernels, or too many rows
      launch();
      matmul(experts[e], x + r0 * cols, n, y + r0 * rows);
      continue;
    }
    if (tiles.n == kMaxExpertTiles || (tiles.n > 0 && r0 + n - g0 > prefill_tokens_)) launch();
    if (tiles.n == 0) g0 = r0;
    g1 = r0 + n;
    tiles.data[tiles.n] = static_cast<const uint8_t*>(experts[e].data);
    tiles.row0[tiles.n] = static_cast<int32_t>(r0 - g0);
    tiles.count[tiles.n] = static_cast<int32_t>(n);
    ++tiles.n;
    total += n;
    most = std::max(most, static_cast<int>(n));
  }
  launch();
}

// Activations rounded to half (after a per-token power-of-two scale, undone on the output),
// weights expanded to half tile by tile, products summed in float32 on tensor cores. Half
// holds every weight of a real model (|w| < 65504); the relative rounding is 2^-11 for both.
void QuantMatmul::prefill(const Weight& w, const float* x, int64_t T, float* y) {
  int64_t tile_rows = std::clamp<int64_t>(static_cast<int64_t>(tile_elems_) / w.cols, 1, w.rows);
  // A tile that starts off a 16-byte boundary of y sends cuBLAS to a kernel several times
  // slower (27B Q4_K_M pp512 on an H200: 1,807 t/s with 6,553-row tiles, 4,863 with 6,400),
  // and whole CTA tiles waste no work.
  // (reserve_scratch makes room for kTileRowAlign rows of every matrix that has them.)
  if (tile_rows < w.rows && tile_rows >= kTileRowAlign)
    tile_rows = tile_rows / kTileRowAlign * kTileRowAlign;
  const float one = 1.f, zero = 0.f;
  // Each tile is expanded once for all the tokens (a 2048-token step used to expand every
  // matrix twice); the activations are converted per chunk of prefill_tokens_, again for each
  // tile only when a matrix takes several tiles, which costs far less than its expansion.
  // Successive tiles walk the chunks in opposite directions, so the chunk converted last for
  // one tile is the first the next one needs (a 2-tile matrix over 2 chunks: 3 conversions,
  // not 4; the products and their order per output do not change).
  if (T <= prefill_tokens_) half_acts(x, T, w.cols);
  const int64_t n_chunks = (T + prefill_tokens_ - 1) / prefill_tokens_;
  int64_t converted = -1;  // the chunk acts_f16_ holds
  for (int64_t r0 = 0, tile = 0; r0 < w.rows; r0 += tile_rows, ++tile) {
    const int64_t nr = std::min(tile_rows, w.rows - r0);
    check(dequant_rows_f16(w.type, w.data, w.rows, w.cols, r0, nr, tile_, stream_),
          "matmul (dequantize tile)");
    for (int64_t k = 0; k < n_chunks; ++k) {
      const int64_t chunk = tile % 2 == 0 ? k : n_chunks - 1 - k;
      const int64_t t0 = chunk * prefill_tokens_;
      const int64_t tc = std::min(prefill_tokens_, T - t0);
      if (T > prefill_tokens_ && chunk != converted) {
        f16_x_ = nullptr;
        check(acts_to_f16(x + t0 * w.cols, tc, w.cols, acts_f16_, inv_scale_, stream_),
              "matmul (activations to half)");
        converted = chunk;
      }
      // Column-major view: Y^T[rows, T] = W_tile^T^T * X^T, W_tile stored as [cols, nr].
      check(cublasGemmEx(cublas_, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(nr),
                         static_cast<int>(tc), static_cast<int>(w.cols), &one, tile_, CUDA_R_16F,
                         static_cast<int>(w.cols), acts_f16_, CUDA_R_16F, static_cast<int>(w.cols),
                         &zero, y + t0 * w.rows + r0, CUDA_R_32F, static_cast<int>(w.rows),
                         CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
            "matmul (cublasGemmEx, half)");
      if (T > prefill_tokens_)  // inv_scale_ holds this chunk's scales only
        check(scale_rows(y + t0 * w.rows + r0, w.rows, nr, tc, inv_scale_, stream_),
              "matmul (undo activation scale)");
    }
  }
  if (T <= prefill_tokens_)
    check(scale_rows(y, w.rows, w.rows, T, inv_scale_, stream_), "matmul (undo activation scale)");
  const auto* y_end = y + T * w.rows;
  if (y < x + T * w.cols && x < y_end) forget_acts();
}

void QuantMatmul::embed(const Weight& table, const int32_t* device_tokens, int64_t T, float* out) {
  check(embed_quant(table.type, table.data, table.rows, table.cols, device_tokens, T, out, stream_),
        "embed (quantized)");
}

}  // namespace hostlm::cuda::quants
