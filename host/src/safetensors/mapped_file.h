// Read-only memory mapping of a whole file, released on destruction.
#pragma once
#include <cstddef>
#include <filesystem>

namespace hostlm::safetensors {

class MappedFile {
 public:
  // Throws hostlm::Error("<path>: <problem>") when the file cannot be opened or mapped.
  explicit MappedFile(const std::filesystem::path& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const std::byte* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  const std::byte* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace hostlm::safetensors
