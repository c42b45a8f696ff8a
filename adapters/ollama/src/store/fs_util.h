// File-system pieces the store is built from: durable atomic files, directory fsync,
// advisory locks shared by processes and threads, and the crash-test pause hook.
#pragma once
#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>

namespace hostlm::ollama {

// Temporary files start with this prefix so that listings skip them and prune() can clean
// up what a killed process left behind.
inline constexpr std::string_view kTempPrefix = ".hostlm-tmp-";

// A new file in `dir` named kTempPrefix + random; write, then commit_to() renames it.
// Destroyed uncommitted: the file is removed.
class TempFile {
 public:
  explicit TempFile(const std::filesystem::path& dir);
  ~TempFile();
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  void write(const void* data, size_t n);
  // fsync, close, rename over `target` (same folder), fsync the folder.
  void commit_to(const std::filesystem::path& target);
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
  int fd_ = -1;
  bool committed_ = false;
};

void write_file_atomic(const std::filesystem::path& path, std::string_view bytes);
// Throws hostlm::Error naming the file.
std::string read_file(const std::filesystem::path& path);
void fsync_dir(const std::filesystem::path& dir);
// create_directories + fsync of each folder made, so a new folder survives a crash.
void make_dirs(const std::filesystem::path& dir);

// flock() on `path` (created if needed). Each lock opens its own descriptor, so locks
// taken by two threads of one process exclude each other like those of two processes.
class FileLock {
 public:
  FileLock(const std::filesystem::path& path, bool exclusive);
  ~FileLock();
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  int fd_ = -1;
};

// Crash-safety tests set HOSTLM_STORE_TEST_PAUSE=<point> and HOSTLM_STORE_TEST_PAUSE_FILE:
// when the store reaches that point it creates the file and stops until killed.
void test_pause_point(const char* point);

}  // namespace hostlm::ollama
