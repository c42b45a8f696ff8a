// Device copies of the small float32 arrays that ops take on the host (RMSNorm weights, conv
// weights, a_neg, dt_bias). They are immutable model weights, so each is uploaded on first use
// and found again by its host address (see the top of cuda_backend.h for why that holds).
#pragma once
#include <cuda_runtime_api.h>

#include <cstddef>
#include <unordered_map>

#include "cuda/check.h"
#include "cuda/device_memory.h"

namespace hostlm::cuda {

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

}  // namespace hostlm::cuda
