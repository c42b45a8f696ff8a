// The C entry points of libhostlm_cuda.so (declared in cuda_entry.h): whether a usable device
// and driver are there, and the backend's creation, with the reason as a message when not.
// Apart from the backend because this is the library's boundary, in plain C.
#include "cuda/cuda_entry.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>
#include <exception>
#include <string>

#include "cuda/cuda_backend.h"

namespace hostlm::cuda {
namespace {

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
