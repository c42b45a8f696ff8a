// The CUDA backend: every op of hostlm/ops.h on one GPU, float32 activations in device
// memory, F32/F16/BF16 weights uploaded once at load_weight and used in their stored type;
// quantized GGUF weights stay quantized (quants/quant_matmul.h).
//
// Host arrays in the interface. Some ops take small float32 arrays that live on the host
// (RMSNorm weights, conv weights, a_neg, dt_bias): they are immutable model weights, so each
// is uploaded on first use and found again by its host address (HostArrayCache). That holds
// as long as a backend serves the model that owns those arrays, which is how LoadedModel
// pairs them. Token ids and positions change every call: they go through a pinned staging
// buffer into a device buffer that only grows, so steady-state decode allocates nothing.
//
// Decode matmuls that read the same input in a row (q, k, v; gate and up) quantize it once
// (QuantMatmul::forget_acts): every op other than a quantized matmul may write device memory,
// so each one tells QuantMatmul to forget the input it quantized last.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "cuda/cuda_entry.h"
#include "cuda/kernels.h"
#include "cuda/last_writes.h"
#include "cuda/op_profile.h"
#include "cuda/paged_batch.h"
#include "cuda/quants/quant_kernels.h"
#include "cuda/quants/quant_matmul.h"
#include "cuda/staging.h"
#include "cuda/step_fingerprint.h"
#include "cuda/weight_arena.h"
#include "hostlm/error.h"
#include "hostlm/ops.h"

namespace hostlm::cuda {
namespace {

void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess)
    throw Error(std::string("CUDA error in ") + what + ": " + cudaGetErrorString(status));
}

void check(cublasStatus_t status, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS)
    throw Error(std::string("cuBLAS error in ") + what + ": " + cublasGetStatusString(status));
}

std::string mib(size_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
  return text;
}

// HOSTLM_CUDA_ALLOC_LOG=1: every device allocation on stderr, to account for GPU memory.
bool log_allocations() {
  static const bool on = [] {
    const char* env = std::getenv("HOSTLM_CUDA_ALLOC_LOG");
    return env && env[0] == '1';
  }();
  return on;
}

// cudaMalloc that reports what was asked for and what was free when it fails.
void* device_alloc(size_t bytes, const std::string& what) {
  void* p = nullptr;
  const cudaError_t status = cudaMalloc(&p, std::max<size_t>(bytes, 1));
  if (log_allocations()) std::fprintf(stderr, "cuda alloc\t%zu\t%s\n", bytes, what.c_str());
  if (status == cudaSuccess) return p;
  (void)cudaGetLastError();  // clear the sticky-free error so later calls are not blamed
  size_t free_bytes = 0, total_bytes = 0;
  if (status == cudaErrorMemoryAllocation &&
      cudaMemGetInfo(&free_bytes, &total_bytes) == cudaSuccess)
    throw Error("CUDA out of memory: " + what + " needs " + mib(bytes) + ", " + mib(free_bytes) +
                " free of " + mib(total_bytes) + " on the GPU");
  throw Error("CUDA error allocating " + mib(bytes) + " for " + what + ": " +
              cudaGetErrorString(status));
}

// The handle of an F32, F16 or BF16 tensor, its data still to be placed; other types that no
// CUDA path computes with are refused by name.
Weight plain_weight(const TensorView& view) {
  if (view.type != DType::F32 && view.type != DType::F16 && view.type != DType::BF16)
    throw Error("tensor '" + view.name + "' has type " + std::string(dtype_name(view.type)) +
                ", which the CUDA backend cannot compute with (it takes f32, f16, bf16, q4_0, "
                "q4_1, q5_0, q5_1, q8_0, iq4_nl, q2_K, q3_K, q4_K, q5_K, q6_K and iq4_xs)");
  Weight w;
  w.type = view.type;
  w.cols = view.cols();
  w.rows = view.rows();
  w.row_bytes = view.nbytes / static_cast<size_t>(std::max<int64_t>(1, w.rows));
  return w;
}

class DeviceBuffer final : public Buffer {
 public:
  DeviceBuffer(size_t n, cudaStream_t stream)
      : data_(static_cast<float*>(device_alloc(n * sizeof(float), "an activation buffer"))),
        size_(n) {
    // Zeroed like the CPU backend's buffers, in stream order with the ops that use it.
    check(cudaMemsetAsync(data_, 0, n * sizeof(float), stream), "alloc");
  }
  ~DeviceBuffer() override { cudaFree(data_); }
  float* data() override { return data_; }
  size_t size() const override { return size_; }

 private:
  float* data_;
  size_t size_;
};

// Device copies of immutable host float arrays, keyed by host address.
class HostArrayCache {
 public:
  ~HostArrayCache() {
    for (auto& [host, entry] : entries_) cudaFree(entry.device);
  }
  // The device copy, or null when there is none of n floats yet.
  const float* find(const float* host, size_t n) const {
    auto it = entries_.find(host);
    return it != entries_.end() && it->second.n >= n ? it->second.device : nullptr;
  }
  const float* get(const float* host, size_t n, cudaStream_t stream) {
    auto it = entries_.find(host);
    if (it != entries_.end() && it->second.n >= n) return it->second.device;
    if (it != entries_.end()) {
      check(cudaStreamSynchronize(stream), "weight array refresh");
      cudaFree(it->second.device);
      entries_.erase(it);
    }
    auto* device = static_cast<float*>(device_alloc(n * sizeof(float), "a norm/conv weight array"));
    check(cudaMemcpy(device, host, n * sizeof(float), cudaMemcpyHostToDevice),
          "weight array upload");
    entries_.emplace(host, Entry{device, n});
    return device;
  }

 private:
  struct Entry {
    float* device;
    size_t n;
  };
  std::unordered_map<const float*, Entry> entries_;
};

// Small per-call int32 arrays (token ids, positions) through cuda/staging.h. The q and k
// rotations of a layer, and every attention layer of a batch, share positions: an upload
// equal to the last one reuses its device copy.
class IntStaging {
 public:
  // Null only when replaying and the recorded region cannot be reused (cuda/staging.h).
  const int32_t* upload(const int32_t* src, size_t n, cudaStream_t stream, bool reuse_same,
                        UploadMode mode) {
    if (reuse_same && device_ && n == last_.size() && std::equal(src, src + n, last_.begin()))
      return device_;
    device_ = static_cast<const int32_t*>(staging_.upload(src, n * sizeof(int32_t), stream, mode));
    last_.assign(src, src + n);
    return device_;
  }
  uint64_t generation() const { return staging_.generation(); }
  void restart() {
    staging_.restart();
    device_ = nullptr;
  }
  void launched(cudaStream_t stream) { staging_.launched(stream); }
  // A pass made ahead (cuda/staging.h); after it no upload is known to be on the device.
  void begin_ahead() {
    staging_.begin_ahead();
    device_ = nullptr;
  }
  void end_ahead() {
    staging_.end_ahead();
    device_ = nullptr;
  }
  void commit_ahead() { staging_.commit_ahead(); }
  size_t last_offset() const { return staging_.last_offset(); }
  // Overwrites values of the pass made ahead, from the region at `offset` on.
  void patch_ahead(size_t offset, std::span<const int32_t> values) {
    std::memcpy(staging_.ahead_bytes(offset), values.data(), values.size_bytes());
  }

 private:
  Staging staging_;
  const int32_t* device_ = nullptr;  // where last_ is on the device
  std::vector<int32_t> last_;
};

