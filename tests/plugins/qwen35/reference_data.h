// Reference logits made by Hugging Face transformers (tools/make_reference.py).
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "hostlm/plugin_api.h"

namespace hostlm::testing {

struct ReferenceSequence {
  std::string name;
  std::vector<int32_t> tokens;
  std::vector<int64_t> positions;  // positions whose logits are stored
  std::vector<float> logits;       // [positions.size(), vocab]
  double logit_std = 1.0;
};

struct ReferenceModel {
  std::string name;
  std::filesystem::path folder;  // HF checkpoint
  int64_t vocab = 0;
  std::vector<ReferenceSequence> sequences;
  std::vector<int32_t> greedy_prompt, greedy_generated;
};

std::filesystem::path source_dir();
ReferenceModel load_reference(const std::string& model_name);

// Logits of every position of `tokens` evaluated as one prompt in a fresh sequence.
std::vector<float> all_logits(Model& model, const std::vector<int32_t>& tokens);

// Greedy continuation of `prompt` by `n` tokens through the single-sequence path.
std::vector<int32_t> greedy_generate(Model& model, const std::vector<int32_t>& prompt, size_t n);

// Largest |a - b| over the stored positions, divided by the reference logit std.
double max_relative_error(const ReferenceSequence& ref, const std::vector<float>& all_logits,
                          int64_t vocab);

}  // namespace hostlm::testing
