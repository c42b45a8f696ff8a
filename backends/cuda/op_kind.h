// The kinds of backend op that a decode step's fingerprint records (step_fingerprint.h), and
// their names for HOSTLM_CUDA_GRAPH_STATS's reports. Their own header because both the backend
// (cuda_backend.h) and the statistics' report (graph_stats.cpp) need them.
#pragma once
#include <iterator>

namespace hostlm::cuda {

// Op kinds in a step's fingerprint.
enum OpKind {
  kFill = 1,
  kCopyRows,
  kEmbed,
  kMatmul,
  kAdd,
  kRmsNorm,
  kAddRmsNorm,
  kRope,
  kKvStore,
  kAttention,
  kMulSigmoid,
  kSwiglu,
  kConv,
  kDeltaRule,
  kGatedRmsNorm,
  kMatmulGroup,
  kQkNormRope,
  kMatmulGroupConv,
  kDeltaRuleNorm,
  kQkNormRopeStore,
  kMatmulSwiglu,
  kDeltaRuleChunked,
  kMoeRoute,
  kCombineExperts,
  kScaleSegments,
  kAddSigmoidGated
};

inline const char* op_kind_name(int kind) {
  static constexpr const char* kNames[] = {"the end of the step",
                                           "fill",
                                           "copy_rows",
                                           "embed",
                                           "matmul",
                                           "add",
                                           "rms_norm",
                                           "add_rms_norm",
                                           "rope",
                                           "kv_store",
                                           "attention",
                                           "mul_sigmoid",
                                           "swiglu",
                                           "conv",
                                           "delta_rule",
                                           "gated_rms_norm",
                                           "matmul_group",
                                           "qk_norm_rope",
                                           "matmul_group_conv",
                                           "delta_rule_norm",
                                           "qk_norm_rope_store",
                                           "matmul_swiglu",
                                           "delta_rule_chunked",
                                           "moe_route",
                                           "combine_experts",
                                           "scale_segments",
                                           "add_sigmoid_gated"};
  static_assert(std::size(kNames) == kAddSigmoidGated + 1, "a name for every op kind");
  return kind >= 0 && kind < static_cast<int>(std::size(kNames)) ? kNames[kind] : "?";
}

}  // namespace hostlm::cuda
