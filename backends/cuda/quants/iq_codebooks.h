// The codebooks of the IQ1/IQ2/IQ3 weight types (iq_codebooks.inc, written by
// tools/make_iq_grids.py from the gguf package), for the piece decoders of pieces_iq.h: one
// copy in device memory for the kernels and one for the host, so that the same decoder runs
// in the tests on machines without a GPU. Vector i of a table is one little-endian word whose
// byte k is value k (a signed byte).
//
// Why device globals and not __constant__: lanes look up unrelated vectors, and the constant
// cache serialises a warp's distinct addresses; global loads of these few KiB stay in L1.
#pragma once
#include <cstdint>

#include "cuda/quants/portable.h"

namespace hostlm::cuda::quants {

namespace host_codebooks {
#define HQ_CODEBOOK inline constexpr
#include "cuda/quants/iq_codebooks.inc"
#undef HQ_CODEBOOK
}  // namespace host_codebooks

#ifdef __CUDACC__
namespace device_codebooks {
// Internal linkage: every translation unit has its own copy (the kernels are not linked
// across units), and no host shadow symbol is defined twice.
#define HQ_CODEBOOK static __device__ const
#include "cuda/quants/iq_codebooks.inc"
#undef HQ_CODEBOOK
}  // namespace device_codebooks
#endif

// Entry i of codebook `name` (kIq2xxsWords, ...), from the copy of the side that runs.
#ifdef __CUDA_ARCH__
#define HQ_LOOKUP(name, i) (device_codebooks::name[(i)])
#else
#define HQ_LOOKUP(name, i) (host_codebooks::name[(i)])
#endif

}  // namespace hostlm::cuda::quants
