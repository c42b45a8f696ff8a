// /api/show "model_info": the GGUF metadata of a model (big arrays emptied unless verbose),
// or what a Hugging Face config.json says in GGUF terms.
#pragma once
#include <filesystem>
#include <nlohmann/json.hpp>

namespace hostlm::ollama {

nlohmann::ordered_json model_info(const std::filesystem::path& path, bool verbose);

}  // namespace hostlm::ollama
