// Device memory for a model's weights, held for the backend's life. cudaMalloc rounds large
// allocations up to the driver's 2 MiB granule, which over the 497 weights of the 27B Q4_K_M
// cost 282 MiB (measured on an H200; ~400 MiB for the Q8_0 by the same arithmetic). The arena
// instead reserves one virtual address range and backs it with physical memory granule by
// granule as weights arrive, packed at 256-byte alignment, so the whole model rounds up once.
// Where the driver lacks virtual memory management it falls back to one cudaMalloc a weight.
#pragma once
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace hostlm::cuda {

class WeightArena {
 public:
  // Device allocation that throws hostlm::Error naming `what`, the size and the free memory;
  // used for the fallback, one allocation a weight.
  using AllocFn = void* (*)(size_t bytes, const std::string& what);

  explicit WeightArena(AllocFn fallback);
  ~WeightArena();
  WeightArena(const WeightArena&) = delete;
  WeightArena& operator=(const WeightArena&) = delete;

  // `bytes` of device memory aligned to 256 bytes, valid until the arena is destroyed. Throws
  // hostlm::Error naming `what` when the GPU is out of memory.
  void* allocate(size_t bytes, const std::string& what);

  // Whether weights share one range (false: the cudaMalloc fallback).
  bool packed() const { return base_ != 0; }
  // Bytes handed out, with alignment, and bytes of physical memory behind them.
  size_t used_bytes() const { return used_; }
  size_t backed_bytes() const { return backed_; }

 private:
  bool open_range();
  void grow_to(size_t end, const std::string& what);

  AllocFn fallback_;
  std::vector<void*> fallback_blocks_;
  struct Driver;
  Driver* driver_ = nullptr;
  unsigned long long base_ = 0;  // CUdeviceptr of the reserved range; 0 when not packed
  size_t reserved_ = 0, used_ = 0, backed_ = 0, granule_ = 0;
  int device_ = 0;
  std::vector<std::pair<size_t, size_t>> mapped_;  // offset and size of each backed piece
};

}  // namespace hostlm::cuda
