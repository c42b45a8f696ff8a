// CudaBackend's decode steps as CUDA graphs: recording a step, replaying a recording that
// matches, the pass made ahead of the next step, and the timing HOSTLM_CUDA_GRAPH_STATS
// asks for. The per-op side of it (adding each op to the step's fingerprint) is inline in
// cuda_backend.h, since every op calls it.
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <utility>

#include "cuda/check.h"
#include "cuda/cuda_backend.h"

namespace hostlm::cuda {

// Decode steps as CUDA graphs. A step is recorded (stream capture) with the launches it
// makes, and the next steps replay that graph as long as they would launch the same
// kernels with the same arguments (StepFingerprint): per step, only uploaded values change
// (token ids, positions, page tables, whose pinned copies the graph's copy nodes read), so
// a replay costs the host one pass over the model code and one launch. Attention reads
// each sequence's length from the uploaded descriptors and sizes its grid in powers of two
// of pages for that reason. A step that differs (another batch, a new page-table size, a
// grown buffer) is found out at end_step, which then runs nothing and returns false; the
// caller issues the step again and it is recorded anew (cudaGraphExecUpdate in place when
// the shapes allow). The first step runs live so that one-time uploads (norm weights,
// scratch sizes) are done before any capture.
void CudaBackend::begin_step() {
  ahead_.held = nullptr;
  forget_acts();  // a replay runs no op, so none of them keeps this up to date
  if (!options_.graphs || mode_ != UploadMode::live) return;
  check(cudaStreamSynchronize(stream_), "step start");  // staging may be reused from here
  collect_replay_time();
  for (void* p : retired_) cudaFree(p);
  retired_.clear();
  tokens_.restart();
  positions_.restart();
  paged_.restart();
  if (!warmed_up_) {
    warmed_up_ = true;
    return;
  }
  step_.reset();
  trace_.clear();
  replay_failed_ = false;
  step_generation_ = staging_generation();
  const bool any = std::any_of(recorded_steps_.begin(), recorded_steps_.end(),
                               [&](const RecordedStep& r) { return replayable(r); });
  if (any && !record_next_) {
    mode_ = UploadMode::replay;
    if (graph_stats_.on)
      graph_stats_.walk_start = graph_stats_.last_op = std::chrono::steady_clock::now();
    return;
  }
  record_next_ = false;
  check(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeRelaxed), "graph capture");
  mode_ = UploadMode::capture;
}

bool CudaBackend::end_step() {
  forget_acts();
  if (ahead_walk_) return end_step_ahead();
  if (mode_ == UploadMode::replay) {
    mode_ = UploadMode::live;
    RecordedStep* match = nullptr;
    for (RecordedStep& r : recorded_steps_)
      if (replayable(r) && r.ops == step_) match = &r;
    if (replay_failed_ || match == nullptr) {
      ++graph_stats_.missed;
      if (graph_stats_.each) report_miss();
      record_next_ = true;
      return false;
    }
    match->used = ++step_tick_;
    if (graph_stats_.gaps) {
      graph_stats_.gap_ms[0] += std::chrono::duration<double, std::milli>(
                                    std::chrono::steady_clock::now() - graph_stats_.last_op)
                                    .count();
      ++graph_stats_.gap_calls[0];
    }
    if (graph_stats_.on) {
      graph_stats_.walk_ms += std::chrono::duration<double, std::milli>(
                                  std::chrono::steady_clock::now() - graph_stats_.walk_start)
                                  .count();
      ++graph_stats_.walks;
    }
    graph_exec_ = match->exec;
    launch_replay();
    graph_launched();
    ++graph_stats_.replayed;
    return true;
  }
  if (mode_ != UploadMode::capture) return true;
  mode_ = UploadMode::live;
  cudaGraph_t graph = nullptr;
  check(cudaStreamEndCapture(stream_, &graph), "graph capture");
  // The least recently used slot takes the recording, updated in place when the shapes allow.
  RecordedStep& slot = *std::min_element(
      recorded_steps_.begin(), recorded_steps_.begin() + options_.steps_kept,
      [](const RecordedStep& a, const RecordedStep& b) { return a.used < b.used; });
  slot.replayable = false;
  cudaGraphExecUpdateResultInfo info{};
  if (slot.exec == nullptr || cudaGraphExecUpdate(slot.exec, graph, &info) != cudaSuccess) {
    (void)cudaGetLastError();  // a changed shape: instantiate afresh
    if (slot.exec) cudaGraphExecDestroy(slot.exec);
    slot.exec = nullptr;
    const cudaError_t status = cudaGraphInstantiate(&slot.exec, graph, 0);
    if (status != cudaSuccess) {
      slot.exec = nullptr;
      cudaGraphDestroy(graph);
      check(status, "graph instantiation");
    }
  }
  cudaGraphDestroy(graph);
  graph_exec_ = slot.exec;
  check(cudaGraphLaunch(graph_exec_, stream_), "graph launch");
  graph_launched();
  ++graph_stats_.recorded;
  // Buffers replaced during the capture are freed once it has run: a replay would read
  // them, so such a recording is used once.
  slot.ops = step_;
  slot.generation = staging_generation();
  slot.replayable = retired_.empty() && slot.generation == step_generation_;
  slot.used = ++step_tick_;
  if (graph_stats_.each) {
    slot.trace = trace_;
    std::fprintf(stderr, "hostlm cuda graphs: step %llu recorded in slot %d (%llu ops%s%s)\n",
                 static_cast<unsigned long long>(step_tick_),
                 static_cast<int>(&slot - recorded_steps_.data()),
                 static_cast<unsigned long long>(step_.ops()),
                 retired_.empty() ? "" : ", buffers replaced: used once",
                 slot.generation == step_generation_ ? "" : ", staging grew: used once");
  }
  return true;
}

