// Code point sets: ranges for the general case, a bitmap for ASCII, which is most of what
// JSON and code grammars test against.
#include <algorithm>

#include "grammar/ir.h"

namespace hostlm::grammar {

void CharSet::finish(bool negate) {
  std::sort(ranges.begin(), ranges.end());
  std::vector<std::pair<uint32_t, uint32_t>> merged;
  for (const auto& r : ranges) {
    if (!merged.empty() && r.first <= merged.back().second + 1) {
      merged.back().second = std::max(merged.back().second, r.second);
    } else {
      merged.push_back(r);
    }
  }
  if (negate) {
    std::vector<std::pair<uint32_t, uint32_t>> inverse;
    uint32_t next = 0;
    for (const auto& r : merged) {
      if (r.first > next) inverse.emplace_back(next, r.first - 1);
      next = r.second + 1;
    }
    if (next <= kMaxCodePoint) inverse.emplace_back(next, kMaxCodePoint);
    merged = std::move(inverse);
  }
  ranges = std::move(merged);
  ascii = {};
  for (const auto& [lo, hi] : ranges) {
    for (uint32_t c = lo; c <= hi && c < 128; ++c) ascii[c >> 6] |= uint64_t{1} << (c & 63);
  }
}

bool CharSet::contains(uint32_t cp) const {
  if (cp < 128) return (ascii[cp >> 6] >> (cp & 63)) & 1;
  return intersects(cp, cp);
}

bool CharSet::intersects(uint32_t lo, uint32_t hi) const {
  // The first range that does not end before lo.
  auto it = std::lower_bound(
      ranges.begin(), ranges.end(), lo,
      [](const std::pair<uint32_t, uint32_t>& r, uint32_t v) { return r.second < v; });
  return it != ranges.end() && it->first <= hi;
}

bool CharSet::covers(uint32_t lo, uint32_t hi) const {
  // Ranges are merged and never adjacent, so [lo, hi] must lie inside a single one.
  auto it = std::lower_bound(
      ranges.begin(), ranges.end(), lo,
      [](const std::pair<uint32_t, uint32_t>& r, uint32_t v) { return r.second < v; });
  return it != ranges.end() && it->first <= lo && hi <= it->second;
}

}  // namespace hostlm::grammar
