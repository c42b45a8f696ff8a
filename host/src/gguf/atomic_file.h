// A file that appears at its final path complete or not at all: bytes go to
// "<path>.tmp-<pid>", which commit() fsyncs and renames into place. If commit() is never
// reached (an error, an exception), the temporary file is removed.
#pragma once
#include <cstddef>
#include <filesystem>
#include <string>

namespace hostlm::gguf {

class AtomicFile {
 public:
  // Throws hostlm::Error("<path>: <problem>") on every I/O failure, here and below.
  explicit AtomicFile(std::filesystem::path path);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void write(const void* data, size_t size);
  void commit();

  const std::filesystem::path& temp_path() const { return temp_; }

 private:
  [[noreturn]] void fail(const std::string& what, int err);
  void discard() noexcept;

  std::filesystem::path path_;
  std::filesystem::path temp_;
  int fd_ = -1;
  bool committed_ = false;
};

}  // namespace hostlm::gguf