void CudaBackend::abort_step() {
  forget_acts();
  if (ahead_walk_) {
    end_step_ahead();
    ahead_.held = nullptr;
    return;
  }
  if (mode_ == UploadMode::replay) mode_ = UploadMode::live;
  if (mode_ != UploadMode::capture) return;
  mode_ = UploadMode::live;
  for (RecordedStep& r : recorded_steps_) r.replayable = false;
  cudaGraph_t graph = nullptr;
  if (cudaStreamEndCapture(stream_, &graph) == cudaSuccess && graph) cudaGraphDestroy(graph);
  (void)cudaGetLastError();
}

// The next decode step's pass, made while this one runs (ops.h). Only when a recording could
// match it: the pass is a replay's whose uploads go to host copies (Staging::begin_ahead),
// since the running graph may still read the pinned ones.
bool CudaBackend::offers_steps_ahead() const { return options_.graphs && options_.ahead; }

bool CudaBackend::begin_step_ahead() {
  ahead_.held = nullptr;
  if (!options_.graphs || !options_.ahead || mode_ != UploadMode::live || !warmed_up_ ||
      record_next_)
    return false;
  step_generation_ = staging_generation();
  if (std::none_of(recorded_steps_.begin(), recorded_steps_.end(),
                   [&](const RecordedStep& r) { return replayable(r); }))
    return false;
  forget_acts();
  step_.reset();
  trace_.clear();
  replay_failed_ = false;
  tokens_.begin_ahead();
  positions_.begin_ahead();
  paged_.begin_ahead();
  ahead_.tokens = 0;
  ahead_walk_ = true;
  mode_ = UploadMode::replay;
  if (graph_stats_.on) graph_stats_.ahead_start = std::chrono::steady_clock::now();
  return true;
}

bool CudaBackend::end_step_ahead() {
  ahead_walk_ = false;
  mode_ = UploadMode::live;
  tokens_.end_ahead();
  positions_.end_ahead();
  paged_.end_ahead();
  RecordedStep* match = nullptr;
  for (RecordedStep& r : recorded_steps_)
    if (replayable(r) && r.ops == step_) match = &r;
  auto& g = graph_stats_;
  if (g.on) {
    g.ahead_ms +=
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - g.ahead_start)
            .count();
    ++g.ahead_walks;
  }
  if (replay_failed_ || match == nullptr || ahead_.tokens == 0 || ahead_.tokens == SIZE_MAX)
    return false;
  ahead_.held = match;
  ahead_.live_ops = live_ops_;
  return true;
}

bool CudaBackend::launch_ahead(std::span<const int32_t> tokens) {
  RecordedStep* held = std::exchange(ahead_.held, nullptr);
  // Anything run live since may have replaced a buffer the pass saw.
  if (held == nullptr || live_ops_ != ahead_.live_ops || mode_ != UploadMode::live ||
      tokens.size() != ahead_.tokens || !replayable(*held))
    return false;
  for (const int32_t t : tokens)
    if (t < 0 || t >= ahead_.vocab) return false;       // the step's own pass reports it
  check(cudaStreamSynchronize(stream_), "step start");  // the pinned copies may be rewritten
  collect_replay_time();
  for (void* p : retired_) cudaFree(p);
  retired_.clear();
  tokens_.patch_ahead(ahead_.token_offset, tokens);
  tokens_.commit_ahead();
  positions_.commit_ahead();
  paged_.commit_ahead();
  held->used = ++step_tick_;
  graph_exec_ = held->exec;
  launch_replay();
  graph_launched();
  ++graph_stats_.replayed;
  ++graph_stats_.ahead_launched;
  return true;
}

