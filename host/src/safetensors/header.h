// Parsing and validation of a safetensors file image: 8-byte header length, JSON header,
// tensor byte ranges. Works on bytes in memory so the mapped file and the fuzzer share it.
#pragma once
#include <cstddef>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "hostlm/tensor_view.h"

namespace hostlm::safetensors {

// Headers of real checkpoints are tens of kilobytes; anything near this is hostile or corrupt.
constexpr uint64_t kMaxHeaderBytes = 100u << 20;

struct ParsedHeader {
  // Tensors of dtypes hostlm computes with, sorted by name; data points into the parsed bytes.
  std::vector<TensorView> tensors;
  // Tensors of valid safetensors dtypes hostlm cannot use: name -> dtype string.
  std::map<std::string, std::string, std::less<>> unsupported;
  nlohmann::json metadata = nlohmann::json::object();
};

// Throws hostlm::Error("<label>: <problem>") for anything malformed. The returned views point
// into [data, data + size), which must outlive them.
ParsedHeader parse_safetensors(const std::byte* data, size_t size, const std::string& label);

}  // namespace hostlm::safetensors
