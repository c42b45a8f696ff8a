// Read-only POSIX mapping of a whole file, released on destruction.
#pragma once
#include <filesystem>
#include <span>

namespace hostlm::gguf {

class MappedFile {
 public:
  // Throws hostlm::Error("<path>: <problem>") when the file cannot be opened or mapped.
  explicit MappedFile(const std::filesystem::path& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  // Empty for an empty file (which cannot be mapped).
  std::span<const unsigned char> bytes() const { return {data_, size_}; }

 private:
  const unsigned char* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace hostlm::gguf
