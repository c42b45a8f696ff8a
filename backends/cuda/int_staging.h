// Token ids and positions on their way to the device: cuda/staging.h's pinned staging for
// int32 arrays, plus the reuse of the last upload when the next one is equal. Apart from
// staging.h because only these per-call id arrays repeat that way (paged_batch.h has its own).
#pragma once
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "cuda/staging.h"

namespace hostlm::cuda {

// Small per-call int32 arrays (token ids, positions) through cuda/staging.h. The q and k
// rotations of a layer, and every attention layer of a batch, share positions: an upload
// equal to the last one reuses its device copy.
class IntStaging {
 public:
  // Null only when replaying and the recorded region cannot be reused (cuda/staging.h).
  const int32_t* upload(const int32_t* src, size_t n, cudaStream_t stream, bool reuse_same,
                        UploadMode mode) {
    if (reuse_same && device_ && n == last_.size() && std::equal(src, src + n, last_.begin()))
      return device_;
    device_ = static_cast<const int32_t*>(staging_.upload(src, n * sizeof(int32_t), stream, mode));
    last_.assign(src, src + n);
    return device_;
  }
  uint64_t generation() const { return staging_.generation(); }
  void restart() {
    staging_.restart();
    device_ = nullptr;
  }
  void launched(cudaStream_t stream) { staging_.launched(stream); }
  // A pass made ahead (cuda/staging.h); after it no upload is known to be on the device.
  void begin_ahead() {
    staging_.begin_ahead();
    device_ = nullptr;
  }
  void end_ahead() {
    staging_.end_ahead();
    device_ = nullptr;
  }
  void commit_ahead() { staging_.commit_ahead(); }
  size_t last_offset() const { return staging_.last_offset(); }
  // Overwrites values of the pass made ahead, from the region at `offset` on.
  void patch_ahead(size_t offset, std::span<const int32_t> values) {
    std::memcpy(staging_.ahead_bytes(offset), values.data(), values.size_bytes());
  }

 private:
  Staging staging_;
  const int32_t* device_ = nullptr;  // where last_ is on the device
  std::vector<int32_t> last_;
};

}  // namespace hostlm::cuda
