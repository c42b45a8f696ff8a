// Where a new token's key or value row goes in the paged KV (kernels.h: PagedBatch), for the
// kernels that store rows: kv_store and qk_norm_rope_store.
#pragma once
#include <cuda_fp16.h>

#include "kernels.h"

namespace hostlm::cuda {

// The start of batch row r's row in the keys' (keys) or values' pages; null for a row of no
// sequence.
__device__ __forceinline__ char* kv_row(const PagedBatch& b, int64_t r, bool keys) {
  const int32_t s = b.row_to_seq[r];
  if (s < 0) return nullptr;
  const PagedSeqDesc desc = b.descs[s];
  const int64_t pos = desc.n_past + (r - desc.row);
  const size_t at =
      b.page_bytes * static_cast<size_t>(b.pages[desc.page_offset + pos / kPageTokens]) +
      b.row_bytes * static_cast<size_t>(pos % kPageTokens);
  return (keys ? b.k + desc.k_offset : b.v + desc.v_offset) + at;
}

// Value i of a row of F32 or F16 pages, rounded to the page type.
__device__ __forceinline__ void store_kv_value(DType type, char* row, int64_t i, float x) {
  if (type == DType::F16)
    reinterpret_cast<__half*>(row)[i] = __float2half_rn(x);
  else
    reinterpret_cast<float*>(row)[i] = x;
}

}  // namespace hostlm::cuda
