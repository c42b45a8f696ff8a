#include "hostlm/tensor_convert.h"

#include <cstring>
#include <string>

#include "hostlm/error.h"
#include "hostlm/half.h"

namespace hostlm {
namespace {

void require_float_type(const TensorView& v, DType type) {
  if (type != DType::F32 && type != DType::F16 && type != DType::BF16)
    throw Error("tensor '" + v.name + "': type " + std::string(dtype_name(type)) +
                " is not a float storage type (F32, F16, BF16)");
}

}  // namespace

float tensor_element_f32(const TensorView& v, int64_t i) {
  const auto* p = static_cast<const uint8_t*>(v.data);
  uint16_t h;
  float f;
  switch (v.type) {
    case DType::F32:
      std::memcpy(&f, p + 4 * i, 4);
      return f;
    case DType::F16:
      std::memcpy(&h, p + 2 * i, 2);
      return f16_to_f32(h);
    case DType::BF16:
      std::memcpy(&h, p + 2 * i, 2);
      return bf16_to_f32(h);
    default:
      require_float_type(v, v.type);
      return 0.f;
  }
}

std::vector<float> tensor_to_f32(const TensorView& v) {
  require_float_type(v, v.type);
  std::vector<float> out(static_cast<size_t>(v.n_elements()));
  for (size_t i = 0; i < out.size(); ++i) out[i] = tensor_element_f32(v, static_cast<int64_t>(i));
  return out;
}

std::vector<uint8_t> convert_float_tensor(const TensorView& v, DType out_type) {
  require_float_type(v, v.type);
  require_float_type(v, out_type);
  const size_t n = static_cast<size_t>(v.n_elements());
  if (v.type == out_type) {
    const auto* p = static_cast<const uint8_t*>(v.data);
    return std::vector<uint8_t>(p, p + v.nbytes);
  }
  std::vector<uint8_t> out(n * (out_type == DType::F32 ? 4 : 2));
  for (size_t i = 0; i < n; ++i) {
    const float f = tensor_element_f32(v, static_cast<int64_t>(i));
    if (out_type == DType::F32) {
      std::memcpy(out.data() + 4 * i, &f, 4);
    } else {
      const uint16_t h = out_type == DType::F16 ? f32_to_f16(f) : f32_to_bf16(f);
      std::memcpy(out.data() + 2 * i, &h, 2);
    }
  }
  return out;
}

}  // namespace hostlm
