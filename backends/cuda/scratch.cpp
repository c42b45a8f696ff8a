// CudaBackend's device scratch that grows (attention partials, the prefill weight scratch,
// and through replace_scratch the best-logits scratch): a buffer replaced while a step is
// captured is freed only after the graph has run.
#include <cuda_runtime.h>

#include "cuda/check.h"
#include "cuda/cuda_backend.h"
#include "cuda/device_memory.h"

namespace hostlm::cuda {

// Frees a scratch buffer that is being replaced: now when live, after the graph when
// capturing (earlier nodes of the capture still use it).
void CudaBackend::replace_scratch(void* old, const char* what) {
  if (mode_ == UploadMode::capture) {
    retired_.push_back(old);
    return;
  }
  check(cudaStreamSynchronize(stream_), what);
  cudaFree(old);
}

// Partial results of attention split over keys (long contexts, few rows); grows only.
float* CudaBackend::attention_scratch(size_t floats) {
  if (floats > attention_scratch_floats_) {
    replace_scratch(attention_scratch_, "attention scratch growth");
    attention_scratch_ = nullptr;
    attention_scratch_ =
        static_cast<float*>(device_alloc(floats * sizeof(float), "the attention scratch"));
    attention_scratch_floats_ = floats;
  }
  return attention_scratch_;
}

float* CudaBackend::dequant_scratch(size_t bytes) {
  if (bytes > dequant_bytes_) {
    replace_scratch(dequant_, "matmul scratch growth");
    dequant_ = nullptr;
    dequant_ = static_cast<float*>(device_alloc(bytes, "the prefill weight scratch"));
    dequant_bytes_ = bytes;
  }
  return dequant_;
}

}  // namespace hostlm::cuda
