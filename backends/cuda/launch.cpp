#include <cuda_runtime.h>

#include <cstdlib>
#include <cstring>

#include "cuda/kernels.h"

namespace hostlm::cuda {

bool pdl_enabled() {
  static const bool enabled = [] {
    if (const char* v = std::getenv("HOSTLM_CUDA_PDL"); v && std::strcmp(v, "0") == 0) return false;
    int device = 0, major = 0;
    if (cudaGetDevice(&device) != cudaSuccess ||
        cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess)
      return false;
    return major >= 9;
  }();
  return enabled;
}

bool early_loads_enabled() {
  static const bool enabled = [] {
    const char* v = std::getenv("HOSTLM_CUDA_EARLY_LOADS");
    return !(v && std::strcmp(v, "0") == 0);
  }();
  return enabled;
}

}  // namespace hostlm::cuda