class CudaBackend final : public Backend {
 public:
  CudaBackend() {
    check(cudaSetDevice(0), "cudaSetDevice");
    check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "stream creation");
    check(cublasCreate(&cublas_), "cublasCreate");
    check(cublasSetStream(cublas_, stream_), "cublasSetStream");
    // A workspace of its own, so that cuBLAS never allocates inside a captured step.
    size_t workspace = kCublasWorkspaceBytes;
    if (const char* mib = std::getenv("HOSTLM_CUDA_CUBLAS_WORKSPACE_MIB"))
      workspace = static_cast<size_t>(std::clamp(std::atoi(mib), 1, 1024)) << 20;
    cublas_workspace_ = device_alloc(workspace, "the cuBLAS workspace");
    check(cublasSetWorkspace(cublas_, cublas_workspace_, workspace), "cublasSetWorkspace");
    weights_ = std::make_unique<WeightArena>(device_alloc);
    quant_ = std::make_unique<quants::QuantMatmul>(stream_, cublas_, device_alloc, *weights_);
    profile_ = std::make_unique<OpProfile>(stream_);
    const char* graphs = std::getenv("HOSTLM_CUDA_GRAPHS");
    const char* profiling = std::getenv("HOSTLM_CUDA_PROFILE");
    if (const char* exact = std::getenv("HOSTLM_CUDA_EXACT_16BIT")) exact_16bit_ = exact[0] == '1';
    gemv16_ring_ = gemv16_ring_from_env();
    if (const char* group = std::getenv("HOSTLM_CUDA_GEMV16_GROUP")) group16_ = group[0] != '0';
    if (const char* best = std::getenv("HOSTLM_CUDA_BEST_LOGITS")) best_logits_on_ = best[0] != '0';
    if (const char* conv = std::getenv("HOSTLM_CUDA_FUSE_CONV")) fuse_conv_ = conv[0] != '0';
    if (const char* conv16 = std::getenv("HOSTLM_CUDA_FUSE_CONV16"))
      fuse_conv16_ = conv16[0] == '1';
    if (const char* swiglu = std::getenv("HOSTLM_CUDA_FUSE_SWIGLU"))
      fuse_swiglu_ = swiglu[0] != '0';
    if (const char* early = std::getenv("HOSTLM_CUDA_ATTENTION_EARLY"))
      attention_early_ = early[0] != '0';
    if (const char* norm = std::getenv("HOSTLM_CUDA_DELTA_NORM")) delta_norm_ = norm[0] != '0';
    if (const char* chunked = std::getenv("HOSTLM_CUDA_DELTA_CHUNKED"))
      chunked_min_tokens_ = std::max(std::atoll(chunked), 0LL);
    if (const char* staged = std::getenv("HOSTLM_CUDA_DELTA_CHUNKED_STAGED"))
      chunked_staged_ = staged[0] != '0';
    if (const char* store = std::getenv("HOSTLM_CUDA_QK_STORE")) qk_store_ = store[0] != '0';
    if (const char* direct = std::getenv("HOSTLM_CUDA_LOGITS_TO_HOST"))
      direct_host_ = direct[0] != '0';
    bf16_parts_ = exact_16bit_ ? 3 : 1;
    if (const char* parts = std::getenv("HOSTLM_CUDA_BF16_PARTS"))
      bf16_parts_ = std::clamp(std::atoi(parts), 1, 3);
    graphs_ = !(graphs && std::strcmp(graphs, "0") == 0) &&
              !(profiling && *profiling && std::strcmp(profiling, "0") != 0);
    if (const char* ahead = std::getenv("HOSTLM_CUDA_AHEAD"))
      ahead_.on = std::strcmp(ahead, "0") != 0;
    if (const char* kept = std::getenv("HOSTLM_CUDA_GRAPHS_KEPT"))
      steps_kept_ = std::clamp(std::atoi(kept), 1, kRecordedSteps);
    if (const char* stats = std::getenv("HOSTLM_CUDA_GRAPH_STATS"); stats && *stats >= '1') {
      graph_stats_.each = *stats == '2';
      graph_stats_.gaps = *stats == '3';
      graph_stats_.on = cudaEventCreate(&graph_stats_.begin) == cudaSuccess &&
                        cudaEventCreate(&graph_stats_.end) == cudaSuccess &&
                        cudaEventCreate(&graph_stats_.fetched[0]) == cudaSuccess &&
                        cudaEventCreate(&graph_stats_.fetched[1]) == cudaSuccess;
    }
  }

  ~CudaBackend() override {
    profile_.reset();  // prints its table, if on, while the stream lives
    if (graph_stats_.on) {
      collect_replay_time();
      const auto& g = graph_stats_;
      std::fprintf(stderr,
                   "hostlm cuda graphs: %llu recorded, %llu replayed, %llu missed; a replay ran "
                   "%.1f us on the GPU, replays started %.1f us apart, and %.1f us passed "
                   "from a download's end to the next replay\n",
                   static_cast<unsigned long long>(g.recorded),
                   static_cast<unsigned long long>(g.replayed),
                   static_cast<unsigned long long>(g.missed),
                   g.timed ? 1e3 * g.gpu_ms / static_cast<double>(g.timed) : 0.0,
                   g.apart ? 1e3 * g.apart_ms / static_cast<double>(g.apart) : 0.0,
                   g.host ? 1e3 * g.host_ms / static_cast<double>(g.host) : 0.0);
      std::fprintf(stderr,
                   "hostlm cuda graphs: on the GPU, a replay's results came back in %.1f us "
                   "after it, and the GPU then waited %.1f us for the next replay; the host's "
                   "pass over a replayed step took %.1f us and its launch %.1f us\n",
                   g.fetches ? 1e3 * g.fetch_ms / static_cast<double>(g.fetches) : 0.0,
                   g.waits ? 1e3 * g.wait_ms / static_cast<double>(g.waits) : 0.0,
                   g.walks ? 1e3 * g.walk_ms / static_cast<double>(g.walks) : 0.0,
                   g.timed ? 1e3 * g.launch_ms / static_cast<double>(g.timed) : 0.0);
      if (g.ahead_walks)
        std::fprintf(stderr,
                     "hostlm cuda graphs: %llu passes made ahead took %.1f us each; %llu of the "
                     "steps they matched were launched\n",
                     static_cast<unsigned long long>(g.ahead_walks),
                     1e3 * g.ahead_ms / static_cast<double>(g.ahead_walks),
                     static_cast<unsigned long long>(g.ahead_launched));
      for (size_t k = 0; k < g.gap_ms.size(); ++k)
        if (g.gap_calls[k])
          std::fprintf(stderr,
                       "hostlm cuda graphs: %s: the host spent %.2f us a replayed step before "
                       "these ops (%.1f a step)\n",
                       op_kind_name(static_cast<int>(k)),
                       1e3 * g.gap_ms[k] / static_cast<double>(g.walks),
                       static_cast<double>(g.gap_calls[k]) / static_cast<double>(g.walks));
      for (cudaEvent_t e : {g.begin, g.end, g.fetched[0], g.fetched[1]})
        if (e) cudaEventDestroy(e);
    }
    abort_step();
    cudaStreamSynchronize(stream_);
    for (RecordedStep& r : recorded_steps_)
      if (r.exec) cudaGraphExecDestroy(r.exec);
    for (void* p : retired_) cudaFree(p);
    for (void* p : host_weights_) cudaFreeHost(p);
    cudaFree(dequant_);
    cudaFree(attention_scratch_);
    cudaFree(best_scratch_);
    cudaFreeHost(best_host_);
    cublasDestroy(cublas_);
    cudaFree(cublas_workspace_);
    cudaStreamDestroy(stream_);
  }

  std::string name() const override { return "cuda"; }
  void set_threads(int) override {}

  Weight load_weight(const TensorView& view) override {
    if (quants::QuantMatmul::supports(view.type)) return quant_->load(view);
    Weight w = plain_weight(view);
    void* device = weights_->allocate(view.nbytes, "tensor '" + view.name + "'");
    check(cudaMemcpy(device, view.data, view.nbytes, cudaMemcpyHostToDevice), "weight upload");
    w.data = device;
    return w;
  }

  void expect_batch_tokens(int64_t tokens) override { quant_->expect_batch_tokens(tokens); }

  Weight load_embedding_table(const TensorView& view) override {
    if (quants::QuantMatmul::supports(view.type)) return quant_->load_host(view);
    Weight w = plain_weight(view);
    void* host = nullptr;
    check(cudaHostAlloc(&host, view.nbytes, cudaHostAllocMapped | cudaHostAllocWriteCombined),
          ("pinned host memory for tensor '" + view.name + "'").c_str());
    host_weights_.push_back(host);
    std::memcpy(host, view.data, view.nbytes);
    check(cudaHostGetDevicePointer(&w.data, host, 0), "mapping a host tensor");
    return w;
  }

  std::unique_ptr<Buffer> alloc(size_t n) override {
    return std::make_unique<DeviceBuffer>(n, stream_);
  }
  void upload(float* dst, const float* src, size_t n) override {
    const auto timed = profile_->scope("upload");
    forget_acts();
    // From pageable memory the copy has read `src` by the time it returns.
    check(cudaMemcpyAsync(dst, src, n * sizeof(float), cudaMemcpyHostToDevice, stream_), "upload");
  }
  void download(float* dst, const float* src, size_t n) override {
    const auto timed = profile_->scope("download");
    quant_->flush_norm();
    check(cudaMemcpyAsync(dst, src, n * sizeof(float), cudaMemcpyDeviceToHost, stream_),
          "download");
    mark_fetched();
    check(cudaStreamSynchronize(stream_), "download");
    downloaded();
  }
  void download_rows(std::span<float* const> dst, const float* src, size_t n) override {
    const auto timed = profile_->scope("download");
    quant_->flush_norm();
    for (size_t i = 0; i < dst.size(); ++i)
      check(
          cudaMemcpyAsync(dst[i], src + i * n, n * sizeof(float), cudaMemcpyDeviceToHost, stream_),
          "download");
    mark_fetched();
    check(cudaStreamSynchronize(stream_), "download");
    downloaded();
  }
  bool prefers_best_logits() const override { return best_logits_on_; }
  // The selection runs on the device (best_logits.cu) and only k pairs a row come back, in
  // one copy through a pinned buffer.
  void best_logits_rows(std::span<float* const> values, std::span<int32_t* const> ids,
                        const float* src, size_t n, size_t k) override {
    if (ids.size() != values.size()) throw Error("best_logits_rows: as many id rows as value rows");
    const size_t rows = values.size();
    k = std::min(k, n);
    if (rows == 0 || k == 0) return;
    if (k > static_cast<size_t>(kBestLogitsMax) || n > (size_t{1} << 32) ||
        rows > static_cast<size_t>(kBestLogitsMaxRows)) {
      Backend::best_logits_rows(values, ids, src, n, k);
      return;
    }
    const auto timed = profile_->scope("best logits");
    forget_acts();
    const size_t state_bytes = best_logits_scratch_bytes(static_cast<int64_t>(rows));
    const size_t out_bytes = rows * k * (sizeof(float) + sizeof(int32_t));
    if (state_bytes + out_bytes > best_scratch_bytes_) {
      replace_scratch(best_scratch_, "best logits scratch growth");
      best_scratch_ = nullptr;
      best_scratch_ = device_alloc(state_bytes + out_bytes, "the best-logits scratch");
      best_scratch_bytes_ = state_bytes + out_bytes;
    }
    if (out_bytes > best_host_bytes_) {
      check(cudaStreamSynchronize(stream_), "best logits");
      cudaFreeHost(best_host_);
      best_host_ = nullptr;
      check(cudaMallocHost(&best_host_, out_bytes), "pinned memory for the best logits");
      best_host_bytes_ = out_bytes;
    }
    auto* device_values = reinterpret_cast<float*>(static_cast<char*>(best_scratch_) + state_bytes);
    auto* device_ids = reinterpret_cast<int32_t*>(device_values + rows * k);
    check(best_logits(src, static_cast<int64_t>(rows), static_cast<int64_t>(n), static_cast<int>(k),
                      best_scratch_, device_values, device_ids, stream_),
          "best logits");
    check(cudaMemcpyAsync(best_host_, device_values, out_bytes, cudaMemcpyDeviceToHost, stream_),
          "best logits download");
    mark_fetched();
    check(cudaStreamSynchronize(stream_), "best logits download");
    downloaded();
    const auto* host_values = static_cast<const float*>(best_host_);
    const auto* host_ids = reinterpret_cast<const int32_t*>(host_values + rows * k);
    for (size_t i = 0; i < rows; ++i) {
      std::memcpy(values[i], host_values + i * k, k * sizeof(float));
      std::memcpy(ids[i], host_ids + i * k, k * sizeof(int32_t));
    }
  }
  void pin_host(void* host, size_t bytes) override {
    // Without it each row is staged through the driver's bounce buffer at a fraction of
    // the bus speed; failing only costs that speed. Mapped, so that kernels may write it
    // (matmul_to_host).
    if (cudaHostRegister(host, bytes, cudaHostRegisterMapped) != cudaSuccess) {
      (void)cudaGetLastError();
      return;
    }
    void* device = nullptr;
    if (cudaHostGetDevicePointer(&device, host, 0) != cudaSuccess) {
      (void)cudaGetLastError();
      return;
    }
    pinned_[static_cast<char*>(host)] = {bytes, static_cast<char*>(device)};
  }
  void unpin_host(void* host) override {
    pinned_.erase(static_cast<char*>(host));
    if (cudaHostUnregister(host) != cudaSuccess) (void)cudaGetLastError();
  }
  // The single-token products write each warp's rows in one store (gemv_one_token.cu; for
  // BF16 and F16, 32 rows at once in gemv16_staged.cu), so the writes cross the bus as the
  // product runs and the logits need no download after it: on an H200 that download took
  // 25 us a token (a 16-bit head's 1 MiB of logits about 40 us).
  bool matmul_to_host(const Weight& w, const float* x, float* host_y) override {
    const bool whole_lines = quants::QuantMatmul::supports(w.type)
                                 ? quant_->groups(1)
                                 : gemv16_staged_applies(gemv16_ring_, w.type, w.cols);
    if (!direct_host_ || !whole_lines || pinned_.empty()) return false;
    auto* p = reinterpret_cast<char*>(host_y);
    auto it = pinned_.upper_bound(p);
    if (it == pinned_.begin()) return false;
    --it;
    const size_t offset = static_cast<size_t>(p - it->first);
    if (offset + static_cast<size_t>(w.rows) * sizeof(float) > it->second.bytes) return false;
    const auto timed = profile_->scope("matmul to host");
    matmul(w, x, 1, reinterpret_cast<float*>(it->second.device + offset));
    return true;
  }
  void wait_host_writes() override {
    mark_fetched();
    check(cudaStreamSynchronize(stream_), "the product's host writes");
    downloaded();
  }
  bool device_memory(size_t& used, size_t& total) override {
    size_t free_bytes = 0;
    if (cudaMemGetInfo(&free_bytes, &total) != cudaSuccess) {
      (void)cudaGetLastError();
      return false;
    }
    used = total - free_bytes;
    return true;
  }

  // Decode steps as CUDA graphs. A step is recorded (stream capture) with the launches it
  // makes, and the next steps replay that graph as long as they would launch the same
  // kernels with the same arguments (StepFingerprint): per step, only uploaded values change
  // (token ids, positions, page tables, whose pinned copies the graph's copy nodes read), so
  // a replay costs the host one pass over the model code and one launch. Attention reads
  // each sequence's length from the uploaded descriptors and sizes its grid in powers of two
  // of pages for that reason. A step that differs (another batch, a new page-table size, a
  // grown buffer) is found out at end_step, which then runs nothing and returns false; the
  // caller issues the step again and it is recorded anew (cudaGraphExecUpdate in place when
  // the shapes allow). The first step runs live so that one-time uploads (norm weights,
  // scratch sizes) are done before any capture.
  void begin_step() override {
    ahead_.held = nullptr;
    forget_acts();  // a replay runs no op, so none of them keeps this up to date
    if (!graphs_ || mode_ != UploadMode::live) return;
    check(cudaStreamSynchronize(stream_), "step start");  // staging may be reused from here
    collect_replay_time();
    for (void* p : retired_) cudaFree(p);
    retired_.clear();
    tokens_.restart();
    positions_.restart();
    paged_.restart();
    if (!warmed_up_) {
      warmed_up_ = true;
      return;
    }
    step_.reset();
    trace_.clear();
    replay_failed_ = false;
    step_generation_ = staging_generation();
    const bool any = std::any_of(recorded_steps_.begin(), recorded_steps_.end(),
                                 [&](const RecordedStep& r) { return replayable(r); });
    if (any && !record_next_) {
      mode_ = UploadMode::replay;
      if (graph_stats_.on)
        graph_stats_.walk_start = graph_stats_.last_op = std::chrono::steady_clock::now();
      return;
    }
    record_next_ = false;
    check(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeRelaxed), "graph capture");
    mode_ = UploadMode::capture;
  }

  bool end_step() override {
    forget_acts();
    if (ahead_walk_) return end_step_ahead();
    if (mode_ == UploadMode::replay) {
      mode_ = UploadMode::live;
      RecordedStep* match = nullptr;
      for (RecordedStep& r : recorded_steps_)
        if (replayable(r) && r.ops == step_) match = &r;
      if (replay_failed_ || match == nullptr) {
        ++graph_stats_.missed;
        if (graph_stats_.each) report_miss();
        record_next_ = true;
        return false;
      }
      match->used = ++step_tick_;
      if (graph_stats_.gaps) {
        graph_stats_.gap_ms[0] += std::chrono::duration<double, std::milli>(
                                      std::chrono::steady_clock::now() - graph_stats_.last_op)
                                      .count();
        ++graph_stats_.gap_calls[0];
      }
      if (graph_stats_.on) {
        graph_stats_.walk_ms += std::chrono::duration<double, std::milli>(
                                    std::chrono::steady_clock::now() - graph_stats_.walk_start)
                                    .count();
        ++graph_stats_.walks;
      }
      graph_exec_ = match->exec;
      launch_replay();
      graph_launched();
      ++graph_stats_.replayed;
      return true;
    }
    if (mode_ != UploadMode::capture) return true;
    mode_ = UploadMode::live;
    cudaGraph_t graph = nullptr;
    check(cudaStreamEndCapture(stream_, &graph), "graph capture");
    // The least recently used slot takes the recording, updated in place when the shapes allow.
    RecordedStep& slot = *std::min_element(
        recorded_steps_.begin(), recorded_steps_.begin() + steps_kept_,
        [](const RecordedStep& a, const RecordedStep& b) { return a.used < b.used; });
    slot.replayable = false;
    cudaGraphExecUpdateResultInfo info{};
    if (slot.exec == nullptr || cudaGraphExecUpdate(slot.exec, graph, &info) != cudaSuccess) {
      (void)cudaGetLastError();  // a changed shape: instantiate afresh
      if (slot.exec) cudaGraphExecDestroy(slot.exec);
      slot.exec = nullptr;
      const cudaError_t status = cudaGraphInstantiate(&slot.exec, graph, 0);
      if (status != cudaSuccess) {
        slot.exec = nullptr;
        cudaGraphDestroy(graph);
        check(status, "graph instantiation");
      }
    }
    cudaGraphDestroy(graph);
    graph_exec_ = slot.exec;
    check(cudaGraphLaunch(graph_exec_, stream_), "graph launch");
    graph_launched();
    ++graph_stats_.recorded;
    // Buffers replaced during the capture are freed once it has run: a replay would read
    // them, so such a recording is used once.
    slot.ops = step_;
    slot.generation = staging_generation();
    slot.replayable = retired_.empty() && slot.generation == step_generation_;
    slot.used = ++step_tick_;
    if (graph_stats_.each) {
      slot.trace = trace_;
      std::fprintf(stderr, "hostlm cuda graphs: step %llu recorded in slot %d (%llu ops%s%s)\n",
                   static_cast<unsigned long long>(step_tick_),
                   static_cast<int>(&slot - recorded_steps_.data()),
                   static_cast<unsigned long long>(step_.ops()),
                   retired_.empty() ? "" : ", buffers replaced: used once",
                   slot.generation == step_generation_ ? "" : ", staging grew: used once");
    }
    return true;
  }

  void abort_step() override {
    forget_acts();
    if (ahead_walk_) {
      end_step_ahead();
      ahead_.held = nullptr;
      return;
    }
    if (mode_ == UploadMode::replay) mode_ = UploadMode::live;
    if (mode_ != UploadMode::capture) return;
    mode_ = UploadMode::live;
    for (RecordedStep& r : recorded_steps_) r.replayable = false;
    cudaGraph_t graph = nullptr;
    if (cudaStreamEndCapture(stream_, &graph) == cudaSuccess && graph) cudaGraphDestroy(graph);
    (void)cudaGetLastError();
  }

  // The next decode step's pass, made while this one runs (ops.h). Only when a recording could
  // match it: the pass is a replay's whose uploads go to host copies (Staging::begin_ahead),
  // since the running graph may still read the pinned ones.
  bool offers_steps_ahead() const override { return graphs_ && ahead_.on; }
  bool begin_step_ahead() override {
    ahead_.held = nullptr;
    if (!graphs_ || !ahead_.on || mode_ != UploadMode::live || !warmed_up_ || record_next_)
      return false;
    step_generation_ = staging_generation();
    if (std::none_of(recorded_steps_.begin(), recorded_steps_.end(),
                     [&](const RecordedStep& r) { return replayable(r); }))
      return false;
    forget_acts();
    step_.reset();
    trace_.clear();
    replay_failed_ = false;
    tokens_.begin_ahead();
    positions_.begin_ahead();
    paged_.begin_ahead();
    ahead_.tokens = 0;
    ahead_walk_ = true;
    mode_ = UploadMode::replay;
    if (graph_stats_.on) graph_stats_.ahead_start = std::chrono::steady_clock::now();
    return true;
  }
  bool end_step_ahead() {
    ahead_walk_ = false;
    mode_ = UploadMode::live;
    tokens_.end_ahead();
    positions_.end_ahead();
    paged_.end_ahead();
    RecordedStep* match = nullptr;
    for (RecordedStep& r : recorded_steps_)
      if (replayable(r) && r.ops == step_) match = &r;
    auto& g = graph_stats_;
    if (g.on) {
      g.ahead_ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() -
                                                              g.ahead_start)
                        .count();
      ++g.ahead_walks;
    }
    if (replay_failed_ || match == nullptr || ahead_.tokens == 0 || ahead_.tokens == SIZE_MAX)
      return false;
    ahead_.held = match;
    ahead_.live_ops = live_ops_;
    return true;
  }
  bool launch_ahead(std::span<const int32_t> tokens) override {
    RecordedStep* held = std::exchange(ahead_.held, nullptr);
    // Anything run live since may have replaced a buffer the pass saw.
    if (held == nullptr || live_ops_ != ahead_.live_ops || mode_ != UploadMode::live ||
        tokens.size() != ahead_.tokens || !replayable(*held))
      return false;
    for (const int32_t t : tokens)
      if (t < 0 || t >= ahead_.vocab) return false;       // the step's own pass reports it
    check(cudaStreamSynchronize(stream_), "step start");  // the pinned copies may be rewritten
    collect_replay_time();
    for (void* p : retired_) cudaFree(p);
    retired_.clear();
    tokens_.patch_ahead(ahead_.token_offset, tokens);
    tokens_.commit_ahead();
    positions_.commit_ahead();
    paged_.commit_ahead();
    held->used = ++step_tick_;
    graph_exec_ = held->exec;
    launch_replay();
    graph_launched();
    ++graph_stats_.replayed;
    ++graph_stats_.ahead_launched;
    return true;
  }

  void fill(float* dst, float value, size_t n) override {
    const auto timed = profile_->scope("fill");
    forget_acts();
    if (skip(kFill, dst, value, n)) return;
    check(cuda::fill(dst, value, n, stream_), "fill");
  }
  void copy_rows(float* dst, size_t dst_stride, const float* src, size_t src_stride, int64_t rows,
                 int64_t n) override {
    const auto timed = profile_->scope("copy_rows");
    forget_acts();
    if (rows == 0 || n == 0) return;
    if (skip(kCopyRows, dst, dst_stride, src, src_stride, rows, n)) return;
    check(cudaMemcpy2DAsync(dst, dst_stride * sizeof(float), src, src_stride * sizeof(float),
                            static_cast<size_t>(n) * sizeof(float), static_cast<size_t>(rows),
                            cudaMemcpyDeviceToDevice, stream_),
          "copy_rows");
  }

  void embed(const Weight& table, const int32_t* tokens, int64_t T, float* out) override {
    const auto timed = profile_->scope("embed");
    forget_acts();
    for (int64_t t = 0; t < T; ++t)
      if (tokens[t] < 0 || tokens[t] >= table.rows)
        throw Error("token id " + std::to_string(tokens[t]) + " is outside the vocabulary (0.." +
                    std::to_string(table.rows - 1) + ")");
    if (T == 0) return;
    const int32_t* device_tokens =
        tokens_.upload(tokens, static_cast<size_t>(T), stream_, false, mode_);
    if (device_tokens == nullptr) return replay_cannot();
    if (ahead_walk_) {  // launch_ahead puts the real ids there
      ahead_.token_offset = tokens_.last_offset();
      ahead_.tokens = ahead_.tokens == 0 ? static_cast<size_t>(T) : SIZE_MAX;
      ahead_.vocab = table.rows;
    }
    if (skip(kEmbed, table.data, table.type, table.cols, T, out, device_tokens)) return;
    if (quants::QuantMatmul::supports(table.type))
      return quant_->embed(table, device_tokens, T, out);
    check(cuda::embed(table.type, table.data, table.row_bytes, table.cols, device_tokens, T, out,
                      stream_),
          "embed");
  }

  // Quantized matrices of one type go in one GEMV launch (decode: q/k/v, the four input
  // projections of a delta-rule layer, gate/up); the rest one matmul each.
  void matmul_same_input(std::span<const MatmulOut> outs, const float* x, int64_t T) override {
    if (T <= 0) return;
    Grouped done{};
    if (!quant_->groups(T) || outs.size() > done.size())
      return Backend::matmul_same_input(outs, x, T);
    matmul_groups(outs, x, T, done);
  }

  // One decoding sequence: the convolution runs in the epilogue of the one-token product of
  // the first matrix's group (ConvStep), which saves its launch (one a delta-rule layer).
  // HOSTLM_CUDA_FUSE_CONV=0 launches it apart. For 16-bit matrices only with
  // HOSTLM_CUDA_FUSE_CONV16=1: in the ring it made the 9B BF16 step longer (4,365 -> 4,385 us,
  // session 26), the channel's loads at each row pair's start costing more than the launch.
  void matmul_same_input_conv1d(std::span<const MatmulOut> outs, const float* x, int64_t T,
                                std::span<const SequenceSlice> seqs, int64_t channels, int64_t K,
                                const float* weight, float* conv_out) override {
    Grouped done{};
    const bool sixteen = fuse_conv16_ && !outs.empty() && one_token_ring(*outs[0].w);
    if (!fuse_conv_ || outs.empty() || outs.size() > done.size() || T != 1 || seqs.size() != 1 ||
        seqs[0].T != 1 || seqs[0].row != 0 || K < 1 || K > kFusedConvMaxK ||
        outs[0].w->rows != channels ||
        !(sixteen || (quants::QuantMatmul::supports(outs[0].w->type) && quant_->groups(1))))
      return Backend::matmul_same_input_conv1d(outs, x, T, seqs, channels, K, weight, conv_out);
    const Weight* ws[quants::kGemvGroupMax];
    float* ys[quants::kGemvGroupMax];
    const int n = same_input_group(outs, 0, done, ws, ys, sixteen);
    {
      const auto timed = profile_->scope("matmul (gemv) + conv1d");
      const float* w = host_array(weight, static_cast<size_t>(channels * K));
      const ConvStep conv{w, seqs[0].conv_state, conv_out, channels, static_cast<int>(K)};
      // The fused launch, or the product and the convolution after it: the convolution's
      // writes are the last either way, the products' too when fused.
      last_writes_.start(!quant_->folds_norms());
      for (int j = 0; j < n; ++j) last_writes_.add(ys[j], static_cast<size_t>(ws[j]->rows));
      last_writes_.add(conv_out, static_cast<size_t>(channels));
      last_writes_.add(seqs[0].conv_state, static_cast<size_t>((K - 1) * channels));
      if (!skip_matmul_group_conv(ws, ys, n, x, conv) &&
          !(sixteen ? matmul16_group(ws, ys, n, x, {&conv, false})
                    : quant_->matmul_group_conv(ws, ys, n, x, conv))) {
        if (sixteen)
          matmul16_group(ws, ys, n, x);
        else
          quant_->matmul_group(ws, ys, n, x, T);
        cuda::RecurrentSeqs one;
        one.n = 1;
        one.T[0] = 1;
        one.row[0] = 0;
        one.conv_state[0] = seqs[0].conv_state;
        one.state[0] = nullptr;
        check(cuda::conv1d_silu(one, 1, ys[0], channels, K, w, conv_out, stream_), "conv1d_silu");
      }
    }
    matmul_groups(outs, x, T, done);  // the other types and widths
  }

  // One decoding sequence through 16-bit gate and up matrices: the SwiGLU runs where a warp
  // of the ring (gemv16_staged.cu) has both sums of a row, which saves the swiglu launch of
  // every MLP: 9B BF16 step 4,445-4,470 -> 4,365-4,367 us (session 26).
  // HOSTLM_CUDA_FUSE_SWIGLU=0 launches it apart. (The same epilogue in the quantized one-token
  // product made the 9B Q8_0 step longer, 2,483 -> 2,544 us, so it is not there.)
  void matmul_swiglu(const Weight& w_gate, const Weight& w_up, const float* x, int64_t T,
                     float* gate, float* up) override {
    if (!fuse_swiglu_ || T != 1 || !one_token_ring(w_gate) || w_up.type != w_gate.type ||
        w_up.rows != w_gate.rows || w_up.cols != w_gate.cols || w_up.row_bytes != w_gate.row_bytes)
      return Backend::matmul_swiglu(w_gate, w_up, x, T, gate, up);
    const auto timed = profile_->scope("matmul (gemv) + swiglu");
    const auto rows = static_cast<size_t>(w_gate.rows);
    // The fused launch, or the products and the SwiGLU after them; the SwiGLU's writes last.
    last_writes_.start(!quant_->folds_norms());
    last_writes_.add(gate, rows);
    last_writes_.add(up, rows);
    const Weight* ws[2] = {&w_gate, &w_up};
    float* ys[2] = {gate, up};
    const bool replay = skip_matmul_group(ws, ys, 2, x, 1);
    if (skip(kMatmulSwiglu, fuse_swiglu_) || replay) return;
    quant_->forget_acts();
    if (matmul16_group(ws, ys, 2, x, {nullptr, true})) return;
    matmul16_group(ws, ys, 2, x);
    const cuda::Int8ActsOut acts = quant_->produce_acts(gate, static_cast<int64_t>(rows));
    check(cuda::swiglu(gate, up, gate, rows, stream_, acts), "swiglu");
  }

  // Whether a one-token product of w goes through the 16-bit ring, grouped.
  bool one_token_ring(const Weight& w) const {
    return (w.type == DType::BF16 || w.type == DType::F16) && group16_ && gemv16_ring_.chunk > 0;
  }

  // Which outputs of a matmul_same_input call have been multiplied.
  using Grouped = std::array<bool, 16>;

  // Output i and the later ones not yet done that one launch can take with it (its quantized
  // type and width, at most kGemvGroupMax) into ws and ys, marked done; returns how many.
  // With `group16`, BF16 and F16 matrices group too (gemv16_staged_group).
  static int same_input_group(std::span<const MatmulOut> outs, size_t i, Grouped& done,
                              const Weight** ws, float** ys, bool group16 = false) {
    const Weight& wi = *outs[i].w;
    ws[0] = &wi;
    ys[0] = outs[i].y;
    done[i] = true;
    int n = 1;
    const bool quantized = quants::QuantMatmul::supports(wi.type);
    const bool sixteen = group16 && (wi.type == DType::BF16 || wi.type == DType::F16);
    const int most = quantized ? quants::kGemvGroupMax : kGemv16GroupMax;
    if ((quantized || sixteen) && wi.rows > 0)
      for (size_t j = i + 1; j < outs.size() && n < most; ++j)
        if (!done[j] && outs[j].w->type == wi.type && outs[j].w->cols == wi.cols &&
            outs[j].w->rows > 0) {
          ws[n] = outs[j].w;
          ys[n++] = outs[j].y;
          done[j] = true;
        }
    return n;
  }

  // Every output not yet done, grouped as same_input_group says (T within groups(T)).
  void matmul_groups(std::span<const MatmulOut> outs, const float* x, int64_t T, Grouped& done) {
    for (size_t i = 0; i < outs.size(); ++i) {
      if (done[i]) continue;
      const Weight* ws[quants::kGemvGroupMax];
      float* ys[quants::kGemvGroupMax];
      const int n =
          same_input_group(outs, i, done, ws, ys, T == 1 && group16_ && gemv16_ring_.chunk > 0);
      if (n == 1) {
        matmul(*ws[0], x, T, ys[0]);
        continue;
      }
      const auto timed = profile_->scope(matmul_label(T));
      last_writes_.start(!quant_->folds_norms());
      for (int j = 0; j < n; ++j) last_writes_.add(ys[j], static_cast<size_t>(T * ws[j]->rows));
      if (skip_matmul_group(ws, ys, n, x, T)) continue;
      if (quants::QuantMatmul::supports(ws[0]->type)) {
        quant_->matmul_group(ws, ys, n, x, T);
        continue;
      }
      quant_->forget_acts();
      matmul16_group(ws, ys, n, x);
    }
  }

  // One token through BF16 or F16 matrices of one type and width: one launch of the ring
  // (gemv16_staged.cu), or where it does not apply one gemv each. With an epilogue, only the
  // ring's launch: false where it does not apply.
  bool matmul16_group(const Weight* const* ws, float* const* ys, int n, const float* x,
                      Gemv16Epilogue epilogue = {}) {
    Gemv16Target targets[kGemv16GroupMax];
    for (int j = 0; j < n; ++j) targets[j] = {ws[j]->data, ws[j]->row_bytes, ws[j]->rows, ys[j]};
    if (gemv16_staged_group(gemv16_ring_, ws[0]->type, targets, n, ws[0]->cols, x, stream_,
                            epilogue)) {
      check(cudaGetLastError(), "matmul (gemv16 staged group)");
      return true;
    }
    if (epilogue.conv != nullptr || epilogue.swiglu) return false;
    for (int j = 0; j < n; ++j)
      check(gemv(ws[j]->type, ws[j]->data, ws[j]->row_bytes, ws[j]->rows, ws[j]->cols, x, 1, ys[j],
                 stream_),
            "matmul (gemv)");
    return true;
  }

  // The profile tells the decode GEMV, the few-token tile product and prefill apart.
  const char* matmul_label(int64_t T) const {
    return quant_->groups(T)                       ? "matmul (gemv)"
           : T <= quants::QuantMatmul::kTileTokens ? "matmul (7-64 rows)"
                                                   : "matmul (prefill)";
  }

  void matmul(const Weight& w, const float* x, int64_t T, float* y) override {
    const auto timed = profile_->scope(matmul_label(T));
    if (T <= 0 || w.rows == 0) return;
    last_writes_.start(!quant_->folds_norms());
    last_writes_.add(y, static_cast<size_t>(T * w.rows));
    if (skip(kMatmul, w.data, w.type, w.rows, w.cols, x, T, y)) {
      if (widens(w, T)) {  // the widening scratch must be the recorded one
        step_.add(dequant_);
        if (widen_bytes(w, T) > dequant_bytes_) replay_cannot();
      }
      return;
    }
    if (quants::QuantMatmul::supports(w.type)) return quant_->matmul(w, x, T, y);
    quant_->forget_acts();
    if (T == 1 &&
        gemv16_staged(gemv16_ring_, w.type, w.data, w.row_bytes, w.rows, w.cols, x, y, stream_)) {
      check(cudaGetLastError(), "matmul (gemv16 staged)");
      return;
    }
    if (T <= kGemvMaxTokens) {
      check(gemv(w.type, w.data, w.row_bytes, w.rows, w.cols, x, T, y, stream_), "matmul (gemv)");
      return;
    }
    // Prefill. F32 weights: cuBLAS float32 GEMM, exact like the CPU. 16-bit weights stay in
    // their type on tensor cores, and by default the activations are rounded to it too, as
    // llama.cpp and transformers in bfloat16 do: BF16 activations for BF16 weights, half
    // (after a per-token power of two, undone on the output) for F16. One product per matrix;
    // the exact mode (HOSTLM_CUDA_EXACT_16BIT=1) costs three for BF16, the activations as a
    // sum of BF16 parts (bf16_split.cu), and widens F16 weights to float32 in row blocks.
    // 9B BF16 pp512 on an H200: 11,118 t/s with three parts, 21,209-21,463 with one.
    if (w.type == DType::F32) {
      sgemm(static_cast<const float*>(w.data), w.rows, w.cols, x, T, y);
      return;
    }
    if (w.type == DType::BF16) return bf16_gemm(w, x, T, y);
    if (w.type == DType::F16 && !exact_16bit_) return f16_gemm(w, x, T, y);
    const int64_t block_rows = widen_block_rows(w);
    float* scratch = dequant_scratch(widen_bytes(w, T));
    for (int64_t r0 = 0; r0 < w.rows; r0 += block_rows) {
      const int64_t rows = std::min(block_rows, w.rows - r0);
      check(rows_to_f32(w.type, static_cast<const uint8_t*>(w.data) + w.row_bytes * r0, w.row_bytes,
                        rows, w.cols, scratch, stream_),
            "matmul (widen weights)");
      sgemm(scratch, rows, w.cols, x, T, y + r0, w.rows);
    }
  }

  void add(float* x, const float* y, size_t n) override {
    const auto timed = profile_->scope("add");
    forget_acts();
    if (skip(kAdd, x, y, n)) return;
    check(cuda::add(x, y, n, stream_), "add");
  }

  void rms_norm(const float* x, size_t x_stride, float* out, size_t out_stride, int64_t rows,
                int64_t n, const float* weight, float eps) override {
    const auto timed = profile_->scope("rms_norm");
    forget_acts();
    const float* w = host_array(weight, static_cast<size_t>(n));
    if (rows == 1 && x_stride == static_cast<size_t>(n) && out_stride == x_stride &&
        quant_->can_defer_norm(n)) {
      if (skip(kRmsNorm, x, x_stride, out, out_stride, rows, n, w, eps, nullptr)) return;
      quant_->defer_norm(const_cast<float*>(x), nullptr, w, eps, n, out);
      return;
    }
    const cuda::Int8ActsOut acts =
        out_stride == static_cast<size_t>(n) ? norm_acts(out, rows, n) : cuda::Int8ActsOut{};
    if (skip(kRmsNorm, x, x_stride, out, out_stride, rows, n, w, eps, acts.q)) return;
    check(cuda::rms_norm(x, x_stride, out, out_stride, rows, n, w, eps, stream_, acts), "rms_norm");
  }

  void add_rms_norm(float* x, const float* y, int64_t rows, int64_t n, const float* weight,
                    float eps, float* out) override {
    const auto timed = profile_->scope("add_rms_norm");
    const bool early_x = last_writes_.untouched(x, static_cast<size_t>(rows * n));
    forget_acts();
    const float* w = host_array(weight, static_cast<size_t>(n));
    // One row (a decode step): folded into the product that reads `out` next, if one does.
    if (rows == 1 && quant_->can_defer_norm(n)) {
      if (skip(kAddRmsNorm, x, y, rows, n, w, eps, out, nullptr)) return;
      quant_->defer_norm(x, y, w, eps, n, out);
      return;
    }
    const cuda::Int8ActsOut acts = norm_acts(out, rows, n);
    if (skip(kAddRmsNorm, x, y, rows, n, w, eps, out, acts.q, early_x)) return;
    check(cuda::add_rms_norm(x, y, rows, n, w, eps, out, stream_, acts, early_x), "add_rms_norm");
  }

  void rope_neox(float* x, size_t token_stride, int64_t T, int64_t n_heads, size_t head_stride,
                 int64_t rot_dims, const int32_t* positions, double theta) override {
    const auto timed = profile_->scope("rope");
    forget_acts();
    if (T == 0) return;
    // The q and k rotations of a layer, and every attention layer of a batch, share positions.
    const int32_t* device_positions =
        positions_.upload(positions, static_cast<size_t>(T), stream_, true, mode_);
    if (device_positions == nullptr) return replay_cannot();
    if (skip(kRope, x, token_stride, T, n_heads, head_stride, rot_dims, device_positions, theta))
      return;
    check(cuda::rope_neox(x, token_stride, T, n_heads, head_stride, rot_dims, device_positions,
                          theta, stream_),
          "rope_neox");
  }

  void qk_norm_rope(float* qg, size_t q_head_stride, int64_t n_head, float* k, int64_t n_head_kv,
                    int64_t T, int64_t head_dim, const float* q_weight, float q_eps,
                    const float* k_weight, float k_eps, int64_t rot_dims, const int32_t* positions,
                    double theta, float* q_out) override {
    const auto timed = profile_->scope("qk_norm_rope");
    forget_acts();
    if (T == 0) return;
    if (head_dim > cuda::kQkNormRopeMaxHeadDim || rot_dims < 0 || rot_dims > head_dim ||
        rot_dims % 2 != 0)
      throw Error("CUDA qk_norm_rope supports heads up to " +
                  std::to_string(cuda::kQkNormRopeMaxHeadDim) +
                  " wide with an even rotated part within them, not " + std::to_string(head_dim) +
                  " with " + std::to_string(rot_dims) + " rotated");
    const float* qw = host_array(q_weight, static_cast<size_t>(head_dim));
    const float* kw = host_array(k_weight, static_cast<size_t>(head_dim));
    const int32_t* device_positions =
        positions_.upload(positions, static_cast<size_t>(T), stream_, true, mode_);
    if (device_positions == nullptr) return replay_cannot();
    if (skip(kQkNormRope, qg, q_head_stride, n_head, k, n_head_kv, T, head_dim, qw, q_eps, kw,
             k_eps, rot_dims, device_positions, theta, q_out))
      return;
    check(cuda::qk_norm_rope(qg, q_head_stride, n_head, k, n_head_kv, T, head_dim, qw, q_eps, kw,
                             k_eps, rot_dims, device_positions, theta, q_out, stream_),
          "qk_norm_rope");
  }

  // One launch for F32 and F16 pages (HOSTLM_CUDA_QK_STORE=0: two), the two ops otherwise.
  void qk_norm_rope_store(std::span<const PagedSequence> seqs, float* qg, size_t q_head_stride,
                          int64_t n_head, float* k, const float* v, int64_t n_head_kv, int64_t T,
                          int64_t head_dim, const float* q_weight, float q_eps,
                          const float* k_weight, float k_eps, int64_t rot_dims,
                          const int32_t* positions, double theta, float* q_out) override {
    const bool fits = qk_store_ && !seqs.empty() && T > 0 &&
                      (seqs[0].kv.type == DType::F16 || seqs[0].kv.type == DType::F32) &&
                      seqs[0].kv.n_head_kv == n_head_kv && seqs[0].kv.head_dim == head_dim &&
                      head_dim <= cuda::kQkNormRopeMaxHeadDim && rot_dims >= 0 &&
                      rot_dims <= head_dim && rot_dims % 2 == 0;
    if (!fits) {
      Backend::qk_norm_rope_store(seqs, qg, q_head_stride, n_head, k, v, n_head_kv, T, head_dim,
                                  q_weight, q_eps, k_weight, k_eps, rot_dims, positions, theta,
                                  q_out);
      return;
    }
    const auto timed = profile_->scope("qk_norm_rope_store");
    forget_acts();
    const float* qw = host_array(q_weight, static_cast<size_t>(head_dim));
    const float* kw = host_array(k_weight, static_cast<size_t>(head_dim));
    // Uploaded in the two ops' order: the positions, then the page tables.
    const int32_t* device_positions =
        positions_.upload(positions, static_cast<size_t>(T), stream_, true, mode_);
    if (device_positions == nullptr) return replay_cannot();
    const cuda::PagedBatch batch = paged_.upload(seqs, stream_, mode_);
    if (batch.descs == nullptr) return replay_cannot();
    kv_stored_ = seqs[0].kv.k;
    if (skip_paged(kQkNormRopeStore, batch, qg, q_head_stride, n_head, k, v, T, qw, q_eps, kw,
                   k_eps, rot_dims, device_positions, theta, q_out))
      return;
    check(cuda::qk_norm_rope_store(batch, qg, q_head_stride, n_head, k, v, n_head_kv, T, head_dim,
                                   qw, q_eps, kw, k_eps, rot_dims, device_positions, theta, q_out,
                                   stream_),
          "qk_norm_rope_store");
  }

  void kv_store(std::span<const PagedSequence> seqs, const float* k, const float* v) override {
    const auto timed = profile_->scope("kv_store");
    forget_acts();
    if (seqs.empty()) return;
    const cuda::PagedBatch batch = paged_.upload(seqs, stream_, mode_);
    if (batch.descs == nullptr) return replay_cannot();
    kv_stored_ = seqs[0].kv.k;
    if (skip_paged(kKvStore, batch, k, v)) return;
    check(cuda::kv_store(batch, k, v, stream_), "kv_store");
  }

  void paged_attention(std::span<const PagedSequence> seqs, const float* q, size_t q_stride,
                       int64_t n_head, float scale, float* out) override {
    const auto timed = profile_->scope("paged_attention");
    // The op just before stored this batch's new keys and values and nothing else (no kernel
    // comes between when norms are not folded): the kernel may read ahead (kernels.h).
    const bool after_store = !seqs.empty() && kv_stored_ == seqs[0].kv.k && !quant_->folds_norms();
    forget_acts();
    if (seqs.empty()) return;
    if (seqs[0].kv.head_dim > kAttentionMaxHeadDim)
      throw Error("CUDA attention supports head_dim up to " + std::to_string(kAttentionMaxHeadDim) +
                  ", not " + std::to_string(seqs[0].kv.head_dim));
    const cuda::PagedBatch batch = paged_.upload(seqs, stream_, mode_);
    if (batch.descs == nullptr) return replay_cannot();
    const size_t scratch_floats = cuda::paged_attention_scratch(batch, n_head);
    if (mode_ == UploadMode::replay && scratch_floats > attention_scratch_floats_)
      return replay_cannot();
    float* scratch =
        mode_ == UploadMode::replay ? attention_scratch_ : attention_scratch(scratch_floats);
    // Its kernels write the outputs' rows and the scratch (and the uploads the page tables).
    last_writes_.start(!quant_->folds_norms());
    const int64_t width = n_head * seqs[0].kv.head_dim;
    for (const PagedSequence& s : seqs)
      last_writes_.add(out + s.row * width, static_cast<size_t>(s.T * width));
    last_writes_.add(scratch, scratch_floats);
    const bool early =
        after_store && !paged_.copied() && attention_early_ && cuda::early_loads_enabled();
    if (skip_paged(kAttention, batch, q, q_stride, n_head, scale, out, scratch, scratch_floats,
                   cuda::flash_prefill_rows(batch, n_head), early))
      return;
    check(cuda::paged_attention(batch, q, q_stride, n_head, scale, out, scratch, stream_, early),
          "paged_attention");
  }

  void mul_sigmoid(float* x, const float* gate, size_t gate_stride, int64_t T, int64_t n) override {
    const auto timed = profile_->scope("mul_sigmoid");
    const bool early_gate =
        T > 0 && last_writes_.untouched(
                     gate, static_cast<size_t>(T - 1) * gate_stride + static_cast<size_t>(n));
    forget_acts();
    const cuda::Int8ActsOut acts = quant_->produce_acts(x, T * n);
    if (skip(kMulSigmoid, x, gate, gate_stride, T, n, acts.q, early_gate)) return;
    check(cuda::mul_sigmoid(x, gate, gate_stride, T, n, stream_, acts, early_gate), "mul_sigmoid");
  }

  void swiglu(const float* gate, const float* up, float* out, size_t n) override {
    const auto timed = profile_->scope("swiglu");
    forget_acts();
    const cuda::Int8ActsOut acts = quant_->produce_acts(out, static_cast<int64_t>(n));
    if (skip(kSwiglu, gate, up, out, n, acts.q)) return;
    check(cuda::swiglu(gate, up, out, n, stream_, acts), "swiglu");
  }

  void conv1d_silu(const float* x, int64_t T, int64_t channels, int64_t K, const float* weight,
                   float* conv_state, float* out) override {
    const SequenceSlice one{0, T, 0, conv_state, nullptr};
    conv1d_silu_seqs({&one, 1}, x, channels, K, weight, out);
  }

  void conv1d_silu_seqs(std::span<const SequenceSlice> seqs, const float* x, int64_t channels,
                        int64_t K, const float* weight, float* out) override {
    const auto timed = profile_->scope("conv1d_silu");
    forget_acts();
    if (K > kConvMaxKernel)
      throw Error("CUDA conv1d supports kernels up to " + std::to_string(kConvMaxKernel) +
                  " taps, not " + std::to_string(K));
    const float* w = host_array(weight, static_cast<size_t>(channels * K));
    last_writes_.start(!quant_->folds_norms());
    for (const SequenceSlice& sl : seqs) {
      last_writes_.add(out + sl.row * channels, static_cast<size_t>(sl.T * channels));
      last_writes_.add(sl.conv_state, static_cast<size_t>((K - 1) * channels));
    }
    for_each_group(seqs, [&](const cuda::RecurrentSeqs& group, int64_t max_T) {
      if (skip_group(kConv, group, max_T, x, channels, K, w, out)) return;
      check(cuda::conv1d_silu(group, max_T, x, channels, K, w, out, stream_), "conv1d_silu");
    });
  }

  void gated_delta_rule(const float* qkv, const float* alpha, const float* beta_raw,
                        const float* a_neg, const float* dt_bias, int64_t T,
                        const DeltaRuleShape& sh, float* state, float* out) override {
    const SequenceSlice one{0, T, 0, nullptr, state};
    gated_delta_rule_seqs({&one, 1}, qkv, alpha, beta_raw, a_neg, dt_bias, sh, out);
  }

  void gated_delta_rule_seqs(std::span<const SequenceSlice> seqs, const float* qkv,
                             const float* alpha, const float* beta_raw, const float* a_neg,
                             const float* dt_bias, const DeltaRuleShape& sh, float* out) override {
    const auto timed = profile_->scope("gated_delta_rule");
    delta_rule(seqs, qkv, alpha, beta_raw, a_neg, dt_bias, sh, nullptr, nullptr, 0.f, 0, out);
  }

  // Decode steps of up to kDeltaNormMaxSeqs sequences take the gated norm inside the delta
  // rule's launch (delta_rule_can_norm); anything else runs the two ops. More sequences ran
  // slower fused on the H200 (9B Q4_K_M engine bench, session 21: 32 streams -0.8%, 64 -2%),
  // its blocks of a whole head leaving an SM idle at their barriers where four small blocks
  // interleave; one stream gained 33 us a step.
  void gated_delta_rule_norm_seqs(std::span<const SequenceSlice> seqs, const float* qkv,
                                  const float* alpha, const float* beta_raw, const float* a_neg,
                                  const float* dt_bias, const DeltaRuleShape& sh, const float* z,
                                  const float* norm_weight, float eps, int64_t T,
                                  float* out) override {
    int64_t max_T = 0;
    for (const SequenceSlice& sl : seqs) max_T = std::max(max_T, sl.T);
    if (!delta_norm_ || seqs.size() > kDeltaNormMaxSeqs ||
        !cuda::delta_rule_can_norm(sh.dk, sh.dv, max_T)) {
      Backend::gated_delta_rule_norm_seqs(seqs, qkv, alpha, beta_raw, a_neg, dt_bias, sh, z,
                                          norm_weight, eps, T, out);
      return;
    }
    const auto timed = profile_->scope("gated_delta_rule_norm");
    delta_rule(seqs, qkv, alpha, beta_raw, a_neg, dt_bias, sh, z, norm_weight, eps, T, out);
  }

  void gated_rms_norm(const float* x, const float* z, const float* weight, int64_t rows, int64_t dv,
                      float eps, float* out) override {
    const auto timed = profile_->scope("gated_rms_norm");
    const bool early_z = last_writes_.untouched(z, static_cast<size_t>(rows * dv));
    forget_acts();
    const float* w = host_array(weight, static_cast<size_t>(dv));
    const cuda::Int8ActsOut acts =
        dv % 32 == 0 ? quant_->produce_acts(out, rows * dv) : cuda::Int8ActsOut{};
    if (skip(kGatedRmsNorm, x, z, w, rows, dv, eps, out, acts.q, early_z)) return;
    check(cuda::gated_rms_norm(x, z, w, rows, dv, eps, out, stream_, acts, early_z),
          "gated_rms_norm");
  }

  // The decode GEMV's quantized copy of a norm's output, written by the norm itself when the
  // rows are few enough for the GEMV to read it (QuantMatmul::produce_acts).
  cuda::Int8ActsOut norm_acts(const float* out, int64_t rows, int64_t n) {
    if (!quant_->groups(rows) || n > cuda::kNormQuantizeMax || n % 32 != 0) return {};
    return quant_->produce_acts(out, rows * n);
  }

 private:
  // The delta rule's launches, with the gated norm in them when z is set (the caller checked
  // delta_rule_can_norm; T: the rows of out).
  void delta_rule(std::span<const SequenceSlice> seqs, const float* qkv, const float* alpha,
                  const float* beta_raw, const float* a_neg, const float* dt_bias,
                  const DeltaRuleShape& sh, const float* z, const float* norm_weight, float eps,
                  int64_t T, float* out) {
    const size_t state_floats = static_cast<size_t>(sh.n_v_heads * sh.dv * sh.dk);
    // The kernel reads the states before it waits for the kernel before when that kernel is
    // known not to have written them (a product or convolution of this layer's inputs).
    bool early_state = cuda::early_loads_enabled();
    for (const SequenceSlice& sl : seqs)
      early_state = early_state && last_writes_.untouched(sl.recurrent_state, state_floats);
    forget_acts();
    if (sh.dk > kDeltaRuleMaxDk)
      throw Error("CUDA gated delta rule supports key heads up to " +
                  std::to_string(kDeltaRuleMaxDk) + " wide, not " + std::to_string(sh.dk));
    const float* a = host_array(a_neg, static_cast<size_t>(sh.n_v_heads));
    const float* dt = host_array(dt_bias, static_cast<size_t>(sh.n_v_heads));
    cuda::DeltaRuleNorm norm;
    if (z != nullptr) {
      norm.z = z;
      norm.weight = host_array(norm_weight, static_cast<size_t>(sh.dv));
      norm.eps = eps;
      norm.acts = quant_->produce_acts(out, T * sh.n_v_heads * sh.dv);
    }
    last_writes_.start(!quant_->folds_norms());
    for (const SequenceSlice& sl : seqs) {
      last_writes_.add(out + sl.row * sh.n_v_heads * sh.dv,
                       static_cast<size_t>(sl.T * sh.n_v_heads * sh.dv));
      last_writes_.add(sl.recurrent_state, state_floats);
    }
    const OpKind kind = z != nullptr ? kDeltaRuleNorm : kDeltaRule;
    for_each_group(seqs, [&](const cuda::RecurrentSeqs& all, int64_t max_T) {
      cuda::RecurrentSeqs group = all;
      if (z == nullptr && chunked_min_tokens_ > 0 && max_T >= chunked_min_tokens_ &&
          chunked_fits(sh.dk)) {
        cuda::RecurrentSeqs long_seqs;
        group.n = 0;
        for (int i = 0; i < all.n; ++i) {
          cuda::RecurrentSeqs& to = all.T[i] >= chunked_min_tokens_ ? long_seqs : group;
          to.T[to.n] = all.T[i];
          to.row[to.n] = all.row[i];
          to.conv_state[to.n] = all.conv_state[i];
          to.state[to.n] = all.state[i];
          ++to.n;
        }
        delta_rule_chunked(long_seqs, qkv, alpha, beta_raw, a, dt, sh, out);
        if (group.n == 0) return;
      }
      if (skip_group(kind, group, qkv, alpha, beta_raw, a, dt, sh.n_k_heads, sh.n_v_heads, sh.dk,
                     sh.dv, out, early_state, z, norm.weight, eps, norm.acts.q))
        return;
      check(cuda::gated_delta_rule(group, qkv, alpha, beta_raw, a, dt, sh.n_k_heads, sh.n_v_heads,
                                   sh.dk, sh.dv, out, early_state, stream_, norm),
            "gated_delta_rule");
    });
  }

  bool chunked_fits(int64_t dk) {
    if (dk != chunked_fit_dk_) {
      chunked_fit_ = cuda::delta_chunked_fits(dk);
      chunked_fit_dk_ = dk;
    }
    return chunked_fit_;
  }

  // The chunked form for the sequences of `seqs` (all long), its per-chunk results in the
  // prefill weight scratch: as much of it as is there already (the prefill products have
  // grown it), and at least kChunkedScratchBytes or what the sequences need if less.
  void delta_rule_chunked(const cuda::RecurrentSeqs& seqs, const float* qkv, const float* alpha,
                          const float* beta_raw, const float* a_neg, const float* dt_bias,
                          const DeltaRuleShape& sh, float* out) {
    const size_t slot_bytes = cuda::delta_chunked_slot_floats(sh.n_v_heads) * sizeof(float);
    size_t need = 0;
    const int64_t chunk = cuda::kDeltaChunkedTokens;
    for (int i = 0; i < seqs.n; ++i)
      need += static_cast<size_t>((seqs.T[i] + chunk - 1) / chunk) * slot_bytes;
    const size_t bytes =
        std::max(slot_bytes, std::min(need, std::max(dequant_bytes_, kChunkedScratchBytes)));
    float* scratch = dequant_scratch(bytes);
    const size_t scratch_floats = dequant_bytes_ / sizeof(float);
    last_writes_.add(scratch, scratch_floats);
    if (skip_group(kDeltaRuleChunked, seqs, qkv, alpha, beta_raw, a_neg, dt_bias, sh.n_k_heads,
                   sh.n_v_heads, sh.dk, sh.dv, out, scratch, scratch_floats, chunked_staged_))
      return;
    check(cuda::gated_delta_rule_chunked(seqs, qkv, alpha, beta_raw, a_neg, dt_bias, sh.n_k_heads,
                                         sh.n_v_heads, sh.dk, sh.dv, out, scratch, scratch_floats,
                                         chunked_staged_, stream_),
          "gated_delta_rule (chunked)");
  }

  // Op kinds in a step's fingerprint.
  enum OpKind {
    kFill = 1,
    kCopyRows,
    kEmbed,
    kMatmul,
    kAdd,
    kRmsNorm,
    kAddRmsNorm,
    kRope,
    kKvStore,
    kAttention,
    kMulSigmoid,
    kSwiglu,
    kConv,
    kDeltaRule,
    kGatedRmsNorm,
    kMatmulGroup,
    kQkNormRope,
    kMatmulGroupConv,
    kDeltaRuleNorm,
    kQkNormRopeStore,
    kMatmulSwiglu,
    kDeltaRuleChunked
  };

  static const char* op_kind_name(int kind) {
    static constexpr const char* kNames[] = {"the end of the step",
                                             "fill",
                                             "copy_rows",
                                             "embed",
                                             "matmul",
                                             "add",
                                             "rms_norm",
                                             "add_rms_norm",
                                             "rope",
                                             "kv_store",
                                             "attention",
                                             "mul_sigmoid",
                                             "swiglu",
                                             "conv",
                                             "delta_rule",
                                             "gated_rms_norm",
                                             "matmul_group",
                                             "qk_norm_rope",
                                             "matmul_group_conv",
                                             "delta_rule_norm",
                                             "qk_norm_rope_store",
                                             "matmul_swiglu",
                                             "delta_rule_chunked"};
    static_assert(std::size(kNames) == kDeltaRuleChunked + 1, "a name for every op kind");
    return kind >= 0 && kind < static_cast<int>(std::size(kNames)) ? kNames[kind] : "?";
  }

  // While a step is recorded or replayed, adds the op to its fingerprint; true when the op
  // must not launch because the step is a replay.
  template <typename... Args>
  bool skip(OpKind kind, const Args&... args) {
    if (runs_live()) return false;
    step_.op(kind, args...);
    traced(kind);
    return mode_ == UploadMode::replay;
  }
  // The same for the paged-KV ops, with the batch's launch arguments (its longest context
  // only through the grid, which the scratch size stands for).
  template <typename... Args>
  bool skip_paged(OpKind kind, const cuda::PagedBatch& b, const Args&... args) {
    if (runs_live()) return false;
    step_.op(kind, args...);
    step_.add(b.type);
    for (int64_t v : {b.n_head_kv, b.head_dim, b.n_seq, b.rows, b.min_t, b.max_t}) step_.add(v);
    for (size_t v : {b.page_bytes, b.row_bytes}) step_.add(v);
    for (const void* p : {static_cast<const void*>(b.k), static_cast<const void*>(b.v),
                          static_cast<const void*>(b.descs), static_cast<const void*>(b.row_to_seq),
                          static_cast<const void*>(b.pages)})
      step_.add(p);
    step_.add(b.aligned16);
    traced(kind);
    return mode_ == UploadMode::replay;
  }
  // The same for the recurrent ops, with the sequence table they take by value.
  template <typename... Args>
  bool skip_group(OpKind kind, const cuda::RecurrentSeqs& g, const Args&... args) {
    if (runs_live()) return false;
    step_.op(kind, args...);
    step_.add(g.n);
    for (int i = 0; i < g.n; ++i) {
      step_.add(g.T[i]);
      step_.add(g.row[i]);
      step_.add(g.conv_state[i]);
      step_.add(g.state[i]);
    }
    traced(kind);
    return mode_ == UploadMode::replay;
  }
  // The same for a grouped matmul, with each matrix and output.
  bool skip_matmul_group(const Weight* const* ws, float* const* ys, int n, const float* x,
                         int64_t T) {
    if (runs_live()) return false;
    step_.op(kMatmulGroup, x, T, n);
    for (int j = 0; j < n; ++j) {
      step_.add(ws[j]->data);
      step_.add(ws[j]->type);
      step_.add(ws[j]->rows);
      step_.add(ws[j]->cols);
      step_.add(ys[j]);
    }
    traced(kMatmulGroup);
    return mode_ == UploadMode::replay;
  }
  // The same with the convolution of the first matrix's rows.
  bool skip_matmul_group_conv(const Weight* const* ws, float* const* ys, int n, const float* x,
                              const ConvStep& conv) {
    if (runs_live()) return false;
    skip_matmul_group(ws, ys, n, x, 1);
    step_.op(kMatmulGroupConv, conv.weight, conv.state, conv.out, conv.channels, conv.K);
    traced(kMatmulGroupConv);
    return mode_ == UploadMode::replay;
  }
  // An op outside any step runs as it is called; counted, since it may replace a buffer that a
  // pass made ahead saw (launch_ahead).
  bool runs_live() {
    if (mode_ != UploadMode::live) return false;
    ++live_ops_;
    return true;
  }
  // HOSTLM_CUDA_GRAPH_STATS=2: each op's running fingerprint, to name the first op in which a
  // step that matched no recording differs from the closest one.
  void traced(int kind) {
    if (graph_stats_.each) trace_.push_back({kind, step_.hash()});
    if (graph_stats_.gaps && mode_ == UploadMode::replay && !ahead_walk_) {
      const auto now = std::chrono::steady_clock::now();
      auto& g = graph_stats_;
      g.gap_ms[kind] += std::chrono::duration<double, std::milli>(now - g.last_op).count();
      ++g.gap_calls[kind];
      g.last_op = now;
    }
  }
  void report_miss() const {
    const RecordedStep* closest = nullptr;
    size_t common = 0;
    for (const RecordedStep& r : recorded_steps_) {
      if (!replayable(r)) continue;
      size_t i = 0;
      while (i < r.trace.size() && i < trace_.size() && r.trace[i] == trace_[i]) ++i;
      if (closest == nullptr || i > common) closest = &r, common = i;
    }
    std::fprintf(stderr, "hostlm cuda graphs: step %llu (%zu ops) missed%s",
                 static_cast<unsigned long long>(step_tick_ + 1), trace_.size(),
                 replay_failed_ ? ": a buffer would have to grow" : "");
    if (closest != nullptr && !replay_failed_)
      std::fprintf(stderr, ": closest recording (slot %d, %zu ops) differs from op %zu (kind %d)",
                   static_cast<int>(closest - recorded_steps_.data()), closest->trace.size(),
                   common, common < trace_.size() ? trace_[common].first : -1);
    std::fprintf(stderr, "\n");
  }
  // A replayed step found it cannot match its recording (end_step reports it).
  void replay_cannot() { replay_failed_ = true; }
  const float* host_array(const float* host, size_t n) {
    if (mode_ != UploadMode::replay) return host_arrays_.get(host, n, stream_);
    const float* device = host_arrays_.find(host, n);
    if (device == nullptr) replay_cannot();
    return device;
  }
  uint64_t staging_generation() const {
    return tokens_.generation() + positions_.generation() + paged_.generation();
  }
  // A replay, timed on the GPU with HOSTLM_CUDA_GRAPH_STATS=1: the GPU time of a step beside
  // the interval between steps shows how long the GPU waits for the host between them.
  void launch_replay() {
    auto& g = graph_stats_;
    if (g.on && !g.pending) {
      const auto now = std::chrono::steady_clock::now();
      if (g.replayed > 0) {
        g.apart_ms += std::chrono::duration<double, std::milli>(now - g.last_start).count();
        ++g.apart;
      }
      g.last_start = now;
      if (g.downloaded) {
        g.host_ms += std::chrono::duration<double, std::milli>(now - g.last_download).count();
        ++g.host;
        g.downloaded = false;
      }
      check(cudaEventRecord(g.begin, stream_), "graph timing");
      const auto before_launch = std::chrono::steady_clock::now();
      check(cudaGraphLaunch(graph_exec_, stream_), "graph launch");
      g.launch_ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() -
                                                               before_launch)
                         .count();
      check(cudaEventRecord(g.end, stream_), "graph timing");
      g.pending = true;
      return;
    }
    check(cudaGraphLaunch(graph_exec_, stream_), "graph launch");
  }
  // When the host got its results, for the time it then takes to replay the next step.
  void downloaded() {
    if (!graph_stats_.on) return;
    graph_stats_.last_download = std::chrono::steady_clock::now();
    graph_stats_.downloaded = true;
  }
  // A download's copies are queued: the first after a timed replay marks when its results
  // are back on the GPU's side. Any other download breaks the chain of timed steps.
  void mark_fetched() {
    auto& g = graph_stats_;
    if (!g.on) return;
    if (!g.pending) {
      g.last_fetch_valid = false;
      return;
    }
    if (g.fetch_recorded) return;
    g.fetch_recorded = cudaEventRecord(g.fetched[g.fetch_turn], stream_) == cudaSuccess;
  }
  // Adds the last timed replay's GPU time, once the stream has finished it.
  void collect_replay_time() {
    auto& g = graph_stats_;
    if (!g.pending || cudaEventSynchronize(g.end) != cudaSuccess) return;
    float ms = 0;
    if (cudaEventElapsedTime(&ms, g.begin, g.end) == cudaSuccess) {
      g.gpu_ms += ms;
      ++g.timed;
    }
    if (g.last_fetch_valid &&
        cudaEventElapsedTime(&ms, g.fetched[1 - g.fetch_turn], g.begin) == cudaSuccess) {
      g.wait_ms += ms;
      ++g.waits;
    }
    g.last_fetch_valid = false;
    if (g.fetch_recorded && cudaEventSynchronize(g.fetched[g.fetch_turn]) == cudaSuccess &&
        cudaEventElapsedTime(&ms, g.end, g.fetched[g.fetch_turn]) == cudaSuccess) {
      g.fetch_ms += ms;
      ++g.fetches;
      g.last_fetch_valid = true;
      g.fetch_turn = 1 - g.fetch_turn;
    }
    g.fetch_recorded = false;
    g.pending = false;
  }

  void graph_launched() {
    tokens_.launched(stream_);
    positions_.launched(stream_);
    paged_.launched(stream_);
  }
  // 16-bit weights multiplied with cuBLAS use dequant_: BF16 for the activations' BF16 parts;
  // for F16, the activations in half with their scales, or (exact) float32 row blocks.
  bool widens(const Weight& w, int64_t T) const {
    return !quants::QuantMatmul::supports(w.type) && T > kGemvMaxTokens && w.type != DType::F32;
  }
  static int64_t widen_block_rows(const Weight& w) {
    const size_t row_f32 = static_cast<size_t>(w.cols) * sizeof(float);
    return std::clamp<int64_t>(static_cast<int64_t>(kDequantBytes / std::max<size_t>(row_f32, 1)),
                               1, w.rows);
  }
  // Tokens per BF16 product: their parts fill at most kDequantBytes.
  int64_t bf16_chunk_tokens(const Weight& w, int64_t T) const {
    const size_t token_bytes = static_cast<size_t>(bf16_parts_ * w.cols) * 2;
    return std::clamp<int64_t>(
        static_cast<int64_t>(kDequantBytes / std::max<size_t>(token_bytes, 1)), 1, T);
  }
  // Tokens per half product of F16 weights: their activations and scales fill at most
  // kDequantBytes.
  static int64_t half_chunk_tokens(const Weight& w, int64_t T) {
    const size_t token_bytes = static_cast<size_t>(w.cols) * 2 + sizeof(float);
    return std::clamp<int64_t>(static_cast<int64_t>(kDequantBytes / token_bytes), 1, T);
  }
  static size_t half_acts_bytes(const Weight& w, int64_t tokens) {
    return (static_cast<size_t>(tokens * w.cols) * 2 + 255) / 256 * 256;
  }
  size_t widen_bytes(const Weight& w, int64_t T) const {
    if (w.type == DType::BF16)
      return static_cast<size_t>(bf16_chunk_tokens(w, T) * bf16_parts_ * w.cols) * 2;
    if (w.type == DType::F16 && !exact_16bit_) {
      const int64_t chunk = half_chunk_tokens(w, T);
      return half_acts_bytes(w, chunk) + static_cast<size_t>(chunk) * sizeof(float);
    }
    return static_cast<size_t>(widen_block_rows(w)) * static_cast<size_t>(w.cols) * sizeof(float);
  }

  // y[T, rows] = x * W^T for BF16 W: one tensor-core product per BF16 part of x, summed by
  // cuBLAS (beta = 1 after the first) in float32.
  void bf16_gemm(const Weight& w, const float* x, int64_t T, float* y) {
    const int64_t chunk = bf16_chunk_tokens(w, T);
    auto* parts = reinterpret_cast<uint16_t*>(dequant_scratch(widen_bytes(w, T)));
    const float one = 1.f, zero = 0.f;
    for (int64_t t0 = 0; t0 < T; t0 += chunk) {
      const int64_t tc = std::min(chunk, T - t0);
      const size_t n = static_cast<size_t>(tc * w.cols);
      check(split_bf16(x + t0 * w.cols, n, bf16_parts_, parts, stream_), "matmul (bf16 parts)");
      for (int p = 0; p < bf16_parts_; ++p)
        check(cublasGemmEx(cublas_, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(w.rows),
                           static_cast<int>(tc), static_cast<int>(w.cols), &one, w.data,
                           CUDA_R_16BF, static_cast<int>(w.cols), parts + p * n, CUDA_R_16BF,
                           static_cast<int>(w.cols), p == 0 ? &zero : &one, y + t0 * w.rows,
                           CUDA_R_32F, static_cast<int>(w.rows), CUBLAS_COMPUTE_32F,
                           CUBLAS_GEMM_DEFAULT),
              "matmul (cublasGemmEx, bf16)");
    }
  }

  // y[T, rows] = x * W^T for F16 W: the activations in half, each token scaled by a power of
  // two that keeps it in half's range (undone on y), one tensor-core product per chunk.
  void f16_gemm(const Weight& w, const float* x, int64_t T, float* y) {
    const int64_t chunk = half_chunk_tokens(w, T);
    auto* scratch = reinterpret_cast<uint8_t*>(dequant_scratch(widen_bytes(w, T)));
    auto* inv_scale = reinterpret_cast<float*>(scratch + half_acts_bytes(w, chunk));
    const float one = 1.f, zero = 0.f;
    for (int64_t t0 = 0; t0 < T; t0 += chunk) {
      const int64_t tc = std::min(chunk, T - t0);
      check(quants::acts_to_f16(x + t0 * w.cols, tc, w.cols, scratch, inv_scale, stream_),
            "matmul (activations to half)");
      check(cublasGemmEx(cublas_, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(w.rows),
                         static_cast<int>(tc), static_cast<int>(w.cols), &one, w.data, CUDA_R_16F,
                         static_cast<int>(w.cols), scratch, CUDA_R_16F, static_cast<int>(w.cols),
                         &zero, y + t0 * w.rows, CUDA_R_32F, static_cast<int>(w.rows),
                         CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
            "matmul (cublasGemmEx, half)");
      check(quants::scale_rows(y + t0 * w.rows, w.rows, w.rows, tc, inv_scale, stream_),
            "matmul (undo activation scale)");
    }
  }

  // Calls fn(table, largest T) for the sequences in groups of one launch's table size.
  template <typename Fn>
  static void for_each_group(std::span<const SequenceSlice> seqs, Fn&& fn) {
    cuda::RecurrentSeqs group;
    int64_t max_T = 0;
    for (size_t i = 0; i < seqs.size(); ++i) {
      const SequenceSlice& sl = seqs[i];
      group.T[group.n] = static_cast<int32_t>(sl.T);
      group.row[group.n] = sl.row;
      group.conv_state[group.n] = sl.conv_state;
      group.state[group.n] = sl.recurrent_state;
      max_T = std::max(max_T, sl.T);
      if (++group.n == cuda::kRecurrentSeqsPerLaunch || i + 1 == seqs.size()) {
        fn(group, max_T);
        group.n = 0;
        max_T = 0;
      }
    }
  }

  static constexpr size_t kDequantBytes = size_t{64} << 20;

  // y[T, ldy] (first `rows` columns) = x[T, cols] * W^T for row-major float32 W[rows, cols].
  // In cuBLAS's column-major terms: Y^T = W^T^T * X^T, i.e. op(A) = A^T with A = W as [cols, rows].
  void sgemm(const float* w, int64_t rows, int64_t cols, const float* x, int64_t T, float* y,
             int64_t ldy = -1) {
    const float one = 1.f, zero = 0.f;
    check(cublasGemmEx(cublas_, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(rows),
                       static_cast<int>(T), static_cast<int>(cols), &one, w, CUDA_R_32F,
                       static_cast<int>(cols), x, CUDA_R_32F, static_cast<int>(cols), &zero, y,
                       CUDA_R_32F, static_cast<int>(ldy < 0 ? rows : ldy), CUBLAS_COMPUTE_32F,
                       CUBLAS_GEMM_DEFAULT),
          "matmul (cublasGemmEx)");
  }

  // Partial results of attention split over keys (long contexts, few rows); grows only.
  // Frees a scratch buffer that is being replaced: now when live, after the graph when
  // capturing (earlier nodes of the capture still use it).
  void replace_scratch(void* old, const char* what) {
    if (mode_ == UploadMode::capture) {
      retired_.push_back(old);
      return;
    }
    check(cudaStreamSynchronize(stream_), what);
    cudaFree(old);
  }

  float* attention_scratch(size_t floats) {
    if (floats > attention_scratch_floats_) {
      replace_scratch(attention_scratch_, "attention scratch growth");
      attention_scratch_ = nullptr;
      attention_scratch_ =
          static_cast<float*>(device_alloc(floats * sizeof(float), "the attention scratch"));
      attention_scratch_floats_ = floats;
    }
    return attention_scratch_;
  }

  float* dequant_scratch(size_t bytes) {
    if (bytes > dequant_bytes_) {
      replace_scratch(dequant_, "matmul scratch growth");
      dequant_ = nullptr;
      dequant_ = static_cast<float*>(device_alloc(bytes, "the prefill weight scratch"));
      dequant_bytes_ = bytes;
    }
    return dequant_;
  }

  cudaStream_t stream_ = nullptr;
  cublasHandle_t cublas_ = nullptr;
  // NVIDIA advises 32 MiB on Hopper. Measured on an H200: 4 MiB gave the 9B Q4_K_M the same
  // pp512 and the 27B 0.9% less, and 28 MiB less GPU memory, which the 27B needed to hold no
  // more than llama.cpp (bench/results/2026-12-02-h200-s18). HOSTLM_CUDA_CUBLAS_WORKSPACE_MIB
  // sets it.
  static constexpr size_t kCublasWorkspaceBytes = size_t{4} << 20;
  void* cublas_workspace_ = nullptr;
  std::unique_ptr<WeightArena> weights_;  // every device weight, quantized or not
  std::vector<void*> host_weights_;       // mapped pinned memory (load_embedding_table)
  HostArrayCache host_arrays_;
  IntStaging tokens_, positions_;
  PagedBatchUpload paged_;  // page tables of the current batch, on the device
  float* attention_scratch_ = nullptr;
  size_t attention_scratch_floats_ = 0;
  float* dequant_ = nullptr;
  size_t dequant_bytes_ = 0;
  // Backend::best_logits_rows: device state and results, and their pinned host copy. On
  // unless HOSTLM_CUDA_BEST_LOGITS=0 (for comparisons).
  bool best_logits_on_ = true;
  bool fuse_conv_ = true;     // HOSTLM_CUDA_FUSE_CONV=0: the decode conv1d launched apart
  bool fuse_conv16_ = false;  // HOSTLM_CUDA_FUSE_CONV16=1: and for 16-bit matrices (slower)
  // The pages (KvPages::k) the last op stored new keys into, if it was a KV store (null
  // otherwise): the attention after it may read older keys before its programmatic wait.
  const void* kv_stored_ = nullptr;
  bool attention_early_ = true;  // HOSTLM_CUDA_ATTENTION_EARLY=0: the attention waits first
  bool fuse_swiglu_ = true;  // HOSTLM_CUDA_FUSE_SWIGLU=0: the 16-bit decode SwiGLU launched apart
  bool delta_norm_ = true;   // HOSTLM_CUDA_DELTA_NORM=0: the decode gated norm launched apart
  static constexpr size_t kDeltaNormMaxSeqs = 8;
  // HOSTLM_CUDA_DELTA_CHUNKED=N: sequences of N or more tokens in a delta-rule launch take the
  // chunked form (delta_chunked.h); 0, the default, never. Off until measured on a GPU.
  int64_t chunked_min_tokens_ = 0;
  bool chunked_staged_ = true;   // HOSTLM_CUDA_DELTA_CHUNKED_STAGED=0: through L1 (kernels.h)
  int64_t chunked_fit_dk_ = -1;  // the dk chunked_fit_ was found for
  bool chunked_fit_ = false;
  static constexpr size_t kChunkedScratchBytes = size_t{16} << 20;
  bool qk_store_ = true;     // HOSTLM_CUDA_QK_STORE=0: kv_store launched after qk_norm_rope
  bool direct_host_ = true;  // HOSTLM_CUDA_LOGITS_TO_HOST=0: matmul_to_host declines
  struct Pinned {
    size_t bytes;
    char* device;  // the same memory as the kernels see it
  };
  std::map<char*, Pinned> pinned_;  // pin_host's ranges by their host address
  // The last op's writes (last_writes.h). Never known while norms may be folded into
  // products, whose launches then also write the norm's buffers.
  cuda::LastWrites last_writes_;
  // Every op but the products: the quantized input and the last op's writes are forgotten.
  void forget_acts() {
    kv_stored_ = nullptr;
    quant_->forget_acts();
    last_writes_.forget();
  }

  void* best_scratch_ = nullptr;
  size_t best_scratch_bytes_ = 0;
  void* best_host_ = nullptr;
  size_t best_host_bytes_ = 0;
  // Prefill products of 16-bit weights with float32 activations (HOSTLM_CUDA_EXACT_16BIT=1),
  // as the CPU does, instead of activations rounded to the weights' type.
  bool exact_16bit_ = false;
  Gemv16Ring gemv16_ring_;  // the one-token 16-bit product's ring (kernels.h)
  // One ring launch for 16-bit products that read the same token (HOSTLM_CUDA_GEMV16_GROUP=0
  // launches one each).
  bool group16_ = true;
  // BF16 parts of the activations in BF16 prefill products (HOSTLM_CUDA_BF16_PARTS=1..3; by
  // default 1, or 3 when exact). Three carry float32's whole mantissa; two are faster but
  // already miss the transformers tolerance of the tiny BF16 model (1.9e-4 of the logit
  // spread, not 1e-4).
  int bf16_parts_ = 1;
  std::unique_ptr<quants::QuantMatmul> quant_;  // quantized weights and their scratch
  std::unique_ptr<OpProfile> profile_;
  // Decode steps as CUDA graphs (begin_step): on unless HOSTLM_CUDA_GRAPHS=0 or profiling.
  bool graphs_ = true, warmed_up_ = false;
  UploadMode mode_ = UploadMode::live;  // recording or replaying a step, or neither
  // Recorded decode steps, kept by their ops so that a step like any of them replays it: a
  // decode from a short context changes its attention grid as it grows (at powers of two of
  // pages), and a new sequence starts small again, so one recording would be replaced at
  // each of those changes and recorded afresh at the next (2-4 ms each time).
  struct RecordedStep {
    cudaGraphExec_t exec = nullptr;
    StepFingerprint ops;
    uint64_t generation = 0;  // staging_generation() when recorded
    bool replayable = false;
    uint64_t used = 0;                            // step_tick_ at its last launch (0: never)
    std::vector<std::pair<int, uint64_t>> trace;  // HOSTLM_CUDA_GRAPH_STATS=2 only
  };
  static constexpr int kRecordedSteps = 8;
  int steps_kept_ = kRecordedSteps;  // HOSTLM_CUDA_GRAPHS_KEPT=N (1-8), for comparisons
  bool replayable(const RecordedStep& r) const {
    return r.exec != nullptr && r.replayable && r.generation == step_generation_;
  }
  std::array<RecordedStep, kRecordedSteps> recorded_steps_;
  uint64_t step_tick_ = 0;
  cudaGraphExec_t graph_exec_ = nullptr;         // the one launched last (owned by recorded_steps_)
  StepFingerprint step_;                         // this step's ops
  std::vector<std::pair<int, uint64_t>> trace_;  // its running fingerprint per op (stats 2)
  uint64_t step_generation_ = 0;                 // staging_generation() at this step's start
  bool record_next_ = false;    // the last replay did not match: record the next step
  bool replay_failed_ = false;  // this replayed step cannot match (a buffer would grow)
  bool ahead_walk_ = false;     // this replay's pass is made ahead (begin_step_ahead)
  uint64_t live_ops_ = 0;       // ops run one by one, outside any step
  struct {
    bool on = true;                // HOSTLM_CUDA_AHEAD=0: no pass is made ahead
    RecordedStep* held = nullptr;  // the recording the last pass made ahead matched
    uint64_t live_ops = 0;         // live_ops_ when it was made
    size_t token_offset = 0;       // where its token ids are in tokens_
    size_t tokens = 0;             // how many (SIZE_MAX: embedded twice; not launched)
    int64_t vocab = 0;             // the embedding's rows
  } ahead_;
  struct {
    uint64_t recorded = 0, replayed = 0, missed = 0;
    bool on = false;    // HOSTLM_CUDA_GRAPH_STATS=1: printed at exit, replays timed
    bool each = false;  // HOSTLM_CUDA_GRAPH_STATS=2: also each recording and miss, as they come
    bool gaps = false;  // HOSTLM_CUDA_GRAPH_STATS=3: the host's time before each op kind
    std::chrono::steady_clock::time_point last_op;
    std::array<double, 32> gap_ms{};
    std::array<uint64_t, 32> gap_calls{};
    cudaEvent_t begin = nullptr, end = nullptr;
    bool pending = false;  // a timed replay whose time is not yet added
    double gpu_ms = 0, apart_ms = 0, host_ms = 0;
    uint64_t timed = 0, apart = 0, host = 0;
    // On the GPU: a timed replay's end to its download's end, and a download's end to the
    // next timed replay's start (the step's time outside its graph). Two events take turns,
    // so the last download's stays readable while the next one is recorded.
    cudaEvent_t fetched[2] = {nullptr, nullptr};
    int fetch_turn = 0;
    bool fetch_recorded = false;    // fetched[fetch_turn] follows the pending replay
    bool last_fetch_valid = false;  // fetched[1 - fetch_turn] ended the step before it
    double fetch_ms = 0, wait_ms = 0;
    uint64_t fetches = 0, waits = 0;
    // On the host: begin_step to end_step of a replayed step (the pass over the model's ops).
    std::chrono::steady_clock::time_point walk_start;
    double walk_ms = 0, launch_ms = 0;  // launch_ms: in cudaGraphLaunch, per timed replay
    uint64_t walks = 0;
    // Passes made ahead (begin_step_ahead): their time, how many, and how many launched.
    std::chrono::steady_clock::time_point ahead_start;
    double ahead_ms = 0;
    uint64_t ahead_walks = 0, ahead_launched = 0;
    std::chrono::steady_clock::time_point last_start, last_download;
    bool downloaded = false;  // a download since the last replay
  } graph_stats_;
  std::vector<void*> retired_;  // scratch replaced during a capture, freed after the graph
};

