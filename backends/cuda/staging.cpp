#include "cuda/staging.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>

#include "cuda/kernels.h"
#include "hostlm/error.h"

namespace hostlm::cuda {
namespace {

void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess)
    throw Error(std::string("CUDA error in ") + what + ": " + cudaGetErrorString(status));
}

size_t align16(size_t n) { return (n + 15) & ~size_t{15}; }

// Uploads with copy_from_host unless HOSTLM_CUDA_STAGING_COPY=memcpy asks for
// cudaMemcpyAsync (copy-engine nodes).
bool copy_kernel() {
  static const bool on = [] {
    const char* env = std::getenv("HOSTLM_CUDA_STAGING_COPY");
    return !(env != nullptr && std::strcmp(env, "memcpy") == 0);
  }();
  return on;
}

}  // namespace

Staging::~Staging() {
  restart();
  if (event_) cudaEventDestroy(event_);
  cudaFreeHost(host_);
  cudaFree(device_);
}

void Staging::grow(size_t bytes, cudaStream_t stream, bool capturing) {
  if (capturing) {
    retired_.emplace_back(host_, device_);  // earlier copies of this capture read them
  } else {
    check(cudaStreamSynchronize(stream), "staging growth");
    cudaFreeHost(host_);
    cudaFree(device_);
  }
  host_ = nullptr;
  device_ = nullptr;
  ++generation_;
  capacity_ = std::max<size_t>({bytes, 2 * capacity_, 4096});
  used_ = 0;
  check(cudaMallocHost(reinterpret_cast<void**>(&host_), capacity_), "pinned staging buffer");
  if (copy_kernel())
    check(cudaHostGetDevicePointer(reinterpret_cast<void**>(&host_device_), host_, 0),
          "mapping the staging buffer");
  check(cudaMalloc(reinterpret_cast<void**>(&device_), capacity_), "device staging buffer");
}

void* Staging::upload(const void* src, size_t n, cudaStream_t stream, UploadMode mode) {
  if (!event_) check(cudaEventCreateWithFlags(&event_, cudaEventDisableTiming), "staging event");
  const size_t need = align16(std::max<size_t>(n, 1));
  size_t offset = 0;
  const bool capturing = mode == UploadMode::capture;
  if (mode == UploadMode::replay) {
    if (used_ + need > capacity_) return nullptr;
    std::memcpy((ahead_ ? shadow_.data() : host_) + used_, src, n);
    last_offset_ = used_;
    used_ += need;
    if (ahead_) shadow_used_ = used_;
    return device_ + used_ - need;
  }
  if (capturing) {
    if (used_ + need > capacity_) grow(used_ + need, stream, true);
    offset = used_;
    used_ += need;
  } else {
    if (need > capacity_)
      grow(need, stream, false);
    else
      check(cudaEventSynchronize(event_), "staging reuse");
    used_ = 0;
  }
  std::memcpy(host_ + offset, src, n);
  last_offset_ = offset;
  if (copy_kernel())
    check(copy_from_host(device_ + offset, host_device_ + offset, need / 16, stream),
          "staging upload");
  else
    check(cudaMemcpyAsync(device_ + offset, host_ + offset, n, cudaMemcpyHostToDevice, stream),
          "staging upload");
  if (!capturing) check(cudaEventRecord(event_, stream), "staging event");
  return device_ + offset;
}

void Staging::restart() {
  used_ = 0;
  for (auto& [host, device] : retired_) {
    cudaFreeHost(host);
    cudaFree(device);
  }
  retired_.clear();
}

void Staging::begin_ahead() {
  ahead_ = true;
  used_ = 0;
  shadow_used_ = 0;
  shadow_.resize(capacity_);
}

void Staging::commit_ahead() {
  if (shadow_used_ > 0) std::memcpy(host_, shadow_.data(), shadow_used_);
}

void Staging::launched(cudaStream_t stream) {
  if (event_) check(cudaEventRecord(event_, stream), "staging event");
}

}  // namespace hostlm::cuda
