// The CUDA backend's switches from the environment (HOSTLM_CUDA_*), read once when a backend
// is created. Most exist to compare a fused or faster path with the plain one on a GPU; each
// field says its variable, its default and why. Apart from the backend so that every setting
// and its parsing is in one place. (HOSTLM_CUDA_GEMV16_RING is read by gemv16_ring_from_env,
// kernels.h; other variables by the files they concern.)
#pragma once
#include <cstddef>
#include <cstdint>

namespace hostlm::cuda {

// Recorded decode steps kept at most (CudaBackend::begin_step).
constexpr int kRecordedSteps = 8;

struct BackendOptions {
  // NVIDIA advises 32 MiB on Hopper. Measured on an H200: 4 MiB gave the 9B Q4_K_M the same
  // pp512 and the 27B 0.9% less, and 28 MiB less GPU memory, which the 27B needed to hold no
  // more than llama.cpp (bench/results/2026-12-02-h200-s18). HOSTLM_CUDA_CUBLAS_WORKSPACE_MIB
  // sets it.
  size_t cublas_workspace_bytes = size_t{4} << 20;
  // Backend::best_logits_rows: device state and results, and their pinned host copy. On
  // unless HOSTLM_CUDA_BEST_LOGITS=0 (for comparisons).
  bool best_logits_on = true;
  bool fuse_conv = true;        // HOSTLM_CUDA_FUSE_CONV=0: the decode conv1d launched apart
  bool fuse_conv16 = false;     // HOSTLM_CUDA_FUSE_CONV16=1: and for 16-bit matrices (slower)
  bool attention_early = true;  // HOSTLM_CUDA_ATTENTION_EARLY=0: the attention waits first
  bool fuse_swiglu = true;  // HOSTLM_CUDA_FUSE_SWIGLU=0: the 16-bit decode SwiGLU launched apart
  bool delta_norm = true;   // HOSTLM_CUDA_DELTA_NORM=0: the decode gated norm launched apart
  bool delta_step16 =
      true;  // HOSTLM_CUDA_DELTA_STEP16=0: 16-bit states decode in the general kernel
  // HOSTLM_CUDA_DELTA_CHUNKED=N: sequences of N or more tokens in a delta-rule launch take the
  // chunked form (delta_chunked.h); 0, the default, never. Off until measured on a GPU.
  int64_t chunked_min_tokens = 0;
  bool chunked_staged = true;  // HOSTLM_CUDA_DELTA_CHUNKED_STAGED=0: through L1 (kernels.h)
  bool qk_store = true;        // HOSTLM_CUDA_QK_STORE=0: kv_store launched after qk_norm_rope
  bool direct_host = true;     // HOSTLM_CUDA_LOGITS_TO_HOST=0: matmul_to_host declines
  // Prefill products of 16-bit weights with float32 activations (HOSTLM_CUDA_EXACT_16BIT=1),
  // as the CPU does, instead of activations rounded to the weights' type.
  bool exact_16bit = false;
  // One ring launch for 16-bit products that read the same token (HOSTLM_CUDA_GEMV16_GROUP=0
  // launches one each).
  bool group16 = true;
  // BF16 parts of the activations in BF16 prefill products (HOSTLM_CUDA_BF16_PARTS=1..3; by
  // default 1, or 3 when exact). Three carry float32's whole mantissa; two are faster but
  // already miss the transformers tolerance of the tiny BF16 model (1.9e-4 of the logit
  // spread, not 1e-4).
  int bf16_parts = 1;
  // Decode steps as CUDA graphs (begin_step): on unless HOSTLM_CUDA_GRAPHS=0 or profiling.
  bool graphs = true;
  bool ahead = true;                // HOSTLM_CUDA_AHEAD=0: no pass is made ahead
  int steps_kept = kRecordedSteps;  // HOSTLM_CUDA_GRAPHS_KEPT=N (1-8), for comparisons
  // HOSTLM_CUDA_GRAPH_STATS's first character when it is '1' or above, else '\0' (off): the
  // level of graph_stats.h's statistics.
  char graph_stats = '\0';
};

// The options as the environment sets them.
BackendOptions backend_options_from_env();

}  // namespace hostlm::cuda
