// Reference logits far out in the context (tools/make_long_reference.py, transformers on the
// GPU in float32): one 65,536-token sequence with a few windows of kept positions.
#pragma once
#include <cstdint>
#include <filesystem>
#include <vector>

#include "hostlm/plugin_api.h"

namespace hostlm::testing {

struct LongReferenceWindow {
  int64_t start = 0, length = 0;
  double logit_std = 1.0;
  std::vector<float> logits;  // [length, vocab]
};

struct LongReference {
  std::filesystem::path folder;  // HF checkpoint of tiny-long-f32
  int64_t vocab = 0;
  std::vector<int32_t> tokens;
  std::vector<LongReferenceWindow> windows;
};

LongReference load_long_reference();

// How far the long-context tests go: $HOSTLM_LONG_CONTEXT_TOKENS, else `fallback`.
int64_t long_context_tokens(int64_t fallback);

struct WindowError {
  int64_t start = 0, length = 0;
  double max_rel_err = 0;  // max |hostlm - reference| / reference logit std
};

// Evaluates the first n_tokens of the reference sequence in one new sequence, `chunk` tokens
// per eval call, and compares every window that ends within n_tokens.
std::vector<WindowError> compare_long_reference(Model& model, const LongReference& ref,
                                                int64_t n_tokens, int64_t chunk);

}  // namespace hostlm::testing
