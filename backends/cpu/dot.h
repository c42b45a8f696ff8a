// Dot products of a float32 activation row with a stored weight row, per weight type.
// The AVX2 versions are chosen at run time; the scalar ones are the reference.
#pragma once
#include <cstdint>

#include "hostlm/dtype.h"

namespace hostlm::cpu {

using DotFn = float (*)(const void* weight_row, const float* x, int64_t n);
using RowToF32Fn = void (*)(const void* weight_row, float* out, int64_t n);

// nullptr when the type has no kernel in this build.
DotFn dot_kernel(DType type);
RowToF32Fn row_to_f32_kernel(DType type);

}  // namespace hostlm::cpu
