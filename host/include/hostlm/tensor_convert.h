// Conversions of whole tensors between the float storage types (F32, F16, BF16).
#pragma once
#include <cstdint>
#include <vector>

#include "hostlm/tensor_view.h"

namespace hostlm {

// Throws hostlm::Error naming the tensor when its type is not F32, F16 or BF16.
std::vector<float> tensor_to_f32(const TensorView& view);
float tensor_element_f32(const TensorView& view, int64_t index);
// Bytes of `view` stored as `out_type` (F32, F16 or BF16), rounding to nearest even.
std::vector<uint8_t> convert_float_tensor(const TensorView& view, DType out_type);

}  // namespace hostlm
