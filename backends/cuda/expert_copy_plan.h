// The host's half of combine_experts (expert_copy.h): the copy plan for a stack of experts.
#pragma once
#include <cstdint>
#include <span>

#include "cuda/expert_copy.h"
#include "hostlm/ops.h"

namespace hostlm::cuda {

// The plan for copying n of `experts` (same type and shape, at most kMaxRoutedExperts) into
// `combined`. Throws hostlm::Error when the stack does not qualify.
ExpertCopy plan_expert_copy(std::span<const Weight> experts, int64_t n, bool side_by_side,
                            const void* combined);

}  // namespace hostlm::cuda
