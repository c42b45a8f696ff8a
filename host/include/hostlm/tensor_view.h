// A read-only view of one stored tensor (in a mapped GGUF or safetensors file).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "hostlm/dtype.h"

namespace hostlm {

struct TensorView {
  std::string name;
  DType type = DType::F32;
  // PyTorch order: outermost dimension first, the last one contiguous. A linear weight is
  // {out_features, in_features}. (GGUF `ne` is the reverse of this.)
  std::vector<int64_t> shape;
  const void* data = nullptr;
  size_t nbytes = 0;

  int64_t n_elements() const {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
  }
  int64_t rows() const { return shape.empty() ? 1 : n_elements() / shape.back(); }
  int64_t cols() const { return shape.empty() ? 1 : shape.back(); }
};

}  // namespace hostlm
