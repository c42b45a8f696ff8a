#include "cuda/graph_stats.h"

#include <cuda_runtime.h>

#include <cstdio>

#include "cuda/op_kind.h"

namespace hostlm::cuda {

void GraphStats::enable(char level) {
  each = level == '2';
  gaps = level == '3';
  on = cudaEventCreate(&begin) == cudaSuccess && cudaEventCreate(&end) == cudaSuccess &&
       cudaEventCreate(&fetched[0]) == cudaSuccess && cudaEventCreate(&fetched[1]) == cudaSuccess;
}

void GraphStats::report() const {
  const GraphStats& g = *this;
  std::fprintf(stderr,
               "hostlm cuda graphs: %llu recorded, %llu replayed, %llu missed; a replay ran "
               "%.1f us on the GPU, replays started %.1f us apart, and %.1f us passed "
               "from a download's end to the next replay\n",
               static_cast<unsigned long long>(g.recorded),
               static_cast<unsigned long long>(g.replayed),
               static_cast<unsigned long long>(g.missed),
               g.timed ? 1e3 * g.gpu_ms / static_cast<double>(g.timed) : 0.0,
               g.apart ? 1e3 * g.apart_ms / static_cast<double>(g.apart) : 0.0,
               g.host ? 1e3 * g.host_ms / static_cast<double>(g.host) : 0.0);
  std::fprintf(stderr,
               "hostlm cuda graphs: on the GPU, a replay's results came back in %.1f us "
               "after it, and the GPU then waited %.1f us for the next replay; the host's "
               "pass over a replayed step took %.1f us and its launch %.1f us\n",
               g.fetches ? 1e3 * g.fetch_ms / static_cast<double>(g.fetches) : 0.0,
               g.waits ? 1e3 * g.wait_ms / static_cast<double>(g.waits) : 0.0,
               g.walks ? 1e3 * g.walk_ms / static_cast<double>(g.walks) : 0.0,
               g.timed ? 1e3 * g.launch_ms / static_cast<double>(g.timed) : 0.0);
  if (g.ahead_walks)
    std::fprintf(stderr,
                 "hostlm cuda graphs: %llu passes made ahead took %.1f us each; %llu of the "
                 "steps they matched were launched\n",
                 static_cast<unsigned long long>(g.ahead_walks),
                 1e3 * g.ahead_ms / static_cast<double>(g.ahead_walks),
                 static_cast<unsigned long long>(g.ahead_launched));
  for (size_t k = 0; k < g.gap_ms.size(); ++k)
    if (g.gap_calls[k])
      std::fprintf(stderr,
                   "hostlm cuda graphs: %s: the host spent %.2f us a replayed step before "
                   "these ops (%.1f a step)\n",
                   op_kind_name(static_cast<int>(k)),
                   1e3 * g.gap_ms[k] / static_cast<double>(g.walks),
                   static_cast<double>(g.gap_calls[k]) / static_cast<double>(g.walks));
}

void GraphStats::destroy_events() {
  for (cudaEvent_t e : {begin, end, fetched[0], fetched[1]})
    if (e) cudaEventDestroy(e);
}

}  // namespace hostlm::cuda
