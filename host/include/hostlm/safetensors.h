// Hugging Face checkpoints: single safetensors files and model folders (config.json plus one
// file or shards listed in model.safetensors.index.json). Files are mapped, not read.
#pragma once
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "hostlm/tensor_view.h"

namespace hostlm {

class SafetensorsFile {
 public:
  // Validates the header (JSON, dtypes, shapes against byte ranges, ranges inside the file,
  // no overlaps). Throws hostlm::Error("<file>: <problem>"). Tensors whose dtype hostlm
  // cannot compute with (F8_*, BOOL, ...) are kept out of tensors(); find() on such a name
  // throws an Error naming the tensor and its dtype.
  static std::unique_ptr<SafetensorsFile> open(const std::filesystem::path& path);
  virtual ~SafetensorsFile() = default;
  virtual const std::filesystem::path& path() const = 0;
  virtual const std::vector<TensorView>& tensors() const = 0;
  virtual const TensorView* find(std::string_view name) const = 0;
  virtual const nlohmann::json& metadata() const = 0;  // "__metadata__" or empty object
};

class HfCheckpoint {
 public:
  // Opens a folder with config.json and model.safetensors, or shards named by
  // model.safetensors.index.json. Throws hostlm::Error naming the file and the problem.
  static std::unique_ptr<HfCheckpoint> open(const std::filesystem::path& folder);
  virtual ~HfCheckpoint() = default;
  virtual const std::filesystem::path& folder() const = 0;
  virtual const nlohmann::json& config() const = 0;  // config.json as written
  // Every tensor of every shard, in a stable order (by name).
  virtual const std::vector<TensorView>& tensors() const = 0;
  virtual const TensorView* find(std::string_view name) const = 0;
};

}  // namespace hostlm
