// Hugging Face folder -> GGUF with llama.cpp's names, metadata keys and transforms.
#pragma once
#include <filesystem>

#include "hostlm/dtype.h"

namespace hostlm {
class HfCheckpoint;
}

namespace hostlm::qwen35 {

void convert_to_gguf(const HfCheckpoint& hf, DType out_type, const std::filesystem::path& out);

}  // namespace hostlm::qwen35
