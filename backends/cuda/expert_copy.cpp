// plan_expert_copy (expert_copy.h): the host's half of combine_experts.
#include "cuda/expert_copy_plan.h"

#include <algorithm>
#include <initializer_list>
#include <string>

#include "cuda/quants/split_layout.h"
#include "hostlm/error.h"

namespace hostlm::cuda {
namespace {

// The largest piece (16, 8, 4, 2 or 1 bytes) that every value given divides.
int unit_for(std::initializer_list<uint64_t> values) {
  for (int unit : {16, 8, 4, 2})
    if (std::all_of(values.begin(), values.end(),
                    [&](uint64_t v) { return v % static_cast<uint64_t>(unit) == 0; }))
      return unit;
  return 1;
}

}  // namespace

ExpertCopy plan_expert_copy(std::span<const Weight> experts, int64_t n, bool side_by_side,
                            const void* combined) {
  if (experts.empty() || static_cast<int64_t>(experts.size()) > kMaxRoutedExperts)
    throw Error("combine_experts: " + std::to_string(experts.size()) + " experts (1 to " +
                std::to_string(kMaxRoutedExperts) + " on the CUDA backend)");
  if (n < 0 || n > 65535) throw Error("combine_experts: " + std::to_string(n) + " slots");
  const Weight& like = experts.front();
  ExpertCopy copy{};
  copy.n = static_cast<int>(n);
  copy.rows = like.rows;
  copy.side_by_side = side_by_side;
  uint64_t bases = reinterpret_cast<uintptr_t>(combined);  // any start that breaks an alignment
  for (size_t e = 0; e < experts.size(); ++e) {
    const Weight& x = experts[e];
    if (x.type != like.type || x.rows != like.rows || x.cols != like.cols)
      throw Error("combine_experts: the experts of a stack differ in type or shape");
    copy.experts[e] = static_cast<const uint8_t*>(x.data);
    bases |= reinterpret_cast<uintptr_t>(x.data);
  }
  const quants::SplitLayout layout = quants::split_layout(like.type);
  if (layout.n_regions > 0) {
    const int64_t per_row = like.cols / layout.block_elems;
    const auto blocks = static_cast<size_t>(like.rows * per_row);
    copy.n_regions = layout.n_regions;
    for (int j = 0; j < layout.n_regions; ++j) {
      copy.src_region[j] = static_cast<int64_t>(quants::region_offset(layout, j, blocks));
      copy.dst_region[j] =
          static_cast<int64_t>(quants::region_offset(layout, j, blocks * static_cast<size_t>(n)));
      copy.run[j] = per_row * layout.regions[j].size;
    }
  } else {
    copy.n_regions = 1;
    copy.run[0] = static_cast<int64_t>(like.row_bytes);
  }
  for (int j = 0; j < copy.n_regions; ++j)
    copy.unit[j] =
        unit_for({bases, static_cast<uint64_t>(copy.src_region[j]),
                  static_cast<uint64_t>(copy.dst_region[j]), static_cast<uint64_t>(copy.run[j])});
  return copy;
}

}  // namespace hostlm::cuda
