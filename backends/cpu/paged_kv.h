// The CPU backend's paged-KV ops (hostlm/ops.h: kv_store, paged_attention).
//
// Attention walks a sequence's pages in order with an online softmax: for each page it
// stages the page's keys of one KV head transposed to float32 (so 8 keys score per SIMD
// instruction), then updates every query of a tile of up to 16 tokens and every query head
// of the group. The arithmetic of one (query, head) never depends on the tile, the batch or
// how the prompt was chunked, so a cached prefix gives bit-identical results to a cold run.
#pragma once
#include <cstdint>
#include <span>

#include "cpu/thread_pool.h"
#include "hostlm/ops.h"

namespace hostlm::cpu {

void kv_store(std::span<const PagedSequence> seqs, const float* k, const float* v);

void paged_attention(ThreadPool& pool, std::span<const PagedSequence> seqs, const float* q,
                     size_t q_stride, int64_t n_head, float scale, float* out);

}  // namespace hostlm::cpu
