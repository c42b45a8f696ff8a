// Kernels for the block-quantized GGUF weight types (spec 7.2), exposed per instruction set
// so that tests and benchmarks can call each path directly; dot.cpp picks one at run time.
#pragma once
#include <cstdint>

#include "cpu/dot.h"
#include "hostlm/dtype.h"

namespace hostlm::cpu::quants {

// Every function below takes n as a whole number of blocks of its type.

// Dequantization bit-identical to gguf.quants.dequantize, on every path; nullptr for types
// not covered (the plain F32/F16/BF16 live in dot.cpp).
RowToF32Fn row_to_f32_scalar(DType type);
// Portable reference: each block is dequantized exactly, then multiplied with x.
DotFn dot_scalar(DType type);

// Need AVX2, FMA and F16C at run time (cpu_has_avx2()); nullptr for types not covered.
RowToF32Fn row_to_f32_avx2(DType type);
DotFn dot_avx2(DType type);
bool cpu_has_avx2();

}  // namespace hostlm::cpu::quants
