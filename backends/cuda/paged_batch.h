// The device description of a batch for the paged-KV kernels (cuda/kernels.h: PagedBatch):
// sequence descriptors, a row-to-sequence map and the page tables, packed into one pinned
// buffer and copied to the device in one transfer. Consecutive calls with the same content
// (kv_store then attention of a layer, and every layer of a forward pass when all sequences
// share one pool) reuse the device copy without a new transfer.
#pragma once
#include <cuda_runtime_api.h>

#include <span>
#include <vector>

#include "cuda/kernels.h"
#include "cuda/staging.h"
#include "hostlm/ops.h"

namespace hostlm::cuda {

class PagedBatchUpload {
 public:
  PagedBatchUpload() = default;
  PagedBatchUpload(const PagedBatchUpload&) = delete;
  PagedBatchUpload& operator=(const PagedBatchUpload&) = delete;
  // Throws hostlm::Error when the sequences differ in page type or shape. `mode`: see
  // cuda/staging.h; a replay that cannot reuse the recorded region gives null descs. The page
  // tables take a power-of-two number of entries, so the layout, and with it a recorded
  // step, stays the same while contexts grow within that size.
  PagedBatch upload(std::span<const PagedSequence> seqs, cudaStream_t stream, UploadMode mode);
  uint64_t generation() const { return staging_.generation(); }
  // Whether the last upload() launched a copy (the batch differed from the one before), so
  // the next kernel must not read the batch's arrays before its programmatic wait.
  bool copied() const { return copied_; }
  void restart();  // the stream is idle
  // A pass made ahead (cuda/staging.h); after it no upload is known to be on the device.
  void begin_ahead() {
    staging_.begin_ahead();
    last_.clear();
  }
  void end_ahead() {
    staging_.end_ahead();
    last_.clear();
  }
  void commit_ahead() { staging_.commit_ahead(); }
  void launched(cudaStream_t stream);  // a graph that read the uploads was launched

 private:
  std::vector<char> blob_, last_;
  char* device_ = nullptr;  // where last_ is on the device
  bool copied_ = false;
  Staging staging_;
};

}  // namespace hostlm::cuda
