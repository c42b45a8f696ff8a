// A failed CUDA runtime or cuBLAS call as hostlm::Error naming the call. Its own header because
// every file of the CUDA backend class (cuda_backend.h) checks calls the same way.
#pragma once
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <string>

#include "hostlm/error.h"

namespace hostlm::cuda {

inline void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess)
    throw Error(std::string("CUDA error in ") + what + ": " + cudaGetErrorString(status));
}

inline void check(cublasStatus_t status, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS)
    throw Error(std::string("cuBLAS error in ") + what + ": " + cublasGetStatusString(status));
}

}  // namespace hostlm::cuda
