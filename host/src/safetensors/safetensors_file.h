// The concrete SafetensorsFile: a mapped file plus its validated header.
#pragma once
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/mapped_file.h"
#include "hostlm/safetensors.h"
#include "safetensors/header.h"

namespace hostlm::safetensors {

class MappedSafetensors final : public SafetensorsFile {
 public:
  explicit MappedSafetensors(const std::filesystem::path& path);

  const std::filesystem::path& path() const override { return path_; }
  const std::vector<TensorView>& tensors() const override { return header_.tensors; }
  const TensorView* find(std::string_view name) const override;
  const nlohmann::json& metadata() const override { return header_.metadata; }

  // Tensors kept out of tensors() because hostlm cannot use their dtype: name -> dtype.
  const std::map<std::string, std::string, std::less<>>& unsupported() const {
    return header_.unsupported;
  }
  // Whether the file holds `name` at all, usable or not.
  bool holds(std::string_view name) const;

 private:
  std::filesystem::path path_;
  MappedFile map_;
  ParsedHeader header_;
};

// Binary search in a name-sorted list of views.
const TensorView* find_sorted(const std::vector<TensorView>& tensors, std::string_view name);

}  // namespace hostlm::safetensors
