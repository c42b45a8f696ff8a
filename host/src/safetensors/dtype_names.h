// The dtype strings of the safetensors format and how they relate to hostlm's DType.
#pragma once
#include <cstdint>
#include <optional>
#include <string_view>

#include "hostlm/dtype.h"

namespace hostlm::safetensors {

struct StDType {
  // Bits per element: F4/F6 tensors are packed below a byte per element.
  uint32_t bits;
  // hostlm's type for the dtype, or nullopt when hostlm cannot compute with it.
  std::optional<DType> type;
};

// nullopt for a string that is not a safetensors dtype at all.
std::optional<StDType> lookup_dtype(std::string_view name);

}  // namespace hostlm::safetensors
