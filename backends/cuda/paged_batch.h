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
#include "hostlm/ops.h"

namespace hostlm::cuda {

class PagedBatchUpload {
 public:
  PagedBatchUpload() = default;
  PagedBatchUpload(const PagedBatchUpload&) = delete;
  PagedBatchUpload& operator=(const PagedBatchUpload&) = delete;
  ~PagedBatchUpload();

  // Throws hostlm::Error when the sequences differ in page type or shape.
  PagedBatch upload(std::span<const PagedSequence> seqs, cudaStream_t stream);

 private:
  std::vector<char> blob_, last_;
  char* pinned_ = nullptr;
  char* device_ = nullptr;
  size_t capacity_ = 0;
  cudaEvent_t event_ = nullptr;
};

}  // namespace hostlm::cuda
