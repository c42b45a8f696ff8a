#include "hostlm/best_logits.h"

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "hostlm/error.h"
#include "hostlm/ops.h"

namespace hostlm {
namespace {

using Pair = std::pair<float, int32_t>;

// The sampler's order (sampler.cpp's Better): a strict weak order even with NaN.
bool better(const Pair& a, const Pair& b) {
  if (a.first > b.first) return true;
  if (a.first == b.first) return a.second < b.second;
  if (a.first < b.first) return false;
  return std::isnan(a.first) ? std::isnan(b.first) && a.second < b.second : true;
}

}  // namespace

void best_logits(std::span<const float> row, size_t k, float* values, int32_t* ids) {
  k = std::min(k, row.size());
  if (k == 0) return;
  // The numbers first: a heap of the k best so far whose top is the worst of them, and a scan
  // that tests 64 logits at a time against it (a comparison the compiler vectorises), so a
  // 248K row costs about one pass at memory speed. NaN never passes the test.
  thread_local std::vector<Pair> heap;
  heap.clear();
  const float* x = row.data();
  const auto n = static_cast<int32_t>(row.size());
  float floor = -INFINITY;
  const auto offer = [&](int32_t i) {
    const Pair p{x[i], i};
    if (heap.size() < k) {
      heap.push_back(p);
      std::push_heap(heap.begin(), heap.end(), better);
    } else if (better(p, heap.front())) {
      std::pop_heap(heap.begin(), heap.end(), better);
      heap.back() = p;
      std::push_heap(heap.begin(), heap.end(), better);
    }
    if (heap.size() == k) floor = heap.front().first;
  };
  constexpr int32_t kBlock = 64;
  int32_t i = 0;
  for (; i + kBlock <= n; i += kBlock) {
    int hits = 0;
    for (int32_t j = 0; j < kBlock; ++j) hits += x[i + j] >= floor;
    if (hits == 0) continue;
    for (int32_t j = i; j < i + kBlock; ++j)
      if (x[j] >= floor) offer(j);
  }
  for (; i < n; ++i)
    if (x[i] >= floor) offer(i);
  std::sort_heap(heap.begin(), heap.end(), better);
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
