// Kernel launches with programmatic dependent launch (Hopper and later).
//
// A decode step is a chain of a few hundred small kernels; between two of them the GPU
// drains the first, then schedules the second. With the launch attribute set, the next
// kernel is scheduled while the previous one is still finishing: every kernel begins with
// pdl_begin(), which waits for the whole previous kernel (its writes visible) before
// anything is read, then lets the kernel after it be scheduled in turn. Waiting first keeps
// every kernel's view of memory what plain stream order gives; only scheduling overlaps.
// HOSTLM_CUDA_PDL=0 launches plainly; GPUs before sm_90 always do.
#pragma once
#include <cuda_runtime.h>

#include <utility>

namespace hostlm::cuda {

__device__ __forceinline__ void pdl_begin() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;" :::);
#endif
}

// Whether launches carry the attribute: a GPU of compute capability 9 or more, and not
// turned off by HOSTLM_CUDA_PDL=0. Decided once per process.
bool pdl_enabled();

template <typename... Params, typename... Args>
void launch_kernel(void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem,
                   cudaStream_t stream, Args&&... args) {
  cudaLaunchAttribute attribute{};
  attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t config{};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = smem;
  config.stream = stream;
  config.attrs = &attribute;
  config.numAttrs = pdl_enabled() ? 1 : 0;
  // An error is left for the caller's cudaGetLastError, as with <<<>>>.
  (void)cudaLaunchKernelEx(&config, kernel, std::forward<Args>(args)...);
}

}  // namespace hostlm::cuda
