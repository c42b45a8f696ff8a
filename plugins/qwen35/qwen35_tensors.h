// Where each Qwen3.5 tensor lives in a Hugging Face checkpoint and in a llama.cpp GGUF, and
// how to turn the first into the second. The plugin computes in the GGUF convention (norm
// weights with +1 folded in, ssm_a = -exp(A_log), value heads in tiled order), so an HF
// checkpoint is transformed at load time by the same rules `hostlm convert` writes with.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "hostlm/tensor_view.h"
#include "qwen35_config.h"

namespace hostlm {
class HfCheckpoint;
}

namespace hostlm::qwen35 {

enum class Transform {
  None,             // same bytes
  NormPlusOne,      // zero-centred RMSNorm weight: w + 1, float32
  ToF32,            // float32, no other change
  NegExpPermuted,   // A_log -> -exp(A_log), value heads tiled, float32
  RowsPermuted,     // rows grouped by value head (head size = rows / n_v_heads), tiled
  RowsPermutedF32,  // as RowsPermuted, float32 (dt_bias)
  QkvPermuted,      // [q | k | v] rows: only the v rows are value-head permuted
  ConvPermuted,     // [C, 1, K] -> [C, K] float32, v channels permuted
  ColsPermuted,     // input columns grouped by value head, tiled (out_proj)
  // The experts' matrices of one projection stacked into [E, rows, cols], same bytes: from
  // per-expert tensors (hf_name.<e>.gate_proj.weight, as checkpoints store them) or from
  // transformers' fused hf_name.gate_up_proj [E, 2 Fe, H] / hf_name.down_proj.
  StackGate,
  StackUp,
  StackDown,
};

struct TensorRule {
  std::string gguf_name;
  std::string hf_name;  // without the checkpoint's prefix
  Transform transform;
  bool optional;
};

// Every tensor of the trunk, in GGUF order: globals first, then layer by layer.
std::vector<TensorRule> tensor_rules(const Config& config);

// The prefix of text-model tensors in an HF checkpoint: "model.language_model." for
// *ForConditionalGeneration, "model." for *ForCausalLM. Throws if neither holds embeddings.
std::string hf_prefix(const HfCheckpoint& hf);

// A tensor after its transform, owning any bytes the transform produced.
struct TransformedTensor {
  TensorView view;               // GGUF-convention contents, PyTorch-order shape
  std::vector<uint8_t> storage;  // empty when view points into the checkpoint
};

// Applies rule.transform to the HF tensor. nullopt if the tensor is absent and optional.
std::optional<TransformedTensor> transform_hf_tensor(const HfCheckpoint& hf,
                                                     const std::string& prefix,
                                                     const TensorRule& rule, const Config& config);

}  // namespace hostlm::qwen35
