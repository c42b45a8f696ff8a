// CudaBackend's copies between host and device memory: uploads, downloads (which end a timed
// replay's chain for HOSTLM_CUDA_GRAPH_STATS), the best logits selected on the device, and
// products written straight into pinned host memory. Apart from the ops: this is where data
// crosses between host and GPU, and where the host waits for the GPU.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>

#include "cuda/check.h"
#include "cuda/cuda_backend.h"
#include "cuda/device_memory.h"
#include "hostlm/error.h"

namespace hostlm::cuda {

void CudaBackend::upload(float* dst, const float* src, size_t n) {
  const auto timed = profile_->scope("upload");
  forget_acts();
  // From pageable memory the copy has read `src` by the time it returns.
  check(cudaMemcpyAsync(dst, src, n * sizeof(float), cudaMemcpyHostToDevice, stream_), "upload");
}

void CudaBackend::download(float* dst, const float* src, size_t n) {
  const auto timed = profile_->scope("download");
  quant_->flush_norm();
  check(cudaMemcpyAsync(dst, src, n * sizeof(float), cudaMemcpyDeviceToHost, stream_), "download");
  mark_fetched();
  check(cudaStreamSynchronize(stream_), "download");
  downloaded();
}

void CudaBackend::download_rows(std::span<float* const> dst, const float* src, size_t n) {
  const auto timed = profile_->scope("download");
  quant_->flush_norm();
  for (size_t i = 0; i < dst.size(); ++i)
    check(cudaMemcpyAsync(dst[i], src + i * n, n * sizeof(float), cudaMemcpyDeviceToHost, stream_),
          "download");
  mark_fetched();
  check(cudaStreamSynchronize(stream_), "download");
  downloaded();
}

// The selection runs on the device (best_logits.cu) and only k pairs a row come back, in
// one copy through a pinned buffer.
void CudaBackend::best_logits_rows(std::span<float* const> values, std::span<int32_t* const> ids,
                                   const float* src, size_t n, size_t k) {
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

void CudaBackend::pin_host(void* host, size_t bytes) {
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

void CudaBackend::unpin_host(void* host) {
  pinned_.erase(static_cast<char*>(host));
  if (cudaHostUnregister(host) != cudaSuccess) (void)cudaGetLastError();
}

// The single-token products write each warp's rows in one store (gemv_one_token.cu; for
// BF16 and F16, 32 rows at once in gemv16_staged.cu), so the writes cross the bus as the
// product runs and the logits need no download after it: on an H200 that download took
// 25 us a token (a 16-bit head's 1 MiB of logits about 40 us).
bool CudaBackend::matmul_to_host(const Weight& w, const float* x, float* host_y) {
  const bool whole_lines = quants::QuantMatmul::supports(w.type)
                               ? quant_->groups(1)
                               : gemv16_staged_applies(gemv16_ring_, w.type, w.cols);
  if (!options_.direct_host || !whole_lines || pinned_.empty()) return false;
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

void CudaBackend::wait_host_writes() {
  mark_fetched();
  check(cudaStreamSynchronize(stream_), "the product's host writes");
  downloaded();
}

}  // namespace hostlm::cuda