void CudaBackend::report_miss() const {
  const RecordedStep* closest = nullptr;
  size_t common = 0;
  for (const RecordedStep& r : recorded_steps_) {
    if (!replayable(r)) continue;
    size_t i = 0;
    while (i < r.trace.size() && i < trace_.size() && r.trace[i] == trace_[i]) ++i;
    if (closest == nullptr || i > common) closest = &r, common = i;
  }
  std::fprintf(stderr, "hostlm cuda graphs: step %llu (%zu ops) missed%s",
               static_cast<unsigned long long>(step_tick_ + 1), trace_.size(),
               replay_failed_ ? ": a buffer would have to grow" : "");
  if (closest != nullptr && !replay_failed_)
    std::fprintf(stderr, ": closest recording (slot %d, %zu ops) differs from op %zu (kind %d)",
                 static_cast<int>(closest - recorded_steps_.data()), closest->trace.size(), common,
                 common < trace_.size() ? trace_[common].first : -1);
  std::fprintf(stderr, "\n");
}

// A replay, timed on the GPU with HOSTLM_CUDA_GRAPH_STATS=1: the GPU time of a step beside
// the interval between steps shows how long the GPU waits for the host between them.
void CudaBackend::launch_replay() {
  auto& g = graph_stats_;
  if (g.on && !g.pending) {
    const auto now = std::chrono::steady_clock::now();
    if (g.replayed > 0) {
      g.apart_ms += std::chrono::duration<double, std::milli>(now - g.last_start).count();
      ++g.apart;
    }
    g.last_start = now;
    if (g.downloaded) {
      g.host_ms += std::chrono::duration<double, std::milli>(now - g.last_download).count();
      ++g.host;
      g.downloaded = false;
    }
    check(cudaEventRecord(g.begin, stream_), "graph timing");
    const auto before_launch = std::chrono::steady_clock::now();
    check(cudaGraphLaunch(graph_exec_, stream_), "graph launch");
    g.launch_ms +=
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - before_launch)
            .count();
    check(cudaEventRecord(g.end, stream_), "graph timing");
    g.pending = true;
    return;
  }
  check(cudaGraphLaunch(graph_exec_, stream_), "graph launch");
}

// When the host got its results, for the time it then takes to replay the next step.
void CudaBackend::downloaded() {
  if (!graph_stats_.on) return;
  graph_stats_.last_download = std::chrono::steady_clock::now();
  graph_stats_.downloaded = true;
}

// A download's copies are queued: the first after a timed replay marks when its results
// are back on the GPU's side. Any other download breaks the chain of timed steps.
void CudaBackend::mark_fetched() {
  auto& g = graph_stats_;
  if (!g.on) return;
  if (!g.pending) {
    g.last_fetch_valid = false;
    return;
  }
  if (g.fetch_recorded) return;
  g.fetch_recorded = cudaEventRecord(g.fetched[g.fetch_turn], stream_) == cudaSuccess;
}

// Adds the last timed replay's GPU time, once the stream has finished it.
void CudaBackend::collect_replay_time() {
  auto& g = graph_stats_;
  if (!g.pending || cudaEventSynchronize(g.end) != cudaSuccess) return;
  float ms = 0;
  if (cudaEventElapsedTime(&ms, g.begin, g.end) == cudaSuccess) {
    g.gpu_ms += ms;
    ++g.timed;
  }
  if (g.last_fetch_valid &&
      cudaEventElapsedTime(&ms, g.fetched[1 - g.fetch_turn], g.begin) == cudaSuccess) {
    g.wait_ms += ms;
    ++g.waits;
  }
  g.last_fetch_valid = false;
  if (g.fetch_recorded && cudaEventSynchronize(g.fetched[g.fetch_turn]) == cudaSuccess &&
      cudaEventElapsedTime(&ms, g.end, g.fetched[g.fetch_turn]) == cudaSuccess) {
    g.fetch_ms += ms;
    ++g.fetches;
    g.last_fetch_valid = true;
    g.fetch_turn = 1 - g.fetch_turn;
  }
  g.fetch_recorded = false;
  g.pending = false;
}

void CudaBackend::graph_launched() {
  tokens_.launched(stream_);
  positions_.launched(stream_);
  paged_.launched(stream_);
}

}  // namespace hostlm::cuda
