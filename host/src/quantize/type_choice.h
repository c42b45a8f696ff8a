// Which type each tensor of a model gets under a quantization scheme: llama.cpp's rules
// (src/llama-quant.cpp, no importance matrix) as they apply to dense models such as
// Qwen3.5, so that a Q4_K_M written here has the same per-tensor types as llama-quantize's.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "hostlm/dtype.h"
#include "hostlm/quantize.h"

namespace hostlm::quantize {

struct TensorDesc {
  std::string name;
  DType type = DType::F32;
  std::vector<uint64_t> ne;  // ggml order
};

struct ModelFacts {
  int64_t n_layer = 0;   // block_count
  int64_t n_gqa = 0;     // attention heads per KV head (0 when unknown)
  int64_t n_expert = 0;  // experts of a mixture-of-experts model (0: none)
};

// The scheme's base type (what a "Q4_K_M" file mostly holds) and llama.cpp's file type id
// for general.file_type.
DType scheme_base_type(QuantScheme scheme);
uint32_t scheme_file_type(QuantScheme scheme);

// The output type of every tensor, in the order given.
std::vector<DType> choose_types(const std::vector<TensorDesc>& tensors, const ModelFacts& facts,
                                QuantScheme scheme);

}  // namespace hostlm::quantize
