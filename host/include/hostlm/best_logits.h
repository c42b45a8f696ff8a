// The best few logits of a row, in the order the sampler ranks them: the higher value first,
// the lower id first among equal values, NaN after every number (NaNs by id). A sampler whose
// draw reads only its top-k (Sampler::best_logits_needed) can be given these instead of the
// whole vocabulary, so an accelerator sends back k pairs a row instead of every logit.
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>

namespace hostlm {

// The min(k, row.size()) best of `row` into values[0..) and ids[0..), best first.
void best_logits(std::span<const float> row, size_t k, float* values, int32_t* ids);

}  // namespace hostlm
