// Device memory the backend allocates itself: device_alloc, the cudaMalloc that every
// allocation of the backend goes through (so that a failure says what was asked for and what
// was free, and HOSTLM_CUDA_ALLOC_LOG=1 can list them all), and DeviceBuffer, the activation
// buffer Backend::alloc hands out.
#pragma once
#include <cuda_runtime_api.h>

#include <cstddef>
#include <string>

#include "cuda/check.h"
#include "hostlm/ops.h"

namespace hostlm::cuda {

// cudaMalloc that reports what was asked for and what was free when it fails.
void* device_alloc(size_t bytes, const std::string& what);

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

}  // namespace hostlm::cuda
