// Writing quantized GGUF files (`hostlm quantize`, Ollama's `create --quantize`).
//
// The input is a GGUF or a Hugging Face folder (converted by its architecture's plugin
// first). Tensors are re-encoded with the reference algorithms of ggml's quantizers (no
// importance matrix); the mixtures (_M, _S) choose per-tensor types by llama.cpp's rules;
// 1-D tensors, norms and the conv kernels keep their type. The output loads in llama.cpp.
#pragma once
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "hostlm/dtype.h"
#include "hostlm/registry.h"

namespace hostlm {

// MXFP4_MOE: llama.cpp's scheme for mixture-of-experts files: the stacked expert tensors in
// MXFP4, every other matrix in Q8_0.
enum class QuantScheme { Q8_0, Q4_0, Q4_K_M, Q4_K_S, Q5_K_M, Q6_K, IQ4_XS, F16, BF16, MXFP4_MOE };

// "Q4_K_M", "q4_k_m", ... -> the scheme; nullopt for other names.
std::optional<QuantScheme> parse_quant_scheme(std::string_view name);
std::string_view quant_scheme_name(QuantScheme scheme);  // "Q4_K_M"
// Every scheme name, comma-separated (for help and error texts).
std::string quant_scheme_names();

struct QuantizeProgress {
  size_t index = 0;  // 1-based
  size_t count = 0;
  std::string name;
  DType from = DType::F32, to = DType::F32;
  uint64_t bytes_in = 0, bytes_out = 0;
};

struct QuantizeOptions {
  int threads = 0;  // 0: one per core
  // Called after each tensor is written to memory; may be empty.
  std::function<void(const QuantizeProgress&)> progress;
};

struct QuantizeSummary {
  size_t n_tensors = 0, n_requantized = 0;
  uint64_t bytes_in = 0, bytes_out = 0;
};

// Quantizes the GGUF or Hugging Face folder `in` into the GGUF `out` (written atomically).
// Throws hostlm::Error naming the file, tensor or type on failure.
QuantizeSummary quantize_model(PluginRegistry& registry, const std::filesystem::path& in,
                               const std::filesystem::path& out, QuantScheme scheme,
                               const QuantizeOptions& options = {});

// The same for a GGUF only (no plugin needed).
QuantizeSummary quantize_gguf_file(const std::filesystem::path& in,
                                   const std::filesystem::path& out, QuantScheme scheme,
                                   const QuantizeOptions& options = {});

}  // namespace hostlm
