// JSON parsing for safetensors headers, config.json and shard indexes, with the failures
// turned into hostlm::Error messages that name the file.
#pragma once
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace hostlm::safetensors {

// Parses `text`. Rejects syntax errors, duplicate object keys (nlohmann would silently keep
// the last one, which would hide a tensor) and nesting deeper than `max_depth`. Throws
// hostlm::Error("<label>: <what>: <problem>").
nlohmann::json parse_json(std::string_view text, const std::string& label, std::string_view what,
                          int max_depth = 64);

// Reads and parses a whole JSON file (config.json, model.safetensors.index.json).
nlohmann::json read_json_file(const std::filesystem::path& path);

}  // namespace hostlm::safetensors
