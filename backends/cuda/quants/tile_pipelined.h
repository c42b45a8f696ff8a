// The pipelined tile products (tile_pipelined.cu): the few-dozen-token product of tile_mma.cu
// for the two types most of a Q4_K_M model is, Q4_K and Q6_K, with a deeper memory pipeline
// and the weights decoded straight into tensor-core fragments. Used by tile_mma.cu only.
#pragma once
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "cuda/quants/expert_tiles.h"
#include "cuda/quants/pieces.h"
#include "cuda/quants/tile_common.cuh"

namespace hostlm::cuda::quants {

// Once per device, before any launch: which types this GPU can run it for (enough shared
// memory per block; HOSTLM_CUDA_TILE_Q4K=0 or HOSTLM_CUDA_TILE_Q6K=0 leaves that type to the
// generic kernel, to measure against it).
cudaError_t prepare_tile_pipelined();
bool tile_pipelined_ready(DType type);

TilePlan tile_pipelined_plan(DType type, int64_t rows, int64_t cols, int64_t T);
// Split counters any plan for `rows` x `T` may need.
size_t tile_pipelined_counters(DType type, int64_t rows, int64_t T);
// y = x * W^T for W of a ready type; x is [T, cols] half, scaled per token as for tile_mma.
void tile_pipelined_launch(DType type, const TilePlan& plan, const QuantMatrix& w, const __half* x,
                           const TileOutput& out, cudaStream_t stream);
// The products of one input through n <= kMaxGroupMatrices matrices of `type`, each with its
// plan and output: one launch per block shape among the plans (MatrixGroup).
void tile_pipelined_launch_group(DType type, const TilePlan* plans, const QuantMatrix* ws,
                                 const TileOutput* outs, int n, const __half* x,
                                 cudaStream_t stream);
// The same for each expert of `tiles` (tile_matmul_experts, quant_kernels.h): plan gives the
// token blocks, out.T the most rows of an expert.
void tile_pipelined_launch_experts(DType type, const TilePlan& plan, const QuantMatrix& w,
                                   const __half* x, const TileOutput& out, const ExpertTiles& tiles,
                                   int tokens_per_block, cudaStream_t stream);

}  // namespace hostlm::cuda::quants
