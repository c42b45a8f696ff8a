// The C entry points of libhostlm_cuda.so. libhostlm opens that library with dlopen (see
// host/src/model/backend_factory.cpp), so only plain C signatures and a version number cross
// the boundary; the Backend it returns is used through hostlm/ops.h's virtual interface.
#pragma once
#include <cstddef>

namespace hostlm {
class Backend;
}

// Bump whenever these signatures or the Backend interface in hostlm/ops.h change, so that a
// stale libhostlm_cuda.so is refused instead of called through a mismatched vtable.
#define HOSTLM_CUDA_ABI_VERSION 5

extern "C" {
int hostlm_cuda_abi_version(void);
// Number of CUDA devices, or -1 with a message in `error` (no driver, driver too old, ...).
int hostlm_cuda_device_count(char* error, size_t error_size);
// A new backend on device 0 (the caller owns it), or null with a message in `error`.
hostlm::Backend* hostlm_cuda_create_backend(char* error, size_t error_size);
}
