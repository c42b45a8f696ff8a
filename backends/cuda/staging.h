// Pinned host memory and a device buffer for the small uploads of every forward pass (token
// ids, positions, page tables): the host writes the pinned copy, an async copy moves it.
//
// Live, one region is rewritten per upload once the previous copy has read it (an event).
// While a step is captured into a CUDA graph (CudaBackend::begin_step) the copies run only
// when the graph does, so each upload of the step takes a region of its own, nothing is
// rewritten before the graph has run, and buffers outgrown meanwhile are kept until then.
// When a recorded step is replayed, its uploads take the same regions in the same order and
// only the pinned copies are written: the graph's copies read them when it runs.
// Each copy is a small kernel that reads the pinned memory (mapped for the device) before its
// programmatic wait, so it overlaps the kernel before like any other launch; a copy-engine
// node cannot. Measured on an H200 (bench/results/2026-12-02-h200-s19): a replayed decode step
// 5-7 us shorter on the 9B and 0.8B shapes. HOSTLM_CUDA_STAGING_COPY=memcpy uses copy nodes.
#pragma once
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace hostlm::cuda {

enum class UploadMode { live, capture, replay };

class Staging {
 public:
  Staging() = default;
  Staging(const Staging&) = delete;
  Staging& operator=(const Staging&) = delete;
  ~Staging();

  // Copies n bytes of src to the device in stream order; returns their device address.
  // Replaying, only writes the pinned copy; returns null when the region the recording used
  // cannot be the same one (the buffer would have to grow).
  void* upload(const void* src, size_t n, cudaStream_t stream, UploadMode mode);
  // Counts the buffer replacements: a recording is replayable only while this is unchanged.
  uint64_t generation() const { return generation_; }
  // The stream is idle: regions start over and outgrown buffers are freed.
  void restart();
  // A graph that read this staging was launched on `stream`: live uploads wait for it.
  void launched(cudaStream_t stream);

  // A replayed pass made while a graph that reads this staging may still run
  // (CudaBackend::begin_step_ahead): its uploads take the regions from the first on, as a
  // replay's do, but are written to a host copy; commit_ahead() later moves that copy into
  // the pinned memory, once the stream is idle. Nothing is freed meanwhile.
  void begin_ahead();
  void end_ahead() { ahead_ = false; }
  void commit_ahead();
  // The host copy of the bytes at `offset` of the last pass made ahead (to patch them).
  char* ahead_bytes(size_t offset) { return shadow_.data() + offset; }
  // Where the last upload's region starts.
  size_t last_offset() const { return last_offset_; }

 private:
  void grow(size_t bytes, cudaStream_t stream, bool capturing);

  char* host_ = nullptr;
  char* host_device_ = nullptr;  // host_ as the device reads it
  char* device_ = nullptr;
  size_t capacity_ = 0, used_ = 0;
  uint64_t generation_ = 0;
  size_t last_offset_ = 0;
  bool ahead_ = false;
  std::vector<char> shadow_;  // the uploads of a pass made ahead
  size_t shadow_used_ = 0;
  cudaEvent_t event_ = nullptr;
  std::vector<std::pair<char*, char*>> retired_;  // (host, device) kept for a running graph
};

}  // namespace hostlm::cuda
