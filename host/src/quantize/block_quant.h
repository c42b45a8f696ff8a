// Float32 rows to GGUF weight blocks: the algorithms of ggml's reference quantizers without
// an importance matrix (what llama-quantize runs by default), so files match llama.cpp's in
// quality, and byte for byte gguf.quants.quantize for the types that package implements
// (F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0).
#pragma once
#include <cstddef>
#include <cstdint>

#include "hostlm/dtype.h"

namespace hostlm::quantize {

// True when quantize_rows can produce `type`.
bool can_quantize(DType type);

// Quantizes n_rows rows of n_per_row floats (a whole number of `type` blocks each) into
// dst, row after row; returns the bytes written.
size_t quantize_rows(DType type, const float* src, void* dst, int64_t n_rows, int64_t n_per_row);

}  // namespace hostlm::quantize
