// Counting the blocks of a launch that have finished a stage, so that the last one can do
// what needs all of them done. Release/acquire order on the counter only: the blocks' earlier
// writes (made before a __syncthreads) are visible to the block that sees the last count. A
// full fence here cost the folded norm (quants/fold_norm.cuh) more than the work it guarded.
#pragma once
#include <cuda_runtime.h>

namespace hostlm::cuda {

// Called by one thread of the block after a __syncthreads; returns the counter's value before
// this block's arrival.
__device__ __forceinline__ unsigned arrive(unsigned* counter) {
  unsigned before;
  asm volatile("atom.add.acq_rel.gpu.u32 %0, [%1], 1;" : "=r"(before) : "l"(counter) : "memory");
  return before;
}

}  // namespace hostlm::cuda
