#include "cuda/device_memory.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "hostlm/error.h"

namespace hostlm::cuda {
namespace {

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

}  // namespace

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

}  // namespace hostlm::cuda