void write_error(char* error, size_t size, const std::string& message) {
  if (error == nullptr || size == 0) return;
  const size_t n = std::min(size - 1, message.size());
  std::memcpy(error, message.data(), n);
  error[n] = '\0';
}

std::string cuda_version(int v) {
  return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10);
}

// Why no device can be used, or "" when at least one can (count in `count`).
std::string probe(int& count) {
  count = 0;
  int driver = 0;
  if (cudaDriverGetVersion(&driver) != cudaSuccess || driver == 0)
    return "no NVIDIA driver found (libcuda.so.1 is not installed or not loadable)";
  if (driver / 1000 < CUDART_VERSION / 1000)
    return "the NVIDIA driver supports CUDA " + cuda_version(driver) +
           ", but this build needs CUDA " + cuda_version(CUDART_VERSION) +
           " or newer: update the driver";
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status == cudaErrorNoDevice || (status == cudaSuccess && count == 0)) {
    count = 0;
    return "no CUDA device found (driver for CUDA " + cuda_version(driver) + " is installed)";
  }
  if (status != cudaSuccess) {
    count = 0;
    return std::string("cannot query CUDA devices: ") + cudaGetErrorString(status);
  }
  return "";
}

}  // namespace
}  // namespace hostlm::cuda

extern "C" {

int hostlm_cuda_abi_version(void) { return HOSTLM_CUDA_ABI_VERSION; }

int hostlm_cuda_device_count(char* error, size_t error_size) {
  int count = 0;
  const std::string why = hostlm::cuda::probe(count);
  if (count > 0) return count;
  hostlm::cuda::write_error(error, error_size, why);
  return why.rfind("no CUDA device", 0) == 0 ? 0 : -1;
}

hostlm::Backend* hostlm_cuda_create_backend(char* error, size_t error_size) {
  int count = 0;
  const std::string why = hostlm::cuda::probe(count);
  if (count == 0) {
    hostlm::cuda::write_error(error, error_size, why);
    return nullptr;
  }
  try {
    return new hostlm::cuda::CudaBackend();
  } catch (const std::exception& e) {
    hostlm::cuda::write_error(error, error_size, e.what());
    return nullptr;
  }
}
}
