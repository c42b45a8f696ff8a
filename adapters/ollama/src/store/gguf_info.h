// What the config blob says about a GGUF (spec 1.6 step 4): format, family, size, type.
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>

namespace hostlm::ollama {

struct GgufSummary {
  std::string architecture;      // general.architecture
  std::string kind;              // general.type ("model", "adapter", "projector", "mmproj", ...)
  uint64_t parameter_count = 0;  // sum of the tensors' element counts
  std::string file_type;         // "F32", "BF16", "Q4_K_M", ...
  bool is_projector = false;
};

// Opens and validates the GGUF; throws RequestError(kBadRequest) when it is not one.
GgufSummary summarize_gguf(const std::filesystem::path& path);
// Ollama's format.HumanNumber: 9.0B, 1.23M, 512K.
std::string human_number(uint64_t n);
// Whether the file starts with the GGUF magic.
bool looks_like_gguf(const std::filesystem::path& path);

}  // namespace hostlm::ollama
