// Counts and timings of the decode steps run as CUDA graphs (CudaBackend::begin_step), for
// HOSTLM_CUDA_GRAPH_STATS: recordings, replays and misses, each replay's GPU time and the gaps
// around it, and the host's pass over a replayed step. The backend fills the fields as steps
// run (step_graphs.cpp); the report is printed when it is destroyed. Apart from the backend
// because none of it changes what a step does.
#pragma once
#include <cuda_runtime_api.h>

#include <array>
#include <chrono>
#include <cstdint>

namespace hostlm::cuda {

struct GraphStats {
  // HOSTLM_CUDA_GRAPH_STATS's first character, '1' or above: turns the statistics on (`on`
  // only where the events could be created) at that level.
  void enable(char level);
  // The report on stderr.
  void report() const;
  void destroy_events();

  uint64_t recorded = 0, replayed = 0, missed = 0;
  bool on = false;    // HOSTLM_CUDA_GRAPH_STATS=1: printed at exit, replays timed
  bool each = false;  // HOSTLM_CUDA_GRAPH_STATS=2: also each recording and miss, as they come
  bool gaps = false;  // HOSTLM_CUDA_GRAPH_STATS=3: the host's time before each op kind
  std::chrono::steady_clock::time_point last_op;
  std::array<double, 32> gap_ms{};
  std::array<uint64_t, 32> gap_calls{};
  cudaEvent_t begin = nullptr, end = nullptr;
  bool pending = false;  // a timed replay whose time is not yet added
  double gpu_ms = 0, apart_ms = 0, host_ms = 0;
  uint64_t timed = 0, apart = 0, host = 0;
  // On the GPU: a timed replay's end to its download's end, and a download's end to the
  // next timed replay's start (the step's time outside its graph). Two events take turns,
  // so the last download's stays readable while the next one is recorded.
  cudaEvent_t fetched[2] = {nullptr, nullptr};
  int fetch_turn = 0;
  bool fetch_recorded = false;    // fetched[fetch_turn] follows the pending replay
  bool last_fetch_valid = false;  // fetched[1 - fetch_turn] ended the step before it
  double fetch_ms = 0, wait_ms = 0;
  uint64_t fetches = 0, waits = 0;
  // On the host: begin_step to end_step of a replayed step (the pass over the model's ops).
  std::chrono::steady_clock::time_point walk_start;
  double walk_ms = 0, launch_ms = 0;  // launch_ms: in cudaGraphLaunch, per timed replay
  uint64_t walks = 0;
  // Passes made ahead (begin_step_ahead): their time, how many, and how many launched.
  std::chrono::steady_clock::time_point ahead_start;
  double ahead_ms = 0;
  uint64_t ahead_walks = 0, ahead_launched = 0;
  std::chrono::steady_clock::time_point last_start, last_download;
  bool downloaded = false;  // a download since the last replay
};

}  // namespace hostlm::cuda
