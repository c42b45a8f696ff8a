#include "cuda/paged_batch.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>

#include "hostlm/error.h"

namespace hostlm::cuda {
static_assert(kPageTokens == kKvPageTokens, "the kernels' page size is the cache's");
namespace {

size_t row_bytes(DType type, int64_t width) {
  switch (type) {
    case DType::F32:
      return static_cast<size_t>(width) * 4;
    case DType::F16:
      return static_cast<size_t>(width) * 2;
    case DType::Q8_0:
      return static_cast<size_t>(width / 32) * 34;
    default:
      throw Error("CUDA paged KV: pages of type " + std::string(dtype_name(type)));
  }
}

size_t align8(size_t n) { return (n + 7) & ~size_t{7}; }

}  // namespace

void PagedBatchUpload::restart() {
  staging_.restart();
  last_.clear();  // its device copy may be overwritten from now on
}

void PagedBatchUpload::launched(cudaStream_t stream) { staging_.launched(stream); }

PagedBatch PagedBatchUpload::upload(std::span<const PagedSequence> seqs, cudaStream_t stream,
                                    UploadMode mode) {
  PagedBatch b{};
  if (seqs.empty()) return b;
  const KvPages& first = seqs[0].kv;
  b.type = first.type;
  b.n_head_kv = first.n_head_kv;
  b.head_dim = first.head_dim;
  b.page_bytes = first.page_bytes;
  b.row_bytes = row_bytes(first.type, first.n_head_kv * first.head_dim);
  b.k = static_cast<char*>(first.k);
  b.v = static_cast<char*>(first.v);
  b.n_seq = static_cast<int64_t>(seqs.size());
  b.min_t = seqs[0].T;
  b.aligned16 = (b.page_bytes | b.row_bytes) % 16 == 0;
  int64_t n_pages = 0;
  for (const PagedSequence& s : seqs) {
    if (s.kv.type != b.type || s.kv.n_head_kv != b.n_head_kv || s.kv.head_dim != b.head_dim ||
        s.kv.page_bytes != b.page_bytes)
      throw Error("CUDA paged KV: the sequences of one call must share page type and shape");
    b.rows = std::max(b.rows, s.row + s.T);
    b.max_kv = std::max(b.max_kv, s.n_past + s.T);
    b.min_t = std::min(b.min_t, s.T);
    b.max_t = std::max(b.max_t, s.T);
    if ((reinterpret_cast<uintptr_t>(s.kv.k) | reinterpret_cast<uintptr_t>(s.kv.v)) % 16 != 0)
      b.aligned16 = false;
    n_pages += (s.n_past + s.T + kKvPageTokens - 1) / kKvPageTokens;
  }
  // The blob: descriptors, then row_to_seq, then the page tables (zero-padded).
  int64_t table_entries = 16;
  while (table_entries < n_pages) table_entries *= 2;
  const size_t descs_bytes = sizeof(PagedSeqDesc) * seqs.size();
  const size_t rows_bytes = align8(sizeof(int32_t) * static_cast<size_t>(b.rows));
  const size_t total =
      descs_bytes + rows_bytes + sizeof(int32_t) * static_cast<size_t>(table_entries);
  blob_.assign(total, 0);
  auto* descs = reinterpret_cast<PagedSeqDesc*>(blob_.data());
  auto* row_to_seq = reinterpret_cast<int32_t*>(blob_.data() + descs_bytes);
  auto* pages = reinterpret_cast<int32_t*>(blob_.data() + descs_bytes + rows_bytes);
  std::fill(row_to_seq, row_to_seq + b.rows, -1);
  int32_t offset = 0;
  for (size_t i = 0; i < seqs.size(); ++i) {
    const PagedSequence& s = seqs[i];
    const int64_t n = (s.n_past + s.T + kKvPageTokens - 1) / kKvPageTokens;
    const auto distance = [](const void* from, const void* to) {
      return static_cast<int64_t>(reinterpret_cast<uintptr_t>(to) -
                                  reinterpret_cast<uintptr_t>(from));
    };
    descs[i] = {distance(b.k, s.kv.k), distance(b.v, s.kv.v), s.row, s.T, s.n_past, offset, 0};
    std::copy(s.pages, s.pages + n, pages + offset);
    std::fill(row_to_seq + s.row, row_to_seq + s.row + s.T, static_cast<int32_t>(i));
    offset += static_cast<int32_t>(n);
  }
  copied_ = blob_ != last_;
  if (copied_) {
    device_ = static_cast<char*>(staging_.upload(blob_.data(), total, stream, mode));
    last_ = blob_;
    if (device_ == nullptr) {  // a replay that must be recorded again
      last_.clear();
      return b;
    }
  }
  b.descs = reinterpret_cast<const PagedSeqDesc*>(device_);
  b.row_to_seq = reinterpret_cast<const int32_t*>(device_ + descs_bytes);
  b.pages = reinterpret_cast<const int32_t*>(device_ + descs_bytes + rows_bytes);
  return b;
}

}  // namespace hostlm::cuda
