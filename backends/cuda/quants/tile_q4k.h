// The Q4_K tile product (tile_q4k.cu): the few-dozen-token product of tile_mma.cu for the
// type most of a Q4_K_M model is, with a deeper memory pipeline. Used by tile_mma.cu only.
#pragma once
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "cuda/quants/expert_tiles.h"
#include "cuda/quants/pieces.h"
#include "cuda/quants/tile_common.cuh"

namespace hostlm::cuda::quants {

// Once per device, before any launch: whether this GPU can run it (enough shared memory per
// block; HOSTLM_CUDA_TILE_Q4K=0 turns it off, to measure against the generic kernel).
cudaError_t prepare_tile_q4k();
bool tile_q4k_ready();

TilePlan tile_q4k_plan(int64_t rows, int64_t cols, int64_t T);
// Split counters any plan for `rows` x `T` may need.
size_t tile_q4k_counters(int64_t rows, int64_t T);
// y = x * W^T for W of type Q4_K; x is [T, cols] half, scaled per token as for tile_mma.
void tile_q4k_launch(const TilePlan& plan, const QuantMatrix& w, const __half* x,
                     const TileOutput& out, cudaStream_t stream);
// The same for each expert of `tiles` (tile_matmul_experts, quant_kernels.h): plan gives the
// token blocks, out.T the most rows of an expert.
void tile_q4k_launch_experts(const TilePlan& plan, const QuantMatrix& w, const __half* x,
                             const TileOutput& out, const ExpertTiles& tiles, int tokens_per_block,
                             cudaStream_t stream);

}  // namespace hostlm::cuda::quants
