#include "cuda/backend_options.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace hostlm::cuda {

BackendOptions backend_options_from_env() {
  BackendOptions o;
  if (const char* mib = std::getenv("HOSTLM_CUDA_CUBLAS_WORKSPACE_MIB"))
    o.cublas_workspace_bytes = static_cast<size_t>(std::clamp(std::atoi(mib), 1, 1024)) << 20;
  const char* graphs = std::getenv("HOSTLM_CUDA_GRAPHS");
  const char* profiling = std::getenv("HOSTLM_CUDA_PROFILE");
  if (const char* exact = std::getenv("HOSTLM_CUDA_EXACT_16BIT")) o.exact_16bit = exact[0] == '1';
  if (const char* group = std::getenv("HOSTLM_CUDA_GEMV16_GROUP")) o.group16 = group[0] != '0';
  if (const char* best = std::getenv("HOSTLM_CUDA_BEST_LOGITS")) o.best_logits_on = best[0] != '0';
  if (const char* conv = std::getenv("HOSTLM_CUDA_FUSE_CONV")) o.fuse_conv = conv[0] != '0';
  if (const char* conv16 = std::getenv("HOSTLM_CUDA_FUSE_CONV16")) o.fuse_conv16 = conv16[0] == '1';
  if (const char* swiglu = std::getenv("HOSTLM_CUDA_FUSE_SWIGLU")) o.fuse_swiglu = swiglu[0] != '0';
  if (const char* early = std::getenv("HOSTLM_CUDA_ATTENTION_EARLY"))
    o.attention_early = early[0] != '0';
  if (const char* norm = std::getenv("HOSTLM_CUDA_DELTA_NORM")) o.delta_norm = norm[0] != '0';
  if (const char* step16 = std::getenv("HOSTLM_CUDA_DELTA_STEP16"))
    o.delta_step16 = step16[0] != '0';
  if (const char* chunked = std::getenv("HOSTLM_CUDA_DELTA_CHUNKED"))
    o.chunked_min_tokens = std::max(std::atoll(chunked), 0LL);
  if (const char* staged = std::getenv("HOSTLM_CUDA_DELTA_CHUNKED_STAGED"))
    o.chunked_staged = staged[0] != '0';
  if (const char* store = std::getenv("HOSTLM_CUDA_QK_STORE")) o.qk_store = store[0] != '0';
  if (const char* direct = std::getenv("HOSTLM_CUDA_LOGITS_TO_HOST"))
    o.direct_host = direct[0] != '0';
  o.bf16_parts = o.exact_16bit ? 3 : 1;
  if (const char* parts = std::getenv("HOSTLM_CUDA_BF16_PARTS"))
    o.bf16_parts = std::clamp(std::atoi(parts), 1, 3);
  o.graphs = !(graphs && std::strcmp(graphs, "0") == 0) &&
             !(profiling && *profiling && std::strcmp(profiling, "0") != 0);
  if (const char* ahead = std::getenv("HOSTLM_CUDA_AHEAD")) o.ahead = std::strcmp(ahead, "0") != 0;
  if (const char* kept = std::getenv("HOSTLM_CUDA_GRAPHS_KEPT"))
    o.steps_kept = std::clamp(std::atoi(kept), 1, kRecordedSteps);
  if (const char* stats = std::getenv("HOSTLM_CUDA_GRAPH_STATS"); stats && *stats >= '1')
    o.graph_stats = *stats;
  return o;
}

}  // namespace hostlm::cuda
