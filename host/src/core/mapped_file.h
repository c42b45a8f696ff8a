// Read-only memory mapping of a whole file, released on destruction. Shared by every
// file-format reader (GGUF, safetensors).
#pragma once
#include <cstddef>
#include <filesystem>
#include <span>

namespace hostlm {

class MappedFile {
 public:
  // Throws hostlm::Error("<path>: <problem>") when the file cannot be opened or mapped.
  explicit MappedFile(const std::filesystem::path& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const std::byte* data() const { return data_; }
  size_t size() const { return size_; }
  // Empty for an empty file (which cannot be mapped).
  std::span<const unsigned char> bytes() const {
    return {reinterpret_cast<const unsigned char*>(data_), size_};
  }

 private:
  const std::byte* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace hostlm
