#include "hostlm/best_logits.h"

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "best_k.h"
#include "hostlm/error.h"
#include "hostlm/ops.h"

namespace hostlm {

void best_logits(std::span<const float> row, size_t k, float* values, int32_t* ids) {
  k = std::min(k, row.size());
  if (k == 0) return;
  // The numbers first, by the sampler's own scan (best_k.h): a 248K row costs about one pass
  // at memory speed. NaN never passes its floor.
  thread_local std::vector<detail::Candidate> heap;
  detail::BestK best(heap, k);
  const float* x = row.data();
  const auto n = static_cast<int32_t>(row.size());
  detail::for_each_at_least(
      x, n, [&] { return best.floor(); }, [&](int32_t i) { best.offer(x[i], i); });
  best.finish();
  // Fewer than k numbers: the NaNs come after them, by id.
  for (int32_t j = 0; heap.size() < k && j < n; ++j)
    if (std::isnan(x[j])) heap.emplace_back(x[j], j);
  for (size_t r = 0; r < k; ++r) {
    values[r] = heap[r].first;
    ids[r] = heap[r].second;
  }
}

void Backend::best_logits_rows(std::span<float* const> values, std::span<int32_t* const> ids,
                               const float* src, size_t n, size_t k) {
  if (ids.size() != values.size()) throw Error("best_logits_rows: as many id rows as value rows");
  thread_local std::vector<float> row;
  row.resize(n);
  for (size_t i = 0; i < values.size(); ++i) {
    download(row.data(), src + i * n, n);
    best_logits(row, k, values[i], ids[i]);
  }
}

}  // namespace hostlm
