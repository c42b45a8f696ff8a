// Element types of weights and activations. The numeric values are ggml's type ids, so a
// GGUF tensor's type field maps to DType directly; safetensors dtypes map onto the same enum.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace hostlm {

enum class DType : uint32_t {
  // ggml's numbering, kept as a table.
  // clang-format off
  F32 = 0, F16 = 1, Q4_0 = 2, Q4_1 = 3, Q5_0 = 6, Q5_1 = 7, Q8_0 = 8, Q8_1 = 9,
  Q2_K = 10, Q3_K = 11, Q4_K = 12, Q5_K = 13, Q6_K = 14, Q8_K = 15,
  IQ2_XXS = 16, IQ2_XS = 17, IQ3_XXS = 18, IQ1_S = 19, IQ4_NL = 20, IQ3_S = 21, IQ2_S = 22,
  IQ4_XS = 23, I8 = 24, I16 = 25, I32 = 26, I64 = 27, F64 = 28, IQ1_M = 29, BF16 = 30,
  TQ1_0 = 34, TQ2_0 = 35, MXFP4 = 39,
  // clang-format on
};

struct DTypeTraits {
  std::string_view name;  // ggml's spelling: "f32", "q4_K", ...
  int64_t block_size;     // elements per block (1 for plain types)
  size_t block_bytes;     // bytes per block
};

// Traits of a ggml type id, or nullopt for ids this build does not know.
std::optional<DTypeTraits> dtype_traits(uint32_t ggml_type_id);
DTypeTraits dtype_traits(DType type);
std::string_view dtype_name(DType type);

// Bytes of `n_elements` consecutive elements; nullopt when n is not a whole number of blocks
// or the size overflows.
std::optional<size_t> dtype_bytes(DType type, uint64_t n_elements);

}  // namespace hostlm
